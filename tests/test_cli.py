import dataclasses
import io
import json
import pathlib
import re
import warnings

import pytest

from onestep_gan.rdf2text import cli, evaluation, runs
from onestep_gan.rdf2text.faithfulness import SlotAligner
from onestep_gan.rdf2text.webnlg import Triple
from tests.conftest import REPO_ROOT, fixture_2017_dir, load_example

FIXTURE_2017 = fixture_2017_dir()


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("cli_run")
    argv = [
        "train", "--quick", "--data-dir", str(FIXTURE_2017), "--run-dir", str(run_dir),
        "--epochs", "1", "--model-dim", "16", "--feedforward-dim", "32", "--num-encoder-layers", "1",
        "--num-decoder-layers", "1", "--decode-method", "greedy",
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert cli.main(argv) == 0
    return run_dir


def test_parse_triple_sets():
    lines = ["Alan_Bean | birthPlace | Wheeler,_Texas ; Alan_Bean | occupation | Test_pilot", "", "A | b | C"]
    assert cli.parse_triple_sets(lines) == [
        [Triple("Alan_Bean", "birthPlace", "Wheeler,_Texas"), Triple("Alan_Bean", "occupation", "Test_pilot")],
        None,  # a blank line: a blank output line keeps outputs aligned with inputs
        [Triple("A", "b", "C")],
    ]
    with pytest.raises(ValueError, match="Line 1"):
        cli.parse_triple_sets(["Alan_Bean | birthPlace"])
    # A separator left dangling at the end of a line separates nothing: it is not part of the object.
    assert cli.parse_triple_sets(["A | b | C ;", "A | b | C ; "]) == [[Triple("A", "b", "C")]] * 2
    assert cli.parse_triple_sets(["A | b | C;"]) == [[Triple("A", "b", "C;")]]  # ";" in an entity, as before
    with pytest.raises(ValueError, match=r"Line 1: .* Received: ''"):
        cli.parse_triple_sets(["A | b | C ;  ; D | e | F"])


def test_train_writes_run_with_cli_overrides(trained_run):
    config = json.loads((trained_run / "config.json").read_text())
    assert (config["epochs"], config["model_dim"], config["num_encoder_layers"]) == (1, 16, 1)
    assert config["decode_method"] == "greedy"
    assert (trained_run / "model.keras").is_file()


def test_config_flags_cover_every_field_and_leave_the_rest_at_defaults():
    args = cli.build_parser().parse_args(["train", "--num-heads", "8", "--max-eval-entries", "none"])
    config = cli.config_from_arguments(cli.MLEConfig, args)
    assert (config.num_heads, config.max_eval_entries) == (8, None)
    assert config.feedforward_dim == cli.MLEConfig().feedforward_dim  # no hidden coupling
    args = cli.build_parser().parse_args(["train", "--holdout-categories", "Airport", "Food", "--bucket-boundaries", "8", "16"])
    config = cli.config_from_arguments(cli.MLEConfig, args)
    assert (config.holdout_categories, config.bucket_boundaries) == (("Airport", "Food"), (8, 16))
    args = cli.build_parser().parse_args(["adversarial", "--no-feedback-gradient", "--adversarial-weight", "0"])
    config = cli.config_from_arguments(cli.AdversarialConfig, args)
    assert (config.feedback_gradient, config.adversarial_weight) == (False, 0.0)
    assert config.mle_weight == cli.AdversarialConfig().mle_weight
    subcommands = next(action for action in cli.build_parser()._actions if action.choices).choices
    for command, config_class in (("train", cli.MLEConfig), ("chain", cli.MLEConfig), ("adversarial", cli.AdversarialConfig)):
        flags = subcommands[command]._option_string_actions
        missing = [field.name for field in dataclasses.fields(config_class) if "--" + field.name.replace("_", "-") not in flags]
        assert not missing, (command, missing)


def test_verbose_flag_takes_what_keras_fit_takes():
    for value, expected in (("auto", "auto"), ("0", 0), ("2", 2)):
        args = cli.build_parser().parse_args(["train", "--verbose", value])
        assert cli.config_from_arguments(cli.MLEConfig, args).verbose == expected
    with pytest.raises(SystemExit) as raised:
        cli.build_parser().parse_args(["train", "--verbose", "loud"])
    assert raised.value.code == 2


def test_adversarial_command_needs_an_mle_run(tmp_path):
    assert cli.main(["adversarial", "--run-dir", str(tmp_path)]) == 2


def test_generate_reads_stdin_and_prints_one_text_per_line(trained_run, monkeypatch, capsys):
    stdin = "Alan_Bean | birthPlace | Wheeler,_Texas\nAarhus_Airport | cityServed | Aarhus ; Aarhus | leader | Jacob_Bundsgaard\n"
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
    assert cli.main(["generate", "--run-dir", str(trained_run)]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 2


def test_generate_jsonl_prints_each_text_with_the_aligners_labels(trained_run, monkeypatch, capsys):
    stdin = "Alan_Bean | birthPlace | Wheeler,_Texas\n\nAarhus_Airport | cityServed | Aarhus ; Aarhus | leader | Jacob_Bundsgaard\n"
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
    assert cli.main(["generate", "--run-dir", str(trained_run), "--format", "jsonl"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and lines[1] == "null"  # one line per input line
    records = [json.loads(lines[0]), json.loads(lines[2])]
    assert [[(t["subject"], t["predicate"], t["object"]) for t in r["triples"]] for r in records] == [
        [("Alan_Bean", "birthPlace", "Wheeler,_Texas")],
        [("Aarhus_Airport", "cityServed", "Aarhus"), ("Aarhus", "leader", "Jacob_Bundsgaard")],
    ]
    for record in records:
        assert isinstance(record["text"], str) and isinstance(record["extra_entities"], list)
        assert all(t["label"] in ("correct", "missing", "wrong") for t in record["triples"])
        assert all((t["reason"] is None) == (t["label"] != "wrong") for t in record["triples"])
        assert record["faithful"] == (all(t["label"] == "correct" for t in record["triples"])
                                      and not record["extra_entities"] and not record["unmentioned_entities"])


def test_generate_unfaithful_template_prints_the_template_where_the_check_flags_the_text(trained_run, monkeypatch, capsys):
    from onestep_gan.rdf2text import runs, templates

    lines = ["Alan_Bean | birthPlace | Wheeler,_Texas ; Alan_Bean | occupation | Test_pilot", "",
             "Aarhus_Airport | cityServed | Aarhus ; Aarhus | leader | Jacob_Bundsgaard", "Aarhus | leader | Jacob_Bundsgaard"]
    stdin = "\n".join(lines) + "\n"

    def generate(*flags):
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
        assert cli.main(["generate", "--run-dir", str(trained_run), *flags]) == 0
        return capsys.readouterr().out.splitlines()

    kept = [json.loads(line) for line in generate("--format", "jsonl")]
    texts = generate("--unfaithful", "template")
    records = [json.loads(line) for line in generate("--format", "jsonl", "--unfaithful", "template")]
    assert len(texts) == len(records) == 4 and texts[1] == "" and records[1] is None
    config = runs.load_run(trained_run)[2]
    checker = runs.load_checker(trained_run, config)
    assert (checker.inversions, checker.subjects, checker.attachments, checker.opposed) == (True, True, True, True)
    fell_back = 0
    for line, text, record, before in zip(lines, texts, records, kept):
        if not line:
            continue
        facts = cli.parse_triple_sets([line])[0]
        assert before["fallback"] is False and before["faithful"] == evaluation.check_text(checker, facts, before["text"])["faithful"]
        if before["faithful"]:
            assert text == record["text"] == before["text"] and record["fallback"] is False
        else:
            fell_back += 1
            assert text == record["text"] == templates.template_text(facts)
            assert (record["fallback"], record["model_text"]) == (True, before["text"])
    assert fell_back  # the one-epoch model's texts: at least one is flagged


def test_generate_takes_the_decoding_flags_decode_takes(trained_run, monkeypatch, capsys):
    """`generate` decodes with the run's settings unless a flag overrides one, as `decode` does."""
    from onestep_gan.rdf2text import inference

    calls = []

    def spy(name):
        original = getattr(inference, name)

        def call(*args, **kwargs):
            calls.append((name, kwargs))
            return original(*args, **kwargs)

        monkeypatch.setattr(inference, name, call)

    spy("make_generate_function")
    spy("decode_examples")
    input_file = trained_run.parent / "generate_flags_input.txt"
    input_file.write_text("Alan_Bean | birthPlace | Wheeler,_Texas\n")
    base = ["generate", "--run-dir", str(trained_run), "--input", str(input_file)]
    assert cli.main(base) == 0  # the run's own: greedy, no reranker
    assert cli.main(base + ["--decode-method", "beam", "--beam-width", "3", "--length-penalty", "1.5",
                            "--rerank-min-foreign", "none", "--no-rerank-stated-relations",
                            "--constrain-placeholders", "--no-rerank-attachments", "--no-rerank-foreign-known-only",
                            "--no-repeat-ngram-size", "3"]) == 0
    # The run's reranking (`decode` tests --no-rerank), unstated relations counted as errors.
    assert cli.main(base + ["--decode-method", "beam", "--rerank-unstated-as-errors", "--rerank-subjects", "ties",
                            "--rerank-attachments", "--rerank-inversions", "--rerank-of-phrases", "--rerank-opposed"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 3
    assert [name for name, _ in calls] == ["make_generate_function", "decode_examples"] * 3
    (run, _), (beam, beam_decode), (_, run_decode) = zip(calls[::2], calls[1::2])
    run, beam = run[1], beam[1]
    beam_reranker, run_reranker = beam_decode[1]["reranker"], run_decode[1]["reranker"]
    assert (run["method"], run["placeholder_constraints"], run["no_repeat_ngram_size"]) == ("greedy", None, 0)
    assert (beam["method"], beam["beam_width"], beam["length_penalty"]) == ("beam", 3, 1.5)
    assert beam["no_repeat_ngram_size"] == 3
    assert beam["placeholder_constraints"] is not None
    assert beam_reranker.aligner.min_foreign is None and beam_reranker.stated_relations is False
    assert run_reranker.aligner.min_foreign == 6.0 and run_reranker.stated_relations
    assert run_reranker.unstated_as_errors and not beam_reranker.unstated_as_errors
    assert (run_reranker.subjects, beam_reranker.subjects) == ("ties", "off")
    assert run_reranker.aligner.opposed and not beam_reranker.aligner.opposed
    assert run_reranker.attachments and not beam_reranker.attachments
    assert run_reranker.aligner.foreign_known_only and not beam_reranker.aligner.foreign_known_only
    assert run_reranker.aligner.inversions and not beam_reranker.aligner.inversions
    assert run_reranker.aligner.of_phrases and not beam_reranker.aligner.of_phrases
    # Counting unstated relations without looking for them: one line, status 2.
    assert cli.main(base + ["--no-rerank-stated-relations", "--rerank-unstated-as-errors"]) == 2
    assert "needs rerank_stated_relations=True" in capsys.readouterr().err
    for flag, value in (("--beam-width", "0"), ("--no-repeat-ngram-size", "-1"), ("--no-repeat-ngram-size", "2.5")):
        with pytest.raises(SystemExit) as exit_info:  # argparse: one line on stderr, status 2
            cli.main(base + [flag, value])
        assert exit_info.value.code == 2
        assert f"argument {flag}: expected" in capsys.readouterr().err


def test_generate_reports_a_missing_run(tmp_path, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO("A | b | C\n".encode())))
    assert cli.main(["generate", "--run-dir", str(tmp_path)]) == 2


def test_evaluate_writes_scores(tmp_path):
    hypotheses = tmp_path / "test_hypotheses.txt"
    hypotheses.write_text("Aarhus Airport serves Aarhus, Denmark.\nAbdul Taib Mahmud was born in Miri.\n")
    argv = ["evaluate", "--hypotheses", str(hypotheses), "--split", "test", "--data-dir", str(FIXTURE_2017)]
    assert cli.main(argv) == 0
    scores = json.loads((tmp_path / "test_evaluated_scores.json").read_text())
    assert scores["all"]["count"] == 2 and scores["seen"]["count"] == 1
    assert scores["all"]["bleu_2017"] > 0
    assert (tmp_path / "test_evaluated_scores.md").is_file()


def test_evaluate_scores_a_run_with_held_out_categories_on_its_own_train(tmp_path):
    """`evaluate --run-dir` of a run trained with `holdout_categories` scores the held-out
    category's test entry as unseen, as the run's own reports do."""
    hypotheses = tmp_path / "test_hypotheses.txt"
    hypotheses.write_text("Aarhus Airport is the city served of Aarhus, Denmark.\nAbdul Taib Mahmud was born in Miri.\n")
    cli.MLEConfig(holdout_categories=("Airport",)).save(tmp_path / "config.json")
    argv = ["evaluate", "--hypotheses", str(hypotheses), "--split", "test", "--data-dir", str(FIXTURE_2017)]
    assert cli.main(argv) == 0  # no run: the whole train: the Airport entry is seen
    assert json.loads((tmp_path / "test_evaluated_scores.json").read_text())["seen"]["count"] == 1
    assert cli.main(argv + ["--run-dir", str(tmp_path)]) == 0
    scores = json.loads((tmp_path / "test_evaluated_scores.json").read_text())
    assert "seen" not in scores and scores["unseen"]["count"] == 2


def test_evaluate_whole_train_aligner_mines_cues_from_the_held_out_categories_too(tmp_path, monkeypatch):
    """A held-out run's own aligner has no cues for its held-out predicates; `--whole-train-aligner`
    mines the aligner from the whole train split while still scoring those categories as unseen."""
    hypotheses = tmp_path / "test_hypotheses.txt"
    hypotheses.write_text("Aarhus Airport is the city served of Aarhus, Denmark.\nAbdul Taib Mahmud was born in Miri.\n")
    cli.MLEConfig(holdout_categories=("Airport",)).save(tmp_path / "config.json")
    mined_from = []
    original = SlotAligner.from_entries.__func__
    monkeypatch.setattr(SlotAligner, "from_entries", classmethod(
        lambda cls, entries, **kwargs: mined_from.append(sorted({e.category for e in entries})) or original(cls, entries, **kwargs)))
    argv = ["evaluate", "--hypotheses", str(hypotheses), "--split", "test", "--data-dir", str(FIXTURE_2017),
            "--run-dir", str(tmp_path)]
    assert cli.main(argv) == 0 and cli.main(argv + ["--whole-train-aligner"]) == 0
    assert mined_from == [["Astronaut"], ["Airport", "Astronaut"]]
    scores = json.loads((tmp_path / "test_evaluated_scores.json").read_text())
    assert "seen" not in scores and scores["unseen"]["count"] == 2


def test_evaluate_inversions_counts_a_relation_stated_the_wrong_way_round(tmp_path):
    hypotheses = tmp_path / "test_hypotheses.txt"
    hypotheses.write_text("Aarhus Airport is the city served of Aarhus, Denmark.\nAbdul Taib Mahmud was born in Miri.\n")
    base = ["evaluate", "--hypotheses", str(hypotheses), "--split", "test", "--data-dir", str(FIXTURE_2017)]
    rates = []
    for extra in ([], ["--inversions"]):
        assert cli.main(base + extra) == 0
        rates.append(json.loads((tmp_path / "test_evaluated_scores.json").read_text())["seen"]["wrong_binding_rate"])
    assert rates == [0.0, 1.0]  # the seen entry: Aarhus_Airport | cityServed | "Aarhus, Denmark"


@pytest.mark.parametrize("flag", ["--subjects", "--attachments", "--value-shapes", "--foreign-known-only", "--of-phrases",
                                  "--opposed"])
def test_evaluate_stricter_check_flags_judge_with_that_check(tmp_path, monkeypatch, flag):
    """`--subjects` / `--attachments` / `--value-shapes` / `--foreign-known-only` / `--of-phrases` score with
    `SlotAligner(subjects=True)` / `(attachments=True)` / `(value_shapes=True)` / `(foreign_known_only=True)` /
    `(of_phrases=True)` (what each does: test_faithfulness)."""
    hypotheses = tmp_path / "test_hypotheses.txt"
    hypotheses.write_text("Aarhus Airport serves Aarhus, Denmark.\nAbdul Taib Mahmud was born in Miri.\n")
    used = []
    original = evaluation.write_report
    setting = flag.lstrip("-").replace("-", "_")
    monkeypatch.setattr(evaluation, "write_report",
                        lambda *args, aligner=None, **kwargs: used.append(getattr(aligner, setting)) or original(*args, aligner=aligner, **kwargs))
    base = ["evaluate", "--hypotheses", str(hypotheses), "--split", "test", "--data-dir", str(FIXTURE_2017)]
    if flag in ("--foreign-known-only", "--opposed"):  # part of the --min-foreign check, refused without it
        assert cli.main(base + [flag]) == 2 and not used
        base += ["--min-foreign", "6"]
    assert cli.main(base) == 0 and cli.main(base + [flag]) == 0
    assert used == [False, True]


def test_evaluate_rejects_wrong_line_count(tmp_path):
    hypotheses = tmp_path / "hyp.txt"
    hypotheses.write_text("only one line\n")
    argv = ["evaluate", "--hypotheses", str(hypotheses), "--split", "test", "--data-dir", str(FIXTURE_2017)]
    assert cli.main(argv) == 2


def test_decode_with_value_shapes_mines_again_an_aligner_saved_without_shapes(trained_run, tmp_path):
    """A run saved before aligners carried their values' shapes still decodes with
    `--rerank-value-shapes`: `decode` mines the aligner again (same cues) and saves it with them."""
    import shutil

    run = tmp_path / "run"
    shutil.copytree(trained_run, run)
    saved = json.loads((run / "aligner.json").read_text())
    old = {key: value for key, value in saved.items() if key not in ("shapes", "value_shapes", "min_shape_share")}
    (run / "aligner.json").write_text(json.dumps(old))
    argv = ["decode", "--run-dir", str(run), "--data-dir", str(FIXTURE_2017), "--decode-method", "beam",
            "--beam-width", "2", "--rerank-value-shapes"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert cli.main(argv) == 0
    mined = json.loads((run / "aligner.json").read_text())
    assert mined["shapes"] == saved["shapes"] and mined["cues"] == saved["cues"] and mined["shapes"]
    assert json.loads((run / "config.json").read_text())["rerank_value_shapes"] is True


def test_a_decode_stopped_half_way_leaves_the_runs_reports_and_config_as_they_were(trained_run, tmp_path, monkeypatch):
    """`decode` writes nothing until both splits are decoded and scored: stopped during test, the
    folder keeps its old dev report beside its old test report and config.json."""
    import shutil

    from onestep_gan.rdf2text import mle

    run = tmp_path / "run"
    shutil.copytree(trained_run, run)
    kept = ("config.json", "dev_hypotheses.txt", "dev_scores.json", "test_hypotheses.txt", "test_scores.json", "summary.md")
    before = {name: (run / name).read_bytes() for name in kept}
    real_decoder_for = mle.decoder_for

    def stopping_decoder_for(*args, **kwargs):
        decode, calls = real_decoder_for(*args, **kwargs), []

        def decode_then_stop(examples):
            calls.append(len(examples))
            if len(calls) == 2:  # test: dev has been decoded
                raise KeyboardInterrupt
            return decode(examples)

        return decode_then_stop

    monkeypatch.setattr(mle, "decoder_for", stopping_decoder_for)
    with warnings.catch_warnings(), pytest.raises(KeyboardInterrupt):
        warnings.simplefilter("ignore", UserWarning)
        mle.decode_run(run, FIXTURE_2017, decode_method="beam", beam_width=2, rerank=False)
    assert {name: (run / name).read_bytes() for name in kept} == before


def test_decode_rescores_a_run_with_other_decoding_settings(trained_run, capsys):
    argv = ["decode", "--run-dir", str(trained_run), "--data-dir", str(FIXTURE_2017), "--decode-method", "beam",
            "--beam-width", "3", "--no-rerank", "--rerank-min-foreign", "none",
            "--no-rerank-stated-relations", "--constrain-placeholders"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert cli.main(argv) == 0
    config = json.loads((trained_run / "config.json").read_text())
    assert (config["decode_method"], config["beam_width"], config["rerank"]) == ("beam", 3, False)
    assert config["rerank_min_foreign"] is None and config["rerank_stated_relations"] is False
    assert config["constrain_placeholders"] is True
    summary = (trained_run / "summary.md").read_text()  # rewritten: the new settings and scores
    assert "decoding: beam (beam 3)" in summary and "greedy" not in summary
    test_scores = json.loads((trained_run / "test_scores.json").read_text())
    assert evaluation.format_markdown_table(test_scores) in summary
    assert "slot errors %" in (trained_run / "test_scores.md").read_text()


def test_generate_in_a_fresh_process_loads_the_run(trained_run):
    """The CLI imports Keras lazily; the text models must still be registered before loading."""
    import os
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "onestep_gan", "generate", "--run-dir", str(trained_run)],
        input="Alan_Bean | birthPlace | Wheeler,_Texas\n", capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(pathlib.Path(__file__).resolve().parents[1])}, timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert len(result.stdout.splitlines()) == 1


def test_the_readmes_triplesets_outside_webnlg_are_valid_generate_input():
    """The README reads `examples/triplesets_outside_webnlg.txt` with `generate --input`: 20 triplesets."""
    path = REPO_ROOT / "examples" / "triplesets_outside_webnlg.txt"
    triple_sets = cli.parse_triple_sets(path.read_text(encoding="utf-8").splitlines())
    assert len(triple_sets) == 20
    assert sum(len(triples) for triples in triple_sets) == 57
    assert all(2 <= len(triples) <= 4 for triples in triple_sets)


def readme_example_block():
    """The README's first example block (RDF-to-text section): (input lines, output lines)."""
    lines = (REPO_ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("## RDF-to-text on WebNLG"))
    inputs, outputs = [], []
    for line in lines[start:]:
        if line.startswith("        -> "):
            outputs.append(line[len("        -> "):])
        elif line.startswith("    ") and not line.startswith("     "):
            inputs.append(line[4:])
        elif inputs and line.strip() and not line.startswith(" "):
            break
    return inputs, outputs


def test_the_readmes_examples_are_the_inputs_of_examples_readme_examples_txt():
    """`generate --input examples/readme_examples.txt` reruns the README's examples: the file holds
    exactly the README's inputs, in order, each shown with one output, and is valid `generate`
    input. (That the outputs are the committed defaults' is checked by hand with a trained run.)"""
    inputs, outputs = readme_example_block()
    path = REPO_ROOT / "examples" / "readme_examples.txt"
    assert path.read_text(encoding="utf-8").splitlines() == inputs
    assert len(inputs) == len(outputs) == 10
    triple_sets = cli.parse_triple_sets(inputs)
    assert [len(triples) for triples in triple_sets] == [2, 2, 2, 3, 1, 1, 1, 3, 2, 1]


def test_template_fallback_example_applies_the_fallback_to_a_runs_outputs(trained_run, tmp_path, monkeypatch, capsys):
    """examples/webnlg_template_fallback.py: the run's test outputs, each kept or replaced by its
    template as `generate --unfaithful template` would, and the templates of every entry."""
    from onestep_gan.rdf2text import runs, templates, webnlg

    monkeypatch.syspath_prepend(str(REPO_ROOT / "examples"))
    script = load_example("webnlg_template_fallback.py")
    out_dir = tmp_path / "fallback"
    script.main(["--run-dir", str(trained_run), "--data-dir", str(FIXTURE_2017), "--split", "test", "--out-dir", str(out_dir)])
    config = runs.load_config(trained_run / runs.CONFIG_FILE)
    entries = runs.sample_entries(webnlg.load_webnlg("test", FIXTURE_2017), config.max_eval_entries, config.seed)
    outputs = (trained_run / "test_hypotheses.txt").read_text(encoding="utf-8").splitlines()
    checker = runs.load_checker(trained_run, config)
    expected = [text if evaluation.check_text(checker, entry.triples, text)["faithful"] else templates.template_text(entry.triples)
                for entry, text in zip(entries, outputs)]
    assert (out_dir / "test_fallback.txt").read_text(encoding="utf-8").splitlines() == expected
    assert (out_dir / "test_templates.txt").read_text(encoding="utf-8").splitlines() == [
        templates.template_text(entry.triples) for entry in entries]
    records = [json.loads(line) for line in (out_dir / "test_fallback.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [record["text"] for record in records] == expected
    flagged = sum(record["fallback"] for record in records)
    assert flagged and f"test all: {flagged} of {len(entries)} outputs flagged" in capsys.readouterr().out


def test_generate_says_when_a_run_without_an_aligner_cannot_rerank(trained_run, tmp_path, monkeypatch, capsys, caplog):
    """Reranking is on by default; a run saved without `aligner.json` decodes without it, and says
    so (and how to get it) instead of silently giving other outputs than the run's reports."""
    import shutil

    run = tmp_path / "run"
    shutil.copytree(trained_run, run)
    (run / "aligner.json").unlink()

    def generate(*flags):
        caplog.clear()
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"Alan_Bean | birthPlace | Wheeler,_Texas\n")))
        with caplog.at_level("WARNING", logger="onestep_gan.rdf2text.cli"):
            assert cli.main(["generate", "--run-dir", str(run), "--decode-method", "beam", "--beam-width", "2", *flags]) == 0
        assert len(capsys.readouterr().out.splitlines()) == 1
        return [record.getMessage() for record in caplog.records if record.name == "onestep_gan.rdf2text.cli"]

    (message,) = generate("--rerank")
    assert f"{run}" in message and "aligner.json" in message and "not reranked" in message
    assert "onestep-gan decode" in message and "--no-rerank" in message
    assert generate("--no-rerank") == []
    # jsonl needs the aligner: one line, before the model is loaded, and no warning before it.
    caplog.clear()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"Alan_Bean | birthPlace | Wheeler,_Texas\n")))
    monkeypatch.setattr(runs, "load_run", lambda *args: pytest.fail("the model was loaded"))
    assert cli.main(["generate", "--run-dir", str(run), "--format", "jsonl"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "need the run's aligner.json" in err[0]
    assert not [record for record in caplog.records if record.levelname == "WARNING"]
    monkeypatch.undo()
    shutil.copy(trained_run / "aligner.json", run / "aligner.json")
    assert generate("--rerank") == []


def test_a_byte_order_mark_is_not_read_as_part_of_the_first_line(tmp_path):
    path = tmp_path / "input.txt"
    path.write_bytes("\ufeffAlan_Bean | birthPlace | Wheeler,_Texas\r\nA | b | C\n".encode("utf-8"))
    lines = cli._read_text_lines(path, "Input file")
    assert lines == ["Alan_Bean | birthPlace | Wheeler,_Texas", "A | b | C"]
    assert cli.parse_triple_sets(lines)[0][0] == Triple("Alan_Bean", "birthPlace", "Wheeler,_Texas")
    path.write_bytes(b"\xef\xbb\xbfA | b | C\nA | b | \xff\n")  # a bad byte is still named on its line
    with pytest.raises(ValueError, match=r"line 2: expected UTF-8 text. Received: bytes b.\\xff."):
        cli._read_text_lines(path, "Input file")


def test_evaluate_run_dir_mines_the_aligner_from_the_runs_train_sample(tmp_path, monkeypatch):
    """The MLE job mines its aligner from the train entries it sampled (`max_train_entries`):
    `evaluate --run-dir` scores with that aligner, so that it repeats the run's own reports;
    `--whole-train-aligner` mines the whole train split."""
    hypotheses = tmp_path / "test_hypotheses.txt"
    hypotheses.write_text("Aarhus Airport is the city served of Aarhus, Denmark.\nAbdul Taib Mahmud was born in Miri.\n")
    cli.MLEConfig(max_train_entries=1, seed=5).save(tmp_path / "config.json")
    mined_from = []
    original = SlotAligner.from_entries.__func__
    monkeypatch.setattr(SlotAligner, "from_entries", classmethod(
        lambda cls, entries, **kwargs: mined_from.append([e.texts for e in entries]) or original(cls, entries, **kwargs)))
    argv = ["evaluate", "--hypotheses", str(hypotheses), "--split", "test", "--data-dir", str(FIXTURE_2017),
            "--run-dir", str(tmp_path)]
    assert cli.main(argv) == 0 and cli.main(argv + ["--whole-train-aligner"]) == 0
    whole = runs.load_split("train", FIXTURE_2017)
    assert len(whole) > 1
    assert mined_from == [[e.texts for e in runs.load_split("train", FIXTURE_2017, 1, 5)], [e.texts for e in whole]]


def test_a_failed_child_run_is_one_line_naming_its_log(tmp_path):
    """`cli.run_child` (the sweep and seed-study scripts' child runs): a failed child is a ValueError
    with the log's path and the child's last line, which `run_script` prints as one line."""
    import sys

    log = tmp_path / "stdout.log"
    command = [sys.executable, "-c", "import sys; print('epoch 1'); sys.exit('Run folder X: expected a folder.')"]
    with pytest.raises(ValueError) as raised:
        cli.run_child(command, log)
    message = str(raised.value)
    assert "exit status 1" in message and str(log) in message
    assert message.endswith("Last line: Run folder X: expected a folder.")
    cli.run_child([sys.executable, "-c", "print('fine')"], log)  # appended, no error
    assert log.read_text().splitlines()[-1] == "fine"


def test_evaluate_refuses_to_overwrite_its_input_and_a_name_with_a_folder(tmp_path, capsys):
    hypotheses = tmp_path / "test_evaluated_hypotheses.txt"  # the file `evaluate` would write
    hypotheses.write_text("Aarhus Airport serves Aarhus,  Denmark.\nAbdul Taib Mahmud was born in Miri.\n")
    before = hypotheses.read_bytes()
    argv = ["evaluate", "--hypotheses", str(hypotheses), "--split", "test", "--data-dir", str(FIXTURE_2017)]
    assert cli.main(argv) == 2
    assert "is a file this command writes" in capsys.readouterr().err
    assert hypotheses.read_bytes() == before
    assert cli.main([*argv, "--name", "sub/x"]) == 2
    assert "--name: expected a file name prefix without a folder. Received: 'sub/x'" in capsys.readouterr().err
    assert sorted(path.name for path in tmp_path.iterdir()) == [hypotheses.name]


def test_a_failed_write_is_one_line_and_leaves_no_partial_file(tmp_path, monkeypatch, capsys):
    """A full disk while `evaluate` writes its report: one line naming the file, exit status 2, and
    none of the report's files new (no partial file left)."""
    from onestep_gan.rdf2text import atomic_files

    hypotheses = tmp_path / "hyp.txt"
    hypotheses.write_text("Aarhus Airport serves Aarhus, Denmark.\nAbdul Taib Mahmud was born in Miri.\n")
    out = tmp_path / "out"
    out.mkdir()
    real_write_bytes = pathlib.Path.write_bytes

    def full_disk(path, data):
        if path.name.startswith(".test_evaluated_scores"):
            real_write_bytes(path, data[:10])
            raise OSError(28, "No space left on device", str(path))
        return real_write_bytes(path, data)

    monkeypatch.setattr(pathlib.Path, "write_bytes", full_disk)
    argv = ["evaluate", "--hypotheses", str(hypotheses), "--split", "test", "--data-dir", str(FIXTURE_2017),
            "--output-dir", str(out)]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "No space left on device" in err and ".test_evaluated_scores" in err
    assert list(out.iterdir()) == []
    # atomic_save: a failed save leaves the target as it was and no partial file.
    target = tmp_path / "model.txt"
    target.write_text("old")

    def failing_save(path):
        pathlib.Path(path).write_text("half")
        raise RuntimeError("save failed")

    with pytest.raises(RuntimeError):
        atomic_files.atomic_save(target, failing_save)
    assert target.read_text() == "old" and sorted(path.name for path in tmp_path.iterdir()) == ["hyp.txt", "model.txt", "out"]


@pytest.mark.parametrize("argv, message", [
    (["generate", "--run-dir", "r", "--length-penalty", "nan"], "expected a finite number >= 0. Received: nan"),
    (["generate", "--run-dir", "r", "--rerank-min-foreign", "abc"], "expected a finite number or 'none'. Received: 'abc'"),
    (["train", "--dropout", "nan"], "argument --dropout: expected a finite number. Received: 'nan'"),
    (["train", "--max-train-entries", "x"], "argument --max-train-entries: expected an integer or 'none'. Received: 'x'"),
    (["train", "--epochs", "1.5"], "argument --epochs: expected an integer. Received: '1.5'"),
])
def test_number_flags_say_what_they_expect_and_refuse_nan(argv, message, capsys):
    with pytest.raises(SystemExit) as raised:
        cli.build_parser().parse_args(argv)
    assert raised.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize("field, value", [("max_train_entries", 0), ("max_eval_entries", -1),
                                          ("length_penalty", float("nan")), ("rerank_min_foreign", float("inf"))])
def test_config_refuses_empty_samples_and_numbers_that_are_not_finite(field, value):
    with pytest.raises(ValueError, match=rf"`{field}` must be .*Received: {field}="):
        cli.MLEConfig(**{field: value})
    if field == "max_train_entries":
        with pytest.raises(ValueError, match=r"`max_train_entries` must be None \(every entry\) or >= 1"):
            cli.AdversarialConfig(max_train_entries=value)


@pytest.mark.parametrize("config_class, field, value, expected", [
    ("MLEConfig", "max_source_length", 0, "positive"), ("MLEConfig", "max_target_length", -1, "positive"),
    ("MLEConfig", "min_token_count", 0, "positive"), ("MLEConfig", "num_heads", 0, "positive"),
    ("MLEConfig", "feedforward_dim", 0, "positive"), ("MLEConfig", "num_encoder_layers", 0, "positive"),
    ("MLEConfig", "num_decoder_layers", -1, "positive"), ("MLEConfig", "dropout", 1.0, r"in \[0, 1\)"),
    ("MLEConfig", "dropout", -0.1, r"in \[0, 1\)"), ("MLEConfig", "label_smoothing", 1.5, r"in \[0, 1\)"),
    ("MLEConfig", "peak_learning_rate", 0.0, "a finite number > 0"),
    ("MLEConfig", "peak_learning_rate", float("inf"), "a finite number > 0"),
    ("MLEConfig", "gradient_clip_norm", -1.0, "a finite number > 0"),
    ("MLEConfig", "final_learning_rate_fraction", 2.0, r"in \[0, 1\]"), ("MLEConfig", "warmup_steps", -1, ">= 0"),
    ("MLEConfig", "rerank_min_foreign", -1.0, "a finite number >= 0"),
    ("MLEConfig", "rerank_discriminator_weight", float("inf"), "a finite number >= 0"),
    ("MLEConfig", "num_logged_samples", -1, ">= 0"),
    ("AdversarialConfig", "discriminator_dim", 0, "positive"), ("AdversarialConfig", "discriminator_heads", 0, "positive"),
    ("AdversarialConfig", "discriminator_feedforward_dim", 0, "positive"),
    ("AdversarialConfig", "discriminator_layers", 0, "positive"), ("AdversarialConfig", "held_out_batches", 0, "positive"),
    ("AdversarialConfig", "discriminator_dropout", float("nan"), r"in \[0, 1\)"),
    ("AdversarialConfig", "label_smoothing", -0.1, r"in \[0, 1\)"),
    ("AdversarialConfig", "pretrain_learning_rate", -1.0, "a finite number > 0"),
    ("AdversarialConfig", "discriminator_learning_rate", float("nan"), "a finite number > 0"),
    ("AdversarialConfig", "generator_learning_rate_ratio", float("inf"), "a finite number >= 0"),
    ("AdversarialConfig", "hard_negative_weight", -1.0, "a finite number >= 0"),
    ("AdversarialConfig", "adversarial_weight", float("nan"), "a finite number >= 0"),
    ("AdversarialConfig", "mle_weight", float("inf"), "a finite number >= 0"),
    ("AdversarialConfig", "inverse_temperature_start", 0.0, "a finite number > 0"),
    ("AdversarialConfig", "inverse_temperature_end", float("inf"), "a finite number > 0"),
    ("AdversarialConfig", "max_loss", 0.0, "a finite number > 0"),
    ("AdversarialConfig", "gradient_clip_norm", float("nan"), "a finite number > 0"),
])
def test_config_refuses_numbers_out_of_range_naming_the_file(config_class, field, value, expected, tmp_path):
    """Every number field is checked when the config is made, so a bad flag or config.json fails before the data
    is read or anything is written, naming the file (a config.json with max_source_length 0 failed later without it)."""
    config_class = getattr(cli, config_class)
    with pytest.raises(ValueError, match=rf"`{field}` must be {expected}\. Received: {field}="):
        config_class(**{field: value})
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**config_class().to_dict(), field: value}))
    with pytest.raises(ValueError, match=rf"^{re.escape(str(path))}: `{field}` must be "):
        config_class.load(path)


def test_adversarial_refuses_the_mle_runs_own_folder(trained_run, capsys):
    before = sorted(path.name for path in trained_run.iterdir())
    argv = ["adversarial", "--quick", "--mle-run-dir", str(trained_run), "--data-dir", str(FIXTURE_2017)]
    for run_dir in (trained_run, trained_run / "gan"):
        assert cli.main([*argv, "--run-dir", str(run_dir)]) == 2
        assert "expected a folder apart from the MLE run" in capsys.readouterr().err
    assert sorted(path.name for path in trained_run.iterdir()) == before


def test_a_damaged_timing_file_is_named(trained_run, tmp_path):
    import shutil

    from onestep_gan.rdf2text import mle

    run = tmp_path / "run"
    shutil.copytree(trained_run, run)
    (run / "timing.json").write_text('{"best_val_loss": 1.2')
    config = runs.load_config(run / runs.CONFIG_FILE)
    with pytest.raises(ValueError, match=r"timing\.json is not a valid JSON file .*expected the MLE run's timing"):
        mle.trained_run_identity(run, config)
    reports = {path.name: path.read_bytes() for path in run.iterdir() if path.is_file()}
    with pytest.raises(ValueError, match=r"run/timing\.json: expected the finished run's timing"):
        mle.decode_run(run, FIXTURE_2017)
    assert {path.name: path.read_bytes() for path in run.iterdir() if path.is_file()} == reports
