import dataclasses
import json
import logging
import math
import pathlib
import shutil
import warnings

import keras
import numpy as np
import pytest
from keras import ops

from onestep_gan.gradients import value_and_gradients
from onestep_gan.rdf2text import averaging, inference, mle, preprocessing, runs, webnlg
from onestep_gan.rdf2text.config import MLEConfig
from onestep_gan.rdf2text.faithfulness import SlotAligner
from onestep_gan.rdf2text.mle import LabelSmoothedSparseCrossEntropy
from tests.conftest import fixture_2017_dir, same_seed_rerun_in_one_process

FIXTURE_2017 = fixture_2017_dir()


# What `tiny_config` changes in `MLEConfig.quick()`.
TINY_SETTINGS = dict(
    model_dim=16, num_heads=2, feedforward_dim=32, max_source_length=32, max_target_length=24,
    batch_size=4, epochs=1, decode_batch_size=4, beam_width=2, num_logged_samples=1,
)


def tiny_config(**overrides):
    """The smallest config that still runs every stage (seconds of compute)."""
    return MLEConfig.quick(**{**TINY_SETTINGS, **overrides})


def test_label_smoothed_loss_matches_hand_computed_value():
    logits = np.array([[[1.0, 2.0, 0.5], [0.3, 0.1, 2.0]]], dtype="float32")  # (1, 2, 3)
    labels = np.array([[1, 2]])
    epsilon = 0.1
    loss = LabelSmoothedSparseCrossEntropy(label_smoothing=epsilon, ignore_class=None)
    expected = []
    for position, label in enumerate(labels[0]):
        row = logits[0, position]
        log_probs = row - math.log(np.sum(np.exp(row)))
        # target distribution (1 - eps) * onehot + eps / K
        target = np.full(3, epsilon / 3)
        target[label] += 1 - epsilon
        expected.append(-np.sum(target * log_probs))
    assert float(loss(labels, logits)) == pytest.approx(np.mean(expected), rel=1e-5)


def test_label_smoothed_loss_ignores_pad_and_averages_over_real_tokens():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(2, 4, 7)).astype("float32")
    labels = np.array([[5, 3, 0, 0], [6, 2, 4, 3]])
    loss = LabelSmoothedSparseCrossEntropy(label_smoothing=0.2, ignore_class=0)
    # Changing the logits at PAD positions changes nothing.
    perturbed = logits.copy()
    perturbed[0, 2:] += 100.0 * rng.normal(size=(2, 7))
    assert float(loss(labels, logits)) == pytest.approx(float(loss(labels, perturbed)), rel=1e-6)
    # Mean over the 6 real tokens, not over all 8 positions.
    per_token = LabelSmoothedSparseCrossEntropy(label_smoothing=0.2, reduction="none")(labels, logits)
    per_token = np.asarray(per_token)
    assert np.all(per_token[0, 2:] == 0.0)
    assert float(loss(labels, logits)) == pytest.approx(per_token.sum() / 6, rel=1e-5)


def test_label_smoothed_loss_and_its_gradient_equal_the_gathered_form_to_the_last_bit():
    # The label's log-probability is read as a sum against its one-hot: the same value and
    # gradient as a gather (`take_along_axis`), bit for bit, ignored labels of any id included.
    rng = np.random.default_rng(1)
    logits = keras.Variable(rng.normal(size=(3, 5, 13)).astype("float32") * 4.0)
    labels = np.array([[5, 3, 0, 0, 0], [12, 2, 4, 3, 1], [7, 7, 0, 9, 0]])
    loss = LabelSmoothedSparseCrossEntropy(label_smoothing=0.1, ignore_class=0, reduction="none")

    def gathered(labels, predictions):
        log_probs = ops.log_softmax(predictions, axis=-1)
        label_log_probs = ops.take_along_axis(log_probs, ops.convert_to_tensor(labels)[..., None], axis=-1)
        nll = -ops.squeeze(label_log_probs, axis=-1)
        losses = 0.9 * nll + 0.1 * -ops.mean(log_probs, axis=-1)
        return ops.where(labels != 0, losses, 0.0)  # no rescaling under reduction="none"

    weights = ops.convert_to_tensor(np.arange(15.0, dtype="float32").reshape((3, 5)))
    ours, ours_gradient = value_and_gradients(lambda: ops.sum(loss(labels, logits) * weights), [logits])
    reference, reference_gradient = value_and_gradients(lambda: ops.sum(gathered(labels, logits) * weights), [logits])
    np.testing.assert_array_equal(
        ops.convert_to_numpy(loss(labels, logits)), ops.convert_to_numpy(gathered(labels, logits))
    )
    assert float(ours) == float(reference)
    np.testing.assert_array_equal(ops.convert_to_numpy(ours_gradient[0]), ops.convert_to_numpy(reference_gradient[0]))


def test_without_smoothing_equals_keras_sparse_cross_entropy_with_ignore_class():
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(3, 5, 11)).astype("float32")
    labels = rng.integers(0, 11, size=(3, 5))
    labels[:, -2:] = 0
    ours = LabelSmoothedSparseCrossEntropy(label_smoothing=0.0, ignore_class=0)(labels, logits)
    reference = keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0)(
        labels, logits
    )
    assert float(ours) == pytest.approx(float(reference), rel=1e-5)


def test_loss_serialises_and_validates():
    loss = LabelSmoothedSparseCrossEntropy(label_smoothing=0.3, ignore_class=0)
    restored = keras.losses.deserialize(keras.losses.serialize(loss))
    assert isinstance(restored, LabelSmoothedSparseCrossEntropy)
    assert (restored.label_smoothing, restored.ignore_class) == (0.3, 0)
    with pytest.raises(ValueError, match="label_smoothing"):
        LabelSmoothedSparseCrossEntropy(label_smoothing=1.0)


def test_a_config_saved_before_a_field_existed_loads_as_that_run_was_trained(tmp_path):
    # A run saved before predicate placeholders, epoch-seeded shuffling and averaging existed
    # (its config.json lacks them) was trained without them, whatever today's defaults are.
    saved = MLEConfig.quick().to_dict()
    for name in ("predicate_placeholders", "epoch_seeded_shuffle", "average_checkpoints", "rerank_min_foreign",
                 "rerank_stated_relations", "constrain_placeholders", "rerank_discriminator_weight", "gold_mentions",
                 "rerank_unstated_as_errors", "rerank_subjects", "rerank_attachments", "rerank_mbr", "rerank_value_shapes",
                 "rerank_foreign_known_only", "rerank_inversions", "rerank_of_phrases", "rerank_opposed"):
        del saved[name]
    (tmp_path / "config.json").write_text(json.dumps(saved), encoding="utf-8")
    config = MLEConfig.load(tmp_path / "config.json")
    assert (config.predicate_placeholders, config.epoch_seeded_shuffle, config.average_checkpoints) == (False, False, 1)
    assert config.rerank_min_foreign is None and MLEConfig().rerank_min_foreign == 6.0
    assert config.rerank_stated_relations is False and MLEConfig().rerank_stated_relations is True
    assert config.constrain_placeholders is False and config.rerank_discriminator_weight == 0.0
    assert config.gold_mentions is False and MLEConfig().gold_mentions is True
    assert config.rerank_unstated_as_errors is False
    assert config.rerank_subjects == "off" and config.rerank_attachments is False and config.rerank_mbr is False
    assert config.rerank_value_shapes is False
    assert config.rerank_foreign_known_only is False and MLEConfig().rerank_foreign_known_only is True
    assert config.rerank_inversions is False and config.rerank_of_phrases is False and config.rerank_opposed is False
    # The release that added the subject check saved it as a flag: True was "errors".
    assert MLEConfig(rerank_subjects=True).rerank_subjects == "errors" and MLEConfig(rerank_subjects=False).rerank_subjects == "off"
    with pytest.raises(ValueError, match="rerank_subjects"):
        MLEConfig(rerank_subjects="sometimes")
    # ... and its config.json loads too (the type check let only strings through).
    for flag, value in ((True, "errors"), (False, "off")):
        (tmp_path / "flag.json").write_text(json.dumps({**MLEConfig.quick().to_dict(), "rerank_subjects": flag}))
        assert MLEConfig.load(tmp_path / "flag.json").rerank_subjects == value
    with pytest.raises(ValueError, match="field 'rerank_subjects': expected a string. Received: 1"):
        MLEConfig.from_dict({"rerank_subjects": 1})
    assert MLEConfig().predicate_placeholders and MLEConfig().epoch_seeded_shuffle  # today's defaults
    # A field the file has keeps its value.
    (tmp_path / "config.json").write_text(json.dumps({**saved, "average_checkpoints": 3}), encoding="utf-8")
    assert MLEConfig.load(tmp_path / "config.json").average_checkpoints == 3


def test_config_round_trip_and_validation(tmp_path):
    config = MLEConfig.quick(epochs=4, holdout_categories=["Airport", "Food"])
    assert config.holdout_categories == ("Airport", "Food")  # a list from JSON or code: a tuple
    config.save(tmp_path / "config.json")
    assert MLEConfig.load(tmp_path / "config.json") == config
    with pytest.raises(ValueError, match=r"field 'holdout_categories': expected a list of strings\. Received: \[1\]"):
        MLEConfig.from_dict({"holdout_categories": [1]})
    assert config.epochs == 4 and config.max_train_entries == MLEConfig.quick().max_train_entries
    with pytest.raises(ValueError, match="decode_method"):
        MLEConfig(decode_method="sample")
    with pytest.raises(ValueError, match="(?i)unknown MLEConfig fields"):
        MLEConfig.from_dict({"epochz": 3})
    with pytest.raises(ValueError, match="rerank_discriminator_weight"):
        MLEConfig(rerank_discriminator_weight=-1.0)
    with pytest.raises(ValueError, match="both break the reranker's ties"):
        MLEConfig(rerank_mbr=True, rerank_discriminator_weight=0.5)
    with pytest.raises(ValueError, match=r"predicate_word_dropout` must be in \[0, 1\)"):
        MLEConfig(predicate_word_dropout=1.0)
    with pytest.raises(ValueError, match="needs epoch_seeded_shuffle=True"):
        MLEConfig(predicate_word_dropout=0.1, epoch_seeded_shuffle=False)
    with pytest.raises(ValueError, match="`triple_orders` must be positive. Received: triple_orders=0"):
        MLEConfig(triple_orders=0)
    with pytest.raises(ValueError, match="triple_orders=2, epoch_seeded_shuffle=False"):
        MLEConfig(triple_orders=2, epoch_seeded_shuffle=False)
    with pytest.raises(ValueError, match="not combined. Received: triple_orders=2, predicate_word_dropout=0.1"):
        MLEConfig(triple_orders=2, predicate_word_dropout=0.1)
    assert MLEConfig.from_dict({"seed": 1}).triple_orders == 1  # a run saved before the field
    with pytest.raises(ValueError, match="permute_placeholders=True, epoch_seeded_shuffle=False"):
        MLEConfig(permute_placeholders=True, epoch_seeded_shuffle=False)
    assert MLEConfig.from_dict({"seed": 1}).permute_placeholders is False
    with pytest.raises(ValueError, match="undoes the other orders. Received: triple_orders=2, canonical_triple_order=True"):
        MLEConfig(triple_orders=2, canonical_triple_order=True)
    assert MLEConfig.from_dict({"seed": 1}).canonical_triple_order is False
    with pytest.raises(ValueError, match="`no_repeat_ngram_size` must be >= 0. Received: no_repeat_ngram_size=-1"):
        MLEConfig(no_repeat_ngram_size=-1)
    assert MLEConfig.from_dict({"seed": 1}).no_repeat_ngram_size == 0
    # A run's preprocessor encodes as its model was trained.
    from onestep_gan.rdf2text import runs
    from onestep_gan.rdf2text.vocabulary import Vocabulary
    vocabulary = Vocabulary(["ENT_1", "PRED_1"])
    assert runs.preprocessor_for(MLEConfig(canonical_triple_order=True), vocabulary).canonical_order is True
    assert runs.preprocessor_for(MLEConfig(), vocabulary).canonical_order is False
    with pytest.raises(ValueError, match=r"`jit_compile` must be one of \['auto', 'off', 'on'\]. Received: jit_compile=True"):
        MLEConfig(jit_compile=True)
    assert [MLEConfig(jit_compile=value).keras_jit_compile for value in ("auto", "on", "off")] == ["auto", True, False]


def test_the_mle_job_refuses_a_discriminator_weight_before_writing_anything(tmp_path):
    """An MLE run has no discriminator to rerank with: the job says so at once, not after training."""
    with pytest.raises(ValueError, match="an MLE run has no discriminator"):
        mle.train_and_evaluate(MLEConfig.quick(rerank_discriminator_weight=0.5), tmp_path / "data", tmp_path / "run")
    assert not (tmp_path / "run").exists()


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("run")
    keras.utils.set_random_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        results = mle.train_and_evaluate(tiny_config(), FIXTURE_2017, run_dir)
    return run_dir, results


def test_train_and_evaluate_writes_every_output(tiny_run):
    run_dir, results = tiny_run
    for name in (
        "config.json", "vocabulary.json", "model.keras", "timing.json", "summary.md",
        "dev_hypotheses.txt", "dev_scores.json", "dev_scores.md",
        "test_hypotheses.txt", "test_scores.json", "test_scores.md", "aligner.json",
    ):
        assert (run_dir / name).is_file(), name
    assert {"slot_error_rate", "wrong_binding_rate"} <= set(results["test"]["all"])
    assert not (run_dir / "backup").exists()  # BackupAndRestore clears it after training
    assert len((run_dir / "test_hypotheses.txt").read_text().splitlines()) == 2
    assert len((run_dir / "dev_hypotheses.txt").read_text().splitlines()) == 1
    assert results["test"]["all"]["count"] == 2
    assert {"seen", "unseen"} <= set(results["test"])
    assert json.loads((run_dir / "test_scores.json").read_text()) == results["test"]
    timing = json.loads((run_dir / "timing.json").read_text())
    assert timing["epochs_trained"] == 1 and timing["train_examples"] == 3
    # One process trained the whole run: its time in fit is the run's (within the callbacks' overhead).
    assert 0 < timing["train_seconds"] <= timing["train_seconds_this_process"]
    assert MLEConfig.load(run_dir / "config.json") == tiny_config()


def test_saved_run_reloads_and_generates(tiny_run):
    run_dir, _ = tiny_run
    model, preprocessor, config = runs.load_run(run_dir)
    assert model.vocabulary_size == preprocessor.vocabulary_size
    assert (preprocessor.max_source_length, preprocessor.max_target_length) == (32, 24)
    assert config == tiny_config()
    texts = inference.generate_texts(
        model, preprocessor,
        [[("Alan_Bean", "birthPlace", "Wheeler,_Texas")], [("Aarhus_Airport", "cityServed", "Aarhus")]],
        method="greedy", batch_size=2,
    )
    assert len(texts) == 2 and all(isinstance(text, str) for text in texts)
    with pytest.raises(ValueError, match="empty"):
        inference.generate_texts(model, preprocessor, [[]])


def _run_outcome(run_dir):
    """Weights of the saved model, hypotheses and scores of a finished MLE run."""
    model = runs.load_model_file(run_dir / runs.MODEL_FILE)
    return (
        [keras.ops.convert_to_numpy(weight) for weight in model.weights],
        [(run_dir / f"{name}_{kind}").read_text() for name in ("dev", "test")
         for kind in ("hypotheses.txt", "scores.json")],
    )


@same_seed_rerun_in_one_process
def test_a_second_run_with_the_same_seed_gives_the_same_weights_and_outputs(tiny_run, tmp_path):
    """Seed for seed on the backend of this process (CI runs it on JAX and PyTorch)."""
    run_dir, _ = tiny_run
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        mle.train_and_evaluate(tiny_config(), FIXTURE_2017, tmp_path / "again")
    weights, outputs = _run_outcome(run_dir)
    again_weights, again_outputs = _run_outcome(tmp_path / "again")
    assert len(weights) == len(again_weights) == 54
    for a, b in zip(weights, again_weights):
        np.testing.assert_array_equal(a, b)
    assert outputs == again_outputs


def test_a_run_with_predicate_placeholders_trains_copies_them_and_generates_with_them(tmp_path):
    config = tiny_config(predicate_placeholders=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        results = mle.train_and_evaluate(config, FIXTURE_2017, tmp_path)
    assert results["test"]["all"]["count"] == 2
    assert json.loads((tmp_path / "config.json").read_text())["predicate_placeholders"] is True
    model, preprocessor, loaded = runs.load_run(tmp_path)  # the saved run decodes with the option
    assert loaded == config and preprocessor.predicate_placeholders
    tokens = preprocessor.vocabulary.tokens
    assert [tokens[index] for index in preprocessor.predicate_placeholder_ids] == ["PRED_1", "PRED_2"]
    assert model.placeholder_ids == preprocessor.copy_ids  # the pointer copies PRED_k too
    for name in ("dev", "test"):
        assert "PRED_" not in (tmp_path / f"{name}_hypotheses.txt").read_text()
    triples = [("Alan_Bean", "birthPlace", "Wheeler,_Texas")]
    (example,) = preprocessor.encode_triples([triples])
    output_ids = keras.ops.convert_to_numpy(inference.generate(model, [example.source_ids], method="greedy"))
    predicate_ids = set(preprocessor.predicate_placeholder_ids)
    # Only the input's predicate placeholder can be written: PRED_2 is not in this source.
    assert set(output_ids[0].tolist()) & predicate_ids <= set(example.source_ids) & predicate_ids
    (text,) = inference.generate_texts(model, preprocessor, [triples], method="greedy")
    assert isinstance(text, str) and "PRED_" not in text


def test_a_run_with_entity_roles_trains_and_its_saved_run_encodes_with_them(tmp_path):
    if keras.backend.backend() != "tensorflow":
        pytest.skip("preprocessing, the same on every backend: run on TensorFlow")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        mle.train_and_evaluate(tiny_config(entity_roles=True), FIXTURE_2017, tmp_path)
    model, preprocessor, loaded = runs.load_run(tmp_path)
    assert loaded.entity_roles and preprocessor.entity_roles
    (example,) = preprocessor.encode_triples([[("Alan_Bean", "birthPlace", "Wheeler,_Texas")]])
    assert preprocessor.vocabulary.decode(example.source_ids)[-1] == "<PATIENT>"
    (text,) = inference.generate_texts(model, preprocessor, [[("Alan_Bean", "birthPlace", "Wheeler,_Texas")]],
                                       method="greedy")
    assert isinstance(text, str)  # one epoch: any words


def test_a_run_with_entity_words_trains_and_its_saved_run_encodes_with_them(tmp_path):
    if keras.backend.backend() != "tensorflow":
        pytest.skip("preprocessing, the same on every backend: run on TensorFlow")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        mle.train_and_evaluate(tiny_config(entity_words=4, predicate_placeholders=False), FIXTURE_2017, tmp_path)
    model, preprocessor, loaded = runs.load_run(tmp_path)
    assert loaded.entity_words == preprocessor.entity_words == 4
    triples = [("Alan_Bean", "birthPlace", "Wheeler,_Texas"), ("Alan_Bean", "occupation", "Test_pilot")]
    (example,) = preprocessor.encode_triples([triples])
    tokens = preprocessor.vocabulary.decode(example.source_ids)
    # Each entity's words (known or <unk>) after its first placeholder only.
    assert len(tokens) == len(preprocessing.delexicalise([webnlg.Triple(*t) for t in triples]).source_tokens) + 7
    assert tokens[:2] == ["<S>", "ENT_1"] and tokens[4] == "<P>" and tokens[-4:-2] == ["<O>", "ENT_3"]
    (text,) = inference.generate_texts(model, preprocessor, [triples], method="greedy")
    assert isinstance(text, str)  # one epoch: any words


def fixture_with_an_airport_dev_entry(tmp_path):
    """A copy of the 2017 fixture whose dev also holds an entry of a train category (Airport;
    the fixture's dev holds Food alone, which train lacks), for runs that hold Airport out."""
    data = tmp_path / "2017"
    shutil.copytree(FIXTURE_2017, data)
    shutil.copy(data / "train/1triples/1triple_Airport_train_fixture.xml", data / "dev/1triples/1triple_Airport_dev_fixture.xml")
    return data


def test_a_run_with_held_out_categories_trains_without_them_and_scores_them_as_unseen(tmp_path, caplog):
    """`holdout_categories`: no word, example or aligner cue of a held-out category reaches the run;
    its dev entries score as unseen and do not choose the checkpoint; `decode_run` keeps all that."""
    if keras.backend.backend() != "tensorflow":
        pytest.skip("data handling, the same on every backend: run on TensorFlow")
    data = fixture_with_an_airport_dev_entry(tmp_path)
    config = tiny_config(holdout_categories=("Airport",))
    with warnings.catch_warnings(), caplog.at_level(logging.INFO, logger="onestep_gan.rdf2text.mle"):
        warnings.simplefilter("ignore", UserWarning)
        results = mle.train_and_evaluate(config, data, tmp_path / "run")
    # Train keeps the Astronaut entry (1 text); dev's loss reads the Food entry's 1 text alone.
    assert "1 train and 1 dev (loss) examples" in caplog.text
    _, preprocessor, loaded = runs.load_run(tmp_path / "run")
    assert loaded.holdout_categories == ("Airport",)
    assert "born" in preprocessor.vocabulary and "serves" not in preprocessor.vocabulary
    train = runs.load_split("train", data, holdout_categories=("Airport",))
    assert [entry.category for entry in train] == ["Astronaut"]
    assert runs.load_aligner(tmp_path / "run").cues == SlotAligner.from_entries(train).cues
    # dev: Food seen, Airport (its one entry with texts) unseen; test: Airport held out, Politician unseen.
    assert (results["dev"]["seen"]["count"], results["dev"]["unseen"]["count"]) == (1, 1)
    assert "seen" not in results["test"] and results["test"]["unseen"]["count"] == 2
    assert mle.decode_run(tmp_path / "run", data) == {"dev": results["dev"], "test": results["test"]}


def test_the_training_batches_carry_the_predicate_word_dropout():
    """`mle.training_dataset`, what the MLE job fits: with the dropout, UNK in the sources at
    predicate words only; without, the sources as encoded."""
    from onestep_gan.rdf2text.preprocessor import TextPreprocessor

    entries = [entry for entry in runs.load_split("train", FIXTURE_2017) if entry.texts]
    preprocessor = TextPreprocessor.build(entries, 64, 64, predicate_placeholders=True)
    examples = preprocessor.encode_entries(entries, for_training=True)

    def sources(dropout):
        config = tiny_config(predicate_word_dropout=dropout, epochs=2, batch_size=len(examples))
        dataset = mle.training_dataset(config, preprocessor, examples)
        rows = [row for inputs, _ in dataset for row in np.asarray(inputs["source"]).tolist()]
        return [tuple(token for token in row if token != preprocessor.pad_id) for row in rows]

    encoded = sorted(example.source_ids for example in examples) * 2  # two epochs
    assert sorted(sources(0.0)[: len(examples)]) + sorted(sources(0.0)[len(examples):]) == encoded
    masks = {example.source_ids: preprocessor.predicate_word_mask(example.source_ids) for example in examples}
    dropped = sources(0.9)
    unk = preprocessor.unk_id
    assert any(unk in row for row in dropped)
    for row in dropped:  # each row is an encoded source with UNK at some of its predicate words
        (original,) = [ids for ids, flags in masks.items() if len(ids) == len(row) and all(
            new == old or (flag and new == unk) for new, old, flag in zip(row, ids, flags))]
        assert original


def test_the_training_batches_renumber_entity_placeholders_only():
    """`mle.training_dataset` with `permute_placeholders`: each training pair is an encoded pair
    with its entity placeholders renamed by one permutation (source and text alike); predicate
    placeholders and words keep their ids."""
    from onestep_gan.rdf2text.preprocessor import TextPreprocessor

    entries = [entry for entry in runs.load_split("train", FIXTURE_2017) if entry.texts]
    preprocessor = TextPreprocessor.build(entries, 64, 64, predicate_placeholders=True)
    examples = preprocessor.encode_entries(entries, for_training=True)
    entity_ids = set(preprocessor.placeholder_ids)
    config = tiny_config(permute_placeholders=True, epochs=3, batch_size=len(examples), seed=1234)
    pad = preprocessor.pad_id
    drawn = [
        (tuple(t for t in source if t != pad), tuple(t for t in text if t != pad)[:-1])  # less EOS
        for inputs, labels in mle.training_dataset(config, preprocessor, examples)
        for source, text in zip(np.asarray(inputs["source"]).tolist(), np.asarray(labels).tolist())
    ]
    assert len(drawn) == 3 * len(examples)
    renamed = 0
    for source, text in drawn:
        matches = []
        for example in examples:
            if len(example.source_ids) != len(source) or len(example.target_ids) != len(text):
                continue
            mapping, ok = {}, True
            for old, new in zip(example.source_ids + example.target_ids, source + text):
                if old in entity_ids:
                    ok = ok and new in entity_ids and mapping.setdefault(old, new) == new
                else:
                    ok = ok and new == old
            if ok and len(set(mapping.values())) == len(mapping):
                matches.append(mapping)
        assert matches, "a training pair that is no renumbered encoded pair"
        renamed += any(old != new for old, new in matches[0].items())
    assert renamed > len(drawn) // 2  # most pairs get other numbers than their own


def test_the_training_batches_carry_each_text_in_one_of_its_triple_orders():
    """`mle.training_dataset` with `triple_orders`: each training pair is one text as encoded from
    the corpus's order or from one of the reordered entries, source and text from the same one."""
    from onestep_gan.rdf2text import triple_orders
    from onestep_gan.rdf2text.preprocessor import TextPreprocessor

    entries = [entry for entry in runs.load_split("train", FIXTURE_2017) if entry.texts]
    preprocessor = TextPreprocessor.build(entries, 64, 64, predicate_placeholders=True)
    examples = preprocessor.encode_entries(entries, for_training=True)
    encodings = [examples] + [
        preprocessor.encode_entries(triple_orders.reorder_triples(entries, 1234, variant), for_training=True)
        for variant in (1, 2, 3, 4)
    ]
    allowed = {(e.source_ids, e.target_ids) for encoded in encodings for e in encoded}
    assert len(allowed) > len(examples)  # the fixture has entries whose orders differ

    def pairs(orders, epochs):
        config = tiny_config(triple_orders=orders, epochs=epochs, batch_size=len(examples), seed=1234)
        dataset = mle.training_dataset(config, preprocessor, examples, train_entries=entries)
        pad = preprocessor.pad_id
        return [
            (tuple(t for t in source if t != pad), tuple(t for t in text if t != pad)[:-1])  # less EOS
            for inputs, labels in dataset
            for source, text in zip(np.asarray(inputs["source"]).tolist(), np.asarray(labels).tolist())
        ]

    assert sorted(pairs(1, 1)) == sorted((e.source_ids, e.target_ids) for e in examples)
    reordered = pairs(5, 4)
    assert len(reordered) == 4 * len(examples) and set(reordered) <= allowed
    assert not set(reordered) <= {(e.source_ids, e.target_ids) for e in examples}
    with pytest.raises(ValueError, match="reorders the train entries. Received: train_entries=None"):
        mle.training_dataset(tiny_config(triple_orders=2), preprocessor, examples)


def test_rerunning_a_finished_run_whose_vocabulary_this_code_would_build_otherwise_trains_afresh(tiny_run, tmp_path):
    # A finished run (no backup) rerun trains again from scratch, with the vocabulary this code builds, so no
    # trained model is read with other ids. An interrupted one is refused instead, naming vocabulary.json
    # (tests/test_cli_errors.py, with the settings named first when they differ).
    import shutil
    run_dir = tmp_path / "run"
    shutil.copytree(tiny_run[0], run_dir)
    vocabulary_file = run_dir / runs.VOCABULARY_FILE
    built = vocabulary_file.read_text(encoding="utf-8")
    payload = json.loads(built)
    tokens = payload["tokens"]
    tokens[-1], tokens[-2] = tokens[-2], tokens[-1]  # what another tokenisation's counts do
    vocabulary_file.write_text(json.dumps(payload), encoding="utf-8")
    mle.train_and_evaluate(tiny_config(), FIXTURE_2017, run_dir)
    from onestep_gan.rdf2text.vocabulary import Vocabulary
    assert Vocabulary.load(vocabulary_file).tokens == json.loads(built)["tokens"]
    assert (run_dir / runs.SUMMARY_FILE).is_file()


def test_a_backup_resumes_under_other_decoding_settings_only():
    """Decoding and reranking act after training: a run resumes with other values (a newer release
    adding a decoding setting must not refuse an unfinished run); a training setting still differs."""
    config = MLEConfig.quick()
    decoding = dataclasses.replace(config, beam_width=3, rerank=False, rerank_min_foreign=None,
                                   rerank_stated_relations=False, length_penalty=1.0, decode_method="greedy",
                                   constrain_placeholders=not config.constrain_placeholders,
                                   rerank_discriminator_weight=0.5)
    assert mle._resume_metadata(decoding) == mle._resume_metadata(config)
    assert mle._resume_metadata(dataclasses.replace(config, epochs=config.epochs + 1)) != mle._resume_metadata(config)
    assert mle._resume_metadata(dataclasses.replace(config, average_checkpoints=2)) != mle._resume_metadata(config)
    # What jit_compile changes in training is the batches' widths: a backup of fixed-width batches
    # does not resume with variable ones (Keras resolves "auto" by backend and devices), nor back.
    assert mle._resume_metadata(dataclasses.replace(config, jit_compile="on")) == mle._resume_metadata(config)
    assert mle._resume_metadata(config, fixed_shapes=True) != mle._resume_metadata(config)


def _keras_compiles_by_default():
    """What Keras' `compile(jit_compile="auto")` resolves to here: on with JAX and on a TensorFlow GPU."""
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        return bool([device for device in tf.config.list_physical_devices() if device.device_type != "CPU"])
    return keras.backend.backend() == "jax"


@pytest.mark.parametrize("jit_compile", ["on", "off", "auto"])
def test_a_compiled_train_step_trains_on_batches_of_fixed_widths(jit_compile, tmp_path, monkeypatch):
    """Train and dev batches come padded to their bucket's width exactly when the train step is
    compiled (XLA on TensorFlow, also on its CPU with "on"; `jax.jit`), and the run completes."""
    if keras.backend.backend() == "torch" and jit_compile == "on":
        pytest.skip("torch.compile of the train step takes minutes on CPU")
    if keras.backend.backend() == "jax" and jit_compile == "off":
        pytest.skip("an uncompiled JAX step is eager: slow, and not what JAX users run")
    from onestep_gan.rdf2text import datasets

    seen = []
    make_training_dataset = datasets.make_training_dataset

    def recording(*args, **kwargs):
        seen.append(kwargs.get("fixed_shapes", False))
        return make_training_dataset(*args, **kwargs)

    monkeypatch.setattr(datasets, "make_training_dataset", recording)
    results = mle.train_and_evaluate(tiny_config(jit_compile=jit_compile), FIXTURE_2017, tmp_path / "run")
    fixed_shapes = {"on": True, "off": False, "auto": _keras_compiles_by_default()}[jit_compile]
    # The step count is shape-blind; the dev and train batches follow the compiled step.
    assert seen == [False, fixed_shapes, fixed_shapes]
    assert results["timing"]["epochs_trained"] == 1
    assert MLEConfig.load(tmp_path / "run" / runs.CONFIG_FILE).jit_compile == jit_compile


def test_the_best_epoch_skips_a_diverged_epochs_nan_dev_loss():
    """As ModelCheckpoint(save_best_only=True) chose it: np.argmin would pick the NaN epoch, whose
    weights then joined the averaging window."""
    logs = [{"val_loss": 2.0}, {"val_loss": 1.0}, {"val_loss": float("nan")}, {"val_loss": 1.5}, {}]
    assert mle.best_epoch_of(logs) == (2, 1.0)
    assert mle.best_epoch_of([{"val_loss": float("nan")}, {}]) == (None, None)


def test_a_negative_early_stopping_patience_is_refused_before_training():
    with pytest.raises(ValueError, match=r"early_stopping_patience` must be >= 0.*Received: early_stopping_patience=-3"):
        tiny_config(early_stopping_patience=-3)


@pytest.mark.slow
def test_a_new_run_in_a_used_folder_leaves_no_epoch_weights_of_the_old_run(tmp_path):
    """`decode` averages whenever `epoch_weights/` exists: a run trained without averaging in the
    folder of one with it must not leave the old run's epoch files there."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        mle.train_and_evaluate(tiny_config(average_checkpoints=2, epochs=2), FIXTURE_2017, tmp_path)
        assert (tmp_path / averaging.EPOCH_WEIGHTS_DIR).is_dir()
        mle.train_and_evaluate(tiny_config(average_checkpoints=1, epochs=2), FIXTURE_2017, tmp_path)
    assert not (tmp_path / averaging.EPOCH_WEIGHTS_DIR).exists()
