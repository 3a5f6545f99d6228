"""A shrunken MLE run in its own process, for tests/test_resume.py; it can kill itself with SIGKILL.

    python tests/resume_child.py RUN_DIR DATA_DIR [KILL]

KILL (none: run to the end):
    batch:E:B       kill -9 at training batch B (1-based) of epoch E (1-based): mid-epoch
    backup-save:N   kill -9 during the N-th write of backup/training_state.npz, half written
    model-save:N    kill -9 during the N-th write of model.keras, half written
    generator-save:N  the same for generator.keras (the adversarial stage)
    decode:N        kill -9 at the start of the N-th dev/test decoding (1 = dev, 2 = test)

tests/resume_adversarial_child.py runs the adversarial stage with the same KILL points.

The kill is a real SIGKILL of this process (no Python cleanup, no `finally`).
"""

import os
import signal
import sys
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from onestep_gan.rdf2text import inference, mle  # noqa: E402
from onestep_gan.rdf2text.config import MLEConfig  # noqa: E402


def config():
    """3 train examples at batch 1: 3 steps per epoch, 3 epochs, greedy decoding."""
    return MLEConfig.quick(
        model_dim=16, num_heads=2, feedforward_dim=32, max_source_length=32, max_target_length=24,
        batch_size=1, epochs=3, decode_batch_size=4, decode_method="greedy", num_logged_samples=1,
        early_stopping_patience=5, warmup_steps=2, verbose=2,  # the default data order: epoch-seeded
    )


def die():
    sys.stdout.flush()
    sys.stderr.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def install_kill(spec):
    kind, _, rest = spec.partition(":")
    from onestep_gan.rdf2text import checkpoints

    if kind == "batch":
        epoch, batch = (int(part) for part in rest.split(":"))

        # TrainingBackup is the last callback of both jobs: the others have seen the batch.
        def on_epoch_begin(self, index, logs=None):
            self._kill_epoch = index + 1

        def on_train_batch_end(self, index, logs=None):
            if (self._kill_epoch, index + 1) == (epoch, batch):
                die()

        checkpoints.TrainingBackup.on_epoch_begin = on_epoch_begin
        checkpoints.TrainingBackup.on_train_batch_end = on_train_batch_end
    elif kind in ("backup-save", "model-save", "generator-save"):
        targets = {"backup-save": checkpoints.STATE_FILE, "model-save": "model.keras", "generator-save": "generator.keras"}
        target, count = targets[kind], [int(rest)]
        from onestep_gan.rdf2text import atomic_files

        commit = atomic_files._commit

        def killing_commit(partial, path):
            if os.path.basename(path) == target:
                count[0] -= 1
                if count[0] == 0:
                    with open(partial, "rb+") as file:  # the write is half done
                        file.truncate(os.path.getsize(partial) // 2)
                    die()
            commit(partial, path)

        atomic_files._commit = killing_commit  # every atomic write goes through it
    elif kind == "decode":
        count, decode = [int(rest)], inference.decode_examples

        def killing_decode(*args, **kwargs):
            if kwargs.get("progress", True):  # the dev/test decoding, not the per-epoch samples
                count[0] -= 1
                if count[0] == 0:
                    die()
            return decode(*args, **kwargs)

        inference.decode_examples = killing_decode
    else:
        raise SystemExit(f"unknown kill spec {spec!r}")


if __name__ == "__main__":
    run_dir, data_dir = sys.argv[1:3]
    if len(sys.argv) > 3:
        install_kill(sys.argv[3])
    warnings.simplefilter("ignore", UserWarning)
    mle.train_and_evaluate(config(), data_dir, run_dir)
