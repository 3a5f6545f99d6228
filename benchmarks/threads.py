"""MLE training speed under TensorFlow's thread settings and kernels (one process a variant, passes interleaved).

TensorFlow runs a graph's ops on an inter-op thread pool and splits each large op on an intra-op
pool; by default each is as large as the machine's cores. On 2 cores the MLE job's step is many small
ops, and the default job made about 2,000 voluntary context switches a step (`/usr/bin/time -v`). The
pools are fixed once TensorFlow starts, so each variant runs in a process of its own, started once: it
encodes the train split (all WebNLG 2017 train entries, as `benchmarks/compiled_training.py` does),
builds the default model and trains one untimed pass of the first `--batches` batches of epoch 0
(tracing included). Then the parent asks each process in turn, round by round in rotating order, for
one timed pass (a waiting process blocks on its pipe and uses no CPU), and prints examples/s as the
median of `--rounds` passes with min and max. It also prints, per variant, the sum of the model's
weights after the last pass: equal sums mean the setting left the arithmetic alone (same steps, same
order); different sums, that it changes the model trained.

    python benchmarks/threads.py                       # default, inter 1, inter 1 + intra 1; 60 batches, 7 rounds
    python benchmarks/threads.py --variants default inter1 --batches 120
    python benchmarks/threads.py --variants default onednn-off   # oneDNN's kernels against TensorFlow's own
    python benchmarks/threads.py --quick               # tiny model, 6 batches, 2 rounds: checks it runs

Needs the WebNLG corpus ($WEBNLG_DIR or --data-dir). Time it with nothing else running.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

from onestep_gan.rdf2text.cli import run_script

# (inter-op threads, intra-op threads); 0 = TensorFlow's default (the number of cores)
VARIANTS = {"default": (0, 0), "inter1": (1, 0), "inter1+intra1": (1, 1), "intra1": (0, 1), "onednn-off": (0, 0)}
# Environment a variant's process starts TensorFlow with: "onednn-off" runs TensorFlow's own (Eigen)
# kernels instead of oneDNN's, which TensorFlow uses by default on x86 CPUs.
ENVIRONMENT = {"onednn-off": {"TF_ENABLE_ONEDNN_OPTS": "0"}}
DEFAULT_VARIANTS = ("default", "inter1", "inter1+intra1")


def worker(args):
    """One variant: set the pools, build, warm up, then answer each line on stdin with one timed pass."""
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.update(ENVIRONMENT.get(args.worker, {}))
    import tensorflow as tf

    inter, intra = VARIANTS[args.worker]
    tf.config.threading.set_inter_op_parallelism_threads(inter)
    tf.config.threading.set_intra_op_parallelism_threads(intra)

    import logging
    import time

    import numpy as np

    from onestep_gan.rdf2text import datasets
    from onestep_gan.rdf2text.config import MLEConfig
    from onestep_gan.rdf2text.mle import build_model, compile_model
    from webnlg_train_examples import encode_train_split  # benchmarks/, beside this script

    logging.basicConfig(level=logging.WARNING)
    config = MLEConfig.quick(max_train_entries=None) if args.quick else MLEConfig()
    preprocessor, examples = encode_train_split(config, args.data_dir)
    epoch = datasets.make_training_dataset(
        examples, config.batch_size, seed=config.seed, bucket_boundaries=config.bucket_boundaries, epochs=1,
        **preprocessor.special_ids,
    )
    batches = epoch.take(args.batches).cache()
    count = sum(int(np.shape(labels)[0]) for _, labels in batches)  # fills the cache
    import keras

    keras.utils.set_random_seed(config.seed)
    model = build_model(config, preprocessor)
    model.build()
    compile_model(model, config, total_steps=(args.rounds + 1) * args.batches)
    start = time.perf_counter()
    model.fit(batches, shuffle=False, verbose=0)
    warm = time.perf_counter() - start
    print(json.dumps({"ready": True, "examples": count, "first_pass": warm}), flush=True)
    for _ in sys.stdin:
        start = time.perf_counter()
        model.fit(batches, shuffle=False, verbose=0)
        print(json.dumps({"speed": count / (time.perf_counter() - start)}), flush=True)
    weights = float(sum(np.sum(np.asarray(w, dtype=np.float64)) for w in model.get_weights()))
    print(json.dumps({"weights_sum": weights}), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.strip().split("\n")[0])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--quick", action="store_true", help="tiny model, 6 batches, 2 rounds")
    parser.add_argument("--batches", type=int, default=None, help="batches a pass (default 60; --quick 6)")
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(DEFAULT_VARIANTS))
    parser.add_argument("--rounds", type=int, default=None, help="timed passes a variant (default 7; --quick 2)")
    parser.add_argument("--worker", choices=list(VARIANTS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.batches = args.batches or (6 if args.quick else 60)
    args.rounds = args.rounds or (2 if args.quick else 7)
    if args.worker:
        return worker(args)

    common = ["--batches", str(args.batches), "--rounds", str(args.rounds)] + (["--quick"] if args.quick else [])
    common += ["--data-dir", os.path.abspath(args.data_dir)] if args.data_dir else []  # the workers run in benchmarks/
    here = os.path.dirname(os.path.abspath(__file__))
    workers, ready = {}, {}
    for name in args.variants:  # started one after another, so no warm-up overlaps another's
        workers[name] = subprocess.Popen(
            [sys.executable, os.path.join(here, "threads.py"), "--worker", name, *common],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=here,
        )
        ready[name] = json.loads(workers[name].stdout.readline())
        print(f"{name} (inter-op, intra-op = {VARIANTS[name]}; 0: default): {ready[name]['examples']} examples a "
              f"pass, first pass {ready[name]['first_pass']:.1f} s", flush=True)

    names = list(args.variants)
    speeds = {name: [] for name in names}
    for round_index in range(args.rounds):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            workers[name].stdin.write("run\n")
            workers[name].stdin.flush()
            speeds[name].append(json.loads(workers[name].stdout.readline())["speed"])
    sums = {}
    for name in names:
        workers[name].stdin.close()
        sums[name] = json.loads(workers[name].stdout.readline())["weights_sum"]
        workers[name].wait()

    print(f"\n| variant | inter-op, intra-op threads | examples/s, median of {args.rounds} (min-max) | "
          "sum of weights after |")
    print("|---|---|---:|---:|")
    for name in names:
        values = speeds[name]
        print(f"| {name} | {VARIANTS[name]} | {statistics.median(values):.0f} ({min(values):.0f}-{max(values):.0f}) | "
              f"{sums[name]:.10g} |")


if __name__ == "__main__":
    sys.exit(run_script(main))
