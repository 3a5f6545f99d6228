"""Counts a blind reading's false outputs per run, by opening the key after the reading.

`webnlg_read_sample.py --blind KEY.json` prints entries whose two outputs differ as "A:" and "B:" in a
seeded random order and writes which run each letter came from to KEY.json. A reader judges every
entry before the key is opened and writes one line per entry, the entry's number and the letters of
the outputs that state a false fact:

    # number, then the false outputs: A, B, "A B", or - for neither; a note may follow "#"
    1 A      # the leader of Uttar Pradesh given to Bundelkhand
    2 -
    3 A B

This script then counts, per run, the outputs read false; with several readers (`--verdicts` given
once per reader) each reader's counts and their sums:

    python examples/webnlg_blind_tally.py --key KEY.json --verdicts reader1.txt --verdicts reader2.txt
"""

import argparse
import json
import pathlib
import re
import sys

from onestep_gan.rdf2text.cli import run_script

_VERDICT = re.compile(r"^\s*(\d+)\s+(-|A|B|A\s+B|B\s+A)\s*(?:#.*)?$")


def read_key(path):
    """{entry number: {"A": run, "B": run}} from a KEY.json of `webnlg_read_sample.py --blind`."""
    try:
        key = json.loads(pathlib.Path(path).read_text(encoding="utf-8"))
        return {int(number): {"A": item["A"], "B": item["B"]} for number, item in key.items()}
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"{path}: expected the KEY.json of webnlg_read_sample.py --blind ({{number: {{A, B}}}}). "
                         f"Received: {error.__class__.__name__}: {error}") from None


def read_verdicts(path, numbers):
    """{entry number: set of letters read false}; every entry of the key exactly once."""
    try:
        lines = pathlib.Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: cannot be read as UTF-8 text ({error.__class__.__name__}); "
                         "expected one verdict per line") from None
    verdicts = {}
    for line_number, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _VERDICT.match(line)
        if match is None:
            raise ValueError(f'{path}, line {line_number}: expected an entry number, then A, B, "A B" or -. '
                             f"Received: {line.strip()!r}")
        number = int(match.group(1))
        if number not in numbers:
            raise ValueError(f"{path}, line {line_number}: expected an entry number of the key (1-{max(numbers)}). "
                             f"Received: {number}")
        if number in verdicts:
            raise ValueError(f"{path}, line {line_number}: entry {number} was already judged")
        verdicts[number] = set(match.group(2).split()) - {"-"}
    unread = sorted(set(numbers) - set(verdicts))
    if unread:
        raise ValueError(f"{path}: expected a verdict for every entry of the key. Received none for entries "
                         f"{', '.join(map(str, unread))}")
    return verdicts


def tally(key, verdicts):
    """{run: number of its outputs read false}, and {"both": n, "neither": n}."""
    runs = sorted({run for letters in key.values() for run in letters.values()})
    false = dict.fromkeys(runs, 0)
    both = neither = 0
    for number, letters in verdicts.items():
        for letter in letters:
            false[key[number][letter]] += 1
        both += len(letters) == 2
        neither += not letters
    return false, {"both": both, "neither": neither}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--key", required=True, help="the KEY.json written by webnlg_read_sample.py --blind")
    parser.add_argument("--verdicts", action="append", required=True,
                        help="one reader's verdicts (give once per reader)")
    args = parser.parse_args(argv)
    key = read_key(args.key)
    if not key:
        raise ValueError(f"{args.key}: expected at least one entry. Received: none")
    readings = [read_verdicts(path, set(key)) for path in args.verdicts]
    totals = {}
    for path, verdicts in zip(args.verdicts, readings):
        false, overlap = tally(key, verdicts)
        counts = ", ".join(f"{run} {count}" for run, count in false.items())
        print(f"{path}: false outputs of {len(key)} entries: {counts}; both false {overlap['both']}, "
              f"neither {overlap['neither']}")
        for run, count in false.items():
            totals[run] = totals.get(run, 0) + count
    if len(readings) > 1:
        counts = ", ".join(f"{run} {count}" for run, count in totals.items())
        print(f"summed over {len(readings)} readers ({len(readings) * len(key)} readings a run): {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
