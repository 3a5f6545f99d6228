"""Files that survive a kill, and exact resume of an interrupted `fit`.

- `atomic_save_model`: a `.keras` model written as `atomic_files` writes every file (aside, then
  renamed: a kill leaves the previous complete file, never a truncated one).
- `AtomicModelCheckpoint`: Keras' `ModelCheckpoint`, writing through `atomic_save_model`.
- `TrainingBackup`: an epoch-granular replacement for `keras.callbacks.BackupAndRestore` that
  makes the resumed run *the same run* (the MLE job and the adversarial stage). At the end of every epoch it writes one file,
  `backup/training_state.npz`, holding every model variable (the seed-generator states of
  the Dropout layers included, which `save_weights` leaves out), the backend's global random state
  where the backend draws from one (PyTorch: a Dropout layer without a seed draws its masks from
  `torch`'s generator, not from a seed generator; the callback sets that state again at each
  epoch's first batch, so the draws `fit` makes between epochs do not move the masks), every optimizer variable
  (step counter, moments), the state of the callbacks that carry state across epochs
  (`ModelCheckpoint.best`; `EarlyStopping.wait/best/best_epoch`), the logs of every epoch so far,
  whether training finished, the seconds spent in `fit` so far (over every process of the run),
  and `extra`, what the job computed before `fit` and wants back
  (the adversarial stage's discriminator pretraining scores). `restore(model)` puts all of it back before `fit`, and the
  callback gives the callbacks their state back after their own `on_train_begin` reset it.

Resume is per epoch: a kill mid-epoch loses that epoch's steps, and the rerun redoes the epoch
from its start, drawing the same batches (the training data order is a function of the epoch
number, see `datasets.make_training_dataset(epochs=...)`). Keras' `BackupAndRestore(save_freq=N)`
restores mid-epoch weights but restarts the epoch's data from its first batch, so batches are
seen twice: that is not the uninterrupted run, and it is not offered here.
"""

import io
import json
import logging
import pathlib
import time
import zipfile

import keras
import numpy as np

from onestep_gan.rdf2text.atomic_files import atomic_save, atomic_write, partial_path, remove_partial_files  # noqa: F401

logger = logging.getLogger(__name__)

STATE_FILE = "training_state.npz"
_clock = time.perf_counter  # the training clock (a test sets a fake one)
_RANDOM_STATE = "__random_state__"  # prefix of the backend's global random states, beside the variables
_STATE_VERSION = 1
# Callback attributes that carry state from one epoch to the next (all plain numbers).
_CALLBACK_STATE = {
    keras.callbacks.ModelCheckpoint: ("best",),
    keras.callbacks.EarlyStopping: ("wait", "best", "best_epoch", "stopped_epoch"),
}


def atomic_save_model(model, path):
    """`model.save(path)` atomically (`path` ends in `.keras`)."""
    atomic_save(path, lambda partial: model.save(partial, overwrite=True))


class AtomicModelCheckpoint(keras.callbacks.ModelCheckpoint):
    """`keras.callbacks.ModelCheckpoint` (full `.keras` model) that writes atomically."""

    def _save_model(self, epoch, batch, logs):
        filepath = self._get_file_path(epoch, batch, logs)
        if self._should_save_model(epoch, batch, logs, filepath):
            pathlib.Path(filepath).parent.mkdir(parents=True, exist_ok=True)
            atomic_save_model(self.model, filepath)
            if self.verbose > 0:
                print(f"\nEpoch {epoch + 1}: finished saving model to {filepath}")  # as Keras prints it


def _to_plain(value):
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (np.floating, np.integer)) or np.ndim(value) == 0:
        return float(value)
    raise TypeError(f"Cannot back up a callback attribute of type {type(value).__name__}")


_ANY = object()
# What a backup written before a metadata key existed meant by its absence: variable batch widths
# (the key was written only when they were fixed); its backend was not recorded (not compared).
_ABSENT_MEANS = {"fixed_batch_shapes": False, "backend": _ANY}


def run_environment():
    """The part of a backup's metadata that no config holds: the Keras backend (each draws its own
    random numbers, so a run resumed on another one would equal neither run)."""
    return {"backend": keras.backend.backend()}


class TrainingBackup(keras.callbacks.Callback):
    """Epoch-granular exact backup of a training run (see the module docstring).

    Put it **last** in the callback list, so that it saves after the other callbacks updated
    their state at the end of an epoch, and restores their state after their `on_train_begin`.

    Args:
        backup_dir: folder of the backup file (created when first saving).
        callbacks: the callbacks whose state is backed up (`ModelCheckpoint`, `EarlyStopping`).
        metadata: a JSON-able dict saved with the state (the run's config); `restore` refuses a
            backup whose metadata differs on any of these keys (keys only the backup has are
            ignored).
        skip_if: optional `fn() -> bool`; no backup is written while it returns True (after a
            divergence, so that the backup keeps the last good epoch).

    Use:
        backup = TrainingBackup(run_dir / "backup", [checkpoint, early_stopping], metadata=config_dict)
        initial_epoch = backup.restore(model)       # 0 without a backup; builds the optimizer
        if not backup.finished:
            model.fit(..., initial_epoch=initial_epoch, callbacks=[checkpoint, early_stopping, backup])
        backup.epoch_logs                           # logs of every epoch, resumed ones included
        backup.train_seconds                        # seconds in `fit` over every process of the run
        backup.extra                                # a JSON-able dict, saved and restored with the rest
    """

    def __init__(self, backup_dir, callbacks=(), metadata=None, skip_if=None):
        super().__init__()
        self.backup_dir = pathlib.Path(backup_dir)
        self.path = self.backup_dir / STATE_FILE
        self.tracked_callbacks = list(callbacks)
        self.metadata = metadata
        self.skip_if = skip_if
        self.epoch_logs = []
        self.finished = False
        self.extra = {}
        # Seconds in `fit` up to the last save of earlier processes (the steps of an epoch a kill
        # cut short are not counted: the rerun redoes them), and when this process's `fit` began.
        self._seconds_before = 0.0
        self._fit_start = None
        self._callback_state = None
        self._random_states = {}
        for callback in self.tracked_callbacks:
            if getattr(callback, "restore_best_weights", False):
                raise ValueError("TrainingBackup does not back up EarlyStopping(restore_best_weights=True).")

    # Reading and writing the state file.

    def exists(self):
        return self.path.is_file()

    def _read(self):
        damaged = (
            f"The training backup {self.path} is damaged or was written by another version "
            f"({{}}). Delete {self.backup_dir} to restart training from epoch 1."
        )
        try:
            with np.load(self.path, allow_pickle=False) as archive:
                arrays = {name: archive[name] for name in archive.files}
            state = json.loads(str(arrays.pop("__state__")))
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as error:
            raise ValueError(damaged.format(f"{type(error).__name__}: {error}")) from None
        if state.get("version") != _STATE_VERSION:
            raise ValueError(damaged.format(f"version {state.get('version')!r}, expected {_STATE_VERSION}"))
        return state, arrays

    def check(self):
        """Raises `ValueError`, as `restore` would, when a backup exists that is damaged or belongs to
        another configuration; a job calls it before it writes anything into the run folder."""
        if self.exists():
            self._check_metadata(self._read()[0])

    def _check_metadata(self, state):
        # Keys the backup has and this run's metadata does not are not compared: a release that
        # stops counting a setting as part of the metadata (a decoding setting) still resumes
        # the backups written before it. A key the backup lacks is read as `_ABSENT_MEANS` says.
        saved = state.get("metadata") or {}
        changed = sorted(
            key for key, value in (self.metadata or {}).items()
            if (saved[key] if key in saved else _ABSENT_MEANS.get(key)) not in (value, _ANY)
        )
        if changed:
            raise ValueError(
                f"The training backup {self.path} belongs to a run with other settings (differing: "
                f"{changed}). Rerun with the settings of {self.backup_dir.parent} or use a new run folder."
            )

    def _variables(self, model):
        return list(model.variables) + list(model.optimizer.variables)

    def restore(self, model):
        """Restores the backed-up state into `model` (compiled, built); returns the epoch to start at.

        Builds the optimizer in every case, so that its variables exist before `fit`: Keras'
        TensorFlow trainer would otherwise create them while tracing the train step, which
        makes TensorFlow trace the step twice. Returns 0 (and changes nothing else) when there
        is no backup. Raises `ValueError` naming the file when the backup is damaged or
        belongs to another configuration.
        """
        if not model.optimizer.built:
            model.optimizer.build(model.trainable_variables)
        if not self.exists():
            return 0
        state, arrays = self._read()
        self._check_metadata(state)
        # The backend's global random states (none in a backup of an earlier release).
        random_states = {name: arrays.pop(name) for name in list(arrays) if name.startswith(_RANDOM_STATE)}
        variables = self._variables(model)
        if len(variables) != len(arrays):
            raise ValueError(
                f"The training backup {self.path} holds {len(arrays)} variables; the model has "
                f"{len(variables)}. Delete {self.backup_dir} to restart training from epoch 1."
            )
        for index, variable in enumerate(variables):
            value = arrays[f"v{index}"]
            if tuple(value.shape) != tuple(variable.shape):
                raise ValueError(
                    f"The training backup {self.path}: variable {variable.path} has shape "
                    f"{tuple(variable.shape)}, the backup {tuple(value.shape)}. Delete {self.backup_dir} "
                    "to restart training from epoch 1."
                )
            variable.assign(value)
        # Set in `on_train_begin`, after `fit`'s own set-up (which may draw from the generators).
        self._random_states = random_states
        self.epoch_logs = state["epoch_logs"]
        self.finished = state["finished"]
        self.extra = state.get("extra", {})
        self._seconds_before = float(state.get("train_seconds", 0.0))  # 0: a backup of an earlier release
        self._callback_state = state["callbacks"]
        logger.info(
            "Resuming from %s: %d epoch(s) done%s.", self.path, state["epoch"],
            ", training finished" if self.finished else "",
        )
        return state["epoch"]

    def _save(self):
        if self.skip_if is not None and self.skip_if():
            return
        arrays = {f"v{index}": np.asarray(variable) for index, variable in enumerate(self._variables(self.model))}
        state = {
            "version": _STATE_VERSION,
            "epoch": len(self.epoch_logs),
            "finished": self.finished,
            "epoch_logs": self.epoch_logs,
            "metadata": self.metadata,
            "extra": self.extra,
            "train_seconds": self.train_seconds,
            "callbacks": [
                {name: _to_plain(getattr(callback, name)) for name in self._state_names(callback)}
                for callback in self.tracked_callbacks
            ],
        }
        arrays["__state__"] = np.array(json.dumps(state))
        arrays.update(_global_random_states())
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)
        self.backup_dir.mkdir(parents=True, exist_ok=True)
        atomic_write(self.path, buffer.getvalue())

    @staticmethod
    def _state_names(callback):
        for callback_class, names in _CALLBACK_STATE.items():
            if isinstance(callback, callback_class):
                return names
        raise ValueError(f"TrainingBackup cannot back up the state of {type(callback).__name__}.")

    @property
    def train_seconds(self):
        """Seconds in `fit` over every process of the run: the earlier ones' (up to their last
        save) and this one's so far."""
        running = _clock() - self._fit_start if self._fit_start is not None else 0.0
        return self._seconds_before + running

    # Callback hooks.

    def on_train_begin(self, logs=None):
        self._fit_start = _clock()
        remove_partial_files(self.backup_dir)
        # Set at the first batch (below); once: a later `fit` of the same process continues the stream.
        self._epoch_random_states, self._random_states = self._random_states, {}
        if self._callback_state is not None:
            for callback, values in zip(self.tracked_callbacks, self._callback_state):
                for name, value in values.items():
                    setattr(callback, name, value)

    def on_train_batch_begin(self, batch, logs=None):
        # Each epoch's first batch starts from the generators' state at the end of the epoch before
        # (after a restart, the backup's). `fit` draws from them between epochs: on PyTorch its
        # data loader draws a seed whenever an iterator starts, which a resumed `fit` does where
        # the uninterrupted one may go on with its iterator (`steps_per_epoch`). Those draws no
        # longer shift the dropout masks of the epoch after.
        if self._epoch_random_states:
            _set_global_random_states(self._epoch_random_states)
            self._epoch_random_states = {}

    def on_epoch_end(self, epoch, logs=None):
        self.epoch_logs.append({name: float(value) for name, value in (logs or {}).items()})
        self._epoch_random_states = _global_random_states()
        # Stopped early (EarlyStopping set it): this save already ends training, so a kill before
        # `on_train_end` resumes as finished, not with an epoch the uninterrupted run never trained.
        if getattr(self.model, "stop_training", False):
            self.finished = True
        self._save()

    def on_train_end(self, logs=None):
        # Reached only when fit returns normally (all epochs, or early stopping).
        self.finished = True
        self._seconds_before, self._fit_start = self.train_seconds, None  # the clock stops with fit
        self._save()

    def delete(self):
        """Removes the backup (once the job that trained is complete)."""
        if self.path.is_file():
            self.path.unlink()
        remove_partial_files(self.backup_dir)
        if self.backup_dir.is_dir() and not any(self.backup_dir.iterdir()):
            self.backup_dir.rmdir()


def _global_random_states():
    """The states of the random generators the backend draws from outside Keras' seed generators,
    by name, as numpy arrays; none on TensorFlow and JAX, which draw every random number of a
    Keras layer from a `SeedGenerator` variable (the backup holds those already). On PyTorch: the
    CPU generator's, and the CUDA devices' (one row each)."""
    if keras.backend.backend() != "torch":
        return {}
    import torch

    states = {_RANDOM_STATE + "torch_cpu": torch.get_rng_state().numpy()}
    if torch.cuda.is_available():
        states[_RANDOM_STATE + "torch_cuda"] = np.stack([state.numpy() for state in torch.cuda.get_rng_state_all()])
    return states


def _set_global_random_states(states):
    if keras.backend.backend() != "torch" or not states:
        return
    import torch

    torch.set_rng_state(torch.from_numpy(np.array(states[_RANDOM_STATE + "torch_cpu"])))
    cuda = states.get(_RANDOM_STATE + "torch_cuda")
    if cuda is not None and torch.cuda.is_available() and len(cuda) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all([torch.from_numpy(np.array(state)) for state in cuda])
