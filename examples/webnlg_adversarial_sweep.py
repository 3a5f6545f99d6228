"""A small sweep of the adversarial stage's settings, judged on WebNLG dev.

Runs `examples/webnlg_adversarial.py` once per variant (a fresh process each, into
`<sweep-dir>/<variant>`), skipping variants whose run directory already holds results, then
prints one Markdown table: the MLE checkpoint and every variant on dev (the selection set)
and test. Choose defaults by the dev columns; the test columns are for reporting.

    python examples/webnlg_adversarial_sweep.py --mle-run-dir runs/webnlg_mle \
        --data-dir ../shared/webnlg/2017 --enriched-dir ../shared/webnlg/enriched --sweep-dir runs/sweep
    python examples/webnlg_adversarial_sweep.py ... --variants default lam0 no_feedback

(`lamX` variants set `--adversarial-weight X`, the engine's `lam`.)
    python examples/webnlg_adversarial_sweep.py ... --table-only   # just the table

Each variant takes 10-15 minutes on 2 CPU cores at the default sizes.
"""

import argparse
import json
import os
import sys

from onestep_gan.rdf2text.cli import add_enriched_dir_argument, run_child, run_script

# name -> extra arguments of examples/webnlg_adversarial.py (on top of its defaults).
VARIANTS = {
    "default": [],
    "seed2": ["--seed", "2"],
    "lam0": ["--adversarial-weight", "0"],  # control: the same steps with the MLE term only
    "lam0.3": ["--adversarial-weight", "0.3"],
    "lam3": ["--adversarial-weight", "3"],
    "lam3_seed2": ["--adversarial-weight", "3", "--seed", "2"],
    "no_feedback": ["--no-feedback-gradient"],
    "d_lr3e-4": ["--discriminator-learning-rate", "3e-4"],
    "pretrain400": ["--pretrain-steps", "400"],
    "beta_end1": ["--inverse-temperature-end", "1"],
    "ratio1": ["--generator-learning-rate-ratio", "1"],
    "steps300": ["--adversarial-steps", "300"],  # fine-tuning twice as long
}

COLUMNS = (
    ("dev BLEU", "dev", "bleu_2017", 1),
    ("dev chrF++", "dev", "chrf_pp", 1),
    ("dev cov %", "dev", "entity_coverage", 100),
    ("dev SER %", "dev", "slot_error_rate", 100),
    ("dev wrong %", "dev", "wrong_binding_rate", 100),
    ("dev rep-3 %", "dev", "repeated_trigram_share", 100),
    ("test BLEU", "test", "bleu_2017", 1),
    ("test unseen", "test_unseen", "bleu_2017", 1),
    ("test chrF++", "test", "chrf_pp", 1),
    ("test cov %", "test", "entity_coverage", 100),
    ("test SER %", "test", "slot_error_rate", 100),
    ("test wrong %", "test", "wrong_binding_rate", 100),
)


def _load(path):
    if not os.path.exists(path):
        return None
    with open(path) as handle:
        return json.load(handle)


def _scores(run_dir, prefix):
    """{"dev": ..., "test": ..., "test_unseen": ...} metric dicts of one run, or None."""
    dev = _load(os.path.join(run_dir, f"{prefix}dev_scores.json"))
    test = _load(os.path.join(run_dir, f"{prefix}test_scores.json"))
    if dev is None or test is None:
        return None
    return {"dev": dev["all"], "test": test["all"], "test_unseen": test["unseen"]}


def _discriminator_accuracy(run_dir):
    summary = _load(os.path.join(run_dir, "adversarial_summary.json")) or {}
    accuracy = summary.get("discriminator", {})
    return [accuracy.get(stage, {}).get("accuracy") for stage in ("after_pretraining", "after_adversarial")]


def table(mle_run_dir, sweep_dir, names):
    header = ["run"] + [column[0] for column in COLUMNS] + ["D acc pre/post %"]
    lines = ["| " + " | ".join(header) + " |", "|---" + "|---:" * (len(header) - 1) + "|"]
    rows = [("MLE checkpoint", _scores(mle_run_dir, ""), None)]
    rows += [(name, _scores(os.path.join(sweep_dir, name), "adversarial_"), name) for name in names]
    for label, scores, name in rows:
        if scores is None:
            lines.append(f"| {label} | " + " | ".join(["not run"] * (len(header) - 1)) + " |")
            continue
        cells = [f"{scores[split][metric] * scale:.2f}" for _, split, metric, scale in COLUMNS]
        if name is None:
            cells.append("")
        else:
            accuracy = _discriminator_accuracy(os.path.join(sweep_dir, name))
            cells.append("/".join("?" if a is None else f"{100 * a:.0f}" for a in accuracy))
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mle-run-dir", required=True)
    parser.add_argument("--data-dir", default=None, help="WebNLG 2017 folder (default: $WEBNLG_DIR)")
    add_enriched_dir_argument(parser)
    parser.add_argument("--sweep-dir", default="runs/sweep")
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--table-only", action="store_true", help="print the table of finished runs")
    args = parser.parse_args(argv)

    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "webnlg_adversarial.py")
    if not args.table_only:
        for name in args.variants:
            run_dir = os.path.join(args.sweep_dir, name)
            if _scores(run_dir, "adversarial_") is not None:
                print(f"{name}: already done ({run_dir})", flush=True)
                continue
            command = [sys.executable, script, "--mle-run-dir", args.mle_run_dir, "--run-dir", run_dir]
            if args.data_dir:
                command += ["--data-dir", args.data_dir]
            if args.enriched_dir:
                command += ["--enriched-dir", args.enriched_dir]
            command += VARIANTS[name]
            print("running:", " ".join(command), flush=True)
            os.makedirs(run_dir, exist_ok=True)
            run_child(command, os.path.join(run_dir, "stdout.log"))
    print(table(args.mle_run_dir, args.sweep_dir, args.variants))


if __name__ == "__main__":
    sys.exit(run_script(main))
