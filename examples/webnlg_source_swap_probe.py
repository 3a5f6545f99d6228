"""
Title: Does a trained RDF-to-text model read its source to place a value? A source-swap probe
Description: For each entity placeholder of the references (teacher-forced), how much less likely the
    model finds it once the source swaps that entity with another one of the input.
Expected run time on 2 CPU cores: under a minute on WebNLG dev at the default model size.

    python examples/webnlg_source_swap_probe.py --run-dir runs/webnlg_mle --data-dir ../shared/webnlg/2017

Take "Alan_Bean | birthPlace | Wheeler,_Texas ; Alan_Bean | occupation | Test_pilot", delexicalised
"<S> ENT_1 <P> PRED_1 birth place <O> ENT_2 <S> ENT_1 <P> PRED_2 occupation <O> ENT_3", and its
reference "ENT_1 was born in ENT_2 and served as a ENT_3 .". A model that reads the source to know
which value follows "was born in" finds ENT_2 there much less likely once the source holds ENT_3 as the
birth place and ENT_2 as the occupation. A model that has learned that the first triple's value is
numbered ENT_2 (placeholders are numbered by first appearance in the source) finds it as likely as
before: it places values by their numbers.

For every placeholder token of every (entry, reference) pair and every other entity of that input,
the probe swaps the two in the source and measures the drop in the token's log-probability (nats;
the reference is teacher-forced, the rest of the text unchanged). It prints, per subset (all; seen
and unseen on test, and on dev for a run trained with `--holdout-categories`): the placeholder tokens
probed, the mean drop, and the share of drops above ln 2 (the probability at least halved) and below
0.1 nats (almost unchanged). A swap of two values of one relation ("plays for A and B") may rightly
change nothing. References are delexicalised by string matching alone (no gold mentions). Nothing is
written to the run.
"""

import argparse
import itertools
import logging
import os
import pathlib
import sys

import numpy as np

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402

from onestep_gan.rdf2text import runs  # noqa: E402
from onestep_gan.rdf2text.cli import run_script  # noqa: E402


def swap_ids(ids, first, second):
    """`ids` with every `first` written as `second` and every `second` as `first`."""
    return tuple(second if token == first else first if token == second else token for token in ids)


def probe_rows(example, placeholder_ids):
    """The sources to score one example's text with: its own, then one per pair of distinct entity
    placeholders of the source, each pair swapped. Returns `(pairs, sources)`, `pairs[0]` None."""
    present = sorted({token for token in example.source_ids if token in placeholder_ids})
    pairs = [None, *itertools.combinations(present, 2)]
    sources = [example.source_ids if pair is None else swap_ids(example.source_ids, *pair) for pair in pairs]
    return pairs, sources


def token_log_probs(model, sources, texts, pad_id, bos_id, eos_id, batch_size=128):
    """Teacher-forced log-probabilities of each text's tokens (and its EOS) given its source: one
    float64 array per text, as long as the text + 1."""
    results = [None] * len(sources)
    order = sorted(range(len(sources)), key=lambda row: (len(sources[row]), len(texts[row])))
    for start in range(0, len(order), batch_size):
        rows = order[start:start + batch_size]
        source_width = max(len(sources[row]) for row in rows)
        text_width = max(len(texts[row]) for row in rows) + 1
        source = np.full((len(rows), source_width), pad_id, "int32")
        target = np.full((len(rows), text_width), pad_id, "int32")
        labels = np.full((len(rows), text_width), pad_id, "int32")
        for index, row in enumerate(rows):
            text = list(texts[row])
            source[index, :len(sources[row])] = sources[row]
            target[index, :len(text) + 1] = [bos_id, *text]
            labels[index, :len(text) + 1] = [*text, eos_id]
        logits = keras.ops.convert_to_numpy(model({"source": source, "target": target}, training=False))
        logits = logits.astype("float64")
        shifted = logits - logits.max(axis=-1, keepdims=True)
        log_probs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
        picked = np.take_along_axis(log_probs, labels[..., None], axis=-1)[..., 0]
        for index, row in enumerate(rows):
            results[row] = picked[index, :len(texts[row]) + 1]
    return results


def source_swap_drops(model, preprocessor, examples, batch_size=128):
    """For each example, the drops (log p under the own source - log p under a swapped source) of
    each of its text's placeholder tokens, one per other entity of its source: a list per example."""
    placeholder_ids = set(preprocessor.placeholder_ids)
    layout, sources, texts = [], [], []
    for example in examples:
        pairs, example_sources = probe_rows(example, placeholder_ids)
        layout.append((len(sources), pairs))
        sources.extend(example_sources)
        texts.extend([example.target_ids] * len(example_sources))
    log_probs = token_log_probs(
        model, sources, texts, preprocessor.pad_id, preprocessor.bos_id, preprocessor.eos_id, batch_size
    )
    drops = []
    for example, (first_row, pairs) in zip(examples, layout):
        own = log_probs[first_row]
        example_drops = []
        for position, token in enumerate(example.target_ids):
            for offset, pair in enumerate(pairs[1:], start=1):
                if token in pair:
                    example_drops.append(float(own[position] - log_probs[first_row + offset][position]))
        drops.append(example_drops)
    return drops


def summary(drops):
    """(placeholder tokens probed, mean drop, % above ln 2, % below 0.1) of a flat list of drops."""
    values = np.asarray(drops, dtype="float64")
    if not len(values):
        return 0, float("nan"), float("nan"), float("nan")
    return len(values), float(values.mean()), 100 * float(np.mean(values > np.log(2))), 100 * float(np.mean(values < 0.1))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run-dir", type=pathlib.Path, required=True, help="an MLE or adversarial run folder")
    parser.add_argument("--data-dir", default=None, help="WebNLG 2017 folder (default: $WEBNLG_DIR)")
    parser.add_argument("--split", default="dev", choices=["dev", "test"])
    parser.add_argument("--limit", type=int, default=None, help="a seeded sample of this many entries")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    model, preprocessor, config = runs.load_run(args.run_dir)
    entries = runs.load_split(
        args.split, args.data_dir, args.limit if args.limit is not None else config.max_eval_entries, config.seed,
        holdout_categories=config.holdout_categories,
    )
    examples = preprocessor.encode_entries([entry for entry in entries if entry.texts], for_training=True)
    seen = {entry.entry_id: entry.seen for entry in entries}
    drops = source_swap_drops(model, preprocessor, examples)
    subsets = {"all": [True] * len(examples)}
    if any(seen[example.entry_id] is False for example in examples):  # test, or a run with held-out categories
        subsets["seen"] = [seen[example.entry_id] is not False for example in examples]
        subsets["unseen"] = [seen[example.entry_id] is False for example in examples]
    print(f"{args.run_dir} ({args.split}, {len(examples)} entry-reference pairs)")
    print("| subset | placeholder tokens | mean drop (nats) | drop > ln 2 % | drop < 0.1 % |")
    print("|---|---:|---:|---:|---:|")
    for name, keep in subsets.items():
        count, mean, halved, unchanged = summary([d for flag, ds in zip(keep, drops) if flag for d in ds])
        print(f"| {name} | {count} | {mean:.2f} | {halved:.1f} | {unchanged:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
