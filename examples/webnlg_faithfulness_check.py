"""Checks the slot aligner of `onestep_gan.rdf2text.faithfulness` against three kinds of truth.

(a) references: the slot error rate the aligner gives the WebNLG 2017 dev and test references
    (faithful by construction, so the rate is the aligner's false alarms plus real omissions);
(b) enriched gold: the enriched WebNLG corpus (role-tagged templates) gives, per reference, which
    input entities are mentioned; its templates are filled with their mentions as written, then
    corrupted: two object mentions of different triples swapped (gold "wrong" for both), one
    object mention deleted (gold "missing"), a triple's subject and object mentions swapped (gold
    "wrong"); the aligner's labels are compared with the gold ones (precision / recall per label);
(c) hand labels: baseline outputs on dev labelled by reading them (`HAND_LABELS` below), compared
    with the aligner's labels.

    PYTHONPATH=. python examples/webnlg_faithfulness_check.py \\
        --data-dir ../shared/webnlg/2017 --enriched-dir ../shared/webnlg/enriched \\
        --hypotheses ../baseline/runs/webnlg_mle/dev_hypotheses.txt [--save-aligner run/aligner.json]

Single process, about half a minute (mining train takes a few seconds).
"""

import argparse
import collections
import json
import pathlib
import random
import sys
import time
import xml.etree.ElementTree as ET

from onestep_gan.rdf2text import faithfulness, webnlg
from onestep_gan.rdf2text.atomic_files import atomic_write, check_output_dir
from onestep_gan.rdf2text.cli import run_script
from onestep_gan.rdf2text.config import finite_float
from onestep_gan.rdf2text.preprocessing import normalise_entity
from webnlg_read_sample import read_hypotheses  # examples/, beside this script

LABELS = faithfulness.LABELS

# (c) Hand labels of baseline dev outputs (runs/webnlg_mle, beam 4): dev entry index (in
# `load_webnlg("dev")` order) -> entry id and one label per input triple, in input order, plus
# the number of extra entities; "c" correct, "m" missing, "w" wrong. Filled by reading each output
# against its triples (see the report of the `faith` branch for the disagreements).
HAND_LABELS = {
    59: ("dev/1triples/Building/Id14", "c", 0),
    76: ("dev/1triples/City/Id1", "c", 0),
    127: ("dev/1triples/Food/Id8", "c", 0),
    142: ("dev/1triples/Food/Id23", "c", 0),
    151: ("dev/1triples/Food/Id32", "c", 0),
    186: ("dev/1triples/SportsTeam/Id28", "c", 0),
    205: ("dev/1triples/WrittenWork/Id8", "c", 0),
    211: ("dev/1triples/WrittenWork/Id14", "c", 0),
    217: ("dev/1triples/WrittenWork/Id20", "c", 0),
    223: ("dev/1triples/WrittenWork/Id26", "c", 0),
    251: ("dev/2triples/Astronaut/Id2", "cw", 0),
    271: ("dev/2triples/Building/Id17", "cc", 0),
    311: ("dev/2triples/Food/Id26", "cc", 0),
    316: ("dev/2triples/Food/Id31", "cw", 0),
    334: ("dev/2triples/SportsTeam/Id10", "cc", 0),
    338: ("dev/2triples/SportsTeam/Id14", "cc", 0),
    357: ("dev/2triples/WrittenWork/Id6", "cc", 0),
    362: ("dev/2triples/WrittenWork/Id11", "cc", 0),
    399: ("dev/3triples/Airport/Id22", "wcc", 0),
    419: ("dev/3triples/Building/Id10", "ccc", 0),
    421: ("dev/3triples/Building/Id12", "ccw", 0),
    425: ("dev/3triples/Building/Id16", "wmm", 0),
    426: ("dev/3triples/Building/Id17", "mmm", 0),
    477: ("dev/3triples/Food/Id34", "ccm", 0),
    479: ("dev/3triples/Food/Id36", "cww", 0),
    481: ("dev/3triples/Food/Id38", "cww", 0),
    510: ("dev/3triples/University/Id1", "www", 0),
    531: ("dev/3triples/WrittenWork/Id14", "ccc", 0),
    539: ("dev/3triples/WrittenWork/Id22", "wwc", 0),
    544: ("dev/3triples/WrittenWork/Id27", "mcc", 0),
    545: ("dev/3triples/WrittenWork/Id28", "www", 0),
    556: ("dev/4triples/Airport/Id8", "cwmm", 0),
    592: ("dev/4triples/Building/Id7", "mwwc", 0),
    630: ("dev/4triples/Food/Id15", "wmcw", 0),
    643: ("dev/4triples/Food/Id28", "cccm", 0),
    651: ("dev/4triples/Food/Id36", "wwww", 0),
    668: ("dev/4triples/SportsTeam/Id6", "mwww", 0),
    705: ("dev/4triples/WrittenWork/Id16", "cwcm", 0),
    720: ("dev/5triples/Airport/Id10", "cwwwm", 0),
    726: ("dev/5triples/Airport/Id16", "cmcww", 0),
    733: ("dev/5triples/Airport/Id23", "wwmww", 0),
    740: ("dev/5triples/Astronaut/Id5", "wwwwm", 0),
    742: ("dev/5triples/Astronaut/Id7", "cwwcw", 0),
    745: ("dev/5triples/Astronaut/Id10", "ccwwc", 0),
    748: ("dev/5triples/Building/Id2", "cwwcm", 0),
    752: ("dev/5triples/Building/Id6", "cmcww", 0),
    761: ("dev/5triples/Building/Id15", "cwwmc", 0),
    770: ("dev/5triples/Food/Id2", "ccwwc", 0),
    775: ("dev/5triples/Food/Id7", "cwwmm", 0),
    776: ("dev/5triples/Food/Id8", "cwccm", 1),
    781: ("dev/5triples/Food/Id13", "ccmmc", 0),
    789: ("dev/5triples/Food/Id21", "cmccc", 0),
    792: ("dev/5triples/Food/Id24", "wwmww", 0),
    832: ("dev/6triples/Astronaut/Id6", "wwwwcm", 0),
    851: ("dev/7triples/Astronaut/Id2", "cmwwmmc", 0),
}


def confusion_report(pairs):
    """pairs: (gold, predicted) labels -> {"n", "accuracy", label: {"precision", "recall", ...}}."""
    counts = collections.Counter(pairs)
    report = {"n": len(pairs),
              "accuracy": sum(counts[(label, label)] for label in LABELS) / max(len(pairs), 1)}
    for label in LABELS:
        true_positive = counts[(label, label)]
        predicted = sum(count for (gold, guess), count in counts.items() if guess == label)
        gold = sum(count for (gold, guess), count in counts.items() if gold == label)
        report[label] = {
            "gold": gold, "predicted": predicted, "agree": true_positive,
            "precision": round(true_positive / predicted, 4) if predicted else None,
            "recall": round(true_positive / gold, 4) if gold else None,
        }
    report["confusion"] = {f"{gold}->{guess}": count for (gold, guess), count in sorted(counts.items())}
    return report


def check_references(aligner, entries):
    hypotheses, expanded = [], []
    for entry in entries:
        for text in entry.texts:
            hypotheses.append(text)
            expanded.append(entry)
    return faithfulness.slot_error_report(aligner, hypotheses, expanded)


# ------------------------------------------------------------------------------ enriched


def read_enriched(folder):
    """Yields (triples, entity tags, [(template tokens, [(tag, surface)] in order, text)], category)
    per entry."""
    for path in sorted(pathlib.Path(folder).glob("*triples/*.xml")):
        for entry in ET.parse(path).getroot().iter("entry"):
            triples = tuple(
                webnlg.Triple(*(part.strip() for part in (mtriple.text or "").split(" | ")))
                for mtriple in entry.iter("mtriple")
            )
            entity_tags = {}
            for entity in entry.iter("entity"):
                tag, _, name = (entity.text or "").partition(" | ")
                entity_tags[normalise_entity(name.strip())] = tag.strip()
            lexes = []
            for lex in entry.iter("lex"):
                template = (lex.findtext("template") or "").split()
                references = sorted(
                    ((int(ref.get("number", 0)), ref.get("tag"), (ref.text or "").strip())
                     for ref in lex.iter("reference")),
                )
                if not template or not references:
                    continue
                lexes.append((template, [(tag, surface) for _, tag, surface in references],
                              (lex.findtext("text") or "").strip()))
            yield triples, entity_tags, lexes, entry.get("category")


def _is_tag(token):
    head = token.split("-")[0]
    return head in ("AGENT", "PATIENT", "BRIDGE") and token[len(head):].startswith("-")


def realise(template, mentions):
    """Fills the template's tags with the mentions in order; None if they do not line up."""
    tags = [token for token in template if _is_tag(token)]
    if [tag for tag, _ in mentions] != tags:
        return None
    words, queue = [], list(mentions)
    for token in template:
        words.append(queue.pop(0)[1] if _is_tag(token) else token)
    return " ".join(words)


def enriched_cases(folder, seed=0):
    """Yields (kind, triples, text, gold labels, category) for references and corruptions."""
    rng = random.Random(seed)
    skipped = collections.Counter()
    for triples, entity_tags, lexes, category in read_enriched(folder):
        object_tags = [entity_tags.get(normalise_entity(t.object)) for t in triples]
        subject_tags = [entity_tags.get(normalise_entity(t.subject)) for t in triples]
        if None in object_tags or None in subject_tags:
            skipped["entity without tag"] += 1
            continue
        for template, mentions, _ in lexes:
            text = realise(template, mentions)
            if text is None:
                skipped["template and references differ"] += 1
                continue
            tag_count = collections.Counter(tag for tag, _ in mentions)
            gold = ["correct" if tag_count[tag] else "missing" for tag in object_tags]
            yield "reference", triples, text, gold, category
            # Candidates: objects of exactly one triple, no subject, mentioned once, by name.
            name_mentions = {tag for tag, surface in mentions}
            single = [
                index for index, tag in enumerate(object_tags)
                if object_tags.count(tag) == 1 and tag not in subject_tags and tag_count[tag] == 1
                and tag in name_mentions
            ]
            # Not two mentions in one coordination ("A and B", "A, B"): swapping those keeps
            # both facts when the predicates are near synonyms (significantBuilding/Project).
            pairs = [
                (i, j) for i in single for j in single if i < j
                and faithfulness.predicate_key(triples[i].predicate)
                != faithfulness.predicate_key(triples[j].predicate)
                and not coordinated(template, object_tags[i], object_tags[j])
            ]
            if pairs:
                i, j = rng.choice(pairs)
                swapped = [
                    (tag, dict(mentions)[object_tags[j]]) if tag == object_tags[i]
                    else (tag, dict(mentions)[object_tags[i]]) if tag == object_tags[j]
                    else (tag, surface)
                    for tag, surface in mentions
                ]
                labels = list(gold)
                labels[i] = labels[j] = "wrong"
                yield "object swap", triples, realise(template, swapped), labels, category
            if single:
                i = rng.choice(single)
                kept = [(tag, "" if tag == object_tags[i] else surface) for tag, surface in mentions]
                labels = list(gold)
                labels[i] = "missing"
                yield "deletion", triples, " ".join(realise(template, kept).split()), labels, category
            # Subject/object swap: a triple whose subject and object occur in no other triple.
            lone = [
                index for index, (s_tag, o_tag) in enumerate(zip(subject_tags, object_tags))
                if s_tag != o_tag and tag_count[s_tag] == 1 and tag_count[o_tag] == 1
                and (subject_tags + object_tags).count(s_tag) == 1
                and (subject_tags + object_tags).count(o_tag) == 1
            ]
            if lone:
                i = rng.choice(lone)
                by_tag = dict(mentions)
                swapped = [
                    (tag, by_tag[object_tags[i]] if tag == subject_tags[i]
                     else by_tag[subject_tags[i]] if tag == object_tags[i] else surface)
                    for tag, surface in mentions
                ]
                labels = list(gold)
                labels[i] = "wrong"
                yield "subject-object swap", triples, realise(template, swapped), labels, category
    if skipped:
        print(f"  enriched: skipped {dict(skipped)}", file=sys.stderr)


def coordinated(template, first, second):
    """Whether the tags `first` and `second` are joined only by "and", "or" and commas."""
    positions = [index for index, token in enumerate(template) if token in (first, second)]
    if len(positions) != 2:
        return False
    between = template[positions[0] + 1 : positions[1]]
    return all(token in ("and", "or", ",", "&") for token in between)


def check_enriched(aligner, folder, show=0, seen_categories=None):
    """Confusion reports per corruption kind; with `seen_categories` (the train categories), also
    per kind on seen and on unseen categories ("object swap, unseen")."""
    pairs = collections.defaultdict(list)
    examples = collections.defaultdict(list)
    for kind, triples, text, gold, category in enriched_cases(folder):
        judged = aligner.judge(triples, text).labels
        for gold_label, label, triple in zip(gold, judged, triples):
            pairs[kind].append((gold_label, label))
            pairs["all"].append((gold_label, label))
            if seen_categories is not None:
                pairs[f"{kind}, {'seen' if category in seen_categories else 'unseen'}"].append((gold_label, label))
            if gold_label != label:
                examples[kind].append((gold_label, label, triple, text))
    report = {kind: confusion_report(values) for kind, values in pairs.items()}
    for kind, values in examples.items():
        for gold_label, label, triple, text in random.Random(1).sample(values, min(show, len(values))):
            print(f"  [{kind}] gold={gold_label} aligner={label} "
                  f"{triple.subject} | {triple.predicate} | {triple.object}\n      {text}")
    return report


# --------------------------------------------------------------------------------- hand


def check_hand(aligner, dev_entries, hypotheses):
    pairs, extra_pairs, disagreements = [], [], []
    code = {"c": "correct", "m": "missing", "w": "wrong"}
    for index, (entry_id, labels, extra) in sorted(HAND_LABELS.items()):
        entry = dev_entries[index]
        if entry.entry_id != entry_id:
            raise ValueError(f"Dev entry {index} is {entry.entry_id}, the hand labels are for {entry_id}.")
        judgement = aligner.judge(entry.triples, hypotheses[index])
        for triple, mine, theirs in zip(entry.triples, labels, judgement.labels):
            pairs.append((code[mine], theirs))
            if code[mine] != theirs:
                disagreements.append(
                    f"  #{index} hand={code[mine]} aligner={theirs} "
                    f"{triple.subject} | {triple.predicate} | {triple.object}\n      {hypotheses[index]}")
        extra_pairs.append((extra > 0, judgement.num_extra_entities > 0))
    report = confusion_report(pairs)
    report["outputs"] = len(HAND_LABELS)
    report["extra_entity_outputs_agree"] = sum(a == b for a, b in extra_pairs)
    return report, disagreements


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", default="../shared/webnlg/2017")
    parser.add_argument("--enriched-dir", default="../shared/webnlg/enriched")
    parser.add_argument("--hypotheses", default=None, help="dev_hypotheses.txt of a run (for c)")
    parser.add_argument("--save-aligner", default=None)
    parser.add_argument("--show", type=int, default=0, help="print this many disagreements per kind")
    parser.add_argument("--output", default=None, help="write all numbers to this JSON file")
    parser.add_argument("--min-foreign", type=finite_float, default=None,
                        help="the aligner also counts values stated under a relation outside the input")
    parser.add_argument("--inversions", action="store_true", help="the aligner also reads \"the P of X is Y\" "
                        "phrases: relations stated the wrong way round (docs/faithfulness.md)")
    parser.add_argument("--subjects", action="store_true",
                        help="the aligner also counts relations stated of the wrong subject (docs/faithfulness.md)")
    parser.add_argument("--value-shapes", action="store_true",
                        help="a rival relation binds a value only if its train objects take the value's shape "
                        "(date, year, number, other; docs/faithfulness.md)")
    parser.add_argument("--foreign-known-only", action="store_true",
                        help="with --min-foreign: look for relations outside the input only for predicates mining met "
                        "(docs/faithfulness.md)")
    parser.add_argument("--of-phrases", action="store_true",
                        help="the swap test reads \"the P of X is Y\" in the predicate's own words as the right way "
                        "round, without looking for inversions (docs/faithfulness.md)")
    parser.add_argument("--opposed", action="store_true",
                        help="a value stated with the words of the relation of opposed meaning (\"born\" for a "
                        "death date) is wrong even where the words both share match its own (docs/faithfulness.md)")
    parser.add_argument("--attachments", action="store_true",
                        help="the aligner also counts values attached to another input relation's own words")
    parser.add_argument("--gold-splits", nargs="+", choices=("dev", "test"), default=["dev"],
                        help="enriched splits for (b); test is also split into seen and unseen categories")
    args = parser.parse_args(argv)
    if args.output:  # checked before the minutes of mining and checking, not after
        check_output_dir(pathlib.Path(args.output).parent, "--output's folder")

    start = time.time()
    train = webnlg.load_webnlg("train", args.data_dir)
    dev = webnlg.load_webnlg("dev", args.data_dir)
    hypotheses = read_hypotheses(args.hypotheses, len(dev)) if args.hypotheses else None
    test = webnlg.load_webnlg("test", args.data_dir)
    aligner = faithfulness.SlotAligner.from_entries(
        train, min_foreign=args.min_foreign, inversions=args.inversions, subjects=args.subjects,
        value_shapes=args.value_shapes, foreign_known_only=args.foreign_known_only, of_phrases=args.of_phrases,
        attachments=args.attachments, opposed=args.opposed)
    print(f"mined {len(aligner.cues)} predicates, {sum(map(len, aligner.cues.values()))} cues, "
          f"{len(aligner.gazetteer)} gazetteer entities in {time.time() - start:.1f}s")
    if args.save_aligner:
        aligner.save(args.save_aligner)
    results = {}

    print("(a) references")
    for name, entries in (("dev", dev), ("test", test)):
        results[f"references_{name}"] = report = check_references(aligner, entries)
        for subset, scores in report.items():
            print(f"  {name:4s} {subset:6s} texts={scores['count']:5d} triples={scores['triples']:6d} "
                  f"SER={scores['slot_error_rate']:.2%} missing={scores['missing_rate']:.2%} "
                  f"wrong={scores['wrong_binding_rate']:.2%} "
                  f"extra-entity outputs={scores['outputs_with_extra_entities']:.2%} "
                  f"no-evidence={scores['no_evidence_rate']:.2%}")

    seen_categories = {entry.category for entry in train}
    for split in args.gold_splits:
        print(f"(b) enriched gold, {split}")
        results[f"enriched_{split}"] = report = check_enriched(
            aligner, pathlib.Path(args.enriched_dir) / split, args.show,
            seen_categories=seen_categories if split == "test" else None)
        for kind, scores in report.items():
            print(f"  {kind:28s} triples={scores['n']:5d} accuracy={scores['accuracy']:.2%} " + " ".join(
                f"{label}: P={scores[label]['precision']} R={scores[label]['recall']} "
                f"(gold {scores[label]['gold']})" for label in LABELS))

    if args.hypotheses and HAND_LABELS:
        print("(c) hand labels, dev outputs")
        report, disagreements = check_hand(aligner, dev, hypotheses)
        results["hand"] = report
        print(f"  outputs={report['outputs']} triples={report['n']} accuracy={report['accuracy']:.2%} "
              + " ".join(f"{label}: P={report[label]['precision']} R={report[label]['recall']} "
                         f"(gold {report[label]['gold']})" for label in LABELS)
              + f" extra-entity flag agrees on {report['extra_entity_outputs_agree']}/{report['outputs']}")
        print("\n".join(disagreements))
        results["hypotheses_dev"] = faithfulness.slot_error_report(aligner, hypotheses, dev)
        scores = results["hypotheses_dev"]["all"]
        print(f"  all dev outputs: SER={scores['slot_error_rate']:.2%} missing={scores['missing_rate']:.2%} "
              f"wrong={scores['wrong_binding_rate']:.2%} "
              f"extra-entity outputs={scores['outputs_with_extra_entities']:.2%}")
    if args.output:
        pathlib.Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        atomic_write(args.output, json.dumps(results, indent=1))
    print(f"done in {time.time() - start:.1f}s")


if __name__ == "__main__":
    sys.exit(run_script(main))
