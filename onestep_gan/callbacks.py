"""Keras callbacks for GAN training."""

import logging
import math

import keras

logger = logging.getLogger(__name__)


class TrainingDivergedError(RuntimeError):
    """Raised when a monitored loss became NaN, infinite or exploded."""


class TerminateOnDivergence(keras.callbacks.Callback):
    """Stops training when a loss becomes non-finite or explodes, and says so.

    Unlike `keras.callbacks.TerminateOnNaN`, it also catches a loss that grows
    past `max_loss`, and it raises `TrainingDivergedError` at the end of `fit`
    (in its `on_train_end`), naming the epoch, the batch and the value,
    so a script cannot mistake a diverged run for a finished one. Weights saved
    by `ModelCheckpoint` before the divergence are left untouched. Keras calls
    `on_train_end` in list order and the error ends that loop: put this callback
    last in `callbacks`, so that the others finish (a `CSVLogger` closes its file).

    Args:
        monitor: the log key to watch, e.g. `"loss"` or `"d_loss"`.
        max_loss: a finite value above which the loss counts as exploded
            (`None`: only NaN and infinity count).
        raise_error: raise `TrainingDivergedError` at train end (default), or
            only stop training and log an error.
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

    def on_train_begin(self, logs=None):
        self.diverged = None

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if not logs or self.monitor not in logs:
            return
        value = float(logs[self.monitor])
        exploded = self.max_loss is not None and value > self.max_loss
        if math.isfinite(value) and not exploded:
            return
        self.diverged = {"epoch": self._epoch, "batch": batch, "monitor": self.monitor, "value": value}
        self.model.stop_training = True
        logger.error("Training diverged: %s", self.message())

    def message(self):
        if self.diverged is None:
            return "training did not diverge"
        limit = f" (limit {self.max_loss})" if self.max_loss is not None else ""
        return (
            f"{self.diverged['monitor']}={self.diverged['value']}{limit} at epoch "
            f"{self.diverged['epoch'] + 1}, batch {self.diverged['batch'] + 1}. Training was stopped; "
            "weights saved by earlier checkpoints are kept. Lower the learning rate or lam, or "
            "clip gradients (clipnorm on the optimizer)."
        )

    def on_train_end(self, logs=None):
        if self.diverged is not None and self.raise_error:
            raise TrainingDivergedError(self.message())
