"""Schedules, straight-through Gumbel-softmax, TextSampler: exact one-hots, EOS masking,
gradients reaching every generator weight, the one-step GAN on text, saving, XLA.

Backend-neutral (gradients through `onestep_gan.gradients`); CI runs it on TensorFlow and JAX.
"""

import numpy as np
import pytest

import keras
from keras import ops

import onestep_gan
from onestep_gan.gradients import input_gradients, value_and_gradients
from onestep_gan.rdf2text.discriminator import TextDiscriminator
from onestep_gan.rdf2text.sampling import (
    ConstantSchedule,
    ExponentialSchedule,
    LinearSchedule,
    TextSampler,
    get_schedule,
    gumbel_noise,
    straight_through_gumbel_softmax,
)
from onestep_gan.rdf2text.transformer import TransformerGenerator

VOCABULARY_SIZE = 13
PAD, BOS, EOS = 0, 2, 3
MAX_LENGTH = 6
GENERATOR = dict(
    vocabulary_size=VOCABULARY_SIZE,
    max_source_length=7,
    max_target_length=MAX_LENGTH,
    model_dim=8,
    num_heads=2,
    feedforward_dim=16,
    num_encoder_layers=1,
    num_decoder_layers=2,
    dropout=0.0,
)
DISCRIMINATOR = dict(
    vocabulary_size=VOCABULARY_SIZE,
    max_source_length=7,
    max_target_length=MAX_LENGTH,
    model_dim=8,
    num_heads=2,
    feedforward_dim=16,
    num_layers=1,
    dropout=0.0,
)
SOURCE = np.array([[5, 6, 7, 8, 0], [9, 4, 0, 0, 0], [4, 4, 5, 0, 0]], dtype="int32")
REAL_IDS = np.array(
    [[4, 5, 6, 3, 0, 0], [7, 8, 9, 10, 11, 3], [12, 3, 0, 0, 0, 0]], dtype="int32"
)


def _sampler(schedule=1.0, seed=0, max_length=MAX_LENGTH, feedback_gradient=True):
    return TextSampler(
        TransformerGenerator(**GENERATOR),
        max_length=max_length,
        schedule=schedule,
        seed=seed,
        feedback_gradient=feedback_gradient,
    )


def _eos_biased_sampler(seed=0, feedback_gradient=True):
    """A sampler whose generator emits EOS often, so rows finish at different steps."""
    sampler = _sampler(seed=seed, feedback_gradient=feedback_gradient)
    sampler.build()
    bias = np.zeros(VOCABULARY_SIZE, "float32")
    bias[EOS] = 2.0
    sampler.generator.output_bias.assign(bias)
    return sampler


# ----------------------------------------------------------------------------- schedules
def test_constant_schedule_value():
    schedule = ConstantSchedule(2.5)
    for step in (0, 7, 10**6):
        assert float(schedule(ops.convert_to_tensor(step))) == 2.5


def test_linear_schedule_exact_values():
    schedule = LinearSchedule(beta_start=1.0, beta_end=3.0, num_steps=10)
    values = [float(schedule(ops.convert_to_tensor(step))) for step in (0, 5, 10, 25)]
    assert values == [1.0, 2.0, 3.0, 3.0]


def test_exponential_schedule_values():
    schedule = ExponentialSchedule(beta_start=0.5, beta_end=32.0, num_steps=6)
    assert float(schedule(ops.convert_to_tensor(0))) == 0.5
    # Geometric: x2 per step (32 / 0.5 = 2**6).
    np.testing.assert_allclose(float(schedule(ops.convert_to_tensor(3))), 4.0, rtol=1e-6)
    assert float(schedule(ops.convert_to_tensor(6))) == 32.0
    assert float(schedule(ops.convert_to_tensor(100))) == 32.0


def test_schedule_config_round_trip():
    schedules = (ConstantSchedule(0.7), LinearSchedule(1.0, 2.0, 3), ExponentialSchedule(1.0, 8.0, 4))
    for schedule in schedules:
        restored = get_schedule(keras.saving.serialize_keras_object(schedule))
        assert type(restored) is type(schedule)
        assert restored.get_config() == schedule.get_config()
    assert get_schedule(2.0).get_config() == {"inverse_temperature": 2.0}


@pytest.mark.parametrize(
    "make",
    [
        lambda: ConstantSchedule(0.0),
        lambda: LinearSchedule(-1.0, 2.0, 10),
        lambda: LinearSchedule(1.0, 2.0, 0),
        lambda: ExponentialSchedule(1.0, 0.0, 10),
        lambda: ExponentialSchedule(1.0, 2.0, 2.5),
        lambda: get_schedule("hot"),
    ],
)
def test_schedule_bad_arguments_raise(make):
    with pytest.raises(ValueError, match="Received"):
        make()


# ------------------------------------------------------------- straight-through Gumbel
def test_straight_through_forward_is_exact_one_hot():
    logits = keras.random.normal((64, 17), seed=1) * 3.0
    for beta in (0.1, 1.0, 10.0):
        sample = ops.convert_to_numpy(
            straight_through_gumbel_softmax(logits, beta, seed=keras.random.SeedGenerator(5))
        )
        assert set(np.unique(sample)) <= {0.0, 1.0}
        np.testing.assert_array_equal(sample.sum(axis=-1), np.ones(64))
    # The token is argmax(logits + g): the same noise picks the same token at any beta.
    noise = gumbel_noise((64, 17), seed=keras.random.SeedGenerator(5))
    np.testing.assert_array_equal(
        np.argmax(sample, axis=-1), np.argmax(ops.convert_to_numpy(logits + noise), axis=-1)
    )


def test_straight_through_gradient_equals_soft_gradient():
    logits = keras.random.normal((4, 9), seed=2)
    weights = keras.random.normal((4, 9), seed=3)
    beta = 0.7
    (straight_through_gradient,) = input_gradients(
        lambda inputs: ops.sum(
            straight_through_gumbel_softmax(inputs[0], beta, seed=keras.random.SeedGenerator(11)) * weights
        ),
        [logits],
    )
    noise = gumbel_noise((4, 9), seed=keras.random.SeedGenerator(11))  # the same draw
    (soft_gradient,) = input_gradients(
        lambda inputs: ops.sum(ops.softmax(beta * (inputs[0] + noise), axis=-1) * weights), [logits]
    )
    straight_through_gradient, soft_gradient = map(ops.convert_to_numpy, (straight_through_gradient, soft_gradient))
    np.testing.assert_allclose(straight_through_gradient, soft_gradient, rtol=1e-6, atol=1e-7)
    assert np.abs(soft_gradient).max() > 1e-3


# ----------------------------------------------------------------------------- sampler
def test_sampler_output_is_exact_one_hots_of_the_right_shape():
    texts = ops.convert_to_numpy(_sampler()(SOURCE))
    assert texts.shape == (3, MAX_LENGTH, VOCABULARY_SIZE)
    assert texts.dtype == np.float32
    assert set(np.unique(texts)) <= {0.0, 1.0}
    np.testing.assert_array_equal(texts.sum(axis=-1), np.ones((3, MAX_LENGTH)))


def test_sampler_pads_after_eos():
    sampler = _eos_biased_sampler()
    ids = np.argmax(ops.convert_to_numpy(sampler(np.repeat(SOURCE, 8, axis=0))), axis=-1)
    finished_rows = 0
    for row in ids:
        eos_positions = np.flatnonzero(row == EOS)
        if eos_positions.size:
            finished_rows += 1
            first = eos_positions[0]
            np.testing.assert_array_equal(row[first + 1 :], PAD)
            assert EOS not in row[first + 1 :]
    # The EOS bias makes most rows finish, at different positions: the masking is exercised.
    assert finished_rows >= 12
    assert len({int(np.flatnonzero(row == EOS)[0]) for row in ids if EOS in row}) >= 2


def _sample_and_output_bias_gradient(sampler):
    """`(texts, d loss / d output_bias)` of one training call, `loss = sum(texts * token id)`."""
    def loss():
        texts = sampler(SOURCE, training=True)
        return ops.sum(texts * ops.arange(VOCABULARY_SIZE, dtype="float32")), texts

    (_, texts), (gradient,) = value_and_gradients(loss, [sampler.generator.output_bias], has_aux=True)
    return texts, gradient


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "tf.function"])
def test_sampler_stopping_early_fills_the_unwritten_positions_with_pad(compiled):
    """Every row emits EOS at the first step, so the loop stops after one step (TensorFlow's
    while loop; the scan of the other backends runs on) and the later positions must still be
    exact PAD one-hots, with gradients flowing."""
    if compiled and keras.backend.backend() != "tensorflow":
        pytest.skip("tf.function: TensorFlow only (JAX compiles the sampler under fit)")
    # EOS wins every Gumbel draw by a margin of ~30; beta = 0.05 keeps the soft sample,
    # and so the gradient, far from saturation.
    sampler = _sampler(schedule=0.05)
    sampler.build()
    bias = np.zeros(VOCABULARY_SIZE, "float32")
    bias[EOS] = 30.0
    sampler.generator.output_bias.assign(bias)

    if compiled:
        import tensorflow as tf

        texts, gradient = tf.function(lambda: _sample_and_output_bias_gradient(sampler))()
    else:
        texts, gradient = _sample_and_output_bias_gradient(sampler)
    texts, gradient = ops.convert_to_numpy(texts), ops.convert_to_numpy(gradient)
    ids = np.argmax(texts, axis=-1)
    np.testing.assert_array_equal(ids[:, 0], EOS)
    np.testing.assert_array_equal(ids[:, 1:], PAD)
    np.testing.assert_array_equal(texts.sum(axis=-1), 1.0)
    assert np.all(np.isfinite(gradient)) and np.any(gradient != 0)


def _unrolled_loop(step_fn, carry, xs, variables):
    """The reference loop: every step a plain Python call, variables assigned directly."""
    del variables
    outputs = []
    for index in range(ops.shape(xs[0])[0]):
        carry, output = step_fn(carry, keras.tree.map_structure(lambda x: x[index], xs))
        outputs.append(output)
    return carry, ops.stack(outputs)


def test_the_backends_loop_gives_the_texts_and_gradients_of_an_unrolled_loop(monkeypatch):
    """TensorFlow's while loop (which stops early) and the scan of JAX / PyTorch (whose body
    carries the dropout seed states) against the same steps unrolled in Python, with dropout
    on: the same texts for the same seeds, the same gradients, reaching G's weights; the
    dropout seeds come out of the loop as concrete, advanced values (on JAX a state assigned
    inside the scan body would leak a traced value)."""
    from onestep_gan.rdf2text import sampling

    keras.utils.set_random_seed(6)
    generator = TransformerGenerator(**dict(GENERATOR, dropout=0.3))
    generator._ensure_built()
    bias = np.zeros(VOCABULARY_SIZE, "float32")
    bias[EOS] = 2.0
    generator.output_bias.assign(bias)
    source = np.repeat(SOURCE, 4, axis=0)
    max_length = 4  # fewer steps: the unrolled reference is slow on JAX
    weights = keras.random.normal((len(source), max_length, VOCABULARY_SIZE), seed=3)
    seed_states = [ops.convert_to_numpy(v) for v in generator.non_trainable_variables]

    def run():
        keras.utils.set_random_seed(9)  # PyTorch's unseeded dropout draws from torch's generator
        for variable, state in zip(generator.non_trainable_variables, seed_states):
            variable.assign(state)  # the same dropout seeds for both loops (TensorFlow, JAX)
        sampler = TextSampler(generator, max_length=max_length, seed=2)
        texts, gradients = _gradients_of_a_fixed_linear_score(sampler, source, weights)
        return texts, gradients, [ops.convert_to_numpy(v) for v in generator.non_trainable_variables]

    scanned = keras.backend.backend() not in sampling._WHILE_LOOP_BACKENDS
    loop_texts, loop_gradients, loop_seeds = run()
    for variable, gradient in zip(generator.trainable_variables, loop_gradients):
        assert np.all(np.isfinite(gradient)), variable.path
        assert _is_key_bias(variable) or np.abs(gradient).max() > 1e-7, variable.path
    if keras.backend.backend() != "torch":  # see run()
        for before, after in zip(seed_states, loop_seeds):
            assert not np.array_equal(before, after)  # the embedding's, encoder's, both decoder blocks'
    monkeypatch.setattr(sampling, "_WHILE_LOOP_BACKENDS", ())
    monkeypatch.setattr(sampling, "_scan_with_variables", _unrolled_loop)
    unrolled_texts, unrolled_gradients, unrolled_seeds = run()
    np.testing.assert_array_equal(loop_texts, unrolled_texts)
    ids = loop_texts.argmax(axis=-1)
    assert len({int(np.flatnonzero(row == EOS)[0]) for row in ids if EOS in row}) >= 2  # PAD compared
    for a, b in zip(loop_gradients, unrolled_gradients):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    if scanned:
        # The scan ran every step, the unrolled loop too: the seeds advanced alike. (A while
        # loop that stopped early drew fewer.)
        for a, b in zip(loop_seeds, unrolled_seeds):
            np.testing.assert_array_equal(a, b)


def test_sampler_is_reproducible_with_a_seed_and_draws_fresh_noise_per_call():
    sampler = _sampler(seed=4)
    twin = TextSampler(sampler.generator, max_length=MAX_LENGTH, seed=4)  # same weights, seed
    source = np.repeat(SOURCE, 4, axis=0)
    first = ops.convert_to_numpy(sampler(source))
    np.testing.assert_array_equal(first, ops.convert_to_numpy(twin(source)))
    second = ops.convert_to_numpy(sampler(source))
    assert not np.array_equal(first, second)


def test_each_training_call_samples_at_the_beta_of_its_own_step():
    """The first training call samples at schedule(0), the next at schedule(1): beta is read before the step
    counter moves (the checks above read `inverse_temperature()` after a call, not the beta the call used)."""

    class Recording(ConstantSchedule):
        seen = []

        def __call__(self, step):
            Recording.seen.append(int(ops.convert_to_numpy(step)))
            return super().__call__(step)

    sampler = _sampler(schedule=Recording(1.0), max_length=2)
    sampler(SOURCE, training=True)
    sampler(SOURCE, training=True)
    assert Recording.seen == [0, 1]


def test_step_counter_drives_the_schedule_and_counts_training_calls_only():
    sampler = _sampler(schedule=LinearSchedule(1.0, 3.0, num_steps=2), max_length=2)
    assert float(sampler.inverse_temperature()) == 1.0
    sampler(SOURCE, training=False)
    assert int(sampler.step_counter.numpy()) == 0
    sampler(SOURCE, training=True)
    assert int(sampler.step_counter.numpy()) == 1
    assert float(sampler.inverse_temperature()) == 2.0
    sampler(SOURCE, training=True)
    assert float(sampler.inverse_temperature()) == 3.0
    assert [v.name for v in sampler.non_trainable_variables if v.name == "step_counter"]
    assert all(v.name != "step_counter" for v in sampler.trainable_variables)


# Key-projection biases add the same number to every attention score of a query, which
# softmax ignores: their gradient is exactly zero in exact arithmetic, for any model and any
# loss. They are the only generator weights off the sampling path.
def _is_key_bias(variable):
    return variable.path.endswith("/key/bias")


@pytest.mark.parametrize("feedback_gradient", [True, False], ids=["full", "no_feedback"])
def test_regression_every_generator_weight_gets_a_gradient_from_the_discriminator(
    feedback_gradient,
):
    """The classic failure: the text reaches D as argmax ids and G never learns."""
    sampler = _eos_biased_sampler(feedback_gradient=feedback_gradient)
    discriminator = TextDiscriminator(**DISCRIMINATOR)
    generator_variables = sampler.generator.trainable_variables
    source = np.repeat(SOURCE, 4, axis=0)
    _, gradients = value_and_gradients(
        lambda: ops.mean(discriminator([source, sampler(source, training=True)])), generator_variables
    )
    # 4 embeddings/bias + 16 per encoder block + 26 per decoder block + 2 final norms x 2.
    assert len(generator_variables) == 4 + 16 * 1 + 26 * 2 + 4
    for variable, gradient in zip(generator_variables, gradients):
        assert gradient is not None, variable.path
        gradient = ops.convert_to_numpy(ops.convert_to_tensor(gradient))
        assert np.all(np.isfinite(gradient)), variable.path
        if _is_key_bias(variable):
            assert np.abs(gradient).max() < 1e-6, variable.path
        else:
            assert np.abs(gradient).max() > 1e-7, variable.path


def _gradients_of_a_fixed_linear_score(sampler, source, weights=None):
    if weights is None:
        weights = keras.random.normal((len(source), sampler.max_length, VOCABULARY_SIZE), seed=3)

    def loss():
        texts = sampler(source, training=True)
        return ops.sum(texts * weights), texts

    (_, texts), gradients = value_and_gradients(loss, sampler.generator.trainable_variables, has_aux=True)
    return ops.convert_to_numpy(texts), [ops.convert_to_numpy(ops.convert_to_tensor(g)) for g in gradients]


def _twin_samplers(max_length):
    """Two samplers on one generator, one per gradient mode, with the same seed."""
    full = _sampler(seed=5, max_length=max_length)
    full.build()
    bias = np.zeros(VOCABULARY_SIZE, "float32")
    bias[EOS] = 1.0
    full.generator.output_bias.assign(bias)
    no_feedback = TextSampler(full.generator, max_length=max_length, seed=5, feedback_gradient=False)
    return full, no_feedback


def test_both_gradient_modes_sample_the_same_texts():
    full, no_feedback = _twin_samplers(MAX_LENGTH)
    source = np.repeat(SOURCE, 4, axis=0)
    full_texts, _ = _gradients_of_a_fixed_linear_score(full, source)
    no_feedback_texts, _ = _gradients_of_a_fixed_linear_score(no_feedback, source)
    np.testing.assert_array_equal(full_texts, no_feedback_texts)
    ids = full_texts.argmax(axis=-1)
    assert len({int(np.flatnonzero(row == EOS)[0]) for row in ids if EOS in row}) >= 2


# Attention over a single position: Keras warns that the softmax has one entry.
@pytest.mark.filterwarnings("ignore:You are using a softmax over axis -1")
def test_without_feedback_gradients_match_the_full_loop_exactly_where_nothing_is_fed_back():
    """With one position nothing is fed back: the parallel pass must reproduce the loop's
    gradient. With more positions the two estimators must differ (the feedback path)."""
    source = np.repeat(SOURCE, 2, axis=0)
    full, no_feedback = _twin_samplers(max_length=1)
    _, full_gradients = _gradients_of_a_fixed_linear_score(full, source)
    _, no_feedback_gradients = _gradients_of_a_fixed_linear_score(no_feedback, source)
    for a, b in zip(full_gradients, no_feedback_gradients):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)

    full, no_feedback = _twin_samplers(max_length=MAX_LENGTH)
    _, full_gradients = _gradients_of_a_fixed_linear_score(full, source)
    _, no_feedback_gradients = _gradients_of_a_fixed_linear_score(no_feedback, source)
    differing = [not np.allclose(a, b, rtol=1e-3, atol=1e-6) for a, b in zip(full_gradients, no_feedback_gradients)]
    assert sum(differing) > len(differing) // 2


def test_regression_argmax_generator_is_refused_by_the_engine():
    class ArgmaxSampler(TextSampler):
        """The classic mistake: hard ids, re-encoded as one-hots, carry no gradient."""

        def call(self, source_ids, training=None):
            texts = super().call(source_ids, training=training)
            return ops.one_hot(ops.argmax(texts, axis=-1), self.vocabulary_size)

    sampler = ArgmaxSampler(TransformerGenerator(**GENERATOR), schedule=1.0, seed=0)
    gan = onestep_gan.OneStepGAN(sampler, TextDiscriminator(**DISCRIMINATOR), loss="hinge")
    # Eager: the check is in the optimizer's apply, reached in either mode; tracing the
    # compiled step would only add ~20 s.
    gan.compile(optimizer=keras.optimizers.Adam(1e-3), run_eagerly=True)
    real = ops.one_hot(REAL_IDS, VOCABULARY_SIZE)
    with pytest.raises(ValueError, match="No gradient reaches the generator's trainable weights"):
        gan.fit(SOURCE, real, batch_size=3, epochs=1, verbose=0)


# The compiled train step takes over a minute to trace on 2 CPU cores. On TensorFlow the
# adversarial stage's tests (tests/test_adversarial.py) fit this compiled step already.
COMPILED_ELSEWHERE_ON_TENSORFLOW = pytest.mark.skipif(
    keras.backend.backend() == "tensorflow", reason="compiled on TensorFlow by tests/test_adversarial.py's stage"
)


@pytest.mark.parametrize(
    "run_eagerly, feedback_gradient",
    [(True, True), pytest.param(False, True, marks=[pytest.mark.slow, COMPILED_ELSEWHERE_ON_TENSORFLOW]),
     (True, False)],
    ids=["eager", "compiled", "eager-no-feedback"],
)
def test_one_step_gan_fits_text_for_two_steps(run_eagerly, feedback_gradient):
    sampler = _sampler(
        schedule=LinearSchedule(1.0, 2.0, num_steps=10), feedback_gradient=feedback_gradient
    )
    gan = onestep_gan.OneStepGAN(sampler, TextDiscriminator(**DISCRIMINATOR), loss="hinge")
    gan.compile(optimizer=keras.optimizers.Adam(1e-3), run_eagerly=run_eagerly)
    generator_before = [ops.convert_to_numpy(v) for v in sampler.generator.trainable_variables]
    real = ops.one_hot(REAL_IDS, VOCABULARY_SIZE)
    history = gan.fit(
        np.concatenate([SOURCE, SOURCE]),
        ops.concatenate([real, real]),
        batch_size=3,
        epochs=1,
        verbose=0,
    )
    assert len(history.history["loss"]) == 1
    for name in ("loss", "d_loss", "g_loss", "real_score", "fake_score"):
        assert np.isfinite(history.history[name][0]), name
    assert int(sampler.step_counter.numpy()) == 2  # one increment per training step
    moved = [
        not np.array_equal(before, ops.convert_to_numpy(variable))
        for before, variable in zip(generator_before, sampler.generator.trainable_variables)
    ]
    assert sum(moved) >= len(moved) - 4  # all but (possibly) the key biases moved


def test_sampler_keras_round_trip(tmp_path):
    sampler = _sampler(schedule=ExponentialSchedule(1.0, 4.0, 8), seed=7, feedback_gradient=False)
    sampler(SOURCE, training=True)
    path = str(tmp_path / "sampler.keras")
    sampler.save(path)
    restored = keras.saving.load_model(path, safe_mode=True)
    assert isinstance(restored, TextSampler)
    assert isinstance(restored.schedule, ExponentialSchedule)
    assert restored.max_length == MAX_LENGTH
    assert restored.feedback_gradient is False
    assert int(restored.step_counter.numpy()) == 1
    for original, loaded in zip(sampler.generator.weights, restored.generator.weights):
        np.testing.assert_array_equal(ops.convert_to_numpy(original), ops.convert_to_numpy(loaded))


def test_sampler_bad_arguments_raise():
    with pytest.raises(ValueError, match="max_length"):
        TextSampler(TransformerGenerator(**GENERATOR), max_length=MAX_LENGTH + 1)
    with pytest.raises(ValueError, match="TransformerGenerator"):
        TextSampler(keras.layers.Dense(3))
    with pytest.raises(ValueError, match="schedule"):
        TextSampler(TransformerGenerator(**GENERATOR), schedule="cold")
    with pytest.raises(ValueError, match="feedback_gradient"):
        TextSampler(TransformerGenerator(**GENERATOR), feedback_gradient="no")


@pytest.mark.slow  # XLA compilation of the loop and its gradient: ~30 s on 2 CPU cores.
@pytest.mark.parametrize("feedback_gradient", [True, False], ids=["full", "no_feedback"])
def test_sampler_forward_and_backward_compile_with_xla(feedback_gradient):
    """TensorFlow's while loop under `jit_compile` (JAX always compiles with XLA: see the
    compiled fit of `test_one_step_gan_fits_text_for_two_steps`)."""
    if keras.backend.backend() != "tensorflow":
        pytest.skip("tf.function(jit_compile=True): TensorFlow only")
    import tensorflow as tf

    sampler = _eos_biased_sampler(feedback_gradient=feedback_gradient)
    variables = sampler.generator.trainable_variables
    weights = keras.random.normal((3, MAX_LENGTH, VOCABULARY_SIZE), seed=1)

    @tf.function(jit_compile=True)
    def forward_backward(source):
        with tf.GradientTape() as tape:
            texts = sampler(source, training=True)
            loss = ops.sum(texts * weights)
        return texts, tape.gradient(loss, variables)

    texts, gradients = forward_backward(tf.constant(SOURCE))
    texts = ops.convert_to_numpy(texts)
    assert set(np.unique(texts)) <= {0.0, 1.0}
    np.testing.assert_array_equal(texts.sum(axis=-1), np.ones((3, MAX_LENGTH)))
    assert all(gradient is not None for gradient in gradients)
    assert all(np.all(np.isfinite(ops.convert_to_numpy(gradient))) for gradient in gradients)
    assert int(sampler.step_counter.numpy()) == 1


@pytest.mark.parametrize("feedback_gradient", [True, False])
@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_the_sampler_runs_under_mixed_precision(policy, feedback_gradient):
    """The inverse temperature is float32; the scores and the Gumbel noise are float32 too (in
    float16 the noise's uniform floor rounds to 0: -inf draws), the samples exact one-hots in the
    compute dtype, which D reads."""
    keras.mixed_precision.set_global_policy(policy)
    try:
        keras.utils.set_random_seed(0)
        generator = TransformerGenerator(**GENERATOR, placeholder_ids=(4, 5, 6))  # with the copy head
        sampler = TextSampler(generator, max_length=MAX_LENGTH, seed=1, feedback_gradient=feedback_gradient)
        texts = sampler(SOURCE, training=True)
        assert keras.backend.standardize_dtype(texts.dtype) == keras.mixed_precision.global_policy().compute_dtype
        values = ops.convert_to_numpy(ops.cast(texts, "float32"))
        np.testing.assert_array_equal(values.sum(axis=-1), np.ones((len(SOURCE), MAX_LENGTH)))
        assert set(np.unique(values)) <= {0.0, 1.0}
    finally:
        keras.mixed_precision.set_global_policy("float32")
