"""OneStepGAN: the single loss separates exactly, and one fit step equals the two-tape reference."""

import numpy as np
import pytest
import tensorflow as tf  # tf.data only: Keras reads tf.data datasets on every backend

import keras
from keras import ops

import onestep_gan
from onestep_gan import losses
from onestep_gan.gradients import to_numpy
from onestep_gan.gradients import value_and_gradients

BATCH, CONDITION_DIM, LATENT_DIM, SAMPLE_DIM = 8, 3, 4, 2
LAM = 0.5


def make_generator(input_dim=CONDITION_DIM, name="generator"):
    return keras.Sequential(
        [keras.Input((input_dim,)), keras.layers.Dense(16, activation="tanh"), keras.layers.Dense(SAMPLE_DIM)],
        name=name,
    )


def make_conditional_discriminator(name="discriminator"):
    conditions = keras.Input((CONDITION_DIM,))
    sample = keras.Input((SAMPLE_DIM,))
    hidden = keras.layers.Dense(16, activation="tanh")(keras.layers.Concatenate()([conditions, sample]))
    return keras.Model([conditions, sample], keras.layers.Dense(1)(hidden), name=name)


def make_unconditional_discriminator(name="discriminator"):
    return keras.Sequential(
        [keras.Input((SAMPLE_DIM,)), keras.layers.Dense(16, activation="tanh"), keras.layers.Dense(1)], name=name
    )


def batch():
    rng = np.random.default_rng(0)
    conditions = rng.normal(size=(BATCH, CONDITION_DIM)).astype("float32")
    real = rng.normal(size=(BATCH, SAMPLE_DIM)).astype("float32")
    return conditions, real


def conditional_gan(loss="hinge", lam=LAM):
    return onestep_gan.OneStepGAN(
        make_generator(), make_conditional_discriminator(), loss=loss, lam=lam
    )


def gradients(fn, *variable_lists):
    """The value of `fn()` and its gradients (NumPy) on each list of variables, on any backend."""
    variables = [variable for variables in variable_lists for variable in variables]
    value, grads = value_and_gradients(fn, variables)
    grads, split = to_numpy(grads), []
    for variables in variable_lists:
        split.append(grads[: len(variables)])
        grads = grads[len(variables):]
    return (value, *split)


def reference_gradients(gan, conditions, real, fake_input):
    """Two tapes, the textbook way: grad_D L_D(D(real), D(sg(G))) and grad_G L_G(D(G))."""
    gan_loss = gan.gan_loss
    real = ops.convert_to_tensor(real)
    if conditions is not None:
        conditions = ops.convert_to_tensor(conditions)
    discriminator_inputs = (lambda s: [conditions, s]) if conditions is not None else (lambda s: s)
    real_scores = ops.squeeze(gan.discriminator(discriminator_inputs(real)), 1)

    def discriminator_loss():
        fake = ops.stop_gradient(gan.generator(fake_input))
        real_scores = ops.squeeze(gan.discriminator(discriminator_inputs(real)), 1)
        fake_scores = ops.squeeze(gan.discriminator(discriminator_inputs(fake)), 1)
        return gan_loss.discriminator_loss(real_scores, fake_scores)

    def generator_loss():
        generator_scores = ops.squeeze(gan.discriminator(discriminator_inputs(gan.generator(fake_input))), 1)
        return gan_loss.generator_loss(generator_scores, real_scores)

    d_loss, d_grads = gradients(discriminator_loss, gan.discriminator.trainable_variables)
    g_loss, g_grads = gradients(generator_loss, gan.generator.trainable_variables)
    return d_loss, g_loss, d_grads, g_grads


@pytest.mark.parametrize("loss", sorted(set(losses.LOSSES) - {"wasserstein"}))
def test_single_loss_separates_exactly(loss):
    gan = conditional_gan(loss)
    conditions, real = batch()
    gan(conditions)
    total, d_grads, g_grads = gradients(
        lambda: gan.compute_loss(conditions, real, gan(conditions)),
        gan.discriminator.trainable_variables, gan.generator.trainable_variables,
    )
    d_loss, _, ref_d_grads, ref_g_grads = reference_gradients(gan, conditions, real, conditions)

    # The bracket is exactly 0: the single loss equals L_D bit for bit.
    assert float(total) == float(d_loss)
    # On D: exactly grad(L_D), no rounding residue from the bracket.
    for grad, ref in zip(d_grads, ref_d_grads):
        np.testing.assert_array_equal(grad, ref)
    # On G: lam * grad(L_G).
    for grad, ref in zip(g_grads, ref_g_grads):
        np.testing.assert_allclose(grad, LAM * ref, rtol=1e-5, atol=1e-7)
        assert np.any(grad != 0)


def test_bracket_gradient_on_discriminator_is_exactly_zero():
    # With L_D removed (zero real and fake terms), the D gradient must be exactly 0, not ~1e-7.
    gan = conditional_gan()
    conditions, real = batch()
    gan(conditions)

    def bracket():
        generator_scores = gan.score_with_frozen_discriminator(conditions, gan(conditions))
        g_loss = gan.gan_loss.generator_loss(generator_scores)
        return g_loss - ops.stop_gradient(g_loss)

    value, grads, g_grads = gradients(bracket, gan.discriminator.trainable_variables, gan.generator.trainable_variables)
    assert all(grad is None or not np.any(grad) for grad in grads)
    assert any(np.any(grad) for grad in g_grads)
    # In value the model's single loss is L_D alone: the bracket adds 0 (computed independently here).
    conditions, real = ops.convert_to_tensor(conditions), ops.convert_to_tensor(real)
    real_scores = ops.squeeze(gan.discriminator([conditions, real]), 1)
    fake_scores = ops.squeeze(gan.discriminator([conditions, gan.generator(conditions)]), 1)
    loss = gan.compute_loss(conditions, real, training=True)
    assert float(loss) == pytest.approx(float(gan.gan_loss.discriminator_loss(real_scores, fake_scores)), rel=1e-6)


def apply_sgd_reference(variables, grads, learning_rate, scale=1.0):
    return [v.numpy() - learning_rate * scale * g for v, g in zip(variables, grads)]


def test_fit_step_with_sgd_matches_two_tape_reference_conditional():
    learning_rate = 0.1
    gan = conditional_gan()
    conditions, real = batch()
    gan(conditions)
    _, _, ref_d_grads, ref_g_grads = reference_gradients(gan, conditions, real, conditions)
    expected_d = apply_sgd_reference(gan.discriminator.trainable_variables, ref_d_grads, learning_rate)
    expected_g = apply_sgd_reference(gan.generator.trainable_variables, ref_g_grads, learning_rate, LAM)

    gan.compile(optimizer=keras.optimizers.SGD(learning_rate))
    gan.fit(conditions, real, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)

    for variable, expected in zip(gan.discriminator.trainable_variables, expected_d):
        np.testing.assert_allclose(variable.numpy(), expected, rtol=1e-5, atol=1e-6)
    for variable, expected in zip(gan.generator.trainable_variables, expected_g):
        np.testing.assert_allclose(variable.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_fit_step_with_sgd_matches_two_tape_reference_unconditional():
    learning_rate = 0.1
    seed = 7
    gan = onestep_gan.OneStepGAN(
        make_generator(LATENT_DIM), make_unconditional_discriminator(), lam=LAM, latent_dim=LATENT_DIM, seed=seed
    )
    _, real = batch()
    gan.sample(2)
    gan.seed_generator = onestep_gan.ReplicaSeedGenerator(seed)  # rewind the noise stream
    # The same first draw the model makes inside fit.
    z = keras.random.normal((BATCH, LATENT_DIM), seed=keras.random.SeedGenerator(seed))
    _, _, ref_d_grads, ref_g_grads = reference_gradients(gan, None, real, z)
    expected_d = apply_sgd_reference(gan.discriminator.trainable_variables, ref_d_grads, learning_rate)
    expected_g = apply_sgd_reference(gan.generator.trainable_variables, ref_g_grads, learning_rate, LAM)

    gan.compile(optimizer=keras.optimizers.SGD(learning_rate))
    gan.fit(real, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)

    for variable, expected in zip(gan.discriminator.trainable_variables, expected_d):
        np.testing.assert_allclose(variable.numpy(), expected, rtol=1e-5, atol=1e-6)
    for variable, expected in zip(gan.generator.trainable_variables, expected_g):
        np.testing.assert_allclose(variable.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_fit_and_evaluate_log_all_metrics_and_evaluate_does_not_update():
    gan = conditional_gan()
    conditions, real = batch()
    gan.compile(optimizer="adam")
    history = gan.fit(conditions, real, batch_size=4, epochs=1, verbose=0)
    assert set(history.history) == {"loss", "d_loss", "g_loss", "real_score", "fake_score"}
    before = [v.numpy().copy() for v in gan.trainable_variables]
    results = gan.evaluate(conditions, real, batch_size=4, verbose=0, return_dict=True)
    assert set(results) == {"loss", "d_loss", "g_loss", "real_score", "fake_score"}
    # The single loss's value is L_D (the bracket is 0).
    assert results["loss"] == pytest.approx(results["d_loss"], rel=1e-6)
    for variable, value in zip(gan.trainable_variables, before):
        np.testing.assert_array_equal(variable.numpy(), value)


def test_wasserstein_gradient_penalty_is_part_of_the_discriminator_term():
    gan = conditional_gan("wasserstein")
    conditions, real = (ops.convert_to_tensor(t) for t in batch())
    fake = gan(conditions)
    d_loss, real_scores, fake_scores = gan.discriminator_loss(conditions, real, ops.stop_gradient(fake))
    critic = float(ops.mean(fake_scores) - ops.mean(real_scores))
    penalty = float(d_loss) - critic
    assert penalty > 0  # a random tanh critic is far from 1-Lipschitz
    gan.compile(optimizer="adam")
    history = gan.fit(conditions, real, batch_size=BATCH, epochs=2, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))


class ArgmaxGenerator(keras.Model):
    """The classic text-GAN failure: ids through argmax, then one-hot -- no gradient path."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.logits = keras.layers.Dense(SAMPLE_DIM)

    def call(self, conditions):
        ids = ops.argmax(self.logits(conditions), axis=-1)
        return ops.one_hot(ids, SAMPLE_DIM)


def test_generator_without_gradient_fails_loudly():
    gan = onestep_gan.OneStepGAN(ArgmaxGenerator(name="argmax_generator"), make_conditional_discriminator())
    conditions, real = batch()
    gan.compile(optimizer="adam")
    with pytest.raises(ValueError) as error:
        gan.fit(conditions, real, batch_size=BATCH, epochs=1, verbose=0)
    message = str(error.value)
    assert "No gradient reaches the generator's trainable weights" in message
    assert "argmax_generator" in message
    assert "Gumbel-softmax" in message


def test_keras_round_trip_gives_identical_outputs(tmp_path):
    gan = conditional_gan()
    conditions, real = batch()
    gan.compile(optimizer="adam")
    gan.fit(conditions, real, batch_size=4, epochs=1, verbose=0)
    path = tmp_path / "gan.keras"
    gan.save(path)
    restored = keras.saving.load_model(path, safe_mode=True)
    assert isinstance(restored, onestep_gan.OneStepGAN)
    assert restored.lam == LAM and restored.gan_loss.name == "hinge"
    np.testing.assert_array_equal(restored.predict(conditions, verbose=0), gan.predict(conditions, verbose=0))
    scores = to_numpy(gan.discriminator([conditions, real]))
    np.testing.assert_array_equal(to_numpy(restored.discriminator([conditions, real])), scores)
    # The restored model can keep training.
    restored.fit(conditions, real, batch_size=4, epochs=1, verbose=0)


def test_get_config_from_config_round_trip():
    gan = onestep_gan.OneStepGAN(
        make_generator(LATENT_DIM), make_unconditional_discriminator(), loss="least_squares",
        lam=0.25, latent_dim=LATENT_DIM, seed=3,
    )
    config = gan.get_config()
    clone = onestep_gan.OneStepGAN.from_config(config)
    assert clone.get_config() == config
    assert (clone.lam, clone.latent_dim, clone.seed, clone.gan_loss.name) == (0.25, LATENT_DIM, 3, "least_squares")


@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        ({"lam": -1.0}, r"Expected lam to be a finite number >= 0. Received: lam=-1.0"),
        ({"loss": "minimax"}, r"Expected one of .* Received: loss='minimax'"),
        ({"latent_dim": 0}, r"latent_dim.*Received: latent_dim=0"),
    ],
)
def test_bad_arguments_raise(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        onestep_gan.OneStepGAN(make_generator(), make_conditional_discriminator(), **kwargs)


def test_generator_must_be_a_keras_layer():
    with pytest.raises(ValueError, match="Expected the generator to be a keras.Model.*Received: generator="):
        onestep_gan.OneStepGAN(lambda x: x, make_conditional_discriminator())


def test_discriminator_with_wrong_output_shape_raises():
    conditions_in, sample_in = keras.Input((CONDITION_DIM,)), keras.Input((SAMPLE_DIM,))
    wide = keras.Model(
        [conditions_in, sample_in], keras.layers.Dense(3)(keras.layers.Concatenate()([conditions_in, sample_in]))
    )
    gan = onestep_gan.OneStepGAN(make_generator(), wide)
    gan.compile(optimizer="adam")
    conditions, real = batch()
    with pytest.raises(ValueError, match=r"scores of shape \(batch,\) or \(batch, 1\). Received: shape \(.*, 3\)"):
        gan.fit(conditions, real, batch_size=BATCH, verbose=0)


def test_data_not_matching_the_contract_raises():
    conditions, real = batch()
    gan = conditional_gan()
    gan.compile(optimizer="adam")
    with pytest.raises(ValueError, match=r"conditional GAN .* is fit on \(conditions, real\) pairs"):
        gan.fit(conditions, batch_size=BATCH, verbose=0)
    with pytest.raises(ValueError, match=r"shape of the real samples .* Received: real shape \(.*, 5\), generated shape \(.*, 2\)"):
        gan.fit(conditions, np.zeros((BATCH, 5), "float32"), batch_size=BATCH, verbose=0)
    unconditional = onestep_gan.OneStepGAN(
        make_generator(LATENT_DIM), make_unconditional_discriminator(), latent_dim=LATENT_DIM
    )
    unconditional.compile(optimizer="adam")
    with pytest.raises(ValueError, match=r"unconditional GAN \(latent_dim=4\) is fit on real samples only"):
        unconditional.fit(real, real, batch_size=BATCH, verbose=0)
    # latent_dim forgotten: the GAN is conditional, and G (which takes noise) was called on the real samples
    # first, so the user got Keras' many-line shape error of G's first layer instead of this line.
    forgotten = onestep_gan.OneStepGAN(make_generator(LATENT_DIM), make_unconditional_discriminator())
    forgotten.compile(optimizer="adam")
    for method in (forgotten.fit, forgotten.evaluate):
        with pytest.raises(ValueError, match=r"conditional GAN \(latent_dim=None\) is fit on \(conditions, real\) pairs"):
            method(real, batch_size=BATCH, verbose=0)


def test_compile_refuses_a_loss():
    gan = conditional_gan()
    with pytest.raises(ValueError, match="computes its own single loss.*Received: compile\\(loss='mse'\\)"):
        gan.compile(optimizer="adam", loss="mse")


def test_nested_samples_are_supported():
    conditions_in = keras.Input((CONDITION_DIM,))
    hidden = keras.layers.Dense(8)(conditions_in)
    generator = keras.Model(conditions_in, {"point": keras.layers.Dense(2)(hidden), "size": keras.layers.Dense(1)(hidden)})
    point_in, size_in = keras.Input((2,)), keras.Input((1,))
    disc_conditions = keras.Input((CONDITION_DIM,))
    merged = keras.layers.Concatenate()([disc_conditions, point_in, size_in])
    discriminator = keras.Model([disc_conditions, {"point": point_in, "size": size_in}], keras.layers.Dense(1)(merged))
    gan = onestep_gan.OneStepGAN(generator, discriminator)
    gan.compile(optimizer="adam")
    conditions, real_points = batch()
    real = {"point": real_points, "size": np.ones((BATCH, 1), "float32")}
    before = [v.numpy().copy() for v in generator.trainable_variables]
    history = gan.fit(conditions, real, batch_size=4, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    assert any(np.any(v.numpy() != b) for v, b in zip(generator.trainable_variables, before))


@pytest.mark.parametrize("trainer", ["OneStepGAN", "AlternatingGAN"])
def test_a_list_of_parts_from_g_stands_in_for_a_tuple_of_real_parts(trainer):
    """A functional G with `outputs=[a, b]` returns a list; Keras' TensorFlow adapter and tf.data give
    the real parts as a tuple: the same sample, on every backend."""
    conditions_in = keras.Input((CONDITION_DIM,))
    hidden = keras.layers.Dense(8)(conditions_in)
    generator = keras.Model(conditions_in, [keras.layers.Dense(2)(hidden), keras.layers.Dense(1)(hidden)])
    point_in, size_in, disc_conditions = keras.Input((2,)), keras.Input((1,)), keras.Input((CONDITION_DIM,))
    merged = keras.layers.Concatenate()([disc_conditions, point_in, size_in])
    discriminator = keras.Model([disc_conditions, (point_in, size_in)], keras.layers.Dense(1)(merged))
    gan = getattr(onestep_gan, trainer)(generator, discriminator)
    if trainer == "OneStepGAN":
        gan.compile(optimizer="adam")
    else:
        gan.compile(discriminator_optimizer="adam", generator_optimizer="adam")
    conditions, real_points = batch()
    real = tf.data.Dataset.from_tensor_slices(
        (conditions, (real_points, np.ones((BATCH, 1), "float32")))).batch(4)  # tuples on every backend
    history = gan.fit(real, epochs=1, verbose=0)
    assert np.isfinite(history.history["d_loss"][0])
    assert np.isfinite(gan.evaluate(real, verbose=0, return_dict=True)["d_loss"])


def test_generator_extra_loss_reaches_generator_only():
    gan = conditional_gan()
    conditions, real = (ops.convert_to_tensor(t) for t in batch())
    gan(conditions)

    def extra(conditions, real, fake):
        return ops.mean(ops.square(fake - real))

    parts = gan.discriminator.trainable_variables, gan.generator.trainable_variables
    base, d_base, g_base = gradients(lambda: gan.compute_loss(conditions, real, gan(conditions)), *parts)
    gan.generator_extra_loss = extra
    total, d_extra, g_extra = gradients(lambda: gan.compute_loss(conditions, real, gan(conditions)), *parts)
    for a, b in zip(d_base, d_extra):
        np.testing.assert_array_equal(a, b)
    assert any(np.any(a != b) for a, b in zip(g_base, g_extra))
    fake = gan(conditions)
    assert float(total) == pytest.approx(float(base) + float(extra(conditions, real, fake)), rel=1e-6)


def test_discriminator_extra_loss_reaches_discriminator_only():
    """The mirror of generator_extra_loss: a D term on a corrupted real batch and on the
    (stopped) sample changes D's gradient and leaves G's bit for bit."""
    gan = conditional_gan()
    conditions, real = (ops.convert_to_tensor(t) for t in batch())
    gan(conditions)

    def extra(conditions, real, fake):
        corrupted = ops.flip(real, axis=0)
        scores = gan.discriminator([conditions, corrupted], training=True)
        return ops.mean(ops.square(scores)) + ops.mean(gan.discriminator([conditions, fake], training=True))

    parts = gan.discriminator.trainable_variables, gan.generator.trainable_variables
    _, d_base, g_base = gradients(lambda: gan.compute_loss(conditions, real, gan(conditions)), *parts)
    gan.discriminator_extra_loss = extra
    _, d_extra, g_extra = gradients(lambda: gan.compute_loss(conditions, real, gan(conditions)), *parts)
    for a, b in zip(g_base, g_extra):
        np.testing.assert_array_equal(a, b)
    assert any(np.any(a != b) for a, b in zip(d_base, d_extra))
    with pytest.raises(ValueError, match="discriminator_extra_loss"):
        gan.get_config()


@pytest.mark.parametrize("dtype_policy", ["mixed_float16"], indirect=True)
def test_extra_losses_in_half_precision_are_added_in_float32(dtype_policy):
    """Under mixed precision an extra term computed on G's float16 sample or D's float16 scores is
    added to the float32 loss (TensorFlow does not promote float16 + float32 by itself)."""
    gan = conditional_gan()
    conditions, real = (ops.convert_to_tensor(t) for t in batch())
    fake = gan(conditions)
    assert keras.backend.standardize_dtype(fake.dtype) == "float16"
    base = float(gan.compute_loss(conditions, real, fake))

    def generator_extra(conditions, real, fake):
        return ops.mean(ops.square(fake))

    def discriminator_extra(conditions, real, fake):
        return ops.mean(gan.discriminator([conditions, fake], training=False))

    assert keras.backend.standardize_dtype(generator_extra(conditions, real, fake).dtype) == "float16"
    gan.generator_extra_loss, gan.discriminator_extra_loss = generator_extra, discriminator_extra
    total = gan.compute_loss(conditions, real, fake)
    assert keras.backend.standardize_dtype(total.dtype) == "float32"
    extras = float(generator_extra(conditions, real, fake)) + float(discriminator_extra(conditions, real, fake))
    assert float(total) == pytest.approx(base + extras, rel=1e-2, abs=1e-2)


class InterruptAtEpoch(keras.callbacks.Callback):
    def __init__(self, epoch):
        super().__init__()
        self.epoch = epoch

    def on_epoch_begin(self, epoch, logs=None):
        if epoch == self.epoch:
            raise RuntimeError("interrupted")


def test_interrupted_fit_resumes_where_it_stopped(tmp_path):
    """BackupAndRestore restores G, D and both inner optimizers: the resumed run equals an uninterrupted one."""
    conditions, real = batch()

    def make():
        keras.utils.set_random_seed(0)
        gan = conditional_gan()  # G and D built (keras.Input): BackupAndRestore takes the GAN without a first call
        gan.compile(optimizer=onestep_gan.GANOptimizer(keras.optimizers.Adam(1e-2), generator_learning_rate_ratio=0.5))
        return gan

    reference = make()
    reference.fit(conditions, real, batch_size=4, epochs=4, shuffle=False, verbose=0)

    backup = keras.callbacks.BackupAndRestore(str(tmp_path / "backup"))
    interrupted = make()
    with pytest.raises(RuntimeError, match="interrupted"):
        interrupted.fit(conditions, real, batch_size=4, epochs=4, shuffle=False, verbose=0,
                        callbacks=[backup, InterruptAtEpoch(2)])
    resumed = make()
    history = resumed.fit(conditions, real, batch_size=4, epochs=4, shuffle=False, verbose=0, callbacks=[backup])
    assert len(history.history["loss"]) == 2  # epochs 3 and 4 only
    assert int(resumed.optimizer.iterations) == int(reference.optimizer.iterations) == 8
    for variable, expected in zip(resumed.trainable_variables, reference.trainable_variables):
        np.testing.assert_allclose(variable.numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)


# ------------------------------------------------- what a Keras user can pass to compile and fit
def regularized_generator(input_dim=CONDITION_DIM):
    return keras.Sequential(
        [
            keras.Input((input_dim,)),
            keras.layers.Dense(16, activation="tanh", kernel_regularizer=keras.regularizers.L2(0.01),
                               activity_regularizer=keras.regularizers.L2(0.02)),
            keras.layers.Dense(SAMPLE_DIM),
        ],
        name="generator",
    )


def regularized_unconditional_discriminator():
    return keras.Sequential(
        [
            keras.Input((SAMPLE_DIM,)),
            keras.layers.Dense(16, activation="tanh", kernel_regularizer=keras.regularizers.L2(0.03),
                               activity_regularizer=keras.regularizers.L2(0.05)),
            keras.layers.Dense(1),
        ],
        name="discriminator",
    )


def test_regularisation_losses_of_both_nets_are_in_the_loss():
    """Weights of both nets once; G's activity; D's activity on its real and fake passes (not the frozen one)."""
    gan = onestep_gan.OneStepGAN(
        regularized_generator(LATENT_DIM), regularized_unconditional_discriminator(), latent_dim=LATENT_DIM, seed=1
    )
    _, real = batch()
    fake = gan(real)
    generator_losses = float(ops.sum(ops.stack(gan.generator.losses)))  # G's activity and weights
    total = gan.compute_loss(real, None, fake)
    d_loss = float(gan.d_loss_tracker.result())
    d_hidden = gan.discriminator.layers[0]

    def activity(inputs):
        d_hidden(inputs)
        return float(d_hidden.losses[0])  # as Keras computes it (divided by the batch size)

    expected = (
        d_loss + generator_losses + float(d_hidden.kernel_regularizer(d_hidden.kernel))
        + activity(real) + activity(fake)
    )
    assert float(total) == pytest.approx(expected, rel=1e-6)


def test_each_nets_weight_regularisation_reaches_its_own_net_unscaled():
    """D's gradient is grad(L_D + D's weight penalty); G's is lam x grad(L_G) + grad(G's weight
    penalty): each penalty on its own net, G's not scaled by lam (references written here)."""
    l2 = 0.05
    generator = keras.Sequential([keras.Input((CONDITION_DIM,)), keras.layers.Dense(16, activation="tanh", kernel_regularizer=keras.regularizers.L2(l2)),
                                  keras.layers.Dense(SAMPLE_DIM)])
    conditions_input, sample_input = keras.Input((CONDITION_DIM,)), keras.Input((SAMPLE_DIM,))
    hidden = keras.layers.Dense(16, activation="tanh", kernel_regularizer=keras.regularizers.L2(l2))(
        keras.layers.Concatenate()([conditions_input, sample_input]))
    discriminator = keras.Model([conditions_input, sample_input], keras.layers.Dense(1)(hidden))
    gan = onestep_gan.OneStepGAN(generator, discriminator, lam=LAM)
    conditions, real = (ops.convert_to_tensor(t) for t in batch())
    gan(conditions)
    _, d_grads, g_grads = gradients(
        lambda: gan.compute_loss(conditions, real, gan(conditions)), discriminator.trainable_variables, generator.trainable_variables)

    def score(sample):
        return ops.squeeze(discriminator([conditions, sample]), 1)

    def penalty(net):
        return l2 * ops.sum(ops.square(net.layers[-2].kernel if net is discriminator else net.layers[0].kernel))

    _, ref_d = gradients(lambda: gan.gan_loss.discriminator_loss(
        score(real), score(ops.stop_gradient(generator(conditions)))) + penalty(discriminator), discriminator.trainable_variables)
    _, ref_g = gradients(lambda: gan.gan_loss.generator_loss(score(generator(conditions))), generator.trainable_variables)
    _, ref_g_penalty = gradients(lambda: penalty(generator), generator.trainable_variables)
    assert np.any(ref_d[-4] != 0) and np.any(ref_g_penalty[0] != 0)  # D's hidden kernel, G's first kernel
    for grad, ref in zip(d_grads, ref_d):
        np.testing.assert_allclose(grad, ref, rtol=1e-5, atol=1e-7)
    for grad, ref, ref_penalty in zip(g_grads, ref_g, ref_g_penalty):
        np.testing.assert_allclose(grad, LAM * ref + (0 if ref_penalty is None else ref_penalty), rtol=1e-5, atol=1e-7)


def test_fit_step_counts_the_regularisation_of_both_nets():
    """One SGD step of fit equals the step computed from the loss's own gradient: no
    regularisation term is lost inside the trainer (JAX runs the loss in a StatelessScope)."""
    learning_rate = 0.1
    gan = onestep_gan.OneStepGAN(
        regularized_generator(LATENT_DIM), regularized_unconditional_discriminator(), lam=LAM,
        latent_dim=LATENT_DIM, seed=1,
    )
    _, real = batch()
    real = ops.convert_to_tensor(real)
    gan(real)  # draws from the inference stream: the training stream is untouched
    z = keras.random.normal((BATCH, LATENT_DIM), seed=keras.random.SeedGenerator(1))
    variables = gan.trainable_variables
    _, grads = gradients(lambda: gan.compute_loss(real, None, gan.generator(z, training=True)), variables)
    expected = apply_sgd_reference(variables, grads, learning_rate)
    gan.compile(optimizer=keras.optimizers.SGD(learning_rate))
    gan.fit(real, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
    for variable, value in zip(variables, expected):
        np.testing.assert_allclose(variable.numpy(), value, rtol=1e-5, atol=1e-6)


class TrainingScale(keras.layers.Layer):
    """Multiplies by 1 in training and by 3 in inference: makes the training flag visible in the scores."""

    def call(self, inputs, training=None):
        return inputs if training else 3.0 * inputs


def training_sensitive_discriminator(batch_norm=True):
    layers = [keras.Input((SAMPLE_DIM,)), keras.layers.Dense(16, activation="tanh")]
    if batch_norm:
        layers.append(keras.layers.BatchNormalization())
    layers += [TrainingScale(), keras.layers.Dense(1)]
    return keras.Sequential(layers, name="discriminator")


@pytest.mark.parametrize("loss", ["hinge", "relativistic"])
def test_every_discriminator_pass_runs_in_training_mode(loss):
    """With BatchNorm and a training-dependent layer in D, the gradients equal the two-tape reference in training mode."""
    gan = onestep_gan.OneStepGAN(
        make_generator(LATENT_DIM), training_sensitive_discriminator(), loss=loss, lam=LAM, latent_dim=LATENT_DIM
    )
    _, real = batch()
    real = ops.convert_to_tensor(real)
    z = keras.random.normal((BATCH, LATENT_DIM), seed=5)
    gan(real)
    generator, discriminator = gan.generator, gan.discriminator
    _, d_grads, g_grads = gradients(
        lambda: gan.compute_loss(real, None, generator(z, training=True), training=True),
        discriminator.trainable_variables, generator.trainable_variables,
    )

    def scores(sample):
        return ops.squeeze(discriminator(sample, training=True), 1)

    def discriminator_loss():
        real_scores = scores(real)
        fake_scores = scores(ops.stop_gradient(generator(z, training=True)))
        return gan.gan_loss.discriminator_loss(real_scores, fake_scores), real_scores

    (_, real_scores), ref_d = value_and_gradients(discriminator_loss, discriminator.trainable_variables, has_aux=True)
    real_scores = ops.convert_to_tensor(to_numpy(real_scores))
    _, ref_g = gradients(
        lambda: gan.gan_loss.generator_loss(scores(generator(z, training=True)), real_scores),
        generator.trainable_variables,
    )
    for grad, ref in zip(d_grads, to_numpy(ref_d)):
        np.testing.assert_allclose(grad, ref, rtol=1e-5, atol=1e-6)
    for grad, ref in zip(g_grads, ref_g):
        np.testing.assert_allclose(grad, LAM * ref, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("loss", ["hinge", "wasserstein"])
def test_batch_norm_statistics_are_updated_by_the_two_live_passes_only(loss):
    """Not by the frozen pass that scores G's sample for G's term, nor by WGAN-GP's pass on the
    interpolates."""
    gan = onestep_gan.OneStepGAN(
        make_generator(LATENT_DIM), training_sensitive_discriminator(), loss=loss, latent_dim=LATENT_DIM, seed=2
    )
    _, real = batch()
    gan(real)
    norm = gan.discriminator.layers[1]
    hidden = gan.discriminator.layers[0]
    fake = gan(real, training=True)
    gan.compute_loss(real, None, fake, training=True)
    momentum = norm.momentum
    mean_real = np.mean(to_numpy(hidden(real)), axis=0)
    mean_fake = np.mean(to_numpy(hidden(fake)), axis=0)
    expected = momentum * (momentum * 0.0 + (1 - momentum) * mean_real) + (1 - momentum) * mean_fake
    np.testing.assert_allclose(norm.moving_mean.numpy(), expected, rtol=1e-5, atol=1e-7)


def dropout_discriminator():
    return keras.Sequential(
        [keras.Input((SAMPLE_DIM,)), keras.layers.Dense(16, activation="tanh"), keras.layers.Dropout(0.5, seed=7),
         keras.layers.Dense(1)],
        name="discriminator",
    )


def test_every_dropout_pass_draws_a_fresh_mask():
    gan = onestep_gan.OneStepGAN(make_generator(LATENT_DIM), dropout_discriminator(), latent_dim=LATENT_DIM, seed=0)
    _, real = batch()
    gan(real)
    gan.compile(optimizer="sgd")
    state = gan.discriminator.layers[1].seed_generator.state
    before = int(state.numpy()[1])
    gan.fit(real, batch_size=BATCH, epochs=3, verbose=0)
    assert int(state.numpy()[1]) - before == 9  # 3 steps x (real, fake, frozen) passes


class PlainCallDiscriminator(keras.Model):
    """A subclassed D whose call takes no `training` argument (legal Keras)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.hidden = keras.layers.Dense(16, activation="tanh")
        self.out = keras.layers.Dense(1)

    def call(self, inputs):
        return self.out(self.hidden(inputs))


def test_discriminator_without_training_argument():
    gan = onestep_gan.OneStepGAN(make_generator(LATENT_DIM), PlainCallDiscriminator(), latent_dim=LATENT_DIM, seed=0)
    _, real = batch()
    gan.compile(optimizer=keras.optimizers.SGD(0.1))
    gan(real)
    before = [v.numpy().copy() for v in gan.trainable_variables]
    gan.fit(real, batch_size=BATCH, epochs=1, verbose=0)
    changed = [np.any(v.numpy() != b) for v, b in zip(gan.trainable_variables, before)]
    assert all(changed[:4]) and all(changed[4:7])  # G's 4 variables; D's but its output bias (hinge: 0)


def unconditional_gan(seed=3):
    return onestep_gan.OneStepGAN(
        make_generator(LATENT_DIM), make_unconditional_discriminator(), lam=LAM, latent_dim=LATENT_DIM, seed=seed
    )


def test_unconditional_round_trip_keeps_noise_stream_and_optimizer_state(tmp_path):
    _, real = batch()
    gan = unconditional_gan()
    gan.compile(optimizer=onestep_gan.GANOptimizer(keras.optimizers.Adam(1e-2), generator_learning_rate_ratio=0.5))
    gan.fit(real, batch_size=4, epochs=1, verbose=0)
    gan.save(tmp_path / "gan.keras")
    restored = keras.saving.load_model(tmp_path / "gan.keras", safe_mode=True)
    np.testing.assert_array_equal(restored.seed_generator.state.numpy(), gan.seed_generator.state.numpy())
    assert len(restored.optimizer.variables) == len(gan.optimizer.variables)
    for restored_variable, variable in zip(restored.optimizer.variables, gan.optimizer.variables):
        np.testing.assert_array_equal(restored_variable.numpy(), variable.numpy())
    gan.fit(real, batch_size=4, epochs=1, shuffle=False, verbose=0)
    restored.fit(real, batch_size=4, epochs=1, shuffle=False, verbose=0)
    for restored_variable, variable in zip(restored.trainable_variables, gan.trainable_variables):
        np.testing.assert_array_equal(restored_variable.numpy(), variable.numpy())


def test_interrupted_unconditional_fit_resumes_exactly(tmp_path):
    _, real = batch()

    def make():
        keras.utils.set_random_seed(0)
        gan = unconditional_gan()
        gan(real)
        gan.compile(optimizer=keras.optimizers.Adam(1e-2))
        return gan

    reference = make()
    reference.fit(real, batch_size=4, epochs=4, shuffle=False, verbose=0)
    backup = keras.callbacks.BackupAndRestore(str(tmp_path / "backup"))
    with pytest.raises(RuntimeError, match="interrupted"):
        make().fit(real, batch_size=4, epochs=4, shuffle=False, verbose=0, callbacks=[backup, InterruptAtEpoch(2)])
    resumed = make()
    resumed.fit(real, batch_size=4, epochs=4, shuffle=False, verbose=0, callbacks=[backup])
    for variable, expected in zip(resumed.trainable_variables, reference.trainable_variables):
        np.testing.assert_array_equal(variable.numpy(), expected.numpy())


def test_evaluate_and_sample_leave_the_training_noise_alone():
    _, real = batch()
    gan = unconditional_gan()
    gan.compile(optimizer="adam")
    gan.fit(real, batch_size=4, epochs=1, verbose=0)
    state = gan.seed_generator.state.numpy().copy()
    gan.evaluate(real, batch_size=4, verbose=0)
    gan.sample(3)
    gan.predict(real, batch_size=4, verbose=0)
    np.testing.assert_array_equal(gan.seed_generator.state.numpy(), state)


@keras.saving.register_keras_serializable(package="tests")
def my_hinge_discriminator_loss(real_scores, fake_scores):
    return ops.mean(ops.relu(1.0 - real_scores)) + ops.mean(ops.relu(1.0 + fake_scores))


@keras.saving.register_keras_serializable(package="tests")
def my_hinge_generator_loss(fake_scores, real_scores=None):
    return -ops.mean(fake_scores)


def test_custom_gan_loss_round_trips(tmp_path):
    custom = losses.GANLoss("my_hinge", my_hinge_discriminator_loss, my_hinge_generator_loss)
    gan = onestep_gan.OneStepGAN(make_generator(), make_conditional_discriminator(), loss=custom)
    conditions, real = batch()
    gan.compile(optimizer="adam")
    gan.fit(conditions, real, batch_size=BATCH, verbose=0)
    gan.save(tmp_path / "custom.keras")
    restored = keras.saving.load_model(tmp_path / "custom.keras", safe_mode=True)
    assert restored.gan_loss == custom
    assert keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(custom)) == custom
    # Built-in losses still save as their name.
    assert conditional_gan().get_config()["loss"] == "hinge"


@pytest.mark.parametrize("trainer", ["one_step", "alternating"])
@pytest.mark.parametrize("conditional", [True, False])
def test_class_weight_sample_weight_and_compiled_metrics_are_refused(trainer, conditional):
    cls = onestep_gan.OneStepGAN if trainer == "one_step" else onestep_gan.AlternatingGAN
    conditions, real = batch()
    if conditional:
        gan, data = cls(make_generator(), make_conditional_discriminator()), (conditions, real)
    else:
        gan = cls(make_generator(LATENT_DIM), make_unconditional_discriminator(), latent_dim=LATENT_DIM)
        data = (real,)
    with pytest.raises(ValueError, match=r"does not take compile\(metrics=...\).*Received: metrics=\['mae'\]"):
        gan.compile(metrics=["mae"])
    gan.compile()
    with pytest.raises(ValueError, match=r"does not take class_weight.*Received: class_weight=\{0: 1.0\}"):
        gan.fit(*data, batch_size=BATCH, verbose=0, class_weight={0: 1.0})
    # The same from train_on_batch (Keras failed with an IndexError on y=None, or turned the class
    # weights of a conditional GAN into sample weights the user never gave).
    with pytest.raises(ValueError, match=r"does not take class_weight.*Received: class_weight=\{0: 1.0\}"):
        gan.train_on_batch(*data, class_weight={0: 1.0})
    # Keras drops a sample_weight given beside x alone (no y) before the train step sees it: an
    # unconditional GAN trained and scored as if none had been given.
    weights = np.zeros(len(real), "float32")
    for method in (gan.fit, gan.evaluate):
        with pytest.raises(ValueError, match=r"does not use sample weights.*Received: sample_weight of shape \(8,\)"):
            method(*data, batch_size=BATCH, verbose=0, sample_weight=weights)
    for method in (gan.train_on_batch, gan.test_on_batch):
        with pytest.raises(ValueError, match=r"does not use sample weights.*Received: sample_weight of shape \(8,\)"):
            method(*data, sample_weight=weights)


def test_conditions_and_real_samples_must_have_one_batch_size():
    conditions, real = batch()
    gan = conditional_gan()
    gan.compile(optimizer="adam")
    mismatched = tf.data.Dataset.zip(
        tf.data.Dataset.from_tensor_slices(conditions).batch(4, drop_remainder=True),
        tf.data.Dataset.from_tensor_slices(np.concatenate([real, real])).batch(8, drop_remainder=True),
    )
    with pytest.raises(ValueError, match=r"same batch size.*Received: conditions batch 4, real batch 8"):
        gan.fit(mismatched, shuffle=False, verbose=0)
    # Batch sizes unknown until run time: refused at the first step.
    unknown = tf.data.Dataset.zip(
        tf.data.Dataset.from_tensor_slices(conditions).batch(4),
        tf.data.Dataset.from_tensor_slices(np.concatenate([real, real])).batch(8),
    )
    with pytest.raises((ValueError, tf.errors.InvalidArgumentError), match=r"same batch size"):
        gan.fit(unknown, shuffle=False, verbose=0)


@pytest.mark.parametrize("method", ["fit", "evaluate", "predict"])
def test_a_refused_batch_leaves_a_trained_gan_as_it_was(method):
    """Keras' JAX trainer detaches the variables' values before the first step; a step that
    fails must not leave the model reading its initializers."""
    conditions, real = batch()
    gan = conditional_gan()
    gan.compile(optimizer="adam")
    gan.fit(conditions, real, batch_size=4, epochs=1, verbose=0)
    gan.compile(optimizer="adam")  # a fresh train step: its first trace sees the batch sizes
    before = [to_numpy(variable).copy() for variable in gan.variables]
    if method == "predict":
        with pytest.raises(Exception):
            gan.predict(np.ones((4, CONDITION_DIM + 1), "float32"), verbose=0)  # the wrong width for G
    else:
        mismatched = tf.data.Dataset.zip(
            tf.data.Dataset.from_tensor_slices(conditions).batch(4, drop_remainder=True),
            tf.data.Dataset.from_tensor_slices(np.concatenate([real, real])).batch(8, drop_remainder=True),
        )
        # (The refusal's message is tested above and below.)
        with pytest.raises((ValueError, tf.errors.InvalidArgumentError)):
            getattr(gan, method)(mismatched, verbose=0)
    for variable, value in zip(gan.variables, before):
        np.testing.assert_array_equal(to_numpy(variable), value, err_msg=variable.path)
    assert np.all(np.isfinite(to_numpy(gan.predict(conditions, verbose=0))))


@pytest.mark.parametrize("part", ["discriminator", "generator"])
def test_frozen_part_warns(part):
    gan = conditional_gan()
    conditions, real = batch()
    gan(conditions)
    getattr(gan, part).trainable = False
    gan.compile(optimizer="adam")
    with pytest.warns(UserWarning, match=f"The {part} has no trainable weights"):
        gan.fit(conditions, real, batch_size=BATCH, verbose=0)


@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        ({"lam": float("inf")}, r"finite number >= 0. Received: lam=inf"),
        ({"lam": True}, r"finite number >= 0. Received: lam=True"),
        ({"gradient_penalty_weight": float("nan")}, r"Received: gradient_penalty_weight=nan"),
        ({"latent_dim": 2.0}, r"Received: latent_dim=2.0"),
        ({"latent_dim": True}, r"Received: latent_dim=True"),
    ],
)
def test_non_numbers_and_infinities_are_refused(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        onestep_gan.OneStepGAN(make_generator(), make_conditional_discriminator(), **kwargs)


def test_numpy_numbers_are_accepted():
    gan = onestep_gan.OneStepGAN(
        make_generator(LATENT_DIM), make_unconditional_discriminator(), lam=np.float32(0.5), latent_dim=np.int64(LATENT_DIM)
    )
    assert gan.lam == 0.5 and gan.latent_dim == LATENT_DIM and type(gan.latent_dim) is int
    gan.get_config()  # JSON-serialisable plain Python numbers
    import json
    json.dumps(gan.get_config()["latent_dim"])


def test_wasserstein_gradient_penalty_value():
    """The penalty is mean((||grad_x D(x_hat)|| - 1)^2); for a linear critic the gradient is its weight vector."""
    conditions, real = batch()
    critic = keras.Sequential([keras.Input((SAMPLE_DIM,)), keras.layers.Dense(1)])
    critic.layers[0].kernel.assign(np.array([[3.0], [4.0]], "float32"))  # ||w|| = 5 everywhere
    gan = onestep_gan.OneStepGAN(make_generator(LATENT_DIM), critic, loss="wasserstein", latent_dim=LATENT_DIM,
                                 gradient_penalty_weight=2.0)
    real = ops.convert_to_tensor(real)
    fake = gan(real)
    penalty = gan.gradient_penalty(None, real, fake)
    assert float(penalty) == pytest.approx(16.0, rel=1e-5)  # (5 - 1)^2
    d_loss, real_scores, fake_scores = gan.discriminator_loss(None, real, fake)
    critic_loss = float(ops.mean(fake_scores) - ops.mean(real_scores))
    assert float(d_loss) == pytest.approx(critic_loss + 2.0 * 16.0, rel=1e-5)


class HalfSquaredNorm(keras.layers.Layer):
    """D(x) = ||x||^2 / 2, whose input gradient is x itself: the penalty then shows where D was read."""

    def call(self, inputs):
        return 0.5 * ops.sum(ops.square(inputs), axis=-1, keepdims=True)


def test_wasserstein_gradient_penalty_reads_d_on_per_example_interpolates(monkeypatch):
    """With D(x) = ||x||^2 / 2 the penalty is mean((||eps_i real_i + (1 - eps_i) fake_i|| - 1)^2): it is
    taken on interpolates of real and fake, with one eps per example (a linear critic cannot tell)."""
    critic = keras.Sequential([keras.Input((SAMPLE_DIM,)), HalfSquaredNorm()])
    gan = onestep_gan.OneStepGAN(make_generator(LATENT_DIM), critic, loss="wasserstein", latent_dim=LATENT_DIM)
    rng = np.random.default_rng(3)
    real = rng.normal(size=(BATCH, SAMPLE_DIM)).astype("float32") * 3.0
    fake = rng.normal(size=(BATCH, SAMPLE_DIM)).astype("float32")
    drawn = []
    uniform = keras.random.uniform

    def recording_uniform(*args, **kwargs):
        drawn.append(to_numpy(uniform(*args, **kwargs)))
        return ops.convert_to_tensor(drawn[-1])

    monkeypatch.setattr(keras.random, "uniform", recording_uniform)
    penalty = float(gan.gradient_penalty(None, ops.convert_to_tensor(real), ops.convert_to_tensor(fake)))
    (epsilon,) = drawn
    assert epsilon.shape == (BATCH,) and len(set(epsilon.tolist())) == BATCH  # one eps per example
    interpolates = epsilon[:, None] * real + (1.0 - epsilon[:, None]) * fake
    expected = np.mean((np.linalg.norm(interpolates, axis=1) - 1.0) ** 2)
    assert penalty == pytest.approx(expected, rel=1e-5)


def test_single_loss_separates_exactly_with_the_gradient_penalty():
    """WGAN-GP in the single loss: D gets grad(critic loss + weight x penalty), G gets lam x grad(L_G)
    alone. A linear critic over [conditions, sample] has input gradient k_x (its sample rows), so the
    reference penalty (||k_x|| - 1)^2 is written on the kernel itself, with no input gradient."""
    weight = 3.0
    conditions_input, sample_input = keras.Input((CONDITION_DIM,)), keras.Input((SAMPLE_DIM,))
    critic = keras.Model([conditions_input, sample_input],
                         keras.layers.Dense(1)(keras.layers.Concatenate()([conditions_input, sample_input])))
    gan = onestep_gan.OneStepGAN(make_generator(), critic, loss="wasserstein", lam=LAM, gradient_penalty_weight=weight)
    conditions, real = (ops.convert_to_tensor(t) for t in batch())
    gan(conditions)
    total, d_grads, g_grads = gradients(
        lambda: gan.compute_loss(conditions, real, gan(conditions)),
        gan.discriminator.trainable_variables, gan.generator.trainable_variables,
    )
    kernel = critic.trainable_variables[0]

    def reference_discriminator_loss():
        fake = ops.stop_gradient(gan.generator(conditions))
        real_scores = ops.squeeze(critic([conditions, real]), 1)
        fake_scores = ops.squeeze(critic([conditions, fake]), 1)
        penalty = ops.square(ops.sqrt(ops.sum(ops.square(kernel[CONDITION_DIM:]))) - 1.0)
        return gan.gan_loss.discriminator_loss(real_scores, fake_scores) + weight * penalty

    reference_total, ref_d_grads = gradients(reference_discriminator_loss, gan.discriminator.trainable_variables)
    _, ref_g_grads = gradients(
        lambda: gan.gan_loss.generator_loss(ops.squeeze(critic([conditions, gan.generator(conditions)]), 1)),
        gan.generator.trainable_variables,
    )
    assert float(total) == pytest.approx(float(reference_total), rel=1e-5)
    assert float(reference_total) > float(gan.gan_loss.discriminator_loss(  # the penalty is in it
        ops.squeeze(critic([conditions, real]), 1), ops.squeeze(critic([conditions, gan.generator(conditions)]), 1))) + 1e-3
    for grad, ref in zip(d_grads, ref_d_grads):
        np.testing.assert_allclose(grad, ref, rtol=1e-4, atol=1e-6)
    for grad, ref in zip(g_grads, ref_g_grads):
        np.testing.assert_allclose(grad, LAM * ref, rtol=1e-5, atol=1e-7)
        assert np.any(grad != 0)


@pytest.mark.parametrize("trainer", ["one_step", "alternating"])
@pytest.mark.parametrize("loss", ["hinge", "relativistic"])
def test_logged_metrics_are_the_losses_and_the_mean_scores(trainer, loss):
    """`d_loss`, `g_loss`, `real_score`, `fake_score` (and `loss`) logged by `fit` (a step at learning
    rate 0, so the weights stay) and `evaluate` are L_D, L_G and the mean scores, computed here alone."""
    cls = onestep_gan.OneStepGAN if trainer == "one_step" else onestep_gan.AlternatingGAN
    gan = cls(make_generator(), make_conditional_discriminator(), loss=loss)
    conditions, real = (ops.convert_to_tensor(t) for t in batch())
    real_scores = ops.squeeze(gan.discriminator([conditions, real]), 1)
    fake_scores = ops.squeeze(gan.discriminator([conditions, gan.generator(conditions)]), 1)
    d_loss = float(gan.gan_loss.discriminator_loss(real_scores, fake_scores))
    g_loss = float(gan.gan_loss.generator_loss(fake_scores, real_scores))
    expected = {"d_loss": d_loss, "g_loss": g_loss, "real_score": float(ops.mean(real_scores)),
                "fake_score": float(ops.mean(fake_scores)), "loss": d_loss if trainer == "one_step" else d_loss + g_loss}
    if trainer == "one_step":
        gan.compile(optimizer=keras.optimizers.SGD(0.0))
    else:
        gan.compile(discriminator_optimizer=keras.optimizers.SGD(0.0), generator_optimizer=keras.optimizers.SGD(0.0))
    logged = {key: values[0] for key, values in gan.fit(conditions, real, batch_size=BATCH, verbose=0).history.items()}
    evaluated = gan.evaluate(conditions, real, batch_size=BATCH, verbose=0, return_dict=True)
    for results in (logged, evaluated):
        assert set(results) == set(expected)
        for key, value in expected.items():
            assert results[key] == pytest.approx(value, rel=1e-5, abs=1e-6), key


def test_wasserstein_gradient_penalty_is_differentiated_through_the_input_gradient():
    """The penalty's own gradient reaches D's weights (double backward on every backend): for a
    linear critic, d/dw (||w|| - 1)^2 = 2 (||w|| - 1) w / ||w||."""
    _, real = batch()
    critic = keras.Sequential([keras.Input((SAMPLE_DIM,)), keras.layers.Dense(1)])
    kernel = critic.layers[0].kernel
    kernel.assign(np.array([[3.0], [4.0]], "float32"))
    gan = onestep_gan.OneStepGAN(make_generator(LATENT_DIM), critic, loss="wasserstein", latent_dim=LATENT_DIM)
    real = ops.convert_to_tensor(real)
    fake = ops.stop_gradient(gan(real))
    penalty, (kernel_grad,) = gradients(lambda: gan.gradient_penalty(None, real, fake), [kernel])
    assert float(penalty) == pytest.approx(16.0, rel=1e-5)
    np.testing.assert_allclose(kernel_grad, 2.0 * 4.0 * np.array([[3.0], [4.0]]) / 5.0, rtol=1e-5)


@pytest.fixture
def dtype_policy(request):
    keras.config.set_dtype_policy(request.param)
    yield request.param
    keras.config.set_dtype_policy("float32")


def one_sgd_step(trainer, real):
    keras.utils.set_random_seed(0)
    generator, discriminator = regularized_generator(LATENT_DIM), regularized_unconditional_discriminator()
    kwargs = dict(loss="wasserstein", latent_dim=LATENT_DIM, seed=4)
    if trainer == "one_step":
        gan = onestep_gan.OneStepGAN(generator, discriminator, **kwargs)
        gan(real)
        gan.compile(optimizer=keras.optimizers.SGD(0.01))
    else:
        gan = onestep_gan.AlternatingGAN(generator, discriminator, **kwargs)
        gan(real)
        gan.compile(discriminator_optimizer=keras.optimizers.SGD(0.01), generator_optimizer=keras.optimizers.SGD(0.01))
    if isinstance(gan.optimizer, keras.optimizers.LossScaleOptimizer):
        # Keras' automatic wrapper; its initial 2**15 overflows float16 in this tiny model's
        # first step (which it then skips, by design). 16 still has to be undone.
        gan.optimizer.dynamic_scale.assign(16.0)
    start = [v.numpy().copy() for v in gan.trainable_variables]
    history = gan.fit(real, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
    step = np.concatenate([(v.numpy() - s).ravel() for v, s in zip(gan.trainable_variables, start)])
    return gan, step, history.history


@pytest.mark.parametrize("dtype_policy", ["mixed_float16", "mixed_bfloat16"], indirect=True)
@pytest.mark.parametrize("trainer", ["one_step", "alternating"])
def test_mixed_precision_trains_like_float32(dtype_policy, trainer):
    _, real = batch()
    if trainer == "alternating" and dtype_policy == "mixed_float16" and keras.backend.backend() == "jax":
        with pytest.raises(ValueError, match="AlternatingGAN cannot train under the mixed_float16 policy on JAX"):
            one_sgd_step(trainer, real)
        return
    gan, step, history = one_sgd_step(trainer, real)
    assert gan.discriminator.compute_dtype != "float32"
    fake = gan(real, training=True)
    assert keras.backend.standardize_dtype(gan.compute_loss(real, None, fake).dtype) == "float32"
    assert all(np.isfinite(values[0]) for values in history.values())
    keras.config.set_dtype_policy("float32")
    _, reference, reference_history = one_sgd_step(trainer, real)
    # Loss scaling (mixed_float16) is undone: the step has float32's size, not 2**15 times it.
    assert np.linalg.norm(step - reference) < 0.1 * np.linalg.norm(reference)
    assert history["d_loss"][0] == pytest.approx(reference_history["d_loss"][0], rel=0.05, abs=0.05)


@pytest.mark.parametrize("method", ["evaluate", "predict"])
def test_a_call_stopped_after_its_first_batch_leaves_the_weights_readable(method):
    """Ctrl-C or a raising callback at the second batch: on JAX the first step has donated (deleted)
    the values detached at the start, so the GAN must get the step's live state back, not those."""
    conditions, real = batch()
    gan = conditional_gan()
    gan.compile(optimizer="adam")
    gan.fit(conditions, real, batch_size=4, epochs=1, verbose=0)
    before = [to_numpy(variable).copy() for variable in gan.generator.variables]

    class StopAtSecondBatch(keras.callbacks.Callback):
        def on_test_batch_begin(self, batch, logs=None):
            if batch == 1:
                raise KeyboardInterrupt

        on_predict_batch_begin = on_test_batch_begin

    with pytest.raises(KeyboardInterrupt):
        if method == "evaluate":
            gan.evaluate(conditions, real, batch_size=4, verbose=0, callbacks=[StopAtSecondBatch()])
        else:
            gan.predict(conditions, batch_size=4, verbose=0, callbacks=[StopAtSecondBatch()])
    for variable, value in zip(gan.generator.variables, before):
        np.testing.assert_array_equal(to_numpy(variable), value, err_msg=variable.path)
    assert np.all(np.isfinite(to_numpy(gan.predict(conditions, verbose=0))))


@pytest.mark.parametrize("trainer", ["OneStepGAN", "AlternatingGAN"])
def test_a_compute_metrics_override_is_logged_by_fit_and_evaluate(trainer):
    """The compile error for `metrics=` points users to overriding `compute_metrics`: both trainers
    call it in `fit` and `evaluate`, with the step's generated samples as `y_pred`."""
    base = getattr(onestep_gan, trainer)

    class WithDistance(base):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.distance_tracker = keras.metrics.Mean(name="distance")

        def compute_metrics(self, x, y, y_pred, sample_weight=None):
            self.distance_tracker.update_state(ops.mean(ops.abs(y_pred - y), axis=-1))
            return super().compute_metrics(x, y, y_pred, sample_weight)

    gan = WithDistance(make_generator(), make_conditional_discriminator())
    if trainer == "OneStepGAN":
        gan.compile(optimizer="adam")
    else:
        gan.compile(discriminator_optimizer="adam", generator_optimizer="adam")
    conditions, real = batch()
    history = gan.fit(conditions, real, batch_size=4, epochs=2, shuffle=False, verbose=0)
    assert len(history.history["distance"]) == 2 and np.all(np.isfinite(history.history["distance"]))
    assert history.history["distance"][0] > 0
    fake = ops.convert_to_numpy(gan.generator(conditions))
    logs = gan.evaluate(conditions, real, batch_size=4, verbose=0, return_dict=True)
    assert logs["distance"] == pytest.approx(np.mean(np.abs(fake - real)), rel=1e-5)


@pytest.mark.parametrize("trainer", ["OneStepGAN", "AlternatingGAN"])
def test_a_second_fit_on_a_dataset_of_mismatched_batch_sizes_changes_nothing(trainer):
    """TensorFlow reuses the step traced by the first `fit`, with relaxed shapes: the batch-size check
    traced there did not come first, G's update was applied, and D then failed. A dataset whose
    batch sizes are known is checked before `fit` starts."""
    conditions, real = batch()
    gan = getattr(onestep_gan, trainer)(make_generator(), make_conditional_discriminator())
    if trainer == "OneStepGAN":
        gan.compile(optimizer="adam")
    else:
        gan.compile(discriminator_optimizer="adam", generator_optimizer="adam")
    gan.fit(conditions, real, batch_size=4, epochs=1, verbose=0)
    before = [to_numpy(variable).copy() for variable in gan.variables + gan.optimizer.variables]
    mismatched = tf.data.Dataset.zip(
        tf.data.Dataset.from_tensor_slices(conditions).batch(4, drop_remainder=True),
        tf.data.Dataset.from_tensor_slices(np.concatenate([real, real])).batch(8, drop_remainder=True),
    )
    for method in ("fit", "evaluate"):
        with pytest.raises(ValueError, match=r"same batch size.*Received: conditions batch 4, real batch 8"):
            getattr(gan, method)(mismatched, verbose=0)
    for variable, value in zip(gan.variables + gan.optimizer.variables, before):
        np.testing.assert_array_equal(to_numpy(variable), value, err_msg=variable.path)
