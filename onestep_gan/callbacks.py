"""Keras callbacks for GAN training."""

import logging
import math
import warnings

import keras

logger = logging.getLogger(__name__)


class TrainingDivergedError(RuntimeError):
    """Raised when a monitored loss became NaN, infinite or exploded."""


class TerminateOnDivergence(keras.callbacks.Callback):
    """Stops training when a loss becomes non-finite or explodes, and says so.

    Unlike `keras.callbacks.TerminateOnNaN`, it also catches a loss that grows past `max_loss`
    and a validation loss, and it raises `TrainingDivergedError` naming the epoch, the batch and
    the value, so a script cannot mistake a diverged run for a finished one.

    A training key (`"loss"`, `"d_loss"`) is checked after every batch, and the error is raised
    there, before Keras ends the epoch: a `ModelCheckpoint` or `BackupAndRestore` that saves at
    epoch end does not save the diverged weights over the last good ones, wherever this callback
    is in the list. One that saves every N batches (`save_freq=N`) runs before this callback's
    check if listed before it, and a `val_` key is checked at epoch end, in list order: put this
    callback first. A key that never appears in the logs is named in a warning (a `val_` key once
    validation ran without it, or at the end of a fit that never validated).

    Args:
        monitor: the log key to watch, e.g. `"loss"`, `"d_loss"` or `"val_loss"`.
        max_loss: a finite value above which the loss counts as exploded
            (`None`: only NaN and infinity count).
        raise_error: raise `TrainingDivergedError` (default), or only stop training and log
            an error (Keras then ends the epoch: its checkpoints hold the diverged weights).
    """

    def __init__(self, monitor="loss", max_loss=None, raise_error=True):
        super().__init__()
        if max_loss is not None and not max_loss > 0:
            raise ValueError(f"Expected max_loss to be None or > 0. Received: max_loss={max_loss}")
        self.monitor = monitor
        self.max_loss = max_loss
        self.raise_error = raise_error
        self.diverged = None
        self._epoch = 0
        self._seen = False
        self._last_logs = None

    def on_train_begin(self, logs=None):
        self.diverged = None
        self._seen = False
        self._last_logs = None

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        self._check(logs, batch)

    def on_epoch_end(self, epoch, logs=None):
        if self.diverged is None:
            self._check(logs, None)
        # A `val_` key is missing on epochs without validation (`validation_freq`): named when
        # validation ran without it, or at the end of a fit that never validated.
        validated = any(key.startswith("val_") for key in logs or ())
        if not self._seen and logs and (validated or not self.monitor.startswith("val_")):
            self._warn_missing(logs)
        self._last_logs = logs

    def on_train_end(self, logs=None):
        if not self._seen and self._last_logs:
            self._warn_missing(self._last_logs)

    def _warn_missing(self, logs):
        self._seen = True  # warn once
        warnings.warn(
            f"TerminateOnDivergence: monitor={self.monitor!r} is not in the logs (available: "
            f"{', '.join(sorted(logs))}); nothing is watched.",
            stacklevel=3,
        )

    def _check(self, logs, batch):
        if not logs or self.monitor not in logs:
            return
        self._seen = True
        value = float(logs[self.monitor])
        exploded = self.max_loss is not None and value > self.max_loss
        if math.isfinite(value) and not exploded:
            return
        self.diverged = {"epoch": self._epoch, "batch": batch, "monitor": self.monitor, "value": value}
        self.model.stop_training = True
        if self.raise_error:
            raise TrainingDivergedError(self.message())
        logger.error("Training diverged: %s", self.message())

    def message(self):
        if self.diverged is None:
            return "training did not diverge"
        limit = f" (limit {self.max_loss})" if self.max_loss is not None else ""
        where = f"epoch {self.diverged['epoch'] + 1}"
        if self.diverged["batch"] is not None:
            where += f", batch {self.diverged['batch'] + 1}"
        return (
            f"{self.diverged['monitor']}={self.diverged['value']}{limit} at {where}. Training was stopped; "
            "weights saved by earlier checkpoints are kept. Lower the learning rate or lam, or "
            "clip gradients (clipnorm on the optimizer)."
        )
