"""A run's dev or test outputs with `generate --unfaithful template` applied, and the template texts alone.

`onestep-gan generate --unfaithful template` prints, for a text the slot check flags (`faithful:
false` in `--format jsonl`), a plain template text of the input's triples instead (`templates.py`).
This script does the same to the outputs a run already wrote for a split, so the fallback can be
scored and read on WebNLG, and writes the template texts of every entry (a floor: the facts
written out and nothing else):

    python examples/webnlg_template_fallback.py --run-dir RUN/gan --data-dir ../shared/webnlg/2017 --split test
    onestep-gan evaluate --hypotheses RUN/gan/template_fallback/test_fallback.txt --split test
    onestep-gan evaluate --hypotheses RUN/gan/template_fallback/test_templates.txt --split test

It prints how many outputs the check flags (all / seen / unseen) and writes, into `--out-dir`
(default RUN/template_fallback), `{split}_fallback.txt` and `{split}_templates.txt`, one line an
entry, each file whole or not at all, and `{split}_fallback.jsonl`, the records `generate --format
jsonl --unfaithful template` would print.
"""

import argparse
import json
import pathlib
import sys

from onestep_gan.rdf2text import runs, templates
from onestep_gan.rdf2text.atomic_files import atomic_write_all
from onestep_gan.rdf2text.cli import run_script
from webnlg_read_sample import read_hypotheses  # examples/, beside this script


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.strip().split("\n")[0])
    parser.add_argument("--run-dir", required=True, help="a finished MLE or adversarial run")
    parser.add_argument("--data-dir", default=None, help="WebNLG 2017 folder (default: $WEBNLG_DIR)")
    parser.add_argument("--split", default="test", choices=("dev", "test"))
    parser.add_argument("--out-dir", default=None, help="default: RUN_DIR/template_fallback")
    args = parser.parse_args(argv)
    run_dir = pathlib.Path(args.run_dir)
    runs.check_run_dir(run_dir)
    out_dir = pathlib.Path(args.out_dir) if args.out_dir else run_dir / "template_fallback"
    runs.check_output_dir(out_dir, "--out-dir")  # before the minutes of checking, not after
    config = runs.load_config(run_dir / runs.CONFIG_FILE)
    adversarial = (run_dir / runs.ADVERSARIAL_CONFIG_FILE).is_file()
    hypotheses_path = run_dir / f"{'adversarial_' if adversarial else ''}{args.split}_hypotheses.txt"
    if not hypotheses_path.is_file():
        raise ValueError(f"{hypotheses_path}: no such file. Expected a run that decoded {args.split}.")
    entries = runs.load_split(args.split, args.data_dir, config.max_eval_entries, config.seed,
                              holdout_categories=config.holdout_categories)  # the run's own sample
    hypotheses = read_hypotheses(hypotheses_path, len(entries))
    checker = runs.load_checker(run_dir, config)
    if checker is None:
        raise ValueError(f"{run_dir}: no aligner.json (decode the run again with this release to write it).")

    records = [templates.checked_text(checker, entry.triples, text, unfaithful="template")
               for entry, text in zip(entries, hypotheses)]
    out_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_all({
        out_dir / f"{args.split}_fallback.txt": "".join(record["text"] + "\n" for record in records),
        out_dir / f"{args.split}_fallback.jsonl":
            "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records),
        out_dir / f"{args.split}_templates.txt": "".join(templates.template_text(entry.triples) + "\n" for entry in entries),
    })
    for name, keep in (("all", lambda entry: True), ("seen", lambda entry: entry.seen is not False),
                       ("unseen", lambda entry: entry.seen is False)):
        chosen = [record for entry, record in zip(entries, records) if keep(entry)]
        if chosen:
            flagged = sum(record["fallback"] for record in chosen)
            print(f"{args.split} {name}: {flagged} of {len(chosen)} outputs flagged and replaced by the template "
                  f"({100 * flagged / len(chosen):.1f}%)")
    print(f"wrote {out_dir}/{args.split}_fallback.txt, {args.split}_fallback.jsonl, {args.split}_templates.txt")


if __name__ == "__main__":
    sys.exit(run_script(main))
