"""Issue 11, items 7-11: bad input gives exit status 2 and one line naming what is wrong."""

import io
import json
import os
import subprocess
import sys
import warnings

import pytest

from onestep_gan.rdf2text import cli
from onestep_gan.rdf2text.webnlg import Triple
from tests.conftest import REPO_ROOT, fixture_2017_dir

FIXTURE_2017 = fixture_2017_dir()


def one_line_error(capsys, *fragments):
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    for fragment in fragments:
        assert fragment in err[0], (fragment, err[0])
    return err[0]


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("run")
    argv = ["train", "--quick", "--data-dir", str(FIXTURE_2017), "--run-dir", str(run_dir), "--epochs", "1",
            "--model-dim", "16", "--feedforward-dim", "32", "--num-encoder-layers", "1",
            "--num-decoder-layers", "1", "--decode-method", "greedy"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert cli.main(argv) == 0
    return run_dir


def copy_run(run_dir, tmp_path):
    target = tmp_path / "run"
    target.mkdir(parents=True)
    for name in ("config.json", "vocabulary.json", "model.keras"):
        (target / name).write_bytes((run_dir / name).read_bytes())
    return target


# Item 7: the reader.

def test_root_other_than_benchmark_fails_naming_the_file_and_leaves_no_run(tmp_path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    for split in ("train", "dev", "test"):
        (data / split).mkdir()
    import shutil
    shutil.copytree(FIXTURE_2017 / "dev" / "1triples", data / "dev" / "1triples")
    shutil.copy(FIXTURE_2017 / "test" / "testdata_with_lex.xml", data / "test")
    bad = data / "train" / "1triples" / "bad.xml"
    bad.parent.mkdir()
    bad.write_text("<?xml version='1.0'?>\n<entries><entry/></entries>\n")
    run_dir = tmp_path / "run"
    assert cli.main(["train", "--data-dir", str(data), "--run-dir", str(run_dir)]) == 2
    one_line_error(capsys, str(bad), "<benchmark>", "<entries>")
    assert not run_dir.exists()


def test_gold_mentions_without_the_enriched_corpus_is_one_line_and_leaves_no_run(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("WEBNLG_ENRICHED_DIR", raising=False)
    run_dir = tmp_path / "run"
    argv = ["train", "--quick", "--data-dir", str(FIXTURE_2017), "--run-dir", str(run_dir), "--gold-mentions"]
    assert cli.main(argv) == 2
    one_line_error(capsys, "--enriched-dir", "WEBNLG_ENRICHED_DIR")
    assert cli.main([*argv, "--enriched-dir", str(tmp_path / "nowhere")]) == 2
    one_line_error(capsys, str(tmp_path / "nowhere" / "train"), "NtriplesN/*.xml")
    assert not run_dir.exists()


def test_entry_size_must_match_its_triples(tmp_path):
    from onestep_gan.rdf2text.webnlg import parse_webnlg_xml

    path = tmp_path / "f.xml"
    path.write_text("<benchmark><entries><entry category='A' eid='Id7' size='2'><modifiedtripleset>"
                    "<mtriple>a | b | c</mtriple></modifiedtripleset><lex>T.</lex></entry></entries></benchmark>")
    with pytest.raises(ValueError, match=r"Id7.*expected size=\"1\".*Received: size=\"2\""):
        parse_webnlg_xml(path)


# Item 8: generate.

def test_triple_separators_are_exact_and_blank_lines_keep_alignment():
    assert cli.parse_triple_sets(["A;B | p | C|D ; E | q | F", "", "G | r | H"]) == [
        [Triple("A;B", "p", "C|D"), Triple("E", "q", "F")], None, [Triple("G", "r", "H")]]
    # Every dangling " ;" is dropped (the second one was kept in the object, "C ;").
    assert cli.parse_triple_sets(["A | b | C ;", "A | b | C ; ;", "A | b | C ; ; "]) == [[Triple("A", "b", "C")]] * 3


def test_a_triple_with_nothing_to_state_is_refused_naming_its_line():
    for line, part in (("_ | birthPlace | Texas", "subject"), ('Alan_Bean | name | ""', "object"),
                       ("A | !! | 1963", "predicate"), ("!! | birthPlace | Texas", "subject"),
                       ("-- | birthPlace | Texas", "subject")):
        with pytest.raises(ValueError, match=rf"Line 2: expected letters or digits in the {part}\. Received: "):
            cli.parse_triple_sets(["A | b | C", line])
    with pytest.raises(ValueError, match=r"^triples\.txt, line 2: expected triples 'subject \| predicate \| object'"):
        cli.parse_triple_sets(["A | b | C", "A | b"], source="triples.txt")


def test_generate_blank_line_gives_blank_output(trained_run, monkeypatch, capsys, caplog):
    # Line 3 holds more entities than the fixture's train entries (3): the warning names its line.
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"A | b | C\n\nD | e | F ; D | g | H ; I | j | K\n")))
    with caplog.at_level("WARNING", logger="onestep_gan.rdf2text.preprocessor"):
        assert cli.main(["generate", "--run-dir", str(trained_run)]) == 0
    lines = capsys.readouterr().out.split("\n")
    assert len(lines) == 4 and lines[1] == "" and lines[3] == ""
    assert any("(first in stdin, line 3)" in record.getMessage() for record in caplog.records)


def test_generate_user_errors(trained_run, tmp_path, monkeypatch, capsys):
    missing = tmp_path / "nope.txt"
    assert cli.main(["generate", "--run-dir", str(trained_run), "--input", str(missing)]) == 2
    one_line_error(capsys, str(missing), "not found")
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["generate", "--run-dir", str(trained_run), "--beam-width", "-3"])
    assert exit_info.value.code == 2
    assert "positive integer" in capsys.readouterr().err
    latin = tmp_path / "latin.txt"
    latin.write_bytes("A | b | Caf\xe9\n".encode("latin-1"))
    assert cli.main(["generate", "--run-dir", str(trained_run), "--input", str(latin)]) == 2
    one_line_error(capsys, str(latin), "UTF-8")
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"")))
    assert cli.main(["generate", "--run-dir", str(tmp_path / "no_run")]) == 2
    one_line_error(capsys, "no_run", "not found")
    bad = tmp_path / "bad.txt"
    bad.write_text("A | b | C\nA | b\n")
    assert cli.main(["generate", "--run-dir", str(trained_run), "--input", str(bad)]) == 2
    one_line_error(capsys, f"{bad}, line 2: expected triples", "Received: 'A | b'")
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"A | b\n")))
    assert cli.main(["generate", "--run-dir", str(trained_run)]) == 2
    one_line_error(capsys, "stdin, line 1: expected triples", "Received: 'A | b'")
    # An empty --input (an unset shell variable) is no file, and not stdin, which would wait for input.
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"A | b | C\n")))
    assert cli.main(["generate", "--run-dir", str(trained_run), "--input", ""]) == 2
    one_line_error(capsys, "--input: expected a file of triple sets", "Received: ''")
    # A negative score is refused by the flag, before the model loads.
    for argv in (["generate", "--run-dir", str(trained_run), "--rerank-min-foreign", "-1"],
                 ["evaluate", "--hypotheses", str(bad), "--split", "test", "--min-foreign", "-1"]):
        with pytest.raises(SystemExit) as exit_info:
            cli.main(argv)
        assert exit_info.value.code == 2 and "expected a finite number >= 0 or 'none'. Received: '-1'" in capsys.readouterr().err


def test_a_closed_output_pipe_ends_generate_quietly(trained_run, monkeypatch, capsys):
    """`generate ... | head -1`: the reader closed the pipe; not a user error ("[Errno 32] Broken pipe", status 2)."""
    def closed_pipe(args):
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(cli, "_generate", closed_pipe)
    assert cli.main(["generate", "--run-dir", str(trained_run)]) == 141
    assert capsys.readouterr().err == ""


def test_a_decode_that_fails_on_dev_writes_no_aligner(trained_run, tmp_path, capsys):
    """A run without aligner.json mines one from train; dev and test are read first, so a decode that
    stops on them leaves the folder as it was."""
    import shutil

    run = tmp_path / "run"
    shutil.copytree(trained_run, run)
    (run / "aligner.json").unlink(missing_ok=True)
    data = tmp_path / "data"
    shutil.copytree(FIXTURE_2017, data)
    shutil.rmtree(data / "dev")
    (data / "dev").mkdir()
    before = sorted(path.name for path in run.iterdir())
    assert cli.main(["decode", "--run-dir", str(run), "--data-dir", str(data)]) == 2
    one_line_error(capsys, "No WebNLG XML files found", "dev")
    assert sorted(path.name for path in run.iterdir()) == before


# Item 9: damaged run files.

def test_damaged_run_files_are_named(trained_run, tmp_path, monkeypatch, capsys):
    run = copy_run(trained_run, tmp_path)
    (run / "model.keras").write_bytes(b"")
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"A | b | C\n")))
    assert cli.main(["generate", "--run-dir", str(run)]) == 2
    one_line_error(capsys, "model.keras", "damaged")
    # A zip that is no Keras archive (a traceback: KeyError), and an archive whose weights are damaged
    # (h5py's OSError, printed without the file's name).
    import zipfile

    with zipfile.ZipFile(run / "model.keras", "w") as archive:
        archive.writestr("hello.txt", "hello")
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"A | b | C\n")))
    assert cli.main(["generate", "--run-dir", str(run)]) == 2
    one_line_error(capsys, "model.keras", "damaged or not a .keras archive")
    with zipfile.ZipFile(trained_run / "model.keras") as original, zipfile.ZipFile(run / "model.keras", "w") as archive:
        for name in original.namelist():
            archive.writestr(name, b"not HDF5" if name.endswith(".h5") else original.read(name))
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"A | b | C\n")))
    assert cli.main(["generate", "--run-dir", str(run)]) == 2
    one_line_error(capsys, "model.keras", "damaged or not a .keras archive")
    # A config.json whose source length the model was not built with: TensorFlow's traceback at decoding.
    run = copy_run(trained_run, tmp_path / "lengths")
    config = json.loads((run / "config.json").read_text())
    (run / "config.json").write_text(json.dumps({**config, "max_source_length": config["max_source_length"] + 100}))
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"A | b | C\n")))
    assert cli.main(["generate", "--run-dir", str(run)]) == 2
    one_line_error(capsys, "config.json", "max_source_length", "model.keras was built with")

    run = copy_run(trained_run, tmp_path / "v")
    vocabulary = json.loads((run / "vocabulary.json").read_text())
    vocabulary["tokens"].append("extra_token")
    (run / "vocabulary.json").write_text(json.dumps(vocabulary))
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"A | b | C\n")))
    assert cli.main(["generate", "--run-dir", str(run)]) == 2
    one_line_error(capsys, "vocabulary.json", "different runs")

    (run / "config.json").write_text("{broken")
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"A | b | C\n")))
    assert cli.main(["generate", "--run-dir", str(run)]) == 2
    one_line_error(capsys, "config.json", "JSON")

    config = json.loads((trained_run / "config.json").read_text())
    config["batch_size"] = "sixteen"
    (run / "config.json").write_text(json.dumps(config))
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"A | b | C\n")))
    assert cli.main(["generate", "--run-dir", str(run)]) == 2
    one_line_error(capsys, "config.json", "'batch_size'", "an integer", "'sixteen'")


# Item 10: evaluate.

def test_evaluate_user_errors_and_form_feed(tmp_path, capsys):
    base = ["evaluate", "--split", "test", "--data-dir", str(FIXTURE_2017)]
    assert cli.main(base + ["--hypotheses", str(tmp_path / "missing.txt")]) == 2
    one_line_error(capsys, "missing.txt", "not found")
    hypotheses = tmp_path / "hyp.txt"
    hypotheses.write_text("Aarhus Airport\fserves Aarhus.\nAbdul Taib Mahmud was born in Miri.\n")
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    assert cli.main(base + ["--hypotheses", str(hypotheses), "--output-dir", str(a_file)]) == 2
    one_line_error(capsys, "a_file", "is a file")
    assert cli.main(base + ["--hypotheses", str(hypotheses), "--output-dir", str(a_file / "sub")]) == 2
    one_line_error(capsys, "a_file", "is a file")  # a folder below a file: refused before scoring
    assert cli.main(base + ["--hypotheses", str(hypotheses)]) == 0  # 2 lines, the form feed is no break


def test_evaluate_scores_a_sampled_run(trained_run, tmp_path, capsys):
    config = json.loads((trained_run / "config.json").read_text())
    run = copy_run(trained_run, tmp_path)
    config["max_eval_entries"] = 1
    (run / "config.json").write_text(json.dumps(config))
    hypotheses = tmp_path / "hyp.txt"
    hypotheses.write_text("Aarhus Airport serves Aarhus.\n")
    argv = ["evaluate", "--split", "test", "--data-dir", str(FIXTURE_2017), "--hypotheses", str(hypotheses)]
    assert cli.main(argv) == 2
    one_line_error(capsys, "--run-dir")
    assert cli.main(argv + ["--run-dir", str(run)]) == 0


# Item 11: no TensorFlow noise, --help without TensorFlow.

def test_help_does_not_import_tensorflow_and_commands_print_no_start_up_noise(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)
    code = ("import sys, runpy; sys.argv = ['onestep-gan', 'generate', '--help']\n"
            "try: runpy.run_module('onestep_gan', run_name='__main__')\n"
            "except SystemExit: pass\n"
            "assert 'tensorflow' not in sys.modules and 'keras' not in sys.modules, 'imported'\n")
    subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True)
    hypotheses = tmp_path / "hyp.txt"
    hypotheses.write_text("x\n")
    result = subprocess.run(
        [sys.executable, "-m", "onestep_gan", "evaluate", "--hypotheses", str(hypotheses), "--data-dir",
         str(FIXTURE_2017)], env=env, capture_output=True, text=True)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "absl" not in result.stderr and "I0000" not in result.stderr


def test_config_bucket_default_is_the_datasets_one():
    from onestep_gan.rdf2text import config, datasets

    assert config.DEFAULT_BUCKET_BOUNDARIES == datasets.DEFAULT_BUCKET_BOUNDARIES


# Item 12: a fresh machine (no --data-dir, no WEBNLG_DIR) without network.

def test_train_without_data_and_without_network_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("WEBNLG_DIR", raising=False)
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras_home"))
    monkeypatch.setenv("WEBNLG_URL", "http://127.0.0.1:9/webnlg-dataset.zip")  # nothing listens there
    monkeypatch.setenv("WEBNLG_SHA256", "0" * 64)
    assert cli.main(["train", "--quick", "--run-dir", str(tmp_path / "run")]) == 2
    one_line_error(capsys, "http://127.0.0.1:9/webnlg-dataset.zip", "--data-dir")
    assert not (tmp_path / "run").exists()
    assert not list((tmp_path / "keras_home").rglob("*.zip*"))


# The example scripts report user errors as the CLI does (cli.run_script).

def test_example_script_user_errors_are_one_line_with_exit_status_2(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    script = str(REPO_ROOT / "examples" / "webnlg_read_sample.py")
    missing = tmp_path / "missing.txt"
    for arguments, fragment in (
        (["--hypotheses", str(missing), "--data-dir", str(FIXTURE_2017)], f"{missing}: cannot be read"),
        (["--hypotheses", str(missing), "--data-dir", str(tmp_path / "no_corpus")], "data directory not found"),
    ):
        result = subprocess.run([sys.executable, script, *arguments], env=env, capture_output=True, text=True)
        assert result.returncode == 2, result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("webnlg_read_sample.py: error: ") and fragment in lines[0], lines


@pytest.mark.parametrize("script, arguments", [
    ("webnlg_faithfulness_check.py", ["--min-foreign", "nan"]),
    ("webnlg_decoding_sweep.py", ["--run-dir", "RUN", "--interpolate-with", "RUN", "--interpolation", "inf"]),
    ("toy_mixture.py", ["--generator-learning-rate-ratio", "inf"]),
])
def test_example_number_flags_refuse_nan_and_inf_before_any_work(script, arguments, tmp_path):
    """A nan threshold or rate is carried in silence by every comparison and product (a nan
    `--min-foreign` turned the check off): refused by argparse, exit status 2."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    result = subprocess.run([sys.executable, str(REPO_ROOT / "examples" / script), *arguments], env=env,
                            capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "expected a finite number. Received:" in result.stderr.strip().splitlines()[-1], result.stderr


def test_a_bad_jit_compile_value_is_one_line_and_leaves_no_run(tmp_path, capsys):
    arguments = ["train", "--quick", "--data-dir", str(FIXTURE_2017), "--run-dir", str(tmp_path / "run")]
    assert cli.main([*arguments, "--jit-compile", "maybe"]) == 2
    one_line_error(capsys, "`jit_compile` must be one of ['auto', 'off', 'on']", "Received: jit_compile='maybe'")
    assert not (tmp_path / "run").exists()


# Paths a job cannot write or read, damaged aligner files, and kills while reports are written.

def test_a_run_folder_that_is_a_file_is_one_line_before_anything_is_read(trained_run, tmp_path, capsys):
    a_file = tmp_path / "a_file"
    a_file.write_text("keep")
    for argv in (
        ["train", "--quick", "--data-dir", str(FIXTURE_2017), "--run-dir", str(a_file)],
        ["chain", "--quick", "--data-dir", str(FIXTURE_2017), "--run-dir", str(a_file)],
        ["adversarial", "--quick", "--data-dir", str(FIXTURE_2017), "--mle-run-dir", str(trained_run),
         "--run-dir", str(a_file / "gan")],
    ):
        assert cli.main(argv) == 2
        one_line_error(capsys, str(a_file), "is a file, expected a folder")
    assert a_file.read_text() == "keep"


def test_adversarial_with_bad_inputs_writes_nothing(trained_run, tmp_path, capsys):
    """No run folder for a missing MLE run; an interrupted stage's folder left as it was when the
    rerun's settings differ from its backup's (the rerun used to overwrite adversarial_config.json
    before the backup refused it)."""
    from onestep_gan.rdf2text import checkpoints

    run_dir = tmp_path / "gan"
    base = ["adversarial", "--quick", "--data-dir", str(FIXTURE_2017), "--run-dir", str(run_dir)]
    assert cli.main([*base, "--mle-run-dir", str(tmp_path / "nope")]) == 2
    one_line_error(capsys, "nope", "not found")
    assert not run_dir.exists()
    # A folder without a run, or the stage's own folder: not "rerun train on it" (which would write an MLE run there).
    (tmp_path / "empty").mkdir()
    assert cli.main([*base, "--mle-run-dir", str(tmp_path / "empty")]) == 2
    one_line_error(capsys, "empty", "Received: a folder that holds no run (no config.json)")
    stage = tmp_path / "stage"
    stage.mkdir()
    (stage / "config.json").write_text("{}")
    (stage / "generator.keras").write_bytes(b"")
    assert cli.main([*base, "--mle-run-dir", str(stage)]) == 2
    one_line_error(capsys, "stage", "Received: an adversarial stage's run folder; pass the MLE run")
    assert not run_dir.exists()
    # An MLE run killed before its end (a training backup left, no summary): the stage wrote a whole run on its
    # unaveraged weights, with "n/a" for the MLE job's scores.
    import shutil

    unfinished = tmp_path / "unfinished_mle"
    shutil.copytree(trained_run, unfinished)
    (unfinished / "backup").mkdir()
    assert cli.main([*base, "--mle-run-dir", str(unfinished)]) == 2
    one_line_error(capsys, "unfinished_mle", "expected a finished MLE run")
    assert not run_dir.exists()

    import keras
    import numpy as np

    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    backup = checkpoints.TrainingBackup(run_dir / "backup", metadata={"seed": -1})  # another run's settings
    model.fit(np.ones((4, 2)), np.ones((4, 1)), epochs=1, verbose=0, callbacks=[backup])
    before = sorted(path.relative_to(run_dir) for path in run_dir.rglob("*"))
    assert cli.main([*base, "--mle-run-dir", str(trained_run)]) == 2
    one_line_error(capsys, "training_state.npz", "other settings")
    assert sorted(path.relative_to(run_dir) for path in run_dir.rglob("*")) == before


def test_files_that_cannot_be_read_are_named_in_one_line(trained_run, tmp_path, monkeypatch, capsys):
    from onestep_gan.rdf2text.vocabulary import Vocabulary

    a_file = tmp_path / "a_file"
    a_file.write_text("")
    hypotheses = tmp_path / "hyp.txt"
    hypotheses.write_text("x\n")
    # --run-dir names config.json itself: config.json/config.json cannot be read.
    argv = ["evaluate", "--split", "test", "--data-dir", str(FIXTURE_2017), "--hypotheses", str(hypotheses),
            "--run-dir", str(trained_run / "config.json")]
    assert cli.main(argv) == 2
    one_line_error(capsys, "config.json", "cannot be read")
    assert cli.main(["generate", "--run-dir", str(trained_run), "--input", str(a_file / "in.txt")]) == 2
    one_line_error(capsys, str(a_file / "in.txt"), "cannot be read")
    with pytest.raises(ValueError, match=r"Vocabulary file .*a_file/vocabulary.json cannot be read"):
        Vocabulary.load(a_file / "vocabulary.json")


@pytest.mark.parametrize("content", ["", '{"cues": ', "{}", "[]", b"\xff\xfe"])
def test_a_damaged_aligner_file_is_named(tmp_path, content):
    from onestep_gan.rdf2text.faithfulness import SlotAligner

    path = tmp_path / "aligner.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(ValueError, match=r"Aligner file .*aligner.json is damaged or not an aligner"):
        SlotAligner.load(path)
    with pytest.raises(ValueError, match=r"Aligner file .*cannot be read"):
        SlotAligner.load(path / "aligner.json")


def test_generate_with_a_damaged_aligner_is_one_line(trained_run, tmp_path, monkeypatch, capsys):
    run = copy_run(trained_run, tmp_path)
    (run / "aligner.json").write_text("{}")
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"A | b | C\n")))
    assert cli.main(["generate", "--run-dir", str(run), "--decode-method", "beam", "--beam-width", "2"]) == 2
    one_line_error(capsys, str(run / "aligner.json"), "damaged")


def _kill_half_way_through_writes(monkeypatch):
    """Every file write stops half way with a KeyboardInterrupt: a kill in the middle of a write."""
    import pathlib

    write_bytes, write_text = pathlib.Path.write_bytes, pathlib.Path.write_text

    def write_half_then_die(self, data, *args, **kwargs):
        (write_bytes if isinstance(data, bytes) else write_text)(self, data[: len(data) // 2], *args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(pathlib.Path, "write_bytes", write_half_then_die)
    monkeypatch.setattr(pathlib.Path, "write_text", write_half_then_die)


def _files(folder):
    return {path.name: path.read_bytes() for path in folder.iterdir() if path.is_file() and not path.name.startswith(".")}


def test_a_kill_while_reports_are_written_leaves_the_previous_ones_whole(tmp_path, monkeypatch):
    from onestep_gan.rdf2text import evaluation, webnlg

    entries = webnlg.load_webnlg("test", FIXTURE_2017)[:2]
    evaluation.write_report(tmp_path, ["Aarhus Airport serves Aarhus.", "A text."], entries, name="dev")
    before = _files(tmp_path)
    with monkeypatch.context() as patch:
        _kill_half_way_through_writes(patch)
        with pytest.raises(KeyboardInterrupt):
            evaluation.write_report(tmp_path, ["Another text, longer than the first.", "And one more."], entries,
                                    name="dev")
    assert _files(tmp_path) == before


def test_a_kill_while_decode_saves_the_config_leaves_the_previous_one_whole(trained_run, tmp_path, monkeypatch):
    import pathlib
    import shutil

    from onestep_gan.rdf2text import mle
    from onestep_gan.rdf2text.config import MLEConfig

    run = tmp_path / "run"
    shutil.copytree(trained_run, run)
    before = _files(run)
    save = MLEConfig.save

    def save_half_then_die(self, path):
        save(self, path)
        text = pathlib.Path(path).read_text()
        pathlib.Path(path).write_text(text[: len(text) // 2])
        raise KeyboardInterrupt

    monkeypatch.setattr(MLEConfig, "save", save_half_then_die)
    with pytest.raises(KeyboardInterrupt):
        mle.decode_run(run, FIXTURE_2017, beam_width=3)
    assert _files(run)["config.json"] == before["config.json"]


def test_a_finished_run_reruns_with_other_data_settings_and_an_interrupted_one_names_what_differs(
        trained_run, tmp_path, capsys):
    """A rerun of a finished run with settings that change the vocabulary (--min-token-count, --max-train-entries)
    trains afresh, as any other new setting does; it was refused as "made by other code or data". An interrupted
    run (a backup left) whose settings differ names them; one of the same settings whose saved vocabulary differs
    from what this code builds is refused, naming vocabulary.json."""
    import shutil

    import keras
    import numpy as np

    from onestep_gan.rdf2text import checkpoints, mle, runs

    argv = ["train", "--quick", "--data-dir", str(FIXTURE_2017), "--epochs", "1", "--model-dim", "16",
            "--feedforward-dim", "32", "--num-encoder-layers", "1", "--num-decoder-layers", "1",
            "--decode-method", "greedy"]
    finished = tmp_path / "finished"
    shutil.copytree(trained_run, finished)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert cli.main([*argv, "--run-dir", str(finished), "--no-predicate-placeholders"]) == 0
    assert runs.load_config(finished / "config.json").predicate_placeholders is False
    assert (finished / "vocabulary.json").read_text() != (trained_run / "vocabulary.json").read_text()
    assert (finished / "summary.md").is_file() and not (finished / "backup").exists()

    def interrupted(name, metadata):
        run = tmp_path / name
        shutil.copytree(trained_run, run)
        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        model.compile(optimizer="adam", loss="mse")
        model.fit(np.ones((4, 2)), np.ones((4, 1)), epochs=1, verbose=0,
                  callbacks=[checkpoints.TrainingBackup(run / "backup", metadata=metadata)])
        return run

    config = runs.load_config(trained_run / "config.json")
    other = interrupted("other_settings", mle._resume_metadata(config))
    assert cli.main([*argv, "--run-dir", str(other), "--no-predicate-placeholders"]) == 2
    one_line_error(capsys, "training_state.npz", "differing: ['predicate_placeholders']")
    same = interrupted("other_vocabulary", mle._resume_metadata(config))
    vocabulary = json.loads((same / "vocabulary.json").read_text())
    (same / "vocabulary.json").write_text(json.dumps({**vocabulary, "tokens": vocabulary["tokens"][:-1] + ["other"]}))
    assert cli.main([*argv, "--run-dir", str(same)]) == 2
    one_line_error(capsys, "vocabulary.json", "differs from the vocabulary this code builds")
