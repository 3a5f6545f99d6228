"""Tests for examples/toy_mixture.py: the metric on hand-made points, and a shrunken run."""

import numpy as np
import pytest

from tests.conftest import load_example


@pytest.fixture(scope="module")
def toy_mixture():
    return load_example("toy_mixture.py")


def test_ring_centers_lie_on_the_circle(toy_mixture):
    centers = toy_mixture.ring_centers()
    assert centers.shape == (8, 2)
    np.testing.assert_allclose(np.linalg.norm(centers, axis=1), 2.0, rtol=1e-6)
    np.testing.assert_allclose(centers[0], [2.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(centers[2], [0.0, 2.0], atol=1e-6)


def test_ring_of_gaussians_is_seeded_and_near_the_modes(toy_mixture):
    first = toy_mixture.ring_of_gaussians(1000, seed=3)
    np.testing.assert_array_equal(first, toy_mixture.ring_of_gaussians(1000, seed=3))
    assert not np.array_equal(first, toy_mixture.ring_of_gaussians(1000, seed=4))
    assert first.shape == (1000, 2) and first.dtype == np.float32
    # Real data: all modes, and P(within 3 sigma) = 1 - exp(-9/2) = 98.9% in 2-D.
    modes_covered, quality, _ = toy_mixture.mode_coverage(first, toy_mixture.ring_centers())
    assert modes_covered == 8
    assert quality > 0.97


def test_mode_coverage_exact_counts(toy_mixture):
    centers = toy_mixture.ring_centers()
    std = 0.02
    rng = np.random.default_rng(0)
    # 25 points at mode 0 (inside 3 sigma = 0.06), 5 at mode 2, 10 at mode 4 but 0.07 away
    # (outside 3 sigma), 10 far from every mode (the origin).
    directions = rng.normal(size=(25, 2))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    near_mode_0 = centers[0] + 0.05 * directions
    near_mode_2 = np.repeat(centers[2:3] + [0.01, -0.01], 5, axis=0)
    off_mode_4 = np.repeat(centers[4:5] + [0.07, 0.0], 10, axis=0)
    origin = np.zeros((10, 2))
    samples = np.concatenate([near_mode_0, near_mode_2, off_mode_4, origin])

    modes_covered, quality, counts = toy_mixture.mode_coverage(
        samples, centers, std=std, min_samples=5
    )
    np.testing.assert_array_equal(counts, [25, 0, 5, 0, 0, 0, 0, 0])
    assert modes_covered == 2
    assert quality == pytest.approx(30 / 50)

    # A higher threshold drops the 5-sample mode; the share does not change.
    modes_covered, quality, _ = toy_mixture.mode_coverage(
        samples, centers, std=std, min_samples=6
    )
    assert modes_covered == 1
    assert quality == pytest.approx(30 / 50)


def test_shrunken_run_prints_both_rows(toy_mixture, capsys):
    results = toy_mixture.main(
        ["--epochs", "1", "--steps", "3", "--batch-size", "32", "--hidden", "8", "--seed", "1"]
    )
    table = capsys.readouterr().out
    assert [result["trainer"] for result in results] == ["OneStepGAN", "AlternatingGAN"]
    lines = table.strip().splitlines()
    assert lines[0].split()[0] == "trainer"
    assert lines[2].startswith("OneStepGAN") and lines[3].startswith("AlternatingGAN")
    for line, result in zip(lines[2:], results):
        assert result["samples"].shape == (toy_mixture.NUM_EVAL_SAMPLES, 2)
        assert np.all(np.isfinite(result["samples"]))
        # The reported figures are those of the returned samples, and the row prints them.
        modes_covered, quality, _ = toy_mixture.mode_coverage(result["samples"], toy_mixture.ring_centers())
        assert (result["modes_covered"], result["high_quality_share"]) == (modes_covered, quality)
        assert f"{modes_covered} / 8" in line and f"{quality:.1%}" in line
        # 3 steps of an untrained 8-unit G: its samples are not yet on the ring of radius 2.
        assert np.mean(np.linalg.norm(result["samples"], axis=1)) < 1.5
