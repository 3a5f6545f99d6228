"""examples/webnlg_blind_tally.py: a blind reading's verdicts counted per run through the key."""

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT, fixture_2017_dir, load_example


blind_tally = load_example("webnlg_blind_tally.py")
read_sample = load_example("webnlg_read_sample.py")

KEY = {"1": {"entry": "dev/Id1", "A": "cand.txt", "B": "base.txt"},
       "2": {"entry": "dev/Id2", "A": "base.txt", "B": "cand.txt"},
       "3": {"entry": "dev/Id3", "A": "cand.txt", "B": "base.txt"},
       "4": {"entry": "dev/Id4", "A": "base.txt", "B": "cand.txt"}}


def _write(tmp_path, verdicts, name="reader.txt"):
    key, reading = tmp_path / "key.json", tmp_path / name
    key.write_text(json.dumps(KEY))
    reading.write_text(verdicts)
    return key, reading


def test_letters_are_counted_for_the_run_the_key_gives_each(tmp_path, capsys):
    # 1: A = cand; 2: B = cand; 3: both; 4: neither -> cand 3, base 1.
    key, reading = _write(tmp_path, "# a reading\n1 A   # a note\n2 B\n\n3 B A\n4 -\n")
    assert blind_tally.main(["--key", str(key), "--verdicts", str(reading)]) == 0
    assert capsys.readouterr().out == (
        f"{reading}: false outputs of 4 entries: base.txt 1, cand.txt 3; both false 1, neither 1\n")


def test_two_readers_are_reported_each_and_summed(tmp_path, capsys):
    key, first = _write(tmp_path, "1 A\n2 -\n3 -\n4 -\n", "first.txt")
    _, second = _write(tmp_path, "1 -\n2 A\n3 -\n4 A B\n", "second.txt")
    assert blind_tally.main(["--key", str(key), "--verdicts", str(first), "--verdicts", str(second)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"{first}: false outputs of 4 entries: base.txt 0, cand.txt 1; both false 0, neither 3"
    assert lines[1] == f"{second}: false outputs of 4 entries: base.txt 2, cand.txt 1; both false 1, neither 2"
    assert lines[2] == "summed over 2 readers (8 readings a run): base.txt 2, cand.txt 2"


@pytest.mark.parametrize("verdicts, message", [
    ("1 A\n2 C\n3 -\n4 -\n", r"reader\.txt, line 2: expected an entry number, then A, B, \"A B\" or -\. Received: '2 C'$"),
    ("1 A\n2 -\n3 -\n9 -\n", r"reader\.txt, line 4: expected an entry number of the key \(1-4\)\. Received: 9$"),
    ("1 A\n2 -\n2 B\n3 -\n4 -\n", r"reader\.txt, line 3: entry 2 was already judged$"),
    ("1 A\n3 -\n", r"reader\.txt: expected a verdict for every entry of the key\. Received none for entries 2, 4$"),
])
def test_a_bad_reading_is_refused_naming_the_line(tmp_path, verdicts, message):
    key, reading = _write(tmp_path, verdicts)
    with pytest.raises(ValueError, match=message):
        blind_tally.main(["--key", str(key), "--verdicts", str(reading)])


def test_a_file_that_is_not_a_key_is_refused(tmp_path):
    key = tmp_path / "key.json"
    key.write_text('{"1": {"A": "cand.txt"}}')
    with pytest.raises(ValueError, match=r"key\.json: expected the KEY\.json of webnlg_read_sample\.py --blind"):
        blind_tally.read_key(key)


def test_the_key_of_a_blind_sample_tallies_to_the_run_shown_under_each_letter(tmp_path, capsys):
    first, second, key = tmp_path / "one.txt", tmp_path / "two.txt", tmp_path / "key.json"
    first.write_text("Same text.\nFirst text.\n")
    second.write_text("Same text.\nSecond text.\n")
    assert read_sample.main(["--hypotheses", str(first), "--hypotheses", str(second), "--data-dir",
                             str(fixture_2017_dir()), "--split", "test", "--blind", str(key)]) == 0
    shown = capsys.readouterr().out
    false_letter = "A" if "  A: Second text." in shown else "B"  # the reader finds "Second text." false
    reading = tmp_path / "reader.txt"
    reading.write_text(f"1 {false_letter}\n")
    assert blind_tally.main(["--key", str(key), "--verdicts", str(reading)]) == 0
    assert f"{first} 0, {second} 1;" in capsys.readouterr().out


def test_a_bad_reading_from_the_command_line_is_one_line_with_exit_status_2(tmp_path):
    key, reading = _write(tmp_path, "1 A\n2 maybe\n")
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    result = subprocess.run([sys.executable, str(REPO_ROOT / "examples" / "webnlg_blind_tally.py"), "--key", str(key),
                             "--verdicts", str(reading)], env=env, capture_output=True, text=True)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"webnlg_blind_tally.py: error: {reading}, line 2: expected an entry number, then A, B, \"A B\" or -. "
        "Received: '2 maybe'"]


def test_a_blind_key_path_that_is_an_input_is_refused_before_anything_is_written(tmp_path, capsys):
    first, second = tmp_path / "one.txt", tmp_path / "two.txt"
    first.write_text("Same text.\nFirst text.\n")
    second.write_text("Same text.\nSecond text.\n")
    argv = ["--hypotheses", str(first), "--hypotheses", str(second), "--data-dir", str(fixture_2017_dir()), "--split", "test"]
    with pytest.raises(ValueError, match=r"--blind .*two\.txt: expected a new file for the key. Received: one of the --hypotheses files"):
        read_sample.main([*argv, "--blind", str(second)])
    assert second.read_text() == "Same text.\nSecond text.\n"
    (tmp_path / "file").write_text("")
    with pytest.raises(ValueError, match=r"--blind's folder .*is a file, expected a folder"):
        read_sample.main([*argv, "--blind", str(tmp_path / "file" / "key.json")])
    assert capsys.readouterr().out == ""  # refused before the sample is printed
