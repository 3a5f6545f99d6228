"""The adversarial stage on the hand-written fixture corpus: every part runs and writes its outputs;
the `chain` command and what reads the stage's run folder (`generate`, `decode`)."""

import contextlib
import dataclasses
import io
import json
import pathlib
import shutil
import warnings

import keras
import numpy as np
import pytest
from keras import ops

from onestep_gan.rdf2text import adversarial, cli, inference, mle, runs
from onestep_gan.rdf2text.config import AdversarialConfig
from onestep_gan.rdf2text.discriminator import TextDiscriminator
from tests.conftest import same_seed_rerun_in_one_process
from tests.test_discriminator_pretraining import tiny_parts
from tests.test_mle import FIXTURE_2017, TINY_SETTINGS, tiny_config


def test_mle_term_matches_teacher_forced_loss():
    generator, _, _ = tiny_parts()
    source = ops.convert_to_tensor([[4, 5, 6, 0], [7, 8, 0, 0]], dtype="int32")
    real = ops.convert_to_tensor([[9, 10, 3, 0, 0, 0], [11, 3, 0, 0, 0, 0]], dtype="int32")
    term = adversarial.mle_term(generator, weight=2.0, label_smoothing=0.0)
    decoder_input = ops.convert_to_tensor([[2, 9, 10, 3, 0, 0], [2, 11, 3, 0, 0, 0]], dtype="int32")
    logits = generator({"source": source, "target": decoder_input}, training=True)
    log_probs = ops.convert_to_numpy(ops.log_softmax(logits, axis=-1))
    tokens = [(0, 0, 9), (0, 1, 10), (0, 2, 3), (1, 0, 11), (1, 1, 3)]
    expected = -np.mean([log_probs[b, t, k] for b, t, k in tokens])
    assert float(term(source, real, None)) == pytest.approx(2.0 * expected, rel=1e-5)


def test_mismatched_vocabulary_is_refused_on_load(tmp_path):
    generator, _, _ = tiny_parts(12)
    _, _, discriminator = tiny_parts(13)
    generator.save(tmp_path / runs.GENERATOR_FILE)
    discriminator([ops.zeros((1, 4), "int32"), ops.zeros((1, 6), "int32")])
    discriminator.save(tmp_path / runs.DISCRIMINATOR_FILE)
    with pytest.raises(ValueError, match="vocabulary_size=12, discriminator vocabulary_size=13"):
        adversarial.load_gan_parts(tmp_path)


def _train_adversarial(mle_run, run_dir):
    """The stage `chain --quick` runs (`AdversarialConfig.quick()`), through the library."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return adversarial.train_adversarial(AdversarialConfig.quick(), mle_run, run_dir, FIXTURE_2017)


# `tests.test_mle.tiny_config` as flags of `train` / `chain --quick`.
TINY_MLE_FLAGS = [item for name, value in TINY_SETTINGS.items() for item in (f"--{name.replace('_', '-')}", str(value))]


@pytest.fixture(scope="module")
def adversarial_run(tmp_path_factory):
    """`onestep-gan chain --quick` with a tiny MLE model on the fixture corpus: a tiny MLE run, then
    the quick adversarial stage from it (one chain serves the stage's tests and the CLI's):
    `(mle run, gan run, summary, what the command printed)`."""
    root = tmp_path_factory.mktemp("chain")
    printed = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(printed):
        warnings.simplefilter("ignore", UserWarning)
        argv = ["chain", "--quick", "--data-dir", str(FIXTURE_2017), "--run-dir", str(root)] + TINY_MLE_FLAGS
        assert cli.main(argv) == 0
    summary = json.loads((root / "gan" / "adversarial_summary.json").read_text())
    return root / "mle", root / "gan", summary, printed.getvalue()


@pytest.mark.slow
def test_train_adversarial_end_to_end(adversarial_run):
    mle_run, run, summary, printed = adversarial_run
    assert (mle_run / "model.keras").is_file() and "MLE+GAN" in printed  # `chain` prints the comparison
    assert json.loads((mle_run / "config.json").read_text())["model_dim"] == 16  # the flags reached the MLE job
    for name in ("generator.keras", "discriminator.keras", "adversarial_test_hypotheses.txt",
                 "adversarial_test_scores.json", "comparison.md", "adversarial_summary.json", "adversarial_log.csv"):
        assert (run / name).is_file(), name
    assert summary["timing"]["adversarial_steps"] == AdversarialConfig.quick().adversarial_steps
    assert set(summary["discriminator"]) == {
        "before_pretraining", "after_corruption_pretraining", "after_pretraining", "after_adversarial"
    }
    assert 0 < summary["timing"]["corruption_pretrain_seconds"] < summary["timing"]["pretrain_seconds"]
    assert "| BLEU-2017 (all) |" in (run / "comparison.md").read_text()
    assert json.loads((run / "adversarial_summary.json").read_text())["mle"] is not None
    generator, discriminator = adversarial.load_gan_parts(run)
    assert generator.vocabulary_size == discriminator.vocabulary_size


@pytest.mark.slow
def test_the_stage_on_a_run_with_held_out_categories_scores_them_as_unseen(tmp_path):
    """The stage reads its MLE run's `holdout_categories`: the same dev and test entries, marked alike."""
    if keras.backend.backend() != "tensorflow":
        pytest.skip("data handling, the same on every backend: run on TensorFlow")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        mle_results = mle.train_and_evaluate(tiny_config(holdout_categories=("Airport",)), FIXTURE_2017, tmp_path / "mle")
    summary = _train_adversarial(tmp_path / "mle", tmp_path / "gan")
    dev = json.loads((tmp_path / "gan" / "adversarial_dev_scores.json").read_text())
    test = json.loads((tmp_path / "gan" / "adversarial_test_scores.json").read_text())
    # test: Airport held out, Politician unseen; dev: Food, a category the run did not hold out.
    assert {name: scores["count"] for name, scores in test.items()} == {"all": 2, "unseen": 2}
    assert {name: scores["count"] for name, scores in dev.items()} == {"all": 1, "seen": 1}
    assert summary["mle"] == mle_results["test"]  # the MLE run's own scores, on the same entries


def test_generate_and_decode_read_the_chains_adversarial_run(adversarial_run, tmp_path, monkeypatch, capsys):
    """`generate` on the stage's run folder; `decode` re-decodes it (its generator as it is, no
    averaging; the stage's report names and summary rewritten), here with the stage's discriminator
    breaking the reranker's ties, and saves the setting, which `generate` then uses; an MLE run has
    no discriminator."""
    mle_run, fixture_run, *_ = adversarial_run
    run = shutil.copytree(fixture_run, tmp_path / "gan")  # the other tests read the fixture's as the stage left it
    input_file = tmp_path / "input.txt"
    input_file.write_text("Alan_Bean | birthPlace | Wheeler,_Texas\n")
    assert cli.main(["generate", "--input", str(input_file), "--run-dir", str(run)]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1

    preferences = []
    original = inference.decode_examples
    monkeypatch.setattr(inference, "decode_examples",
                        lambda *args, **kwargs: preferences.append(kwargs["preference"]) or original(*args, **kwargs))
    hypotheses = run / "adversarial_dev_hypotheses.txt"
    hypotheses.unlink()
    (run / "comparison.md").write_text("stale\n")  # the stage's table, rewritten with the new scores
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert cli.main(["decode", "--run-dir", str(run), "--data-dir", str(FIXTURE_2017),
                         "--rerank-discriminator-weight", "0.5"]) == 0
    assert hypotheses.is_file() and not (run / "dev_hypotheses.txt").exists()
    assert json.loads((run / "config.json").read_text())["rerank_discriminator_weight"] == 0.5
    test_bleu = json.loads((run / "adversarial_test_scores.json").read_text())["all"]["bleu_2017"]
    summary = json.loads((run / "adversarial_summary.json").read_text())
    assert summary["adversarial"]["all"]["bleu_2017"] == test_bleu and summary["mle"] is not None
    assert f"| BLEU-2017 (all) | {summary['mle']['all']['bleu_2017']:.2f} | {test_bleu:.2f} |" in (
        (run / "comparison.md").read_text()
    )
    capsys.readouterr()
    assert cli.main(["generate", "--input", str(input_file), "--run-dir", str(run)]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1
    assert len(preferences) == 3 and all(callable(preference) for preference in preferences)
    assert cli.main(["generate", "--input", str(input_file), "--run-dir", str(mle_run),
                     "--rerank-discriminator-weight", "0.5"]) == 2
    error = capsys.readouterr().err
    assert len(error.strip().splitlines()) == 1 and "discriminator.keras: no such file" in error


def _gan_outcome(run):
    generator, discriminator = adversarial.load_gan_parts(run)
    summary = json.loads((run / "adversarial_summary.json").read_text())
    return (
        [ops.convert_to_numpy(weight) for model in (generator, discriminator) for weight in model.weights],
        [(run / f"adversarial_{name}_hypotheses.txt").read_text() for name in ("dev", "test")],
        summary["discriminator"],
        (run / "adversarial_log.csv").read_bytes(),  # bytes: CSVLogger ends its lines with CRLF
    )


@pytest.mark.slow
@same_seed_rerun_in_one_process
def test_a_second_stage_with_the_same_seed_gives_the_same_weights_and_outputs(adversarial_run, tmp_path):
    """Seed for seed on the backend of this process (CI runs it on JAX and PyTorch): the
    Gumbel noise, dropout and batches of a second stage from the same MLE run are the same."""
    mle_run, run, *_ = adversarial_run
    _train_adversarial(mle_run, tmp_path / "again")
    weights, *outputs = _gan_outcome(run)
    again_weights, *again_outputs = _gan_outcome(tmp_path / "again")
    assert len(weights) == len(again_weights) > 100
    for a, b in zip(weights, again_weights):
        np.testing.assert_array_equal(a, b)
    assert outputs == again_outputs


def test_save_gan_parts_keeps_the_last_good_epoch_after_divergence(tmp_path):
    generator, _, discriminator = tiny_parts()
    discriminator([ops.zeros((1, 4), "int32"), ops.zeros((1, 6), "int32")])

    class Divergence:
        diverged = None

    divergence = Divergence()
    saver = adversarial.SaveGANParts(tmp_path, generator, discriminator, divergence)
    saver.on_epoch_end(0)
    saved = (tmp_path / runs.GENERATOR_FILE).read_bytes()
    generator.embedding_matrix.assign(generator.embedding_matrix * float("nan"))
    divergence.diverged = {"epoch": 1}
    saver.on_epoch_end(1)
    assert (tmp_path / runs.GENERATOR_FILE).read_bytes() == saved


def test_a_stage_config_saved_before_a_field_existed_loads_as_that_stage_ran(tmp_path):
    saved = AdversarialConfig.quick().to_dict()
    for name in ("corruption_pretrain_steps", "shared_source_encoding"):
        del saved[name]
    (tmp_path / "adversarial_config.json").write_text(json.dumps(saved), encoding="utf-8")
    config = AdversarialConfig.load(tmp_path / "adversarial_config.json")
    assert (config.corruption_pretrain_steps, config.shared_source_encoding) == (0, False)
    assert AdversarialConfig().corruption_pretrain_steps == 1000  # today's default


def test_the_stage_config_refuses_what_the_stage_would_fail_on_or_round_off():
    """Checked when the config is made, before `adversarial` writes anything into its run folder."""
    with pytest.raises(ValueError, match=r"`loss` must be one of \['hinge', 'non_saturating', 'least_squares'\].*"
                                         r"Received: loss='wasserstein'"):
        AdversarialConfig(loss="wasserstein")
    with pytest.raises(ValueError, match="Received: adversarial_steps=120, steps_per_epoch=50"):
        AdversarialConfig(adversarial_steps=120)  # it trained 150 steps and said so
    assert AdversarialConfig(loss="least_squares", adversarial_steps=100).adversarial_steps == 100


@pytest.mark.parametrize("case, expected", [
    ("stage killed", "stage"),  # the stage's backup left: the MLE run is not redone
    ("stage killed before its backup", "stage"),  # no stage report yet, no backup
    ("other MLE settings", "both"),
    ("MLE job killed", "both"),  # `train_and_evaluate` resumes it
    ("chain finished", "both"),  # a rerun of a finished chain starts afresh, as `train` does
    ("stage killed, other MLE settings", "refused"),  # the backup would not resume on the new MLE run
    ("stage killed, MLE job killed", "refused"),
])
def test_chain_rerun_after_a_kill_in_the_stage_keeps_the_finished_mle_run(
    adversarial_run, tmp_path, monkeypatch, capsys, case, expected
):
    mle_run, gan_run, _, _ = adversarial_run
    shutil.copytree(mle_run, tmp_path / "mle")
    shutil.copytree(gan_run, tmp_path / "gan")
    flags = list(TINY_MLE_FLAGS)
    if case.startswith("stage killed"):
        (tmp_path / "gan" / runs.COMPARISON_FILE).unlink()
        if case != "stage killed before its backup":
            (tmp_path / "gan" / runs.BACKUP_DIR).mkdir()
    if "other MLE settings" in case:
        flags += ["--seed", "7"]
    if "MLE job killed" in case:
        (tmp_path / "mle" / runs.BACKUP_DIR).mkdir()
    calls = []
    monkeypatch.setattr(mle, "train_and_evaluate", lambda config, data_dir, run_dir, enriched_dir: calls.append("mle"))

    def stage(config, mle_run_dir, run_dir, data_dir, enriched_dir):
        calls.append(("stage", pathlib.Path(mle_run_dir), pathlib.Path(run_dir)))
        (pathlib.Path(run_dir) / runs.COMPARISON_FILE).write_text("compared\n")

    monkeypatch.setattr(adversarial, "train_adversarial", stage)
    argv = ["chain", "--quick", "--data-dir", str(FIXTURE_2017), "--run-dir", str(tmp_path)] + flags
    with contextlib.redirect_stdout(io.StringIO()):
        code = cli.main(argv)
    if expected == "refused":
        assert code == 2 and calls == []
        assert "holds an interrupted adversarial stage" in capsys.readouterr().err
        return
    assert code == 0
    assert calls == ["mle"] * (expected == "both") + [("stage", tmp_path / "mle", tmp_path / "gan")]


def test_a_job_killed_in_a_finished_runs_folder_leaves_no_finished_run(adversarial_run, tmp_path, monkeypatch):
    """What `chain` reads as a finished run (`runs.finished_run`) is gone once a job starts writing the folder
    again: a rerun killed before its backup is not taken for the run it replaces."""
    mle_run, gan_run, _, _ = adversarial_run
    shutil.copytree(mle_run, tmp_path / "mle")
    shutil.copytree(gan_run, tmp_path / "gan")
    assert runs.finished_run(tmp_path / "mle", runs.SUMMARY_FILE, tiny_config())
    assert runs.finished_run(tmp_path / "mle", runs.SUMMARY_FILE, dataclasses.replace(tiny_config(), verbose=2))  # logging only
    assert not runs.finished_run(tmp_path / "mle", runs.SUMMARY_FILE, dataclasses.replace(tiny_config(), seed=7))
    assert runs.finished_run(tmp_path / "gan", runs.COMPARISON_FILE)

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(keras.Model, "fit", killed)
    with pytest.raises(KeyboardInterrupt):
        _train_adversarial(tmp_path / "mle", tmp_path / "gan")
    assert not runs.finished_run(tmp_path / "gan", runs.COMPARISON_FILE)
    with pytest.raises(KeyboardInterrupt), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        mle.train_and_evaluate(tiny_config(), FIXTURE_2017, tmp_path / "mle")
    assert not runs.finished_run(tmp_path / "mle", runs.SUMMARY_FILE, tiny_config())


@pytest.mark.slow
def test_a_stage_backup_is_not_resumed_on_another_mle_run(adversarial_run, tmp_path, monkeypatch):
    """The stage's backup holds G's fine-tuned weights: resumed on another MLE run (a `chain` rerun with
    other MLE settings, `adversarial --mle-run-dir OTHER`), it would put them back over the new
    generator. It is refused, naming what differs."""
    mle_run, _, _, _ = adversarial_run
    shutil.copytree(mle_run, tmp_path / "mle")
    monkeypatch.setattr(adversarial.checkpoints.TrainingBackup, "delete", lambda self: None)  # kept, finished
    _train_adversarial(tmp_path / "mle", tmp_path / "gan")
    assert (tmp_path / "gan" / runs.BACKUP_DIR).is_dir()
    config = json.loads((tmp_path / "mle" / runs.CONFIG_FILE).read_text())
    config["seed"] += 1  # another MLE run: the same shapes, other weights
    (tmp_path / "mle" / runs.CONFIG_FILE).write_text(json.dumps(config))
    with pytest.raises(ValueError, match=r"belongs to a run with other settings \(differing: \['mle_run'\]\)"):
        _train_adversarial(tmp_path / "mle", tmp_path / "gan")


def test_the_adversarial_scripts_quick_mle_run_gets_the_enriched_folder(tmp_path, monkeypatch):
    """`examples/webnlg_adversarial.py --quick` without --mle-run-dir trains a quick MLE run first; the
    quick MLE config reads gold mentions, so --enriched-dir must reach it (it was dropped)."""
    from tests.conftest import load_example

    script = load_example("webnlg_adversarial.py")
    calls = []
    monkeypatch.setattr(mle, "train_and_evaluate", lambda *args: calls.append(("mle", args[1:])))
    monkeypatch.setattr(adversarial, "train_adversarial", lambda *args: calls.append(("stage", args[1:])))
    script.main(["--quick", "--run-dir", str(tmp_path), "--data-dir", "DATA", "--enriched-dir", "ENRICHED"])
    mle_dir = str(tmp_path / "mle")
    assert calls == [("mle", ("DATA", mle_dir, "ENRICHED")), ("stage", (mle_dir, str(tmp_path), "DATA", "ENRICHED"))]


def test_a_runs_discriminator_comes_with_its_losss_orientation(adversarial_run, tmp_path):
    """Reranking by D's score must read it by the stage loss's orientation: the default hinge D scores
    real texts low (a preference of beam + w x score chose the texts D found least real)."""
    _, gan_run, _, _ = adversarial_run
    discriminator, real_sign = runs.load_discriminator(gan_run)
    assert isinstance(discriminator, TextDiscriminator)
    assert AdversarialConfig.quick().loss == AdversarialConfig().loss == "hinge" and real_sign == -1.0
    shutil.copytree(gan_run, tmp_path / "gan")
    config = json.loads((tmp_path / "gan" / runs.ADVERSARIAL_CONFIG_FILE).read_text())
    (tmp_path / "gan" / runs.ADVERSARIAL_CONFIG_FILE).write_text(json.dumps({**config, "loss": "non_saturating"}))
    assert runs.load_discriminator(tmp_path / "gan")[1] == 1.0


def test_texts_the_preprocessor_may_have_cut_are_no_real_texts():
    """With the stage's max_length equal to the generator's max_target_length, a reference cut to
    max_target_length - 1 tokens fitted "text + EOS" and reached D as a real text (and G's MLE term)
    without its end."""
    from onestep_gan.rdf2text.preprocessor import EncodedExample

    examples = [EncodedExample(f"e{n}", (4, 5), tuple(range(6, 6 + n)), {}, ()) for n in (5, 6, 7)]
    kept = adversarial.whole_texts(examples, max_target_length=8)  # room for 7 tokens: 7 may be a cut
    assert [example.entry_id for example in kept] == ["e5", "e6"]


def test_keep_log_rows_keeps_the_header_and_rows_byte_for_byte(tmp_path):
    """Keras' CSVLogger ends lines with CRLF: a resumed stage's log kept its rows but read them as text and
    wrote LF endings, so the log of a resumed run differed from an uninterrupted one's."""
    log = tmp_path / "adversarial_log.csv"
    log.write_bytes(b"epoch,loss\r\n0,1.5\r\n1,1.25\r\n2,1.0\r\n")
    adversarial.keep_log_rows(log, 2)
    assert log.read_bytes() == b"epoch,loss\r\n0,1.5\r\n1,1.25\r\n"
    adversarial.keep_log_rows(log, 0)
    assert not log.exists()
