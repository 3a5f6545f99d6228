"""Does the GAN term earn its place? The adversarial stage with it on and off, over seeds.

From one finished MLE run, runs the adversarial stage (`onestep-gan adversarial`, a fresh process
each, into `<study-dir>/gan_w{weight}_s{seed}`) with the GAN term on (`--adversarial-weight 1`, the
default) and, as the control, off (`0`: the same steps with the MLE term only), once per seed;
finished runs are skipped. With the GAN term off, D never reaches G (G's loss is the MLE term
alone), so the control skips D's sample-free pretraining (`--corruption-pretrain-steps 0`, about
5 minutes a run). Then prints Markdown tables for the README: mean and range over seeds of
test and dev scores beside the MLE run's, D's held-out accuracy per negative type, and wall times.

    python examples/webnlg_seed_study.py --mle-run-dir runs/mle --study-dir runs/seed_study \\
        --data-dir ../shared/webnlg/2017 --enriched-dir ../shared/webnlg/enriched [--seeds 1234 2 3] [--table-only]

A stage takes 12-15 minutes at the default sizes (the control about 7) on a quiet 2-core machine of the
faster kind the README's timings name, about 40 on the slower kind.
"""

import argparse
import json
import pathlib
import statistics
import sys

from onestep_gan.rdf2text.cli import add_enriched_dir_argument, run_child, run_script

ROWS = (
    ("test BLEU-2017 all", "test", "all", "bleu_2017", 1),
    ("test BLEU-2017 seen", "test", "seen", "bleu_2017", 1),
    ("test BLEU-2017 unseen", "test", "unseen", "bleu_2017", 1),
    ("test chrF++ all", "test", "all", "chrf_pp", 1),
    ("test coverage %", "test", "all", "entity_coverage", 100),
    ("test slot errors %", "test", "all", "slot_error_rate", 100),
    ("test wrong bindings %", "test", "all", "wrong_binding_rate", 100),
    ("test repeated 3-gram %", "test", "all", "repeated_trigram_share", 100),
    ("dev BLEU-2017", "dev", "all", "bleu_2017", 1),
    ("dev chrF++", "dev", "all", "chrf_pp", 1),
    ("dev slot errors %", "dev", "all", "slot_error_rate", 100),
    ("dev wrong bindings %", "dev", "all", "wrong_binding_rate", 100),
)
NEGATIVE_TYPES = ("real", "fake", "mismatch", "swap", "move", "drop")


def _load(path):
    return json.loads(pathlib.Path(path).read_text(encoding="utf-8"))


def _stage(study_dir, weight, seed):
    """Scores and summary of one finished stage, or None."""
    run = pathlib.Path(study_dir) / f"gan_w{weight}_s{seed}"
    names = ("adversarial_dev_scores.json", "adversarial_test_scores.json", "adversarial_summary.json")
    if not all((run / name).is_file() for name in names):
        return None
    dev, test, summary = (_load(run / name) for name in names)
    return {"dev": dev, "test": test, "summary": summary, "seed": seed}


def _cell(values):
    if not values:
        return "not run"
    if len(values) == 1:
        return f"{values[0]:.2f}"
    return f"{statistics.mean(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def tables(mle_run_dir, study_dir, seeds):
    mle = {split: _load(pathlib.Path(mle_run_dir) / f"{split}_scores.json") for split in ("dev", "test")}
    stages = {weight: [s for s in (_stage(study_dir, weight, seed) for seed in seeds) if s] for weight in (1, 0)}
    lines = [
        f"| metric | MLE run | + stage, GAN term on ({len(stages[1])} seeds) | + stage, GAN term off ({len(stages[0])} seeds) |",
        "|---|---:|---:|---:|",
    ]
    for label, split, subset, key, scale in ROWS:
        on, off = ([s[split][subset][key] * scale for s in stages[weight]] for weight in (1, 0))
        lines.append(f"| {label} | {mle[split][subset][key] * scale:.2f} | {_cell(on)} | {_cell(off)} |")
    lines += ["", "| D held-out accuracy % (" + " / ".join(NEGATIVE_TYPES) + ") | after pretraining | after fine-tuning |",
              "|---|---|---|"]
    for weight in (1, 0):
        for stage in stages[weight]:
            accuracy = stage["summary"]["discriminator"]
            cells = [
                " / ".join(f"{100 * accuracy[when][f'{kind}_accuracy']:.0f}" for kind in NEGATIVE_TYPES)
                for when in ("after_pretraining", "after_adversarial")
            ]
            lines.append(f"| GAN term {'on' if weight else 'off'}, seed {stage['seed']} | {cells[0]} | {cells[1]} |")
    lines.append("")
    for weight in (1, 0):
        for stage in stages[weight]:
            seconds = stage["summary"]["timing"]["total_seconds"]
            lines.append(f"- GAN term {'on' if weight else 'off'}, seed {stage['seed']}: {seconds / 60:.1f} min")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mle-run-dir", required=True, help="a finished `onestep-gan train` run")
    parser.add_argument("--study-dir", required=True)
    parser.add_argument("--data-dir", default=None, help="WebNLG 2017 folder (default: $WEBNLG_DIR)")
    add_enriched_dir_argument(parser)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1234, 2, 3])
    parser.add_argument("--table-only", action="store_true", help="print the tables of finished stages")
    args = parser.parse_args(argv)
    if not (pathlib.Path(args.mle_run_dir) / "test_scores.json").is_file():
        raise ValueError(f"--mle-run-dir {args.mle_run_dir}: expected a finished MLE run (no test_scores.json)")
    if not args.table_only:
        for seed in args.seeds:
            for weight in (1, 0):
                if _stage(args.study_dir, weight, seed) is not None:
                    continue
                run_dir = pathlib.Path(args.study_dir) / f"gan_w{weight}_s{seed}"
                run_dir.mkdir(parents=True, exist_ok=True)
                command = [sys.executable, "-m", "onestep_gan", "adversarial", "--mle-run-dir", args.mle_run_dir,
                           "--run-dir", str(run_dir), "--seed", str(seed), "--adversarial-weight", str(weight)]
                if weight == 0:
                    command += ["--corruption-pretrain-steps", "0"]
                if args.data_dir:
                    command += ["--data-dir", args.data_dir]
                if args.enriched_dir:
                    command += ["--enriched-dir", args.enriched_dir]
                print("running:", " ".join(command), flush=True)
                run_child(command, run_dir / "stdout.log")
    print(tables(args.mle_run_dir, args.study_dir, args.seeds))


if __name__ == "__main__":
    sys.exit(run_script(main))
