"""
Title: RDF-to-text on WebNLG 2017 with a Transformer trained by maximum likelihood
Description: Delexicalise WebNLG triples, train an encoder-decoder Transformer with plain
    `compile` + `fit`, pick the checkpoint by dev loss, decode dev/test with beam search and
    score BLEU / chrF++ on the seen and unseen categories.
Expected run time on 2 quiet CPU cores: `--quick` about a minute; the defaults 31 to 66 minutes
    by machine (an 80-epoch schedule that early stopping ends near epoch 46, 29 to 62 min, then beam
    12 with reranking over 872 dev + 1862 test entries, 1 to 3 min); each run's `timing.json` has
    the real figures.
    `--epochs N` sets the schedule's length (the learning-rate schedule stretches to N epochs).

## Introduction

WebNLG (Gardent et al., 2017) pairs sets of 1-7 DBpedia triples with texts that verbalise
them. Entities are replaced by placeholders (`ENT_1`, ...) in the input and in the text, so
the model learns to copy placeholders (by a pointer over the source positions that hold them),
and entities of the 5 categories unseen in training come back after decoding (relexicalisation). This MLE model is the starting point that the
GAN fine-tuning of `onestep_gan` builds on.

Train and dev references are delexicalised also with the enriched WebNLG's gold entity mentions
(`MLEConfig.gold_mentions`, on by default; `--no-gold-mentions` trains without them).

Run (corpus in `--data-dir` or $WEBNLG_DIR, else downloaded once, pinned and verified, into the Keras
cache; the enriched WebNLG, github.com/ThiagoCF05/webnlg `data/v1.6/en`, in `--enriched-dir` or
$WEBNLG_ENRICHED_DIR):

    python examples/webnlg.py --quick --run-dir runs/webnlg_quick --enriched-dir ../shared/webnlg/enriched
    nice -n 5 python examples/webnlg.py --run-dir runs/webnlg_mle > runs/webnlg_mle.log 2>&1 &

Rerunning an interrupted run with the same `--run-dir` resumes training where it stopped
(`checkpoints.TrainingBackup`). Everything lands in `--run-dir`: `config.json`,
`vocabulary.json`, `model.keras`, `{dev,test}_hypotheses.txt`, `{dev,test}_scores.{json,md}`,
`timing.json`, `summary.md` and `tensorboard/`. The same job is `onestep-gan train`.
"""

import argparse
import logging
import os
import sys

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from onestep_gan.rdf2text.cli import add_train_arguments, run_script  # noqa: E402
from onestep_gan.rdf2text.config import MLEConfig, config_from_arguments  # noqa: E402
from onestep_gan.rdf2text.evaluation import format_markdown_table  # noqa: E402
from onestep_gan.rdf2text.mle import format_training_time, train_and_evaluate  # noqa: E402

"""
## Settings

`MLEConfig()` holds every setting (a 2+2-layer, 128-wide Transformer copying placeholders by
pointer, batch 64, an 80-epoch schedule with early stopping, beam 12 reranked by slot errors); `MLEConfig.quick()` shrinks data, model and epochs for a smoke run. Every field is
also a flag (`--model-dim 256 --num-encoder-layers 3`), see `--help`.
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.strip().split("\n")[0])
    add_train_arguments(parser)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    """
    ## Train, select, decode, score

    One call: `fit` with the checkpoint / backup / early-stopping / TensorBoard / sample
    callbacks, then beam search with the best checkpoint and the WebNLG metrics.
    """
    results = train_and_evaluate(
        config_from_arguments(MLEConfig, args, args.quick), args.data_dir, args.run_dir, args.enriched_dir
    )
    for name in ("dev", "test"):
        print(f"\n{name} ({args.run_dir}/{name}_scores.md):\n{format_markdown_table(results[name])}")
    timing = results["timing"]
    print(
        f"train {format_training_time(timing)}, "
        f"decode {sum(timing['decode_seconds'].values()) / 60:.1f} min, total {timing['total_seconds'] / 60:.1f} min"
    )


if __name__ == "__main__":
    sys.exit(run_script(main))
