"""The adversarial stage's discriminator step: where its time goes, and what sharing the source would save.

Each step of D's pretraining scores one batch of triplesets against five texts (the real one, another
tripleset's, and the three hard negatives: swap, move, drop), so D runs five times on the same sources.
This script times, at the stage's sizes (the default `AdversarialConfig`: D 128 wide, 2+2 layers, batch
32, texts of 48 tokens, sources of 64; random ids, a vocabulary of `--vocabulary` tokens), one
forward and backward pass with an Adam update, in TensorFlow graphs (`tf.function`), of:

- `five calls`: D called once per text, as the stage does now (each call encodes the sources again);
- `one call`: the five texts stacked into one batch of 5 x 32 rows (the sources tiled): the same
  arithmetic in fewer, larger ops. Equal times mean the step is bound by arithmetic, not by op overhead;
- `shared source`: the sources encoded once, the five texts read against that one memory
  (`TextDiscriminator.score_texts`, what `--shared-source-encoding` makes the stage do): the
  encoder's share of the arithmetic saved. It draws other dropout masks, so it trains another D.

It prints seconds a step as the median of `--rounds` interleaved rounds (each the mean of `--steps`
steps) with min and max, after untimed warm-up steps (tracing included).

    python benchmarks/discriminator_step.py
    python benchmarks/discriminator_step.py --quick      # tiny sizes, 2 rounds: checks it runs

Time it with nothing else running.
"""

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from onestep_gan.rdf2text.cli import run_script
from onestep_gan.rdf2text.config import AdversarialConfig
from onestep_gan.rdf2text.discriminator import TextDiscriminator

TEXTS = 5  # real, other tripleset, swap, move, drop


def make_steps(discriminator, optimizer):
    def update(loss_fn, source, texts):
        with tf.GradientTape() as tape:
            loss = loss_fn(source, texts)
        gradients = tape.gradient(loss, discriminator.trainable_variables)
        optimizer.apply_gradients(zip(gradients, discriminator.trainable_variables))
        return loss

    def five_calls(source, texts):
        return sum(ops.mean(discriminator([source, text], training=True)) for text in texts)

    def one_call(source, texts):
        scores = discriminator([ops.tile(source, [len(texts), 1]), ops.concatenate(texts, axis=0)], training=True)
        return ops.mean(scores) * len(texts)

    def shared_source(source, texts):
        return sum(ops.mean(scores) for scores in discriminator.score_texts(source, texts, training=True))

    return {name: tf.function(lambda source, texts, fn=fn: update(fn, source, texts))
            for name, fn in (("five calls", five_calls), ("one call", one_call), ("shared source", shared_source))}


def main():
    parser = argparse.ArgumentParser(description=__doc__.strip().split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, 2 rounds of 2 steps")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 7; --quick 2)")
    parser.add_argument("--steps", type=int, default=None, help="steps a round (default 10; --quick 2)")
    parser.add_argument("--vocabulary", type=int, default=1721, help="the default MLE job's vocabulary: 1721")
    args = parser.parse_args()
    rounds = args.rounds or (2 if args.quick else 7)
    steps = args.steps or (2 if args.quick else 10)
    config = AdversarialConfig.quick() if args.quick else AdversarialConfig()
    source_length = 16 if args.quick else 64

    keras.utils.set_random_seed(0)
    discriminator = TextDiscriminator(
        vocabulary_size=args.vocabulary, max_source_length=source_length, max_target_length=config.max_length,
        model_dim=config.discriminator_dim, num_heads=config.discriminator_heads,
        feedforward_dim=config.discriminator_feedforward_dim, num_layers=config.discriminator_layers,
        dropout=config.discriminator_dropout,
    )
    rng = np.random.default_rng(0)
    source = ops.convert_to_tensor(rng.integers(4, args.vocabulary, (config.batch_size, source_length)), "int32")
    texts = [ops.convert_to_tensor(rng.integers(4, args.vocabulary, (config.batch_size, config.max_length)), "int32")
             for _ in range(TEXTS)]
    discriminator([source, texts[0]])
    optimizer = keras.optimizers.Adam(3e-4)
    optimizer.build(discriminator.trainable_variables)
    variants = make_steps(discriminator, optimizer)
    print(f"D: {discriminator.count_params()} weights, {config.discriminator_dim} wide, {config.discriminator_layers}+"
          f"{config.discriminator_layers} layers; batch {config.batch_size}, source {source_length}, texts "
          f"{config.max_length} tokens, {TEXTS} texts a step; {rounds} rounds of {steps} steps")
    for step in variants.values():
        for _ in range(2):
            step(source, texts)

    names = list(variants)
    seconds = {name: [] for name in names}
    for round_index in range(rounds):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            start = time.perf_counter()
            for _ in range(steps):
                variants[name](source, texts)
            seconds[name].append((time.perf_counter() - start) / steps)

    print(f"\n| variant | s a step, median of {rounds} (min-max) |")
    print("|---|---:|")
    for name in names:
        values = seconds[name]
        print(f"| {name} | {statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f}) |")


if __name__ == "__main__":
    sys.exit(run_script(main))
