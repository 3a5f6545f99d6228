"""MLE training speed with the train step compiled by XLA, against the uncompiled default.

The MLE job's batches come from length buckets, each as wide as its own longest example, so an
epoch holds dozens of batch shapes; a step compiled per shape (XLA, `jax.jit`) would compile for
each. `MLEConfig.jit_compile="on"` pads each bucket's batches to one width
(`make_training_dataset(fixed_shapes=True)`). This script trains the default model on the first
`--batches` batches of a real epoch (all WebNLG 2017 train entries, encoded as the job encodes
them without the enriched corpus's mentions) in these variants, interleaved round by round:

- `variable`: batches as wide as their longest example, step not compiled (the TensorFlow CPU default;
  on JAX an uncompiled step runs eagerly);
- `fixed`: batches of fixed widths, step not compiled by XLA (the cost of the extra padding);
- `fixed+xla`: batches of fixed widths, step compiled by XLA (`jit_compile="on"`);
- `variable+xla` (only when asked for: it compiles once per shape): what the job did before this
  option on JAX and on a TensorFlow GPU, where Keras compiles the step by itself.

It prints, per variant, the untimed first pass (tracing and compiling included), then examples/s
as the median of `--rounds` passes with min and max, and how many batch shapes one whole epoch
holds.

    python benchmarks/compiled_training.py                 # default model, 60 batches, 7 rounds
    python benchmarks/compiled_training.py --batches 0 --variants variable fixed+xla   # whole epochs
    KERAS_BACKEND=jax python benchmarks/compiled_training.py --variants variable+xla fixed+xla
    python benchmarks/compiled_training.py --quick         # tiny model, 6 batches, 2 rounds: checks it runs

Needs the WebNLG corpus ($WEBNLG_DIR or --data-dir). Time it with nothing else running.
"""

import argparse
import dataclasses
import logging
import os
import statistics
import sys
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np

from onestep_gan.rdf2text import datasets
from onestep_gan.rdf2text.cli import run_script
from onestep_gan.rdf2text.config import MLEConfig
from onestep_gan.rdf2text.mle import build_model, compile_model
from webnlg_train_examples import encode_train_split  # benchmarks/, beside this script

VARIANTS = {"variable": (False, "off"), "fixed": (True, "off"), "fixed+xla": (True, "on"), "variable+xla": (False, "on")}
DEFAULT_VARIANTS = ("variable", "fixed", "fixed+xla")


def epoch_batches(config, examples, preprocessor, fixed_shapes):
    """Epoch 0 of the job's training batches (the job's seed and buckets)."""
    return datasets.make_training_dataset(
        examples, config.batch_size, seed=config.seed, bucket_boundaries=config.bucket_boundaries,
        epochs=1, fixed_shapes=fixed_shapes, **preprocessor.special_ids,
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.strip().split("\n")[0])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--quick", action="store_true", help="tiny model, few batches and rounds")
    parser.add_argument("--batches", type=int, default=None,
                        help="batches per pass (default 60; --quick 6; 0: the whole epoch)")
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(DEFAULT_VARIANTS))
    parser.add_argument("--rounds", type=int, default=None, help="timed passes per variant (default 7; --quick 2)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    config = MLEConfig.quick(max_train_entries=None) if args.quick else MLEConfig()
    num_batches = args.batches if args.batches is not None else (6 if args.quick else 60)
    rounds = args.rounds or (2 if args.quick else 7)

    preprocessor, examples = encode_train_split(config, args.data_dir)
    print(f"{len(examples)} train examples, vocabulary {preprocessor.vocabulary_size}, batch {config.batch_size}, "
          f"model_dim={config.model_dim}, {num_batches or 'all'} batches a pass, {rounds} rounds")

    passes, models, first_pass, examples_per_pass = {}, {}, {}, {}
    for name in args.variants:
        fixed_shapes, jit_compile = VARIANTS[name]
        epoch = epoch_batches(config, examples, preprocessor, fixed_shapes)
        shapes = {tuple(np.shape(labels)) + (np.shape(inputs["source"])[1],) for inputs, labels in epoch}
        passes[name] = (epoch.take(num_batches) if num_batches else epoch).cache()
        batch_sizes = [int(np.shape(labels)[0]) for _, labels in passes[name]]  # fills the cache
        examples_per_pass[name] = sum(batch_sizes)
        model = build_model(dataclasses.replace(config, jit_compile=jit_compile), preprocessor)
        model.build()
        compile_model(model, dataclasses.replace(config, jit_compile=jit_compile),
                      total_steps=(rounds + 1) * len(batch_sizes))
        start = time.perf_counter()
        model.fit(passes[name], shuffle=False, verbose=0)  # traces (and compiles) every shape
        first_pass[name] = time.perf_counter() - start
        models[name] = model
        print(f"{name}: one epoch holds {len(shapes)} batch shapes; first pass {first_pass[name]:.1f} s "
              f"(compiling included), jit_compile={model.jit_compile}")

    names = list(args.variants)
    speeds = {name: [] for name in names}
    for round_index in range(rounds):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            start = time.perf_counter()
            models[name].fit(passes[name], shuffle=False, verbose=0)
            speeds[name].append(examples_per_pass[name] / (time.perf_counter() - start))

    print(f"\n| variant | examples/s, median of {rounds} (min-max) | first pass, s |")
    print("|---|---:|---:|")
    for name in names:
        values = speeds[name]
        print(f"| {name} | {statistics.median(values):.0f} ({min(values):.0f}-{max(values):.0f}) | "
              f"{first_pass[name]:.1f} |")


if __name__ == "__main__":
    sys.exit(run_script(main))
