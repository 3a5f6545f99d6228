"""examples/webnlg_seed_study.py: the stages it starts (the commands, not the stages themselves)."""

import json

from tests.conftest import load_example


def load_script():
    return load_example("webnlg_seed_study.py")


def test_each_stage_gets_the_seed_weight_and_the_corpus_folders(tmp_path, monkeypatch):
    """One stage per (seed, GAN term on/off), skipping finished ones; the data and enriched folders
    reach every stage (an MLE run trained with gold mentions needs the enriched corpus)."""
    script = load_script()
    mle_run = tmp_path / "mle"
    mle_run.mkdir()
    (mle_run / "test_scores.json").write_text(json.dumps({}))
    finished = tmp_path / "study" / "gan_w1_s1234"
    finished.mkdir(parents=True)
    for name in ("adversarial_dev_scores.json", "adversarial_test_scores.json", "adversarial_summary.json"):
        (finished / name).write_text("{}")
    commands = []
    monkeypatch.setattr(script, "run_child", lambda command, log_path: commands.append(command))
    monkeypatch.setattr(script, "tables", lambda *args: "")
    script.main(["--mle-run-dir", str(mle_run), "--study-dir", str(tmp_path / "study"), "--data-dir", "DATA",
                 "--enriched-dir", "ENRICHED", "--seeds", "1234", "2"])
    runs = [(command[command.index("--seed") + 1], command[command.index("--adversarial-weight") + 1])
            for command in commands]
    assert runs == [("1234", "0"), ("2", "1"), ("2", "0")]
    for command in commands:
        assert command[command.index("--data-dir") + 1] == "DATA"
        assert command[command.index("--enriched-dir") + 1] == "ENRICHED"
        assert ("--corruption-pretrain-steps" in command) == (command[command.index("--adversarial-weight") + 1] == "0")
