"""MLE training speed of the generator's output layer and loss: this release's against the previous.

The default generator copies placeholders by pointer: P copy logits (one per placeholder id) join
the vocabulary's logits, and the label-smoothed loss reads each label's log-probability. The
previous release gathered the copy logits along the vocabulary axis (`ops.take`), selected them
into the logits (`ops.where`), and gathered the labels' log-probabilities (`ops.take_along_axis`);
on a CPU the gathers' gradients are segment sums over the vocabulary axis, about a tenth of a
step. This release writes the same sums as products with fixed 0/1 matrices and one-hots (each
sum has one non-zero term, so logits, loss and gradients are the same to the last bit:
`tests/test_transformer.py`, `tests/test_mle.py`).

This script trains the default model on whole epochs of the job's batches (all WebNLG 2017 train
entries, encoded as the job encodes them without the enriched corpus's mentions; the job's seed and
buckets) with the two implementations, interleaved round by round, and prints examples/s as the
median of `--rounds` passes with min and max, after an untimed first pass (tracing included).

    python benchmarks/output_layer.py              # whole epochs, 7 rounds
    python benchmarks/output_layer.py --quick      # tiny model, 200 train entries, 2 rounds: checks it runs

Needs the WebNLG corpus ($WEBNLG_DIR or --data-dir). Time it with nothing else running.
"""

import argparse
import logging
import math
import os
import statistics
import sys
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from keras import ops

from onestep_gan.rdf2text import datasets, transformer
from onestep_gan.rdf2text.cli import run_script
from onestep_gan.rdf2text.config import MLEConfig
from onestep_gan.rdf2text.mle import LabelSmoothedSparseCrossEntropy, build_model, compile_model
from webnlg_train_examples import encode_train_split  # benchmarks/, beside this script


def previous_project_to_vocabulary(self, hidden, copy_keys=None, source_ids=None):
    """The previous release's `TransformerGenerator._project_to_vocabulary` (gather and select)."""
    logits = ops.matmul(hidden, ops.transpose(self.embedding_matrix)) + self.output_bias
    placeholder_ids = ops.convert_to_tensor(self.placeholder_ids, dtype="int32")
    slots = ops.equal(ops.cast(source_ids, "int32")[:, :, None], placeholder_ids)
    scores = ops.einsum("btd,bsd->bts", self.copy_query(hidden), copy_keys)
    scores = scores * ops.cast(1.0 / math.sqrt(self.model_dim), scores.dtype)
    holds_placeholder = ops.any(slots, axis=-1)[:, None, :]
    scores = ops.where(holds_placeholder, scores, ops.cast(transformer._MASK_VALUE, scores.dtype))
    pointer = ops.log_softmax(scores, axis=-1)
    slot_bias = ops.where(slots, 0.0, transformer._MASK_VALUE)[:, None, :, :]
    per_placeholder = ops.logsumexp(pointer[..., None] + ops.cast(slot_bias, pointer.dtype), axis=2)
    copy_logits = self.copy_gate(hidden) + per_placeholder
    absent = ops.logical_not(ops.any(slots, axis=1))[:, None, :]
    copy_logits = ops.where(
        absent, ops.cast(transformer._ABSENT_PLACEHOLDER_LOGIT, copy_logits.dtype), copy_logits
    )
    num_placeholders = len(self.placeholder_ids)
    slot_of_id = [num_placeholders] * self.vocabulary_size
    for slot, index in enumerate(self.placeholder_ids):
        slot_of_id[index] = slot
    extended = ops.concatenate([copy_logits, ops.zeros_like(copy_logits[..., :1])], axis=-1)
    copied = ops.take(extended, ops.convert_to_tensor(slot_of_id, dtype="int32"), axis=-1)
    is_placeholder = ops.convert_to_tensor([slot < num_placeholders for slot in slot_of_id], dtype="bool")
    return ops.where(is_placeholder, ops.cast(copied, logits.dtype), logits)


class PreviousLabelSmoothedSparseCrossEntropy(LabelSmoothedSparseCrossEntropy):
    """The previous release's loss: the labels' log-probabilities gathered (`take_along_axis`)."""

    def call(self, y_true, y_pred):
        labels = ops.cast(y_true, "int32")
        log_probs = ops.log_softmax(ops.cast(y_pred, "float32"), axis=-1)
        safe_labels = ops.clip(labels, 0, ops.shape(log_probs)[-1] - 1)
        negative_log_likelihood = -ops.squeeze(
            ops.take_along_axis(log_probs, safe_labels[..., None], axis=-1), axis=-1
        )
        uniform_cross_entropy = -ops.mean(log_probs, axis=-1)
        losses = (1.0 - self.label_smoothing) * negative_log_likelihood + self.label_smoothing * uniform_cross_entropy
        valid = ops.not_equal(labels, self.ignore_class)
        losses = ops.where(valid, losses, 0.0)
        num_tokens = ops.cast(ops.size(valid), losses.dtype)
        num_valid = ops.maximum(ops.sum(ops.cast(valid, losses.dtype)), 1.0)
        return losses * (num_tokens / num_valid)


class PreviousGenerator(transformer.TransformerGenerator):
    _project_to_vocabulary = previous_project_to_vocabulary


def build(variant, config, preprocessor, total_steps):
    model = build_model(config, preprocessor)
    if variant == "previous":
        model = PreviousGenerator.from_config(model.get_config())
    model.build()
    compile_model(model, config, total_steps)
    if variant == "previous":
        model.compile(optimizer=model.optimizer, loss=PreviousLabelSmoothedSparseCrossEntropy(
            label_smoothing=config.label_smoothing, ignore_class=model.pad_id),
            jit_compile=config.keras_jit_compile)
    return model


def main():
    parser = argparse.ArgumentParser(description=__doc__.strip().split("\n")[0])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--quick", action="store_true", help="tiny model, 200 train entries, 2 rounds")
    parser.add_argument("--rounds", type=int, default=None, help="timed passes per variant (default 7; --quick 2)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    config = MLEConfig.quick() if args.quick else MLEConfig()
    rounds = args.rounds or (2 if args.quick else 7)

    preprocessor, examples = encode_train_split(config, args.data_dir, max_entries=200 if args.quick else None)
    epoch = datasets.make_training_dataset(
        examples, config.batch_size, seed=config.seed, bucket_boundaries=config.bucket_boundaries, epochs=1,
        **preprocessor.special_ids,
    ).cache()
    steps = sum(1 for _ in epoch)  # fills the cache
    print(f"{len(examples)} train examples, vocabulary {preprocessor.vocabulary_size}, "
          f"{len(preprocessor.copy_ids)} copied placeholders, model_dim={config.model_dim}, batch {config.batch_size}, "
          f"{steps} steps an epoch, whole epochs, {rounds} rounds")

    names = ["previous", "this release"]
    models, first_pass = {}, {}
    for name in names:
        models[name] = build(name, config, preprocessor, total_steps=(rounds + 1) * steps)
        start = time.perf_counter()
        models[name].fit(epoch, shuffle=False, verbose=0)
        first_pass[name] = time.perf_counter() - start

    speeds = {name: [] for name in names}
    for round_index in range(rounds):
        for name in names[round_index % 2:] + names[:round_index % 2]:
            start = time.perf_counter()
            models[name].fit(epoch, shuffle=False, verbose=0)
            speeds[name].append(len(examples) / (time.perf_counter() - start))

    print(f"\n| output layer and loss | examples/s, median of {rounds} (min-max) | ms a step | first pass, s |")
    print("|---|---:|---:|---:|")
    for name in names:
        values = speeds[name]
        median = statistics.median(values)
        print(f"| {name} | {median:.0f} ({min(values):.0f}-{max(values):.0f}) | "
              f"{1000 * len(examples) / median / steps:.0f} | {first_pass[name]:.1f} |")


if __name__ == "__main__":
    sys.exit(run_script(main))
