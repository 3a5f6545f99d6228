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
`rerank_stated_relations` says (it changes nothing on dev, whose predicates are all seen in train).
`--average-checkpoints 1 3 6`
repeats the settings with the weights averaged over that many epochs ending at the best one (a run
trained with `--average-checkpoints K` keeps the epoch weights for windows up to K). Nothing is
written to the run.
"""

import argparse
import logging
import os
import sys
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from onestep_gan.rdf2text import averaging, evaluation, inference, runs  # noqa: E402
from onestep_gan.rdf2text.faithfulness import SlotAligner  # noqa: E402
from onestep_gan.rdf2text.reranking import SlotErrorReranker  # noqa: E402
from onestep_gan.rdf2text.cli import run_script  # noqa: E402
from onestep_gan.rdf2text.config import _optional_float  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.strip().split("\n")[0])
    parser.add_argument("--run-dir", required=True, help="a finished MLE or adversarial run")
    parser.add_argument("--data-dir", default=None, help="WebNLG 2017 folder (default: $WEBNLG_DIR)")
    parser.add_argument("--settings", nargs="+", default=["4,0.6,0", "4,0.6,1", "8,0.6,1", "12,0.6,1"])
    parser.add_argument("--average-checkpoints", type=int, nargs="+", default=None,
                        help="windows to compare (default: the run's model file as it is)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    model, preprocessor, config = runs.load_run(args.run_dir)
    aligner = runs.load_aligner(args.run_dir) or SlotAligner.from_entries(runs.load_split("train", args.data_dir))
    dev = runs.load_split("dev", args.data_dir, config.max_eval_entries, config.seed)
    examples = preprocessor.encode_entries(dev, for_training=False)
    print("| averaged epochs | beam | length penalty | rerank | BLEU-2017 | chrF++ | coverage % | slot errors % | wrong % | seconds |")
    print("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    for window in args.average_checkpoints or [None]:
        averaged = "model file"
        if window is not None:
            epochs = averaging.average_run(model, args.run_dir, window)
            averaged = f"{epochs[0]}-{epochs[-1]}"
        for setting in args.settings:
            sweep_setting(model, preprocessor, config, aligner, dev, examples, setting, averaged)


def sweep_setting(model, preprocessor, config, aligner, dev, examples, setting, averaged):
    """Decodes dev with one `beam_width,length_penalty,rerank[,min_foreign]` setting and prints its row."""
    beam_width, length_penalty, rerank, *min_foreign = setting.split(",")
    beam_width, length_penalty, rerank = int(beam_width), float(length_penalty), rerank == "1"
    reranker, rerank_label = None, "no"
    if rerank:
        foreign = config.rerank_min_foreign
        if min_foreign:
            foreign = _optional_float(min_foreign[0])
        reranker = SlotErrorReranker(aligner, min_foreign=foreign, stated_relations=config.rerank_stated_relations)
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
    scores = evaluation.evaluate_outputs(texts, dev, aligner)["all"]
    print(
        f"| {averaged} | {beam_width} | {length_penalty} | {rerank_label} | {scores['bleu_2017']:.2f} | "
        f"{scores['chrf_pp']:.2f} | {100 * scores['entity_coverage']:.2f} | "
        f"{100 * scores['slot_error_rate']:.2f} | {100 * scores['wrong_binding_rate']:.2f} | {seconds:.0f} |",
        flush=True,
    )


if __name__ == "__main__":
    sys.exit(run_script(main))
