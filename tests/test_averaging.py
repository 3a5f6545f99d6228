"""Checkpoint averaging (rdf2text/averaging.py) and its use by the MLE job."""

import json
import pathlib
import warnings

import keras
import numpy as np
import pytest

from onestep_gan.rdf2text import averaging, mle, runs
from tests.conftest import fixture_2017_dir
from tests.test_mle import tiny_config


def _dense_model():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse")
    return model


def test_window_ends_at_the_best_epoch_and_is_clipped_at_the_first():
    assert averaging.averaged_epochs(5, 3) == [3, 4, 5]
    assert averaging.averaged_epochs(2, 5) == [1, 2]
    assert averaging.averaged_epochs(4, 1) == [4]
    with pytest.raises(ValueError, match="must be positive"):
        averaging.averaged_epochs(4, 0)


def test_average_into_is_the_exact_mean_of_the_files(tmp_path):
    model = _dense_model()
    files, kernels = [], []
    for index, scale in enumerate((1.0, 2.0, 6.0)):
        kernel = np.full((3, 2), scale, "float32") + np.arange(6, dtype="float32").reshape(3, 2)
        model.set_weights([kernel, np.full((2,), -scale, "float32")])
        files.append(tmp_path / f"w{index}.weights.h5")
        model.save_weights(files[-1])
        kernels.append(kernel)
    averaging.average_into(model, files)
    kernel, bias = model.get_weights()
    np.testing.assert_allclose(kernel, np.mean(kernels, axis=0), rtol=0, atol=1e-6)
    np.testing.assert_allclose(bias, np.full((2,), -3.0), rtol=0, atol=1e-6)
    with pytest.raises(ValueError, match="not found"):
        averaging.average_into(model, [tmp_path / "missing.weights.h5"])


def test_epoch_weights_keeps_the_last_files_and_they_hold_that_epochs_weights(tmp_path):
    model = _dense_model()
    x, y = np.ones((8, 3), "float32"), np.zeros((8, 2), "float32")
    model.fit(x, y, epochs=5, verbose=0, callbacks=[averaging.EpochWeights(tmp_path, keep=2)])
    assert sorted(path.name for path in tmp_path.iterdir()) == ["epoch_004.weights.h5", "epoch_005.weights.h5"]
    final = model.get_weights()
    model.load_weights(tmp_path / "epoch_004.weights.h5")
    assert not np.allclose(model.get_weights()[0], final[0])  # an earlier point of the path
    model.load_weights(tmp_path / "epoch_005.weights.h5")
    for saved, expected in zip(model.get_weights(), final):
        np.testing.assert_array_equal(saved, expected)


def test_epoch_weights_are_flushed_to_disk_before_they_are_renamed(tmp_path, monkeypatch):
    # Renamed without a flush, a file may be empty after a power cut while its name is there.
    from onestep_gan.rdf2text import atomic_files

    committed, commit = [], atomic_files._commit

    def recording_commit(partial, path):
        committed.append(pathlib.Path(path).name)
        commit(partial, path)

    monkeypatch.setattr(atomic_files, "_commit", recording_commit)
    model = _dense_model()
    model.fit(np.ones((8, 3), "float32"), np.zeros((8, 2), "float32"), epochs=2, verbose=0,
              callbacks=[averaging.EpochWeights(tmp_path, keep=2)])
    assert committed == ["epoch_001.weights.h5", "epoch_002.weights.h5"]
    assert sorted(path.name for path in tmp_path.iterdir()) == committed  # no partial file left


def test_the_mle_job_decodes_the_average_and_decode_run_can_change_the_window(tmp_path):
    run_dir = tmp_path / "run"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        mle.train_and_evaluate(tiny_config(epochs=3, average_checkpoints=2), fixture_2017_dir(), run_dir)
    best_epoch = json.loads((run_dir / runs.TIMING_FILE).read_text())["best_epoch"]
    folder = run_dir / averaging.EPOCH_WEIGHTS_DIR
    model = runs.load_model_file(run_dir / runs.MODEL_FILE)
    reference = runs.load_model_file(run_dir / runs.MODEL_FILE)
    averaging.average_into(reference, [averaging.epoch_weights_file(folder, e)
                                       for e in averaging.averaged_epochs(best_epoch, 2)])
    for saved, expected in zip(model.get_weights(), reference.get_weights()):
        np.testing.assert_allclose(saved, expected, rtol=0, atol=1e-7)

    # Re-decoding with a window of 1 restores the best epoch's own weights in model.keras.
    mle.decode_run(run_dir, fixture_2017_dir(), average_checkpoints=1)
    model = runs.load_model_file(run_dir / runs.MODEL_FILE)
    reference.load_weights(averaging.epoch_weights_file(folder, best_epoch))
    for saved, expected in zip(model.get_weights(), reference.get_weights()):
        np.testing.assert_array_equal(saved, expected)
