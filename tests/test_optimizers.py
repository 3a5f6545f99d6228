"""GANOptimizer: a G:D learning-rate ratio that holds under Adam, where lam does not."""

import numpy as np
import pytest

import keras

import onestep_gan
from tests.test_one_step_gan import batch, make_conditional_discriminator, make_generator


def one_adam_step(ratio=1.0, lam=1.0, steps=1):
    keras.utils.set_random_seed(0)
    gan = onestep_gan.OneStepGAN(make_generator(), make_conditional_discriminator(), lam=lam)
    conditions, real = batch()
    gan(conditions)
    start = {id(v): v.numpy().copy() for v in gan.trainable_variables}
    gan.compile(
        optimizer=onestep_gan.GANOptimizer(keras.optimizers.Adam(1e-2), generator_learning_rate_ratio=ratio)
    )
    for _ in range(steps):
        gan.train_on_batch(conditions, real)

    def displacement(model):
        return np.concatenate([(v.numpy() - start[id(v)]).ravel() for v in model.trainable_variables])

    return displacement(gan.generator), displacement(gan.discriminator)


def test_generator_update_scales_with_the_ratio_under_adam():
    g_full, d_full = one_adam_step(ratio=1.0)
    g_quarter, d_quarter = one_adam_step(ratio=0.25)
    # Adam's first step is lr * g / (|g| + eps): it scales with the learning rate only.
    np.testing.assert_allclose(g_quarter, 0.25 * g_full, rtol=1e-4, atol=1e-7)
    np.testing.assert_array_equal(d_quarter, d_full)
    assert np.linalg.norm(g_full) > 0


def test_lam_barely_moves_generator_under_adam():
    # Why the ratio exists: under Adam, lam cancels out of the step.
    g_lam1, _ = one_adam_step(lam=1.0, steps=5)
    g_lam01, _ = one_adam_step(lam=0.1, steps=5)
    ratio = np.linalg.norm(g_lam01) / np.linalg.norm(g_lam1)
    assert ratio == pytest.approx(1.0, abs=0.02)


def test_explicit_generator_optimizer_and_learning_rate_setter():
    optimizer = onestep_gan.GANOptimizer(
        keras.optimizers.Adam(1e-3), generator_optimizer=keras.optimizers.SGD(0.5)
    )
    assert isinstance(optimizer.generator_optimizer, keras.optimizers.SGD)
    ratio_optimizer = onestep_gan.GANOptimizer(keras.optimizers.Adam(1e-3), generator_learning_rate_ratio=4.0)
    assert float(ratio_optimizer.generator_optimizer.learning_rate) == pytest.approx(4e-3)
    ratio_optimizer.learning_rate = 2e-3
    assert float(ratio_optimizer.discriminator_optimizer.learning_rate) == pytest.approx(2e-3)
    assert float(ratio_optimizer.generator_optimizer.learning_rate) == pytest.approx(8e-3)


def test_optimizer_config_round_trip():
    optimizer = onestep_gan.GANOptimizer(keras.optimizers.Adam(1e-3, beta_1=0.5), generator_learning_rate_ratio=0.25)
    clone = onestep_gan.GANOptimizer.from_config(optimizer.get_config())
    assert clone.generator_learning_rate_ratio == 0.25
    assert float(clone.generator_optimizer.learning_rate) == pytest.approx(2.5e-4)
    assert clone.discriminator_optimizer.get_config()["beta_1"] == 0.5


@pytest.mark.parametrize("ratio", [0.0, -1.0])
def test_bad_ratio_raises(ratio):
    with pytest.raises(ValueError, match=f"Expected generator_learning_rate_ratio > 0. Received: generator_learning_rate_ratio={ratio}"):
        onestep_gan.GANOptimizer("adam", generator_learning_rate_ratio=ratio)


def test_apply_without_generator_variables_raises():
    optimizer = onestep_gan.GANOptimizer("sgd")
    variable = keras.Variable(np.ones(2, "float32"))
    with pytest.raises(ValueError, match="does not know which variables belong to the generator"):
        optimizer.apply([np.ones(2, "float32")], [variable])
