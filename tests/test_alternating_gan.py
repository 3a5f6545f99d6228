"""AlternatingGAN: one fit step is a D step on stopped fakes, then a G step through the updated D."""

import numpy as np
import pytest
import keras
from keras import ops

import onestep_gan
from tests.test_one_step_gan import (
    BATCH, CONDITION_DIM, SAMPLE_DIM, ArgmaxGenerator, TrainingScale, batch, gradients, make_conditional_discriminator,
    make_generator,
)


def make_gan(**kwargs):
    return onestep_gan.AlternatingGAN(make_generator(), make_conditional_discriminator(), **kwargs)


def test_fit_step_matches_manual_alternating_updates():
    learning_rate = 0.1
    gan = make_gan()
    conditions, real = (ops.convert_to_tensor(t) for t in batch())
    gan(conditions)
    generator, discriminator, gan_loss = gan.generator, gan.discriminator, gan.gan_loss
    d_start = [v.numpy().copy() for v in discriminator.trainable_variables]
    g_start = [v.numpy().copy() for v in generator.trainable_variables]

    # Reference: D step, then G step through the updated D.
    def discriminator_loss():
        fake = ops.stop_gradient(generator(conditions))
        real_scores = ops.squeeze(discriminator([conditions, real]), 1)
        return gan_loss.discriminator_loss(real_scores, ops.squeeze(discriminator([conditions, fake]), 1))

    _, d_grads = gradients(discriminator_loss, discriminator.trainable_variables)
    expected_d = [w - learning_rate * g for w, g in zip(d_start, d_grads)]
    for variable, value in zip(discriminator.trainable_variables, expected_d):
        variable.assign(value)
    _, g_grads = gradients(
        lambda: gan_loss.generator_loss(ops.squeeze(discriminator([conditions, generator(conditions)]), 1)),
        generator.trainable_variables,
    )
    expected_g = [w - learning_rate * g for w, g in zip(g_start, g_grads)]
    for variable, value in zip(discriminator.trainable_variables, d_start):
        variable.assign(value)

    gan.compile(
        discriminator_optimizer=keras.optimizers.SGD(learning_rate),
        generator_optimizer=keras.optimizers.SGD(learning_rate),
    )
    history = gan.fit(conditions, real, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
    assert set(history.history) == {"loss", "d_loss", "g_loss", "real_score", "fake_score"}
    for variable, expected in zip(discriminator.trainable_variables, expected_d):
        np.testing.assert_allclose(variable.numpy(), expected, rtol=1e-5, atol=1e-6)
    for variable, expected in zip(generator.trainable_variables, expected_g):
        np.testing.assert_allclose(variable.numpy(), expected, rtol=1e-5, atol=1e-6)


def training_sensitive_conditional_discriminator():
    conditions, sample = keras.Input((CONDITION_DIM,)), keras.Input((SAMPLE_DIM,))
    hidden = keras.layers.Dense(16, activation="tanh")(keras.layers.Concatenate()([conditions, sample]))
    return keras.Model([conditions, sample], keras.layers.Dense(1)(TrainingScale()(hidden)), name="discriminator")


@pytest.mark.parametrize("discriminator_steps", [1, 2])
@pytest.mark.parametrize("loss", ["hinge", "relativistic"])
def test_fit_step_matches_manual_updates_for_each_setting(discriminator_steps, loss):
    """`discriminator_steps` D steps, then a G step, every D pass in training mode (D scales its
    hidden layer by 3 in inference), RSGAN's G step against real scores of the updated D."""
    learning_rate = 0.1
    gan = onestep_gan.AlternatingGAN(make_generator(), training_sensitive_conditional_discriminator(), loss=loss,
                                     discriminator_steps=discriminator_steps)
    conditions, real = (ops.convert_to_tensor(t) for t in batch())
    generator, discriminator, gan_loss = gan.generator, gan.discriminator, gan.gan_loss
    d_start = [v.numpy().copy() for v in discriminator.trainable_variables]
    g_start = [v.numpy().copy() for v in generator.trainable_variables]

    def score(sample):
        return ops.squeeze(discriminator([conditions, sample], training=True), 1)

    for _ in range(discriminator_steps):
        fake = ops.stop_gradient(generator(conditions, training=True))
        _, d_grads = gradients(lambda: gan_loss.discriminator_loss(score(real), score(fake)), discriminator.trainable_variables)
        for variable, gradient in zip(discriminator.trainable_variables, d_grads):
            variable.assign(variable.numpy() - learning_rate * gradient)
    expected_d = [v.numpy().copy() for v in discriminator.trainable_variables]
    real_scores = ops.stop_gradient(score(real))
    _, g_grads = gradients(lambda: gan_loss.generator_loss(score(generator(conditions, training=True)), real_scores),
                           generator.trainable_variables)
    expected_g = [w - learning_rate * g for w, g in zip(g_start, g_grads)]
    for variable, value in zip(discriminator.trainable_variables, d_start):
        variable.assign(value)

    gan.compile(discriminator_optimizer=keras.optimizers.SGD(learning_rate), generator_optimizer=keras.optimizers.SGD(learning_rate))
    gan.fit(conditions, real, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
    assert int(gan.optimizer.iterations) == discriminator_steps + 1
    for variable, expected in zip(discriminator.trainable_variables, expected_d):
        np.testing.assert_allclose(variable.numpy(), expected, rtol=1e-5, atol=1e-6)
    for variable, expected in zip(generator.trainable_variables, expected_g):
        np.testing.assert_allclose(variable.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_unconditional_fit_and_keras_round_trip(tmp_path):
    gan = onestep_gan.AlternatingGAN(
        make_generator(4), keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)]), latent_dim=4,
        loss="non_saturating", discriminator_steps=2,
    )
    gan.compile(discriminator_optimizer="adam", generator_optimizer="adam")
    _, real = batch()
    history = gan.fit(real, batch_size=4, epochs=1, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    gan.save(tmp_path / "alternating.keras")
    restored = keras.saving.load_model(tmp_path / "alternating.keras", safe_mode=True)
    assert restored.discriminator_steps == 2 and restored.latent_dim == 4
    z = np.random.default_rng(0).normal(size=(3, 4)).astype("float32")
    np.testing.assert_array_equal(ops.convert_to_numpy(restored.generator(z)), ops.convert_to_numpy(gan.generator(z)))


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="Expected discriminator_steps to be an int >= 1. Received: discriminator_steps=0"):
        make_gan(discriminator_steps=0)
    gan = make_gan()
    with pytest.raises(ValueError, match="takes discriminator_optimizer and generator_optimizer"):
        gan.compile(optimizer="adam")


def test_fit_step_includes_regularisation_losses():
    """Each net's step adds its own regularisation: weights and activity (D's on its real and fake passes)."""
    from tests.test_one_step_gan import LATENT_DIM, regularized_generator, regularized_unconditional_discriminator

    learning_rate = 0.1
    gan = onestep_gan.AlternatingGAN(
        regularized_generator(LATENT_DIM), regularized_unconditional_discriminator(), latent_dim=LATENT_DIM, seed=6
    )
    _, real = batch()
    real = ops.convert_to_tensor(real)
    gan(real)
    generator, discriminator, gan_loss = gan.generator, gan.discriminator, gan.gan_loss
    d_start = [v.numpy().copy() for v in discriminator.trainable_variables]
    g_start = [v.numpy().copy() for v in generator.trainable_variables]
    stream = onestep_gan.ReplicaSeedGenerator(6)
    z_d = keras.random.normal((BATCH, LATENT_DIM), seed=stream)
    z_g = keras.random.normal((BATCH, LATENT_DIM), seed=stream)

    def discriminator_loss():
        real_scores = ops.squeeze(discriminator(real), 1)
        d_losses = list(discriminator.losses)
        fake_scores = ops.squeeze(discriminator(ops.stop_gradient(generator(z_d))), 1)
        d_losses += discriminator.losses[:1]  # activity on the fake pass (the weight term once)
        return gan_loss.discriminator_loss(real_scores, fake_scores) + ops.sum(ops.stack(d_losses))

    _, d_grads = gradients(discriminator_loss, discriminator.trainable_variables)
    for variable, grad in zip(discriminator.trainable_variables, d_grads):
        variable.assign(variable.numpy() - learning_rate * grad)
    expected_d = [v.numpy().copy() for v in discriminator.trainable_variables]

    def generator_loss():
        fake = generator(z_g)
        # Read G's losses before D's call, as the engine does: on JAX Keras finds a layer's losses
        # by id(), and D's call drops the losses whose ids D recorded in an earlier, finished trace;
        # a new tensor can reuse such an id (G's activity loss was dropped about 1 time in 50).
        regularization = list(generator.losses)
        return gan_loss.generator_loss(ops.squeeze(discriminator(fake), 1)) + ops.sum(ops.stack(regularization))

    _, g_grads = gradients(generator_loss, generator.trainable_variables)
    expected_g = [w - learning_rate * g for w, g in zip(g_start, g_grads)]
    for variable, value in zip(discriminator.trainable_variables, d_start):
        variable.assign(value)

    gan.compile(
        discriminator_optimizer=keras.optimizers.SGD(learning_rate),
        generator_optimizer=keras.optimizers.SGD(learning_rate),
    )
    gan.fit(real, batch_size=BATCH, epochs=1, shuffle=False, verbose=0)
    for variable, expected in zip(discriminator.trainable_variables, expected_d):
        np.testing.assert_allclose(variable.numpy(), expected, rtol=1e-5, atol=1e-6)
    for variable, expected in zip(generator.trainable_variables, expected_g):
        np.testing.assert_allclose(variable.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_generator_without_gradient_fails_loudly():
    gan = onestep_gan.AlternatingGAN(ArgmaxGenerator(name="argmax_generator"), make_conditional_discriminator())
    conditions, real = batch()
    gan.compile()
    with pytest.raises(ValueError, match=r"No gradient reaches the generator's trainable weights.*argmax_generator"):
        gan.fit(conditions, real, batch_size=BATCH, epochs=1, verbose=0)
    # The model stays usable after the refused step (the JAX trainer detaches the weights).
    assert np.all(np.isfinite(ops.convert_to_numpy(gan.discriminator([conditions, real]))))


@pytest.mark.parametrize("part", ["discriminator", "generator"])
def test_a_frozen_part_trains_with_a_warning(part):
    """As OneStepGAN does: the other net trains (PyTorch's autograd refuses an empty list of
    inputs, so the frozen net's gradient is not asked for)."""
    gan = make_gan()
    conditions, real = batch()
    gan(conditions)
    getattr(gan, part).trainable = False
    gan.compile()
    other = gan.generator if part == "discriminator" else gan.discriminator
    before = [ops.convert_to_numpy(v).copy() for v in other.trainable_variables]
    with pytest.warns(UserWarning, match=f"The {part} has no trainable weights"):
        history = gan.fit(conditions, real, batch_size=BATCH, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    assert any(np.any(ops.convert_to_numpy(v) != b) for v, b in zip(other.trainable_variables, before))


def test_loss_is_d_loss_plus_g_loss_over_batches_of_unequal_size():
    """`loss` is weighted by batch size as `d_loss` and `g_loss` are: with batches of 4, 4 and 2
    the epoch's `loss` is their sum."""
    gan = onestep_gan.AlternatingGAN(
        make_generator(4), keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)]), latent_dim=4, seed=1,
    )
    gan.compile(discriminator_optimizer=keras.optimizers.SGD(0.5), generator_optimizer=keras.optimizers.SGD(0.5))
    real = np.random.default_rng(1).normal(size=(10, 2)).astype("float32") * 3.0
    logs = gan.fit(real, batch_size=4, epochs=1, shuffle=False, verbose=0).history
    assert logs["loss"][0] == pytest.approx(logs["d_loss"][0] + logs["g_loss"][0], rel=1e-5, abs=1e-6)


def test_a_loaded_gan_keeps_its_compile_settings(tmp_path):
    gan = onestep_gan.AlternatingGAN(
        make_generator(4), keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)]), latent_dim=4,
    )
    steps = 1 if keras.backend.backend() == "torch" else 2  # PyTorch runs one step per call
    gan.compile(discriminator_optimizer="adam", generator_optimizer="sgd", steps_per_execution=steps, run_eagerly=True)
    _, real = batch()
    gan.fit(real, batch_size=4, epochs=1, verbose=0)
    gan.save(tmp_path / "alternating.keras")
    restored = keras.saving.load_model(tmp_path / "alternating.keras")
    assert restored.steps_per_execution == steps and restored.run_eagerly
    assert isinstance(restored.generator_optimizer, keras.optimizers.SGD)


@pytest.mark.parametrize("run_eagerly", [False, True])
def test_nets_that_build_on_their_first_call_train_from_the_first_step(run_eagerly):
    """G and D written without keras.Input are built inside the first step. D's variables were read before
    that: on TensorFlow the first fit failed ("tf.function only supports singleton tf.Variables created on
    the first call"), and run eagerly the first step left D as it was."""
    keras.utils.set_random_seed(0)
    generator = keras.Sequential([keras.layers.Dense(8, activation="relu"), keras.layers.Dense(2)])
    discriminator = keras.Sequential([keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)])
    gan = onestep_gan.AlternatingGAN(generator, discriminator, latent_dim=4, seed=0)
    gan.compile(discriminator_optimizer=keras.optimizers.Adam(2e-4), generator_optimizer=keras.optimizers.Adam(2e-4),
                run_eagerly=run_eagerly)
    real = np.random.default_rng(0).normal(size=(16, 2)).astype("float32")
    gan.fit(real, batch_size=16, epochs=1, verbose=0)  # one step
    assert int(gan.gan_optimizer.discriminator_optimizer.iterations) == 1
    assert int(gan.gan_optimizer.generator_optimizer.iterations) == 1
    assert int(gan.gan_optimizer.iterations) == 2
