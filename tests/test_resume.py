"""Interrupted MLE runs: a rerun of the run folder finishes the same run (weights and scores).

Each run is a child process (tests/resume_child.py) that kills itself with SIGKILL at a chosen
point; the rerun must end with the weights and scores of an uninterrupted run.
"""

import json
import os
import pathlib
import signal
import subprocess
import sys

import keras
import numpy as np
import pytest

from onestep_gan.rdf2text import cli
from tests.conftest import fixture_2017_dir

CHILD = pathlib.Path(__file__).with_name("resume_child.py")
FIXTURE_2017 = fixture_2017_dir()


def run_child(run_dir, kill=None):
    argv = [sys.executable, str(CHILD), str(run_dir), str(FIXTURE_2017)] + ([kill] if kill else [])
    env = {**os.environ, "PYTHONPATH": str(CHILD.parents[1])}
    result = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env)
    expected = -signal.SIGKILL if kill else 0
    assert result.returncode == expected, (kill, result.returncode, result.stderr[-3000:])
    return result.stdout + result.stderr


def outcome(run_dir):
    """What must not depend on interruptions: final weights, hypotheses, scores."""
    model = keras.saving.load_model(run_dir / "model.keras", compile=False)
    return {
        "weights": model.get_weights(),
        "hypotheses": [(run_dir / f"{name}_hypotheses.txt").read_text() for name in ("dev", "test")],
        "scores": [json.loads((run_dir / f"{name}_scores.json").read_text()) for name in ("dev", "test")],
        "epochs": json.loads((run_dir / "timing.json").read_text())["epochs_trained"],
        "best_val_loss": json.loads((run_dir / "timing.json").read_text())["best_val_loss"],
    }


def assert_same_outcome(run_dir, reference):
    import onestep_gan.rdf2text  # noqa: F401  (registers the models for load_model)

    got, expected = outcome(run_dir), outcome(reference)
    assert len(got["weights"]) == len(expected["weights"])
    for a, b in zip(got["weights"], expected["weights"]):
        np.testing.assert_array_equal(a, b)
    for key in ("hypotheses", "scores", "epochs", "best_val_loss"):
        assert got[key] == expected[key], key
    assert not (run_dir / "backup").exists()
    assert not list(run_dir.glob(".*partial*"))


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("reference")
    run_child(run_dir)
    return run_dir


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory):
    """One run folder killed (kill -9) at four points, rerun after each: {stage: rerun log}."""
    run_dir = tmp_path_factory.mktemp("interrupted")
    logs = {}
    run_child(run_dir, kill="batch:2:2")                          # mid-epoch 2 (epoch 1 backed up)
    logs["after_mid_epoch"] = run_child(run_dir, kill="backup-save:1")  # epoch 2's backup half written
    logs["after_backup_save"] = run_child(run_dir, kill="model-save:1")  # epoch 2's model.keras half written
    logs["after_model_save"] = run_child(run_dir, kill="decode:2")       # training done; test decoding
    logs["after_decoding"] = run_child(run_dir)                          # runs to the end
    return run_dir, logs


@pytest.mark.slow
def test_rerun_after_kill_mid_epoch_keeps_the_callback_state(interrupted):
    """Issue 11.1: the rerun continues the run: epoch 2 next, ModelCheckpoint's best and
    EarlyStopping's state restored (no "improved from None")."""
    _, logs = interrupted
    for stage in ("after_mid_epoch", "after_backup_save"):
        assert "Epoch 2/3" in logs[stage] and "Epoch 1/3" not in logs[stage], stage
        assert "improved from None" not in logs[stage], stage


@pytest.mark.slow
def test_kill_while_decoding_does_not_retrain(interrupted):
    """Issue 11.2: a finished training phase is not redone."""
    run_dir, logs = interrupted
    assert "Epoch " not in logs["after_decoding"]
    # The rerun trained no epoch, so it reports no training speed (it used to divide all the
    # run's examples by the few milliseconds of its own "training": millions of examples/s).
    timing = json.loads((run_dir / "timing.json").read_text())
    assert timing["train_examples_per_second"] is None
    # Its training time is the run's (the killed processes' epochs), not its own few milliseconds.
    assert timing["train_seconds"] > 10 * timing["train_seconds_this_process"]
    assert "no epoch trained by this process" in (run_dir / "summary.md").read_text()


@pytest.mark.slow
def test_kill_test_rerun_equals_the_uninterrupted_run(interrupted, reference):
    """The kill test (issue 11.1-3): after kill -9 mid-epoch, during a backup save, during a
    model checkpoint save and while decoding, the final weights, hypotheses and scores equal
    those of an uninterrupted run, and nothing half-written is left."""
    run_dir, _ = interrupted
    assert_same_outcome(run_dir, reference)


@pytest.mark.slow
def test_a_run_killed_mid_epoch_resumes_exactly(reference, tmp_path):
    """The kill point that depends on the backend: kill -9 mid-epoch 2, then rerun: the weights,
    outputs and scores of the uninterrupted run. For PyTorch, whose unseeded Dropout draws from
    torch's global generator (`KERAS_BACKEND=torch pytest tests/test_resume.py`; CI runs the
    backup's unit test below there). The test above adds the file-writing kill points, which do
    not depend on the backend, and runs on TensorFlow."""
    if keras.backend.backend() == "tensorflow":
        pytest.skip("on TensorFlow, test_kill_test_rerun_equals_the_uninterrupted_run covers this kill")
    run_child(tmp_path, kill="batch:2:2")
    run_child(tmp_path)
    assert_same_outcome(tmp_path, reference)


def test_damaged_backup_is_reported_with_its_name(tmp_path, capsys):
    """Issue 11.3: a damaged backup names the file and what to do, exit 2, one line."""
    backup = tmp_path / "backup"
    backup.mkdir()
    for name in ("training_state.npz", "latest.weights.h5", "training_metadata.json"):
        (backup / name).write_bytes(b"PK\x03\x04 truncated")
    argv = ["train", "--data-dir", str(FIXTURE_2017), "--run-dir", str(tmp_path), "--model-dim", "16",
            "--num-heads", "2", "--feedforward-dim", "32", "--epochs", "1", "--max-source-length", "32",
            "--max-target-length", "24", "--batch-size", "4"]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "training_state.npz" in err[0] and "damaged" in err[0] and "Delete" in err[0]


# The adversarial stage (issue 11, part b): the same promise, from a finished MLE run.

ADVERSARIAL_CHILD = pathlib.Path(__file__).with_name("resume_adversarial_child.py")


def run_adversarial_child(mle_run_dir, run_dir, kill=None):
    argv = [sys.executable, str(ADVERSARIAL_CHILD), str(mle_run_dir), str(run_dir), str(FIXTURE_2017)]
    env = {**os.environ, "PYTHONPATH": str(CHILD.parents[1])}
    result = subprocess.run(argv + ([kill] if kill else []), capture_output=True, text=True, timeout=300, env=env)
    expected = -signal.SIGKILL if kill else 0
    assert result.returncode == expected, (kill, result.returncode, result.stderr[-3000:])
    return result.stdout + result.stderr


def adversarial_outcome(run_dir):
    import onestep_gan.rdf2text  # noqa: F401  (registers the models for load_model)

    summary = json.loads((run_dir / "adversarial_summary.json").read_text())
    return {
        "weights": [
            keras.saving.load_model(run_dir / name, compile=False).get_weights()
            for name in ("generator.keras", "discriminator.keras")
        ],
        "hypotheses": [(run_dir / f"adversarial_{name}_hypotheses.txt").read_text() for name in ("dev", "test")],
        "scores": [json.loads((run_dir / f"adversarial_{name}_scores.json").read_text()) for name in ("dev", "test")],
        "discriminator": summary["discriminator"],
        "steps": summary["timing"]["adversarial_steps"],
        # The timing's entries (their values are clocks): a resumed run reports the pretraining's too.
        "timing_entries": sorted(summary["timing"]),
        "log": (run_dir / "adversarial_log.csv").read_bytes(),  # bytes: CSVLogger's CRLF endings kept
    }


@pytest.fixture(scope="module")
def adversarial_reference(reference, tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("adversarial_reference")
    run_adversarial_child(reference, run_dir)
    return run_dir


@pytest.mark.slow
def test_adversarial_rerun_after_kills_equals_the_uninterrupted_run(reference, adversarial_reference, tmp_path):
    """kill -9 mid-epoch 2 and while decoding test; each rerun continues the run (no pretraining
    again, no epoch redone but the unfinished one), and the last ends with the weights,
    hypotheses, scores, D accuracies and log of an uninterrupted run. (A kill during a half-written
    save goes through the same `atomic_files._commit` as the MLE job's, tested above; the stage's
    own `generator-save` kill point is left out to keep CI under 30 minutes.)"""
    run_dir = tmp_path / "gan"
    run_adversarial_child(reference, run_dir, kill="batch:2:1")
    after_mid_epoch = run_adversarial_child(reference, run_dir, kill="decode:2")
    after_decoding = run_adversarial_child(reference, run_dir)
    assert "Epoch 2/3" in after_mid_epoch and "Epoch 1/3" not in after_mid_epoch
    assert "Epoch " not in after_decoding
    got, expected = adversarial_outcome(run_dir), adversarial_outcome(adversarial_reference)
    for got_weights, expected_weights in zip(got.pop("weights"), expected.pop("weights")):
        assert len(got_weights) == len(expected_weights)
        for a, b in zip(got_weights, expected_weights):
            np.testing.assert_array_equal(a, b)
    assert got == expected
    assert not (run_dir / "backup").exists()
    assert not list(run_dir.glob(".*partial*"))


def test_backup_restores_extra_state_and_skips_saves_while_told(tmp_path):
    """`TrainingBackup(extra=..., skip_if=...)`, as the adversarial stage uses them: what the job
    computed before `fit` comes back on resume; no save after a divergence."""
    from onestep_gan.rdf2text import checkpoints

    def compiled_model():
        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        model.compile(optimizer="adam", loss="mse")
        return model

    x, y = np.ones((4, 2)), np.ones((4, 1))
    diverged = [False]
    backup = checkpoints.TrainingBackup(tmp_path / "backup", skip_if=lambda: diverged[0])
    backup.extra = {"accuracy": {"real_accuracy": 0.5}}
    compiled_model().fit(x, y, epochs=1, verbose=0, callbacks=[backup])
    saved = backup.path.read_bytes()
    diverged[0] = True
    backup.model.fit(x, y, epochs=2, initial_epoch=1, verbose=0, callbacks=[backup])
    assert backup.path.read_bytes() == saved
    restored = checkpoints.TrainingBackup(tmp_path / "backup")
    assert restored.restore(compiled_model()) == 1
    assert restored.extra == {"accuracy": {"real_accuracy": 0.5}}


def test_a_kill_after_early_stopping_resumes_as_finished(tmp_path):
    """Early stopping ends `fit` at epoch 2; killed after that epoch's save and before `fit` returns, the
    rerun must not train a third epoch (one the uninterrupted run never trained: it may become the best
    and push the averaging window's first epoch off the disk)."""
    from onestep_gan.rdf2text import checkpoints

    def compiled_model():
        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        model.compile(optimizer="adam", loss="mse")
        return model

    class StopAtSecondEpoch(keras.callbacks.Callback):  # what EarlyStopping does
        def on_epoch_end(self, epoch, logs=None):
            self.model.stop_training = epoch == 1

    class KillBeforeTheEnd(keras.callbacks.Callback):
        def on_train_end(self, logs=None):
            raise KeyboardInterrupt

    x, y = np.ones((4, 2)), np.ones((4, 1))
    backup = checkpoints.TrainingBackup(tmp_path / "backup")
    with pytest.raises(KeyboardInterrupt):
        compiled_model().fit(x, y, epochs=5, verbose=0, callbacks=[StopAtSecondEpoch(), KillBeforeTheEnd(), backup])
    restored = checkpoints.TrainingBackup(tmp_path / "backup")
    assert restored.restore(compiled_model()) == 2
    assert restored.finished


@pytest.mark.parametrize("iterator", ["one per epoch", "one over the epochs"])
def test_a_resumed_fit_draws_the_dropout_masks_of_the_uninterrupted_one(tmp_path, iterator):
    """A Dropout layer without a seed (as in the transformer) on every backend: epoch 2 resumed from
    the backup in a model built afresh after the seed is set again (what a new process of the job
    does) ends with the weights of the uninterrupted fit. On PyTorch the masks come from torch's
    global generator, whose state the backup holds; without it the resumed epoch redraws epoch 1's.
    Keras starts a data iterator per epoch for arrays, one for all epochs for a repeated dataset
    with `steps_per_epoch` (the MLE job's case); PyTorch's loader draws from that generator as it
    starts one, so the resumed fit makes one draw more than the uninterrupted one in the second case
    unless the backup sets the generator's state at each epoch's first batch."""
    import tensorflow as tf

    from onestep_gan.rdf2text import checkpoints

    def fresh_model():
        keras.utils.set_random_seed(7)
        model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16), keras.layers.Dropout(0.5),
                                  keras.layers.Dense(1)])
        model.compile(optimizer="sgd", loss="mse")
        return model

    x = np.random.default_rng(0).normal(size=(32, 8)).astype("float32")
    y = x.sum(axis=1, keepdims=True)
    if iterator == "one per epoch":
        data, fit = (x, y), dict(batch_size=8, shuffle=False, verbose=0)
    else:  # 4 batches a pass: the resumed fit's epoch 2 gets the batches of the uninterrupted one's
        data, fit = (tf.data.Dataset.from_tensor_slices((x, y)).batch(8).repeat(),), dict(steps_per_epoch=4, verbose=0)
    uninterrupted = fresh_model()  # with a backup of its own, as every fit of the job has
    uninterrupted.fit(*data, epochs=2, callbacks=[checkpoints.TrainingBackup(tmp_path / "uninterrupted")], **fit)
    fresh_model().fit(*data, epochs=1, callbacks=[checkpoints.TrainingBackup(tmp_path / "backup")], **fit)
    resumed, backup = fresh_model(), checkpoints.TrainingBackup(tmp_path / "backup")
    assert backup.restore(resumed) == 1
    resumed.fit(*data, epochs=2, initial_epoch=1, callbacks=[backup], **fit)
    for got, expected in zip(resumed.get_weights(), uninterrupted.get_weights()):
        np.testing.assert_array_equal(got, expected)


def test_backup_counts_the_training_seconds_of_every_process_of_the_run(tmp_path, monkeypatch):
    """`train_seconds`: the time in `fit` over the processes of a run (a fake clock, 10 s an epoch),
    so that a resumed job reports its whole training time, not only its last process's."""
    from onestep_gan.rdf2text import checkpoints

    now = [0.0]
    monkeypatch.setattr(checkpoints, "_clock", lambda: now[0])
    tick = keras.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: now.__setitem__(0, now[0] + 10.0))

    def compiled_model():
        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        model.compile(optimizer="adam", loss="mse")
        return model

    x, y = np.ones((4, 2)), np.ones((4, 1))
    first = checkpoints.TrainingBackup(tmp_path / "backup")
    compiled_model().fit(x, y, epochs=2, verbose=0, callbacks=[tick, first])
    now[0] += 500.0  # time outside fit (decoding, a pause before the rerun) is not training
    assert first.train_seconds == 20.0
    resumed = checkpoints.TrainingBackup(tmp_path / "backup")
    model = compiled_model()
    assert resumed.restore(model) == 2 and resumed.train_seconds == 20.0
    model.fit(x, y, epochs=3, initial_epoch=2, verbose=0, callbacks=[tick, resumed])
    assert resumed.train_seconds == 30.0
    again = checkpoints.TrainingBackup(tmp_path / "backup")
    again.restore(compiled_model())
    assert again.train_seconds == 30.0


def test_restore_builds_the_optimizer_so_fit_traces_its_step_once(tmp_path):
    """Without a backup, `restore` still builds the optimizer before `fit`: when the first
    trace of a train step creates variables, TensorFlow traces it twice."""
    from onestep_gan.rdf2text import checkpoints

    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    assert checkpoints.TrainingBackup(tmp_path / "backup").restore(model) == 0
    assert model.optimizer.built
    traces, train_step = [], model.train_step
    model.train_step = lambda *args: traces.append(1) or train_step(*args)
    model.fit(np.ones((4, 2)), np.ones((4, 1)), batch_size=4, epochs=1, verbose=0)  # one step
    assert len(traces) == 1


def test_a_backup_resumes_only_on_its_backend_and_with_its_batch_widths(tmp_path, monkeypatch):
    """Each backend draws its own dropout masks and noise, and fixed batch widths draw masks at other widths: a
    backup resumed on another backend, or a compiled run's backup resumed uncompiled, trained a third model in
    silence (the fixed widths were recorded only when on, and only this run's keys were compared). A backup
    written before the backend was recorded resumes as before; one without the widths key had variable widths."""
    from onestep_gan.rdf2text import checkpoints, mle

    def compiled_model():
        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        model.compile(optimizer="adam", loss="mse")
        return model

    def backup_with(metadata, folder):
        backup = checkpoints.TrainingBackup(tmp_path / folder, metadata=metadata)
        compiled_model().fit(np.ones((4, 2)), np.ones((4, 1)), epochs=1, verbose=0, callbacks=[backup])

    config = cli.MLEConfig.quick()
    here = mle._resume_metadata(config)
    assert here["backend"] == keras.backend.backend() and here["fixed_batch_shapes"] is False
    backup_with({**here, "backend": "elsewhere"}, "other_backend")
    with pytest.raises(ValueError, match=r"differing: \['backend'\]"):
        checkpoints.TrainingBackup(tmp_path / "other_backend", metadata=here).restore(compiled_model())
    backup_with(mle._resume_metadata(config, fixed_shapes=True), "compiled")
    with pytest.raises(ValueError, match=r"differing: \['fixed_batch_shapes'\]"):
        checkpoints.TrainingBackup(tmp_path / "compiled", metadata=here).restore(compiled_model())
    # The previous release's backups: no backend, and the widths key only when fixed.
    before = {key: value for key, value in here.items() if key not in ("backend", "fixed_batch_shapes")}
    backup_with(before, "previous_release")
    assert checkpoints.TrainingBackup(tmp_path / "previous_release", metadata=here).restore(compiled_model()) == 1
    with pytest.raises(ValueError, match=r"differing: \['fixed_batch_shapes'\]"):
        checkpoints.TrainingBackup(tmp_path / "previous_release",
                                   metadata=mle._resume_metadata(config, fixed_shapes=True)).restore(compiled_model())


def test_restore_compares_only_the_settings_this_run_counts(tmp_path):
    """A backup written when decoding settings were part of the metadata (the previous release)
    resumes under a run that no longer counts them; a training setting that differs is refused,
    naming it."""
    from onestep_gan.rdf2text import checkpoints

    def compiled_model():
        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        model.compile(optimizer="adam", loss="mse")
        return model

    old = checkpoints.TrainingBackup(tmp_path / "backup", metadata={"epochs": 3, "beam_width": 12})
    compiled_model().fit(np.ones((4, 2)), np.ones((4, 1)), epochs=1, verbose=0, callbacks=[old])
    assert checkpoints.TrainingBackup(tmp_path / "backup", metadata={"epochs": 3}).restore(compiled_model()) == 1
    with pytest.raises(ValueError, match=r"other settings \(differing: \['epochs'\]\)"):
        checkpoints.TrainingBackup(tmp_path / "backup", metadata={"epochs": 4}).restore(compiled_model())
