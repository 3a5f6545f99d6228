import math

import numpy as np
import pytest

from onestep_gan import losses

REAL = np.array([0.5, -2.0, 1.5], dtype="float32")
FAKE = np.array([-0.5, 2.0, 0.25], dtype="float32")


def softplus(x):
    return math.log1p(math.exp(x))


def test_hinge_values():
    # relu(1 + real) = [1.5, 0, 2.5] -> mean 4/3 ; relu(1 - fake) = [1.5, 0, 0.75] -> mean 0.75
    assert float(losses.hinge_discriminator_loss(REAL, FAKE)) == pytest.approx(4 / 3 + 0.75)
    assert float(losses.hinge_generator_loss(FAKE)) == pytest.approx((-0.5 + 2.0 + 0.25) / 3)


def test_non_saturating_values():
    expected_d = np.mean([softplus(-r) for r in REAL]) + np.mean([softplus(f) for f in FAKE])
    expected_g = np.mean([softplus(-f) for f in FAKE])
    assert float(losses.non_saturating_discriminator_loss(REAL, FAKE)) == pytest.approx(expected_d, rel=1e-6)
    assert float(losses.non_saturating_generator_loss(FAKE)) == pytest.approx(expected_g, rel=1e-6)


def test_least_squares_values():
    # 0.5*mean([0.25, 9, 0.25]) + 0.5*mean([0.25, 4, 0.0625])
    assert float(losses.least_squares_discriminator_loss(REAL, FAKE)) == pytest.approx(
        0.5 * 9.5 / 3 + 0.5 * 4.3125 / 3
    )
    # 0.5*mean([2.25, 1, 0.5625])
    assert float(losses.least_squares_generator_loss(FAKE)) == pytest.approx(0.5 * 3.8125 / 3)


def test_relativistic_values():
    expected_d = np.mean([softplus(f - r) for r, f in zip(REAL, FAKE)])
    expected_g = np.mean([softplus(r - f) for r, f in zip(REAL, FAKE)])
    assert float(losses.relativistic_discriminator_loss(REAL, FAKE)) == pytest.approx(expected_d, rel=1e-6)
    assert float(losses.relativistic_generator_loss(FAKE, REAL)) == pytest.approx(expected_g, rel=1e-6)


def test_wasserstein_values():
    assert float(losses.wasserstein_discriminator_loss(REAL, FAKE)) == pytest.approx(
        np.mean(FAKE) - np.mean(REAL)
    )
    assert float(losses.wasserstein_generator_loss(FAKE)) == pytest.approx(-np.mean(FAKE))


def test_registry_and_orientation():
    assert set(losses.LOSSES) == {"hinge", "non_saturating", "least_squares", "relativistic", "wasserstein"}
    assert losses.get("hinge").real_sign == -1.0
    assert losses.get("non_saturating").real_sign == 1.0
    assert losses.get("wasserstein").gradient_penalty is True


def test_unknown_loss_lists_choices():
    with pytest.raises(ValueError, match=r"Expected one of \['hinge', 'least_squares'.*Received: loss='minimax'"):
        losses.get("minimax")
