"""D's pretraining in the adversarial stage (`adversarial.DiscriminatorPretrainer`, hard negatives, the
shared source encoding) and the repeatable training the stage runs in. `tiny_parts` serves the stage's
tests too (tests/test_adversarial.py)."""

import keras
import numpy as np
import pytest
from keras import ops

from onestep_gan.rdf2text import adversarial
from onestep_gan.rdf2text.config import AdversarialConfig
from onestep_gan.rdf2text.discriminator import TextDiscriminator
from onestep_gan.rdf2text.sampling import TextSampler
from onestep_gan.rdf2text.transformer import TransformerGenerator


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
        # One rerun: without `repeatable_training`, each of 3 reruns gave D other weights than the first did.
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
