"""Multi-process data parallel on JAX: 2 processes (gloo CPU collectives on localhost) train as
one process fed the same global batch, and draw different slices of the noise."""

import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="JAX is not installed")


def run(processes, out):
    completed = subprocess.run(
        [sys.executable, str(REPO_ROOT / "examples" / "data_parallel_jax.py"), "--processes", str(processes),
         "--out", str(out)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT), "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu"},
    )
    assert completed.returncode == 0, f"{completed.stdout[-3000:]}\n{completed.stderr[-3000:]}"
    return [dict(np.load(f"{out}.process{i}.npz")) for i in range(processes)]


def test_two_processes_train_like_one_process_fed_the_global_batch(tmp_path):
    (single,) = run(1, tmp_path / "one")
    first, second = run(2, tmp_path / "two")
    weights = sorted(key for key in single if key.startswith("w"))
    assert weights
    # Training moved the weights; both processes hold the same ones, those of one process.
    assert any(np.max(np.abs(single[k] - single["start" + k[1:]])) > 1e-3 for k in weights)
    for key in weights:
        np.testing.assert_array_equal(first[key], second[key])
        np.testing.assert_allclose(first[key], single[key], rtol=1e-5, atol=1e-5)
    # The noise: each process holds its own slice of the one global draw.
    assert first["noise"].shape == second["noise"].shape == (8, 4)
    assert np.max(np.abs(first["noise"] - second["noise"])) > 0.1
    np.testing.assert_array_equal(np.concatenate([first["noise"], second["noise"]]), single["noise"])
