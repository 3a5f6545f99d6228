"""The adversarial stage on the hand-written fixture corpus: every part runs and writes its outputs;
the `chain` command and what reads the stage's run folder (`generate`, `decode`)."""

import contextlib
import dataclasses
import io
import json
import pathlib
import shutil
import warnings

import keras
import numpy as np
import pytest
from keras import ops

from onestep_gan.rdf2text import adversarial, cli, inference, mle, runs
from onestep_gan.rdf2text.config import AdversarialConfig
from onestep_gan.rdf2text.discriminator import TextDiscriminator
from onestep_gan.rdf2text.sampling import TextSampler
from onestep_gan.rdf2text.transformer import TransformerGenerator
from tests.conftest import same_seed_rerun_in_one_process
from tests.test_mle import FIXTURE_2017, TINY_SETTINGS, tiny_config


def tiny_parts(vocabulary_size=12):
    generator = TransformerGenerator(
        vocabulary_size, max_source_length=8, max_target_length=6, model_dim=16, num_heads=2,
        feedforward_dim=16, num_encoder_layers=1, num_decoder_layers=1, dropout=0.0,
    )
    discriminator = TextDiscriminator(
        vocabulary_size, max_source_length=8, max_target_length=6, model_dim=16, num_heads=2,
        feedforward_dim=16, num_layers=1, dropout=0.0,
    )
    return generator, TextSampler(generator, max_length=6, seed=0), discriminator


def test_mle_term_matches_teacher_forced_loss():
    generator, _, _ = tiny_parts()
    source = ops.convert_to_tensor([[4, 5, 6, 0], [7, 8, 0, 0]], dtype="int32")
    real = ops.convert_to_tensor([[9, 10, 3, 0, 0, 0], [11, 3, 0, 0, 0, 0]], dtype="int32")
    term = adversarial.mle_term(generator, weight=2.0, label_smoothing=0.0)
    decoder_input = ops.convert_to_tensor([[2, 9, 10, 3, 0, 0], [2, 11, 3, 0, 0, 0]], dtype="int32")
    logits = generator({"source": source, "target": decoder_input}, training=True)
    log_probs = ops.convert_to_numpy(ops.log_softmax(logits, axis=-1))
    tokens = [(0, 0, 9), (0, 1, 10), (0, 2, 3), (1, 0, 11), (1, 1, 3)]
    expected = -np.mean([log_probs[b, t, k] for b, t, k in tokens])
    assert float(term(source, real, None)) == pytest.approx(2.0 * expected, rel=1e-5)


def test_pretrainer_counts_accuracy_with_the_loss_orientation():
    _, sampler, discriminator = tiny_parts()
    pretrainer = adversarial.DiscriminatorPretrainer(sampler, discriminator, loss="hinge")
    source = ops.convert_to_tensor([[4, 5, 0, 0]] * 4, dtype="int32")
    real = ops.convert_to_tensor([[9, 3, 0, 0, 0, 0]] * 4, dtype="int32")
    pretrainer.compute_loss(source, real, pretrainer(source))
    accuracies = {name: float(tracker.result()) for name, tracker in pretrainer.trackers.items()}
    real_scores = ops.convert_to_numpy(discriminator([source, real]))[:, 0]
    # Hinge scores real LOW: a real pair is classified correctly when its score is negative.
    assert accuracies["real_accuracy"] == pytest.approx(np.mean(real_scores < 0))
    assert accuracies["accuracy"] == pytest.approx(
        np.mean([accuracies["real_accuracy"], accuracies["fake_accuracy"], accuracies["mismatch_accuracy"]])
    )
    with pytest.raises(ValueError, match="pointwise loss .* Received: loss='relativistic'"):
        adversarial.DiscriminatorPretrainer(sampler, discriminator, loss="relativistic")
    # Least squares codes real 1 and fake 0: a pair reads as real above 0.5, not above 0.
    least_squares = adversarial.DiscriminatorPretrainer(sampler, discriminator, loss="least_squares")
    fixed = {"real": [0.3, 0.7, 0.7, 0.7], "mismatch": [0.2, 0.2, 0.6, 0.6], "fake": [0.1, 0.1, 0.1, 0.9]}
    least_squares._scores = lambda source_ids, texts, training: [
        ops.convert_to_tensor(values, "float32") for values in fixed.values()
    ][: len(texts)]
    least_squares.compute_loss(source[:4], real[:4], least_squares(source[:4]))
    got = {name: float(least_squares.trackers[f"{name}_accuracy"].result()) for name in fixed}
    assert got == {"real": 0.75, "mismatch": 0.5, "fake": 0.75}


def test_mismatched_vocabulary_is_refused_on_load(tmp_path):
    generator, _, _ = tiny_parts(12)
    _, _, discriminator = tiny_parts(13)
    generator.save(tmp_path / runs.GENERATOR_FILE)
    discriminator([ops.zeros((1, 4), "int32"), ops.zeros((1, 6), "int32")])
    discriminator.save(tmp_path / runs.DISCRIMINATOR_FILE)
    with pytest.raises(ValueError, match="vocabulary_size=12, discriminator vocabulary_size=13"):
        adversarial.load_gan_parts(tmp_path)


def _train_adversarial(mle_run, run_dir):
    """The stage `chain --quick` runs (`AdversarialConfig.quick()`), through the library."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return adversarial.train_adversarial(AdversarialConfig.quick(), mle_run, run_dir, FIXTURE_2017)


# `tests.test_mle.tiny_config` as flags of `train` / `chain --quick`.
TINY_MLE_FLAGS = [item for name, value in TINY_SETTINGS.items() for item in (f"--{name.replace('_', '-')}", str(value))]


@pytest.fixture(scope="module")
def adversarial_run(tmp_path_factory):
    """`onestep-gan chain --quick` with a tiny MLE model on the fixture corpus: a tiny MLE run, then
    the quick adversarial stage from it (one chain serves the stage's tests and the CLI's):
    `(mle run, gan run, summary, what the command printed)`."""
    root = tmp_path_factory.mktemp("chain")
    printed = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(printed):
        warnings.simplefilter("ignore", UserWarning)
        argv = ["chain", "--quick", "--data-dir", str(FIXTURE_2017), "--run-dir", str(root)] + TINY_MLE_FLAGS
        assert cli.main(argv) == 0
    summary = json.loads((root / "gan" / "adversarial_summary.json").read_text())
    return root / "mle", root / "gan", summary, printed.getvalue()


@pytest.mark.slow
def test_train_adversarial_end_to_end(adversarial_run):
    mle_run, run, summary, printed = adversarial_run
    assert (mle_run / "model.keras").is_file() and "MLE+GAN" in printed  # `chain` prints the comparison
    assert json.loads((mle_run / "config.json").read_text())["model_dim"] == 16  # the flags reached the MLE job
    for name in ("generator.keras", "discriminator.keras", "adversarial_test_hypotheses.txt",
                 "adversarial_test_scores.json", "comparison.md", "adversarial_summary.json", "adversarial_log.csv"):
        assert (run / name).is_file(), name
    assert summary["timing"]["adversarial_steps"] == AdversarialConfig.quick().adversarial_steps
    assert set(summary["discriminator"]) == {
        "before_pretraining", "after_corruption_pretraining", "after_pretraining", "after_adversarial"
    }
    assert 0 < summary["timing"]["corruption_pretrain_seconds"] < summary["timing"]["pretrain_seconds"]
    assert "| BLEU-2017 (all) |" in (run / "comparison.md").read_text()
    assert json.loads((run / "adversarial_summary.json").read_text())["mle"] is not None
    generator, discriminator = adversarial.load_gan_parts(run)
    assert generator.vocabulary_size == discriminator.vocabulary_size


@pytest.mark.slow
def test_the_stage_on_a_run_with_held_out_categories_scores_them_as_unseen(tmp_path):
    """The stage reads its MLE run's `holdout_categories`: the same dev and test entries, marked alike."""
    if keras.backend.backend() != "tensorflow":
        pytest.skip("data handling, the same on every backend: run on TensorFlow")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        mle_results = mle.train_and_evaluate(tiny_config(holdout_categories=("Airport",)), FIXTURE_2017, tmp_path / "mle")
    summary = _train_adversarial(tmp_path / "mle", tmp_path / "gan")
    dev = json.loads((tmp_path / "gan" / "adversarial_dev_scores.json").read_text())
    test = json.loads((tmp_path / "gan" / "adversarial_test_scores.json").read_text())
    # test: Airport held out, Politician unseen; dev: Food, a category the run did not hold out.
    assert {name: scores["count"] for name, scores in test.items()} == {"all": 2, "unseen": 2}
    assert {name: scores["count"] for name, scores in dev.items()} == {"all": 1, "seen": 1}
    assert summary["mle"] == mle_results["test"]  # the MLE run's own scores, on the same entries


def test_generate_and_decode_read_the_chains_adversarial_run(adversarial_run, tmp_path, monkeypatch, capsys):
    """`generate` on the stage's run folder; `decode` re-decodes it (its generator as it is, no
    averaging; the stage's report names and summary rewritten), here with the stage's discriminator
    breaking the reranker's ties, and saves the setting, which `generate` then uses; an MLE run has
    no discriminator."""
    mle_run, fixture_run, *_ = adversarial_run
    run = shutil.copytree(fixture_run, tmp_path / "gan")  # the other tests read the fixture's as the stage left it
    input_file = tmp_path / "input.txt"
    input_file.write_text("Alan_Bean | birthPlace | Wheeler,_Texas\n")
    assert cli.main(["generate", "--input", str(input_file), "--run-dir", str(run)]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1

    preferences = []
    original = inference.decode_examples
    monkeypatch.setattr(inference, "decode_examples",
                        lambda *args, **kwargs: preferences.append(kwargs["preference"]) or original(*args, **kwargs))
    hypotheses = run / "adversarial_dev_hypotheses.txt"
    hypotheses.unlink()
    (run / "comparison.md").write_text("stale\n")  # the stage's table, rewritten with the new scores
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert cli.main(["decode", "--run-dir", str(run), "--data-dir", str(FIXTURE_2017),
                         "--rerank-discriminator-weight", "0.5"]) == 0
    assert hypotheses.is_file() and not (run / "dev_hypotheses.txt").exists()
    assert json.loads((run / "config.json").read_text())["rerank_discriminator_weight"] == 0.5
    test_bleu = json.loads((run / "adversarial_test_scores.json").read_text())["all"]["bleu_2017"]
    summary = json.loads((run / "adversarial_summary.json").read_text())
    assert summary["adversarial"]["all"]["bleu_2017"] == test_bleu and summary["mle"] is not None
    assert f"| BLEU-2017 (all) | {summary['mle']['all']['bleu_2017']:.2f} | {test_bleu:.2f} |" in (
        (run / "comparison.md").read_text()
    )
    capsys.readouterr()
    assert cli.main(["generate", "--input", str(input_file), "--run-dir", str(run)]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1
    assert len(preferences) == 3 and all(callable(preference) for preference in preferences)
    assert cli.main(["generate", "--input", str(input_file), "--run-dir", str(mle_run),
                     "--rerank-discriminator-weight", "0.5"]) == 2
    error = capsys.readouterr().err
    assert len(error.strip().splitlines()) == 1 and "discriminator.keras: no such file" in error


def _gan_outcome(run):
    generator, discriminator = adversarial.load_gan_parts(run)
    summary = json.loads((run / "adversarial_summary.json").read_text())
    return (
        [ops.convert_to_numpy(weight) for model in (generator, discriminator) for weight in model.weights],
        [(run / f"adversarial_{name}_hypotheses.txt").read_text() for name in ("dev", "test")],
        summary["discriminator"],
        (run / "adversarial_log.csv").read_bytes(),  # bytes: CSVLogger ends its lines with CRLF
    )


@pytest.mark.slow
@same_seed_rerun_in_one_process
def test_a_second_stage_with_the_same_seed_gives_the_same_weights_and_outputs(adversarial_run, tmp_path):
    """Seed for seed on the backend of this process (CI runs it on JAX and PyTorch): the
    Gumbel noise, dropout and batches of a second stage from the same MLE run are the same."""
    mle_run, run, *_ = adversarial_run
    _train_adversarial(mle_run, tmp_path / "again")
    weights, *outputs = _gan_outcome(run)
    again_weights, *again_outputs = _gan_outcome(tmp_path / "again")
    assert len(weights) == len(again_weights) > 100
    for a, b in zip(weights, again_weights):
        np.testing.assert_array_equal(a, b)
    assert outputs == again_outputs


def test_save_gan_parts_keeps_the_last_good_epoch_after_divergence(tmp_path):
    generator, _, discriminator = tiny_parts()
    discriminator([ops.zeros((1, 4), "int32"), ops.zeros((1, 6), "int32")])

    class Divergence:
        diverged = None

    divergence = Divergence()
    saver = adversarial.SaveGANParts(tmp_path, generator, discriminator, divergence)
    saver.on_epoch_end(0)
    saved = (tmp_path / runs.GENERATOR_FILE).read_bytes()
    generator.embedding_matrix.assign(generator.embedding_matrix * float("nan"))
    divergence.diverged = {"epoch": 1}
    saver.on_epoch_end(1)
    assert (tmp_path / runs.GENERATOR_FILE).read_bytes() == saved


def test_hard_negatives_fall_back_to_another_triplesets_text_and_are_scored_per_type():
    _, sampler, discriminator = tiny_parts()
    hard_negatives = adversarial.HardNegatives(placeholder_ids=[4, 5, 6], boundary_ids=[7], pad_id=0)
    source = ops.convert_to_tensor([[4, 5, 0, 0], [6, 8, 0, 0]], dtype="int32")
    real = ops.convert_to_tensor([[4, 9, 5, 3, 0, 0], [6, 9, 3, 0, 0, 0]], dtype="int32")
    negatives = {kind: (ops.convert_to_numpy(texts), ops.convert_to_numpy(valid))
                 for kind, (texts, valid) in hard_negatives(source, real).items()}
    np.testing.assert_array_equal(negatives["swap"][0], [[5, 9, 4, 3, 0, 0], [4, 9, 5, 3, 0, 0]])
    assert negatives["swap"][1].tolist() == [True, False]  # row 1 has one placeholder: row 0's text
    pretrainer = adversarial.DiscriminatorPretrainer(sampler, discriminator, hard_negatives=hard_negatives)
    pretrainer.compute_loss(source, real, pretrainer(source))
    swap_scores = ops.convert_to_numpy(discriminator([source, negatives["swap"][0]]))[:, 0]
    # Hinge: a negative is caught when its score is positive; only valid rows count.
    assert float(pretrainer.trackers["swap_accuracy"].result()) == pytest.approx(float(swap_scores[0] > 0))
    term = adversarial.hard_negative_term(discriminator, hard_negatives, "hinge", weight=2.0)
    assert float(term(source, real, None)) > 0


def test_pretrainer_without_samples_never_samples_and_scores_real_against_corruptions():
    _, sampler, discriminator = tiny_parts()

    def no_sampling(*args, **kwargs):
        raise AssertionError("the sampler ran")

    sampler.call = no_sampling
    hard_negatives = adversarial.HardNegatives(placeholder_ids=[4, 5, 6], boundary_ids=[7], pad_id=0)
    pretrainer = adversarial.DiscriminatorPretrainer(
        sampler, discriminator, loss="hinge", hard_negatives=hard_negatives, samples=False
    )
    assert "fake_accuracy" not in pretrainer.trackers
    source = ops.convert_to_tensor([[4, 5, 0, 0], [6, 4, 0, 0]], dtype="int32")
    real = ops.convert_to_tensor([[4, 9, 5, 3, 0, 0], [6, 9, 4, 3, 0, 0]], dtype="int32")
    loss = float(pretrainer.compute_loss(source, real, pretrainer(source)))

    def scores(text):
        return ops.convert_to_numpy(discriminator([source, text]))[:, 0]

    negatives = [ops.roll(real, shift=1, axis=0)] + [texts for texts, _ in hard_negatives(source, real).values()]
    real_scores, negative_scores = scores(real), np.concatenate([scores(text) for text in negatives])
    # Hinge: D pushes real scores below -1 and negative scores above +1.
    expected = np.mean(np.maximum(0.0, 1.0 + real_scores)) + np.mean(np.maximum(0.0, 1.0 - negative_scores))
    assert loss == pytest.approx(expected, rel=1e-5)
    assert float(pretrainer.trackers["accuracy"].result()) == pytest.approx(
        np.mean(np.concatenate([real_scores < 0, scores(negatives[0]) > 0]))
    )
    pretrainer.compile(optimizer=keras.optimizers.Adam(1e-3))
    history = pretrainer.fit(source, real, batch_size=2, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])


@pytest.mark.parametrize("samples", [False, True])
def test_a_shared_source_encoding_scores_every_text_as_separate_calls_do(samples, monkeypatch):
    """`shared_source` encodes a batch's triplesets once for all its texts (real, mismatched,
    samples, hard negatives); without dropout the loss and every accuracy are those of one D
    call a text, and so is the fine-tuning term."""
    _, sampler, discriminator = tiny_parts()
    hard_negatives = adversarial.HardNegatives(placeholder_ids=[4, 5, 6], boundary_ids=[7], pad_id=0)
    source = ops.convert_to_tensor([[4, 5, 0, 0], [6, 4, 0, 0], [5, 6, 0, 0]], dtype="int32")
    real = ops.convert_to_tensor([[4, 9, 5, 3, 0, 0], [6, 9, 4, 3, 0, 0], [6, 7, 5, 3, 0, 0]], dtype="int32")
    encodings = []
    encode = TextDiscriminator.encode
    monkeypatch.setattr(TextDiscriminator, "encode",
                        lambda self, *args, **kwargs: encodings.append(1) or encode(self, *args, **kwargs))
    results = {}
    fake = ops.stop_gradient(sampler(source, training=False)) if samples else None  # one draw for both
    for shared in (False, True):
        pretrainer = adversarial.DiscriminatorPretrainer(
            sampler, discriminator, hard_negatives=hard_negatives, samples=samples, shared_source=shared
        )
        encodings.clear()
        loss = float(pretrainer.compute_loss(source, real, fake))
        results[shared] = (loss, len(encodings), {name: float(tracker.result()) for name, tracker in pretrainer.trackers.items()})
    texts = 2 + int(samples) + 3  # real, mismatched, (samples), swap, move, drop
    assert (results[False][1], results[True][1]) == (texts, 1)
    assert results[True][0] == pytest.approx(results[False][0], rel=1e-6)
    assert results[True][2] == pytest.approx(results[False][2])
    terms = [adversarial.hard_negative_term(discriminator, hard_negatives, "hinge", 2.0, shared_source=shared)
             for shared in (False, True)]
    encodings.clear()
    separate = float(terms[0](source, real, None))
    shared = float(terms[1](source, real, None))
    assert len(encodings) == 2 + 1 and shared == pytest.approx(separate, rel=1e-6)


def test_the_stage_builds_its_pretrainers_and_d_term_with_the_configs_shared_source(monkeypatch):
    _, sampler, discriminator = tiny_parts()
    hard_negatives = adversarial.HardNegatives(placeholder_ids=[4, 5, 6], boundary_ids=[7], pad_id=0)
    assert AdversarialConfig().shared_source_encoding is False
    for shared in (False, True):
        config = AdversarialConfig.quick(shared_source_encoding=shared)
        for samples in (False, True):
            pretrainer = adversarial.build_pretrainer(config, sampler, discriminator, hard_negatives, samples=samples)
            assert (pretrainer.shared_source, pretrainer.samples) == (shared, samples)
            assert pretrainer.optimizer is not None
        calls = []
        score_texts = TextDiscriminator.score_texts
        monkeypatch.setattr(TextDiscriminator, "score_texts",
                            lambda self, *args, **kwargs: calls.append(1) or score_texts(self, *args, **kwargs))
        gan = adversarial.build_one_step_gan(config, sampler, discriminator, hard_negatives)
        source = ops.convert_to_tensor([[4, 5, 0, 0], [6, 4, 0, 0]], dtype="int32")
        real = ops.convert_to_tensor([[4, 9, 5, 3, 0, 0], [6, 9, 4, 3, 0, 0]], dtype="int32")
        gan.discriminator_extra_loss(source, real, None)
        assert len(calls) == int(shared)
        monkeypatch.undo()


def test_pretrainer_evaluates_and_fits_a_fresh_discriminator_with_dropout():
    """D first runs in `compute_loss`, after Keras' symbolic build: on JAX its variables (the
    dropout seeds) must exist before the stateless step, or evaluate fails."""
    generator = TransformerGenerator(
        12, max_source_length=8, max_target_length=6, model_dim=16, num_heads=2,
        feedforward_dim=16, num_encoder_layers=1, num_decoder_layers=1, dropout=0.1,
    )
    discriminator = TextDiscriminator(
        12, max_source_length=8, max_target_length=6, model_dim=16, num_heads=2,
        feedforward_dim=16, num_layers=1, dropout=0.1,
    )
    pretrainer = adversarial.DiscriminatorPretrainer(TextSampler(generator, max_length=6, seed=0), discriminator)
    pretrainer.compile(optimizer=keras.optimizers.Adam(1e-3))
    source = np.array([[4, 5, 0, 0]] * 4, dtype="int32")
    real = np.array([[9, 3, 0, 0, 0, 0]] * 4, dtype="int32")
    results = pretrainer.evaluate(source, real, batch_size=4, verbose=0, return_dict=True)
    assert 0.0 <= results["accuracy"] <= 1.0 and np.isfinite(results["loss"])
    history = pretrainer.fit(source, real, batch_size=4, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])


def test_pretrainer_never_trains_a_fresh_generator():
    """The sampler's generator stays frozen even when it is built only inside the pretrainer:
    its blocks are created after `sampler.trainable = False`, and Keras' setter reaches only
    the sublayers that exist (a fresh generator's variables were in the optimizer's list)."""
    generator, sampler, discriminator = tiny_parts()
    pretrainer = adversarial.DiscriminatorPretrainer(sampler, discriminator, samples=True)
    pretrainer.compile(optimizer=keras.optimizers.Adam(1e-2))
    source = np.array([[4, 5, 0, 0], [6, 4, 0, 0]], dtype="int32")
    real = np.array([[4, 9, 5, 3, 0, 0], [6, 9, 4, 3, 0, 0]], dtype="int32")
    pretrainer.fit(source, real, batch_size=2, epochs=1, verbose=0)
    before = [np.array(v) for v in generator.weights]
    trained = {id(v) for v in pretrainer.trainable_variables}
    assert generator.weights and not any(id(v) in trained for v in generator.weights)
    assert {id(v) for v in discriminator.trainable_variables} <= trained
    pretrainer.fit(source, real, batch_size=2, epochs=2, verbose=0)
    for old, variable in zip(before, generator.weights):
        np.testing.assert_array_equal(old, np.array(variable))


def test_pretrainer_fit_traces_its_step_once():
    """`compile` builds the optimizer (and the generator, if fresh): when the first
    trace of a step creates variables, TensorFlow traces it twice (10-25 s of a quick
    adversarial stage on 2 cores)."""
    generator, sampler, discriminator = tiny_parts()
    generator.build()
    hard_negatives = adversarial.HardNegatives(placeholder_ids=[4, 5, 6], boundary_ids=[7], pad_id=0)
    pretrainer = adversarial.DiscriminatorPretrainer(
        sampler, discriminator, hard_negatives=hard_negatives, samples=False
    )
    pretrainer.compile(optimizer=keras.optimizers.Adam(1e-3))
    traces, compute_loss = [], pretrainer.compute_loss
    pretrainer.compute_loss = lambda *args, **kwargs: traces.append(1) or compute_loss(*args, **kwargs)
    source = np.array([[4, 5, 0, 0], [6, 4, 0, 0]], dtype="int32")
    real = np.array([[4, 9, 5, 3, 0, 0], [6, 9, 4, 3, 0, 0]], dtype="int32")
    pretrainer.fit(source, real, batch_size=2, epochs=1, verbose=0)  # one step
    assert len(traces) == 1


def _pretrained_discriminator(steps=3):
    """D's weights after `steps` sample-free pretraining steps (real, mismatched and three kinds of
    hard negative: five calls of D a step), everything seeded anew."""
    keras.utils.set_random_seed(0)
    generator = TransformerGenerator(
        500, max_source_length=40, max_target_length=48, model_dim=8, num_heads=1,
        feedforward_dim=8, num_encoder_layers=1, num_decoder_layers=1, dropout=0.0,
    )
    discriminator = TextDiscriminator(  # the stage's D; with smaller ones the drift was rare
        500, max_source_length=40, max_target_length=48, model_dim=128, num_heads=4,
        feedforward_dim=256, num_layers=2, dropout=0.1,
    )
    hard_negatives = adversarial.HardNegatives(placeholder_ids=list(range(4, 12)), boundary_ids=[12], pad_id=0)
    pretrainer = adversarial.DiscriminatorPretrainer(
        TextSampler(generator, max_length=48, seed=0), discriminator, hard_negatives=hard_negatives, samples=False
    )
    pretrainer.compile(optimizer=keras.optimizers.Adam(1e-3))
    rng = np.random.default_rng(0)
    source = rng.integers(4, 500, (32 * steps, 40)).astype("int32")
    real = rng.integers(4, 500, (32 * steps, 48)).astype("int32")
    pretrainer.fit(source, real, batch_size=32, epochs=1, shuffle=False, verbose=0)
    return [ops.convert_to_numpy(variable) for variable in discriminator.trainable_variables]


def test_discriminator_steps_repeat_bit_for_bit_in_repeatable_training():
    """The stage trains inside `repeatable_training()`. Without it, on TensorFlow, the same
    seed gave D other weights (in the last bits) from one run to the next, with TensorFlow's
    graph optimizer on (which of its passes does it was not pinned down)."""
    with adversarial.repeatable_training():
        first = _pretrained_discriminator()
        for _ in range(3):
            again = _pretrained_discriminator()
            assert [i for i, (a, b) in enumerate(zip(first, again)) if not np.array_equal(a, b)] == []


def test_repeatable_training_restores_tensorflows_graph_optimizer():
    if keras.backend.backend() != "tensorflow":
        pytest.skip("a TensorFlow setting")
    import tensorflow as tf

    def optimizer_off():
        return tf.config.optimizer.get_experimental_options().get("disable_meta_optimizer", False)

    assert not optimizer_off()
    with adversarial.repeatable_training():
        assert optimizer_off()
    assert not optimizer_off()


def test_a_stage_config_saved_before_a_field_existed_loads_as_that_stage_ran(tmp_path):
    saved = AdversarialConfig.quick().to_dict()
    for name in ("corruption_pretrain_steps", "shared_source_encoding"):
        del saved[name]
    (tmp_path / "adversarial_config.json").write_text(json.dumps(saved), encoding="utf-8")
    config = AdversarialConfig.load(tmp_path / "adversarial_config.json")
    assert (config.corruption_pretrain_steps, config.shared_source_encoding) == (0, False)
    assert AdversarialConfig().corruption_pretrain_steps == 1000  # today's default


def test_the_stage_config_refuses_what_the_stage_would_fail_on_or_round_off():
    """Checked when the config is made, before `adversarial` writes anything into its run folder."""
    with pytest.raises(ValueError, match=r"`loss` must be one of \['hinge', 'non_saturating', 'least_squares'\].*"
                                         r"Received: loss='wasserstein'"):
        AdversarialConfig(loss="wasserstein")
    with pytest.raises(ValueError, match="Received: adversarial_steps=120, steps_per_epoch=50"):
        AdversarialConfig(adversarial_steps=120)  # it trained 150 steps and said so
    assert AdversarialConfig(loss="least_squares", adversarial_steps=100).adversarial_steps == 100



@pytest.mark.parametrize("case, expected", [
    ("stage killed", "stage"),  # the stage's backup left: the MLE run is not redone
    ("stage killed before its backup", "stage"),  # no stage report yet, no backup
    ("other MLE settings", "both"),
    ("MLE job killed", "both"),  # `train_and_evaluate` resumes it
    ("chain finished", "both"),  # a rerun of a finished chain starts afresh, as `train` does
    ("stage killed, other MLE settings", "refused"),  # the backup would not resume on the new MLE run
    ("stage killed, MLE job killed", "refused"),
])
def test_chain_rerun_after_a_kill_in_the_stage_keeps_the_finished_mle_run(
    adversarial_run, tmp_path, monkeypatch, capsys, case, expected
):
    mle_run, gan_run, _, _ = adversarial_run
    shutil.copytree(mle_run, tmp_path / "mle")
    shutil.copytree(gan_run, tmp_path / "gan")
    flags = list(TINY_MLE_FLAGS)
    if case.startswith("stage killed"):
        (tmp_path / "gan" / runs.COMPARISON_FILE).unlink()
        if case != "stage killed before its backup":
            (tmp_path / "gan" / runs.BACKUP_DIR).mkdir()
    if "other MLE settings" in case:
        flags += ["--seed", "7"]
    if "MLE job killed" in case:
        (tmp_path / "mle" / runs.BACKUP_DIR).mkdir()
    calls = []
    monkeypatch.setattr(mle, "train_and_evaluate", lambda config, data_dir, run_dir, enriched_dir: calls.append("mle"))

    def stage(config, mle_run_dir, run_dir, data_dir, enriched_dir):
        calls.append(("stage", pathlib.Path(mle_run_dir), pathlib.Path(run_dir)))
        (pathlib.Path(run_dir) / runs.COMPARISON_FILE).write_text("compared\n")

    monkeypatch.setattr(adversarial, "train_adversarial", stage)
    argv = ["chain", "--quick", "--data-dir", str(FIXTURE_2017), "--run-dir", str(tmp_path)] + flags
    with contextlib.redirect_stdout(io.StringIO()):
        code = cli.main(argv)
    if expected == "refused":
        assert code == 2 and calls == []
        assert "holds an interrupted adversarial stage" in capsys.readouterr().err
        return
    assert code == 0
    assert calls == ["mle"] * (expected == "both") + [("stage", tmp_path / "mle", tmp_path / "gan")]


def test_a_job_killed_in_a_finished_runs_folder_leaves_no_finished_run(adversarial_run, tmp_path, monkeypatch):
    """What `chain` reads as a finished run (`runs.finished_run`) is gone once a job starts writing the folder
    again: a rerun killed before its backup is not taken for the run it replaces."""
    mle_run, gan_run, _, _ = adversarial_run
    shutil.copytree(mle_run, tmp_path / "mle")
    shutil.copytree(gan_run, tmp_path / "gan")
    assert runs.finished_run(tmp_path / "mle", runs.SUMMARY_FILE, tiny_config())
    assert runs.finished_run(tmp_path / "mle", runs.SUMMARY_FILE, dataclasses.replace(tiny_config(), verbose=2))  # logging only
    assert not runs.finished_run(tmp_path / "mle", runs.SUMMARY_FILE, dataclasses.replace(tiny_config(), seed=7))
    assert runs.finished_run(tmp_path / "gan", runs.COMPARISON_FILE)

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(keras.Model, "fit", killed)
    with pytest.raises(KeyboardInterrupt):
        _train_adversarial(tmp_path / "mle", tmp_path / "gan")
    assert not runs.finished_run(tmp_path / "gan", runs.COMPARISON_FILE)
    with pytest.raises(KeyboardInterrupt), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        mle.train_and_evaluate(tiny_config(), FIXTURE_2017, tmp_path / "mle")
    assert not runs.finished_run(tmp_path / "mle", runs.SUMMARY_FILE, tiny_config())


@pytest.mark.slow
def test_a_stage_backup_is_not_resumed_on_another_mle_run(adversarial_run, tmp_path, monkeypatch):
    """The stage's backup holds G's fine-tuned weights: resumed on another MLE run (a `chain` rerun with
    other MLE settings, `adversarial --mle-run-dir OTHER`), it would put them back over the new
    generator. It is refused, naming what differs."""
    mle_run, _, _, _ = adversarial_run
    shutil.copytree(mle_run, tmp_path / "mle")
    monkeypatch.setattr(adversarial.checkpoints.TrainingBackup, "delete", lambda self: None)  # kept, finished
    _train_adversarial(tmp_path / "mle", tmp_path / "gan")
    assert (tmp_path / "gan" / runs.BACKUP_DIR).is_dir()
    config = json.loads((tmp_path / "mle" / runs.CONFIG_FILE).read_text())
    config["seed"] += 1  # another MLE run: the same shapes, other weights
    (tmp_path / "mle" / runs.CONFIG_FILE).write_text(json.dumps(config))
    with pytest.raises(ValueError, match=r"belongs to a run with other settings \(differing: \['mle_run'\]\)"):
        _train_adversarial(tmp_path / "mle", tmp_path / "gan")


def test_the_adversarial_scripts_quick_mle_run_gets_the_enriched_folder(tmp_path, monkeypatch):
    """`examples/webnlg_adversarial.py --quick` without --mle-run-dir trains a quick MLE run first; the
    quick MLE config reads gold mentions, so --enriched-dir must reach it (it was dropped)."""
    from tests.conftest import load_example

    script = load_example("webnlg_adversarial.py")
    calls = []
    monkeypatch.setattr(mle, "train_and_evaluate", lambda *args: calls.append(("mle", args[1:])))
    monkeypatch.setattr(adversarial, "train_adversarial", lambda *args: calls.append(("stage", args[1:])))
    script.main(["--quick", "--run-dir", str(tmp_path), "--data-dir", "DATA", "--enriched-dir", "ENRICHED"])
    mle_dir = str(tmp_path / "mle")
    assert calls == [("mle", ("DATA", mle_dir, "ENRICHED")), ("stage", (mle_dir, str(tmp_path), "DATA", "ENRICHED"))]


def test_a_runs_discriminator_comes_with_its_losss_orientation(adversarial_run, tmp_path):
    """Reranking by D's score must read it by the stage loss's orientation: the default hinge D scores
    real texts low (a preference of beam + w x score chose the texts D found least real)."""
    _, gan_run, _, _ = adversarial_run
    discriminator, real_sign = runs.load_discriminator(gan_run)
    assert isinstance(discriminator, TextDiscriminator)
    assert AdversarialConfig.quick().loss == AdversarialConfig().loss == "hinge" and real_sign == -1.0
    shutil.copytree(gan_run, tmp_path / "gan")
    config = json.loads((tmp_path / "gan" / runs.ADVERSARIAL_CONFIG_FILE).read_text())
    (tmp_path / "gan" / runs.ADVERSARIAL_CONFIG_FILE).write_text(json.dumps({**config, "loss": "non_saturating"}))
    assert runs.load_discriminator(tmp_path / "gan")[1] == 1.0


def test_texts_the_preprocessor_may_have_cut_are_no_real_texts():
    """With the stage's max_length equal to the generator's max_target_length, a reference cut to
    max_target_length - 1 tokens fitted "text + EOS" and reached D as a real text (and G's MLE term)
    without its end."""
    from onestep_gan.rdf2text.preprocessor import EncodedExample

    examples = [EncodedExample(f"e{n}", (4, 5), tuple(range(6, 6 + n)), {}, ()) for n in (5, 6, 7)]
    kept = adversarial.whole_texts(examples, max_target_length=8)  # room for 7 tokens: 7 may be a cut
    assert [example.entry_id for example in kept] == ["e5", "e6"]


def test_keep_log_rows_keeps_the_header_and_rows_byte_for_byte(tmp_path):
    """Keras' CSVLogger ends lines with CRLF: a resumed stage's log kept its rows but read them as text and
    wrote LF endings, so the log of a resumed run differed from an uninterrupted one's."""
    log = tmp_path / "adversarial_log.csv"
    log.write_bytes(b"epoch,loss\r\n0,1.5\r\n1,1.25\r\n2,1.0\r\n")
    adversarial.keep_log_rows(log, 2)
    assert log.read_bytes() == b"epoch,loss\r\n0,1.5\r\n1,1.25\r\n"
    adversarial.keep_log_rows(log, 0)
    assert not log.exists()
