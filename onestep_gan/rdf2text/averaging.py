"""Checkpoint averaging: the decoded model is the mean of the weights of the last `k` epochs
that end at the best epoch (by dev loss).

- `EpochWeights`: a callback that writes the weights at the end of every epoch to
  `epoch_weights/epoch_NNN.weights.h5` (atomically: flushed, then renamed), keeping the files that an average may
  still need.
- `average_into(model, files)`: sets `model`'s float weights to the mean of the files'.
- `averaged_epochs(best_epoch, k)` / `average_epoch_weights(model, folder, best_epoch, k)`: the
  window and the averaging that `mle.train_and_evaluate` uses; `average_run(model, run_dir, k)`
  the same for a finished run (`examples/webnlg_decoding_sweep.py`; `mle.decode_run` reads
  `run_best_epoch`).

Averaging the last few checkpoints is a cheap ensemble of points along the end of the
optimisation path (Vaswani et al., 2017 average the last 5 or 20 checkpoints; Popel & Bojar,
2018, "Training Tips for the Transformer Model", section 4.10).
"""

import json
import pathlib

import keras
import numpy as np

from onestep_gan.rdf2text import atomic_files, runs

EPOCH_WEIGHTS_DIR = "epoch_weights"


def epoch_weights_file(folder, epoch):
    """The file of 1-based `epoch`."""
    return pathlib.Path(folder) / f"epoch_{epoch:03d}.weights.h5"


def averaged_epochs(best_epoch, k):
    """The 1-based epochs averaged for `best_epoch` (1-based) and window `k`."""
    if k < 1:
        raise ValueError(f"`average_checkpoints` must be positive. Received: {k}")
    return list(range(max(1, best_epoch - k + 1), best_epoch + 1))


class EpochWeights(keras.callbacks.Callback):
    """Writes the weights after every epoch; keeps only the last `keep` epochs' files.

    `keep` must cover the averaging window plus the epochs that early stopping may run past the
    best one (its patience), so that the window ending at the best epoch is still on disk.
    """

    def __init__(self, folder, keep):
        super().__init__()
        self.folder = pathlib.Path(folder)
        self.keep = int(keep)

    def on_epoch_end(self, epoch, logs=None):
        self.folder.mkdir(parents=True, exist_ok=True)
        target = epoch_weights_file(self.folder, epoch + 1)
        # Flushed and renamed (a kill leaves a complete file or none); Keras wants the `.weights.h5` ending.
        atomic_files.atomic_save(target, self.model.save_weights, partial=target.with_name(f".{target.name}"))
        stale = epoch_weights_file(self.folder, epoch + 1 - self.keep)
        if epoch + 1 - self.keep >= 1 and stale.exists():
            stale.unlink()


def average_into(model, files):
    """Sets `model`'s floating-point weights to the mean of `files`' (`save_weights` files of the
    same architecture); integer weights (counters, seeds) keep the last file's values."""
    files = [pathlib.Path(file) for file in files]
    if not files:
        raise ValueError("Expected at least one weights file to average. Received: none")
    missing = [str(file) for file in files if not file.is_file()]
    if missing:
        raise ValueError(f"Weights files to average not found: {missing}")
    total = None
    for file in files:
        model.load_weights(file)
        weights = model.get_weights()
        total = weights if total is None else [
            running + weight if np.issubdtype(weight.dtype, np.floating) else weight
            for running, weight in zip(total, weights)
        ]
    model.set_weights([
        (weight / len(files)).astype(weight.dtype) if np.issubdtype(weight.dtype, np.floating) else weight
        for weight in total
    ])
    return model


def run_best_epoch(run_dir):
    """The best epoch of a finished MLE run, as `mle.train_and_evaluate` wrote it in `timing.json`."""
    timing_file = pathlib.Path(run_dir) / runs.TIMING_FILE
    try:
        return int(json.loads(timing_file.read_text(encoding="utf-8"))["best_epoch"])
    except (OSError, ValueError, KeyError, TypeError):
        raise ValueError(
            f"{timing_file}: expected the finished run's timing with its best_epoch, to average the "
            "epochs ending at it."
        ) from None


def average_run(model, run_dir, k):
    """Averages the `k` epochs of a finished MLE run ending at its best epoch into `model`."""
    run_dir = pathlib.Path(run_dir)
    return average_epoch_weights(model, run_dir / EPOCH_WEIGHTS_DIR, run_best_epoch(run_dir), k)


def average_epoch_weights(model, folder, best_epoch, k):
    """Averages the `k` epochs ending at `best_epoch` into `model`; returns the epochs used."""
    epochs = averaged_epochs(best_epoch, k)
    average_into(model, [epoch_weights_file(folder, epoch) for epoch in epochs])
    return epochs
