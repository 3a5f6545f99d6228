"""
Title: Decoding settings of an RDF-to-text model, compared on WebNLG dev
Description: Beam width, length penalty and reranking by slot errors, each decoded from the same
    trained MLE run and scored on dev (BLEU-2017, chrF++, coverage, slot error rate, wrong bindings).
Expected run time on 2 CPU cores: 20-60 s per setting at the default model size.

    python examples/webnlg_decoding_sweep.py --run-dir runs/webnlg_mle --data-dir ../shared/webnlg/2017 \
        --settings 4,0.6,0 4,0.6,1 8,0.6,1 12,0.6,1 16,0.6,1

Each setting is `beam_width,length_penalty,rerank` (rerank 0 or 1), optionally with a fourth
field, the reranker's `min_foreign` (`none`: off; default: the run's `rerank_min_foreign`): the
reranker then also counts a value stated under a relation the input does not have. The scores
are those of the run's aligner, which does not. Ties on slot errors are broken as the run's
`rerank_stated_relations` and `rerank_unstated_as_errors` say (they change nothing on dev, whose
predicates are all seen in train, except for a run with `--holdout-categories`).
`--average-checkpoints 1 3 6`
repeats the settings with the weights averaged over that many epochs ending at the best one (a run
trained with `--average-checkpoints K` keeps the epoch weights for windows up to K). Nothing is
written to the run.

`--interpolate-with MLE_RUN --interpolation 0.5 0.75` repeats the settings with the run's weights
interpolated with another run's of the same architecture, `a * run + (1 - a) * other` for each `a`
(for an adversarial run and the MLE run it started from: robust fine-tuning's weight-space
ensemble, Wortsman et al., 2022; `a` > 1 amplifies the fine-tuning's change).

`--mask-predicate-words 0.5` decodes dev as if its predicates were unseen: each word of a
predicate in the sources becomes UNK with that probability (seeded by `--mask-seed`, the same
masks for every run with the same vocabulary), as about a third of the unseen test categories'
predicate words are (dev's are all known). `--write-hypotheses DIR` saves each setting's outputs
(`DIR/dev_<setting>.txt`, one line per entry) for `webnlg_read_sample.py --hypotheses`.

A run trained with `--holdout-categories` gets a row for dev's seen and unseen entries too (its
held-out categories' dev entries are its unseen ones, `runs.hold_out_categories`).
"""

import argparse
import dataclasses
import logging
import os
import pathlib
import sys
import time

import numpy as np

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from onestep_gan.rdf2text import averaging, evaluation, inference, runs  # noqa: E402
from onestep_gan.rdf2text.faithfulness import SlotAligner  # noqa: E402
from onestep_gan.rdf2text.reranking import SlotErrorReranker  # noqa: E402
from onestep_gan.rdf2text.cli import run_script  # noqa: E402
from onestep_gan.rdf2text.config import finite_float, optional_float  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.strip().split("\n")[0])
    parser.add_argument("--run-dir", required=True, help="a finished MLE or adversarial run")
    parser.add_argument("--data-dir", default=None, help="WebNLG 2017 folder (default: $WEBNLG_DIR)")
    parser.add_argument("--settings", nargs="+", type=decoding_setting, default=["4,0.6,0", "4,0.6,1", "8,0.6,1", "12,0.6,1"],
                        metavar="BEAM_WIDTH,LENGTH_PENALTY,RERANK[,MIN_FOREIGN]")
    parser.add_argument("--average-checkpoints", type=int, nargs="+", default=None,
                        help="windows to compare (default: the run's model file as it is)")
    parser.add_argument("--interpolate-with", default=None, metavar="RUN",
                        help="a run of the same architecture whose weights are mixed in (see --interpolation)")
    parser.add_argument("--interpolation", type=finite_float, nargs="+", default=None, metavar="A",
                        help="weights a of the run (1 - a of --interpolate-with's) to compare")
    parser.add_argument("--mask-predicate-words", type=finite_float, default=0.0, metavar="RATE",
                        help="probability that each predicate word of a dev source becomes UNK (default 0)")
    parser.add_argument("--mask-seed", type=int, default=0, help="seed of those masks (default 0)")
    parser.add_argument("--write-hypotheses", type=pathlib.Path, default=None, metavar="DIR",
                        help="save each setting's dev outputs in DIR/dev_<setting>.txt")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)

    if (args.interpolate_with is None) != (args.interpolation is None):
        parser.error("--interpolate-with and --interpolation go together")
    if args.interpolate_with is not None and args.average_checkpoints:
        parser.error("--interpolate-with mixes the model files: it does not combine with --average-checkpoints")
    model, preprocessor, config = runs.load_run(args.run_dir)
    holdout = {"holdout_categories": config.holdout_categories}  # its held-out categories score as unseen
    aligner = runs.load_aligner(args.run_dir) or SlotAligner.from_entries(runs.load_split("train", args.data_dir, **holdout))
    dev = runs.load_split("dev", args.data_dir, config.max_eval_entries, config.seed, **holdout)
    examples = preprocessor.encode_entries(dev, for_training=False)
    if args.mask_predicate_words:
        examples = mask_predicate_words(examples, preprocessor, args.mask_predicate_words, args.mask_seed)
    print("| weights | beam | length penalty | rerank | dev | BLEU-2017 | chrF++ | coverage % | slot errors % | wrong % | seconds |")
    print("|---|---:|---:|---|---|---:|---:|---:|---:|---:|---:|")
    # (kind, value): ("average", epochs averaged or None for the model file) or ("interpolate", a)
    variants = [("average", window) for window in args.average_checkpoints or [None]]
    if args.interpolate_with is not None:
        run_weights = model.get_weights()
        other_weights = runs.load_run(args.interpolate_with)[0].get_weights()
        variants = [("interpolate", a) for a in args.interpolation]
    for kind, value in variants:
        label, suffix = "model file", ""
        if kind == "interpolate":
            model.set_weights(interpolate(run_weights, other_weights, value))
            label, suffix = f"a = {value:g}", f"_a{value:g}"
        elif value is not None:
            epochs = averaging.average_run(model, args.run_dir, value)
            label, suffix = f"{epochs[0]}-{epochs[-1]}", f"_avg{value}"
        for setting in args.settings:
            texts = sweep_setting(model, preprocessor, config, aligner, dev, examples, setting, label)
            if args.write_hypotheses is not None:
                args.write_hypotheses.mkdir(parents=True, exist_ok=True)
                path = args.write_hypotheses / f"dev_{setting.replace(',', '_')}{suffix}.txt"
                path.write_text("".join(f"{text}\n" for text in texts), encoding="utf-8")


def interpolate(weights, other_weights, a):
    """`a * w + (1 - a) * o` for each pair of arrays of two models' `get_weights()` lists."""
    if len(weights) != len(other_weights) or any(w.shape != o.shape for w, o in zip(weights, other_weights)):
        raise ValueError(
            "--interpolate-with needs a run of the same architecture: expected "
            f"{[w.shape for w in weights]}. Received: {[o.shape for o in other_weights]}"
        )
    return [a * w + (1 - a) * o for w, o in zip(weights, other_weights)]


def mask_predicate_words(examples, preprocessor, rate, seed):
    """`examples` with each predicate word of their sources replaced by UNK with probability
    `rate` (`TextPreprocessor.predicate_word_mask`), drawn in order from one seeded generator."""
    rng = np.random.default_rng(seed)
    masked = []
    for example in examples:
        flags = np.asarray(preprocessor.predicate_word_mask(example.source_ids), dtype=bool)
        dropped = flags & (rng.random(len(flags)) < rate)
        source_ids = np.where(dropped, preprocessor.unk_id, np.asarray(example.source_ids)).tolist()
        masked.append(dataclasses.replace(example, source_ids=tuple(source_ids)))
    return masked


def decoding_setting(text):
    """An argparse type: `text` if it is `BEAM_WIDTH,LENGTH_PENALTY,RERANK[,MIN_FOREIGN]`, checked when
    the flags are read, not when the sweep reaches it."""
    parts = text.split(",")
    try:
        if len(parts) not in (3, 4) or int(parts[0]) < 1 or parts[2] not in ("0", "1"):
            raise ValueError
        if not 0 <= float(parts[1]) < float("inf"):
            raise ValueError
        if len(parts) == 4:
            optional_float(parts[3])
    except (ValueError, argparse.ArgumentTypeError):
        raise argparse.ArgumentTypeError(
            "expected BEAM_WIDTH,LENGTH_PENALTY,RERANK[,MIN_FOREIGN]: a beam width >= 1, a finite number >= 0, 0 or 1, "
            f"and a number or none (e.g. 12,0.6,1). Received: {text!r}"
        ) from None
    return text


def sweep_setting(model, preprocessor, config, aligner, dev, examples, setting, weights_label):
    """Decodes dev with one `beam_width,length_penalty,rerank[,min_foreign]` setting, prints its
    row and returns the texts."""
    beam_width, length_penalty, rerank, *min_foreign = setting.split(",")
    beam_width, length_penalty, rerank = int(beam_width), float(length_penalty), rerank == "1"
    reranker, rerank_label = None, "no"
    if rerank:
        foreign = config.rerank_min_foreign
        if min_foreign:
            foreign = optional_float(min_foreign[0])
        reranker = SlotErrorReranker.from_config(aligner, dataclasses.replace(config, rerank_min_foreign=foreign))
        rerank_label = "yes" if foreign is None else f"yes, min_foreign {foreign:g}"
    generate_function = inference.make_generate_function(
        model, method="beam", beam_width=beam_width, length_penalty=length_penalty,
        return_candidates=rerank,
    )
    start = time.perf_counter()
    texts = inference.decode_examples(
        generate_function, examples, preprocessor, config.decode_batch_size, progress=False,
        reranker=reranker,
    )
    seconds = time.perf_counter() - start
    # "all", and for a run with held-out categories (`holdout_categories`) "seen" and "unseen".
    for subset, scores in evaluation.evaluate_outputs(texts, dev, aligner).items():
        print(
            f"| {weights_label} | {beam_width} | {length_penalty} | {rerank_label} | {subset} | "
            f"{scores['bleu_2017']:.2f} | {scores['chrf_pp']:.2f} | {100 * scores['entity_coverage']:.2f} | "
            f"{100 * scores['slot_error_rate']:.2f} | {100 * scores['wrong_binding_rate']:.2f} | {seconds:.0f} |",
            flush=True,
        )
    return texts


if __name__ == "__main__":
    sys.exit(run_script(main))
