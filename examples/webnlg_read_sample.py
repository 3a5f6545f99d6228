"""Prints a seeded random sample of a run's outputs beside their triples, for reading by hand.

Scores do not show which facts an output gets wrong; reading does. This prints, for `--count`
random entries of a split, the input triples, the run's output and the slot aligner's label for
each triple (correct / missing / wrong, see `faithfulness.SlotAligner`), so a reader can count
the outputs that state a false fact and check the aligner's labels while doing it.

    python examples/webnlg_read_sample.py --data-dir ../shared/webnlg/2017 \\
        --hypotheses runs/default/mle/test_hypotheses.txt --split test --count 30 --seed 0

The same seed picks the same entries for any hypotheses file of the split, so two runs can be
read on the same 30 inputs (`--hypotheses` may be given several times: outputs side by side).
`--categories Airport Astronaut` draws only among those categories' entries (the held-out
categories of a run trained with `--holdout-categories`). `--split train` with them reads such a
run on the train entries it never trained on (a file of one line per train entry; the lines of the
other categories may be empty).

`--blind KEY.json` with two `--hypotheses`: a blind comparison. The sample is drawn from the
entries (of `--categories`, when given) whose two outputs differ; each is printed as "A:" and
"B:" in a seeded random order, without aligner labels, and KEY.json records which file each A
and B came from, to be opened only after reading.
"""

import argparse
import json
import pathlib
import random
import sys

from onestep_gan.rdf2text import faithfulness, webnlg
from onestep_gan.rdf2text.atomic_files import atomic_write, check_output_dir
from onestep_gan.rdf2text.cli import run_script


def read_hypotheses(path, expected):
    try:
        lines = pathlib.Path(path).read_bytes().decode("utf-8-sig").split("\n")  # a byte-order mark is no text
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: cannot be read as UTF-8 text ({error.__class__.__name__}); expected one output per line") from None
    if lines and lines[-1] == "":
        lines = lines[:-1]
    lines = [line[:-1] if line.endswith("\r") else line for line in lines]  # Windows line ends
    if len(lines) != expected:
        raise ValueError(f"{path}: expected {expected} lines (one per entry). Received: {len(lines)}")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hypotheses", action="append", required=True, help="one output per line")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--split", default="test", choices=("train", "dev", "test"),
                        help="train: for a run trained without some categories (--categories them)")
    parser.add_argument("--count", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--aligner", default=None, help="a saved aligner.json (default: mined from train)")
    parser.add_argument("--categories", nargs="+", default=None, metavar="CATEGORY",
                        help="draw only among entries of these categories")
    parser.add_argument("--blind", default=None, metavar="KEY.json",
                        help="blind A/B reading of two --hypotheses files; writes the key here")
    args = parser.parse_args(argv)
    if args.blind and len(args.hypotheses) != 2:
        parser.error(f"--blind compares two --hypotheses files. Received: {len(args.hypotheses)}")
    if args.blind:  # checked before anything is printed: the key is written last
        key = pathlib.Path(args.blind)
        if any(key.resolve() == pathlib.Path(path).resolve() for path in args.hypotheses):
            raise ValueError(f"--blind {key}: expected a new file for the key. Received: one of the --hypotheses files")
        check_output_dir(key.parent, "--blind's folder")

    entries = webnlg.load_webnlg(args.split, args.data_dir)
    outputs = [read_hypotheses(path, len(entries)) for path in args.hypotheses]
    pool = entries_of_categories(entries, args.categories, args.split)
    if args.blind:
        return print_blind_pairs(entries, pool, args.hypotheses, outputs, args.count, args.seed, args.blind,
                                 args.categories)
    if args.aligner:
        aligner = faithfulness.SlotAligner.load(args.aligner)
    else:
        aligner = faithfulness.SlotAligner.from_entries(webnlg.load_webnlg("train", args.data_dir))
    indices = sorted(random.Random(args.seed).sample(pool, min(args.count, len(pool))))
    flagged = [0] * len(outputs)
    names = column_labels(args.hypotheses) if len(outputs) > 1 else [""] * len(outputs)
    for number, index in enumerate(indices, 1):
        entry = entries[index]
        seen = "" if entry.seen is None else (" seen" if entry.seen else " UNSEEN")
        print_entry(number, entry, f" ({entry.category}{seen})")
        for column, (path, lines) in enumerate(zip(args.hypotheses, outputs)):
            judgement = aligner.judge(entry.triples, lines[index])
            flagged[column] += not judgement.is_faithful
            labels = "".join(label[0] for label in judgement.labels)
            extra = f" extra={list(judgement.extra_entities)}" if judgement.extra_entities else ""
            print(f"  {names[column]}-> {lines[index]}")
            print(f"     aligner: {labels}{extra}")
        print()
    for path, count in zip(args.hypotheses, flagged):
        print(f"{path}: the aligner flags {count} of {len(indices)} outputs")
    return 0


def entries_of_categories(entries, categories, split):
    """Indices of the entries of `categories` (all entries when None); an unknown name is an error."""
    if categories is None:
        return list(range(len(entries)))
    known = sorted({entry.category for entry in entries})
    unknown = [name for name in categories if name not in known]
    if unknown:
        raise ValueError(
            f"--categories: expected categories of the {split} split ({', '.join(known)}). "
            f"Received: {', '.join(unknown)}")
    return [index for index, entry in enumerate(entries) if entry.category in categories]


def column_labels(paths):
    """Short, distinct labels for outputs side by side: each file's folder ("mle/"), else
    folder and file ("variants/base.txt ") where folders repeat, else the paths as given."""
    for label in (lambda path: f"{path.parent.name}/", lambda path: f"{path.parent.name}/{path.name} "):
        labels = [label(pathlib.Path(path)) for path in paths]
        if len(set(labels)) == len(labels):
            return labels
    return [f"{path} " for path in paths]


def print_entry(number, entry, note=""):
    print(f"[{number}] {entry.entry_id}{note}")
    for triple in entry.triples:
        print(f"    {triple.subject} | {triple.predicate} | {triple.object}")


def print_blind_pairs(entries, pool, paths, outputs, count, seed, key_path, categories=None):
    """Prints `count` random entries of `pool` whose two outputs differ, as A/B in random order;
    writes the key."""
    rng = random.Random(seed)
    differing = [index for index in pool if outputs[0][index] != outputs[1][index]]
    indices = sorted(rng.sample(differing, min(count, len(differing))))
    key = {}
    for number, index in enumerate(indices, 1):
        order = rng.sample((0, 1), 2)
        key[number] = {"entry": entries[index].entry_id, "A": paths[order[0]], "B": paths[order[1]]}
        print_entry(number, entries[index])
        print(f"  A: {outputs[order[0]][index]}\n  B: {outputs[order[1]][index]}\n")
    among = f"; categories: {', '.join(categories)}" if categories else ""
    print(f"{len(indices)} of the {len(differing)} entries whose outputs differ (of {len(pool)}{among})")
    pathlib.Path(key_path).parent.mkdir(parents=True, exist_ok=True)
    atomic_write(key_path, json.dumps(key, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
