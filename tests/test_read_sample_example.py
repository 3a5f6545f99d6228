"""examples/webnlg_read_sample.py: the blind A/B comparison of two runs' outputs."""

import json

import pytest

from tests.conftest import fixture_2017_dir, load_example

read_sample = load_example("webnlg_read_sample.py")


def test_blind_pairs_show_only_differing_entries_in_a_recorded_order(tmp_path, capsys):
    first, second, key = tmp_path / "one.txt", tmp_path / "two.txt", tmp_path / "key.json"
    first.write_text("Same text.\nFirst text.\n")
    second.write_text("Same text.\nSecond text.\n")
    argv = ["--hypotheses", str(first), "--hypotheses", str(second), "--data-dir", str(fixture_2017_dir()),
            "--split", "test", "--count", "5", "--blind", str(key)]
    assert read_sample.main(argv) == 0
    out = capsys.readouterr().out
    assert "Same text." not in out and "1 of the 1 entries whose outputs differ (of 2)" in out
    (entry,) = json.loads(key.read_text()).values()
    shown = {"A": out.split("  A: ")[1].split("\n")[0], "B": out.split("  B: ")[1].split("\n")[0]}
    expected = {str(first): "First text.", str(second): "Second text."}
    assert {shown["A"], shown["B"]} == set(expected.values())
    assert expected[entry["A"]] == shown["A"] and expected[entry["B"]] == shown["B"]


def test_the_train_split_reads_categories_a_run_was_trained_without(tmp_path, capsys):
    """A run trained with --holdout-categories never saw those categories' train entries: a
    reading of its outputs for them draws from the train split, among those categories only."""
    first, second, key = tmp_path / "one.txt", tmp_path / "two.txt", tmp_path / "key.json"
    first.write_text("Airport one.\nAstronaut one.\n")  # the fixture's train entries: Airport, Astronaut
    second.write_text("Airport two.\nAstronaut two.\n")
    argv = ["--hypotheses", str(first), "--hypotheses", str(second), "--data-dir", str(fixture_2017_dir()),
            "--split", "train", "--categories", "Astronaut", "--count", "5", "--blind", str(key)]
    assert read_sample.main(argv) == 0
    out = capsys.readouterr().out
    assert "1 of the 1 entries whose outputs differ (of 1; categories: Astronaut)" in out
    assert "Astronaut one." in out and "Airport" not in out.split("[1]")[1]


def test_blind_needs_two_hypotheses_files(tmp_path, capsys):
    with pytest.raises(SystemExit) as error:
        read_sample.main(["--hypotheses", str(tmp_path / "one.txt"), "--blind", str(tmp_path / "key.json")])
    assert error.value.code == 2
    assert "--blind compares two --hypotheses files. Received: 1" in capsys.readouterr().err


def test_side_by_side_labels_tell_files_of_one_folder_apart():
    assert read_sample.column_labels(["runs/mle/test.txt", "runs/gan/test.txt"]) == ["mle/", "gan/"]
    assert read_sample.column_labels(["runs/v/base.txt", "runs/v/rule.txt"]) == ["v/base.txt ", "v/rule.txt "]
    assert read_sample.column_labels(["a/v/t.txt", "b/v/t.txt"]) == ["a/v/t.txt ", "b/v/t.txt "]


def test_categories_limit_the_draw_and_an_unknown_one_is_refused(tmp_path, capsys):
    hypotheses = tmp_path / "test.txt"
    hypotheses.write_text("First text.\nSecond text.\n")
    entries = read_sample.webnlg.load_webnlg("test", fixture_2017_dir())
    wanted = [index for index, entry in enumerate(entries) if entry.category == entries[1].category]
    argv = ["--hypotheses", str(hypotheses), "--data-dir", str(fixture_2017_dir()), "--split", "test",
            "--count", "5", "--categories", entries[1].category]
    assert read_sample.main(argv) == 0
    out = capsys.readouterr().out
    assert out.count("-> ") == len(wanted) and all(f"[{n}] {entries[i].entry_id}" in out for n, i in enumerate(wanted, 1))
    with pytest.raises(ValueError, match=r"--categories: expected categories of the test split \(.*\)\. Received: Nowhere$"):
        read_sample.entries_of_categories(entries, ["Nowhere"], "test")


def test_blind_pairs_are_drawn_only_among_the_categories_asked_for(tmp_path, capsys):
    first, second, key = tmp_path / "one.txt", tmp_path / "two.txt", tmp_path / "key.json"
    first.write_text("Airport one.\nPolitician one.\n")
    second.write_text("Airport two.\nPolitician two.\n")
    argv = ["--hypotheses", str(first), "--hypotheses", str(second), "--data-dir", str(fixture_2017_dir()),
            "--split", "test", "--count", "5", "--blind", str(key), "--categories", "Politician"]
    assert read_sample.main(argv) == 0
    out = capsys.readouterr().out
    assert "Airport" not in out and "Politician one." in out
    assert "1 of the 1 entries whose outputs differ (of 1; categories: Politician)" in out
    assert [entry["entry"] for entry in json.loads(key.read_text()).values()] == ["test/Id2"]


def test_hypotheses_with_a_byte_order_mark_and_windows_line_ends_read_as_their_text(tmp_path):
    path = tmp_path / "hyp.txt"
    path.write_bytes("\ufeffFirst text.\r\nSecond text.\r\n".encode("utf-8"))
    assert read_sample.read_hypotheses(path, 2) == ["First text.", "Second text."]
