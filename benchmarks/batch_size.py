"""MLE training speed of the default model at several batch sizes (whole epochs, interleaved).

On a CPU with few cores, the default model (128 wide, 2+2 layers) is small enough that a train
step costs about as much in per-op overhead as in arithmetic, so the job's time follows its number
of steps more than its number of examples. This script trains whole epochs of the job's batches
(all WebNLG 2017 train entries, encoded as the job encodes them without the enriched corpus's
mentions; the job's seed and length buckets) at each `--batch-sizes` value, interleaved round by
round, and prints examples/s as the median of `--rounds` passes with min and max, after an untimed
first pass (tracing included).

    python benchmarks/batch_size.py                              # 64 128 256, 7 rounds
    python benchmarks/batch_size.py --quick                      # tiny model, 2 rounds: checks it runs

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

from onestep_gan.rdf2text import datasets
from onestep_gan.rdf2text.cli import run_script
from onestep_gan.rdf2text.config import MLEConfig
from onestep_gan.rdf2text.mle import build_model, compile_model
from webnlg_train_examples import encode_train_split  # benchmarks/, beside this script


def main():
    parser = argparse.ArgumentParser(description=__doc__.strip().split("\n")[0])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--quick", action="store_true", help="tiny model, 200 train entries, 2 rounds")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[64, 128, 256])
    parser.add_argument("--rounds", type=int, default=None, help="timed passes per batch size (default 7; --quick 2)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    base = MLEConfig.quick() if args.quick else MLEConfig()
    rounds = args.rounds or (2 if args.quick else 7)

    preprocessor, examples = encode_train_split(base, args.data_dir, max_entries=200 if args.quick else None)
    print(f"{len(examples)} train examples, vocabulary {preprocessor.vocabulary_size}, model_dim={base.model_dim}, "
          f"whole epochs, {rounds} rounds")

    epochs, models, first_pass = {}, {}, {}
    for batch_size in args.batch_sizes:
        config = dataclasses.replace(base, batch_size=batch_size)
        epoch = datasets.make_training_dataset(
            examples, batch_size, seed=config.seed, bucket_boundaries=config.bucket_boundaries, epochs=1,
            **preprocessor.special_ids,
        ).cache()
        steps = sum(1 for _ in epoch)  # fills the cache
        epochs[batch_size] = (epoch, steps)
        model = build_model(config, preprocessor)
        model.build()
        compile_model(model, config, total_steps=(rounds + 1) * steps)
        start = time.perf_counter()
        model.fit(epoch, shuffle=False, verbose=0)
        first_pass[batch_size] = time.perf_counter() - start
        models[batch_size] = model
        print(f"batch {batch_size}: {steps} steps an epoch; first pass {first_pass[batch_size]:.1f} s")

    sizes = list(args.batch_sizes)
    speeds = {size: [] for size in sizes}
    for round_index in range(rounds):
        shift = round_index % len(sizes)
        for size in sizes[shift:] + sizes[:shift]:
            start = time.perf_counter()
            models[size].fit(epochs[size][0], shuffle=False, verbose=0)
            speeds[size].append(len(examples) / (time.perf_counter() - start))

    print(f"\n| batch size | steps an epoch | examples/s, median of {rounds} (min-max) | ms a step | first pass, s |")
    print("|---:|---:|---:|---:|---:|")
    for size in sizes:
        values, steps = speeds[size], epochs[size][1]
        median = statistics.median(values)
        print(f"| {size} | {steps} | {median:.0f} ({min(values):.0f}-{max(values):.0f}) | "
              f"{1000 * len(examples) / median / steps:.0f} | {first_pass[size]:.1f} |")


if __name__ == "__main__":
    sys.exit(run_script(main))
