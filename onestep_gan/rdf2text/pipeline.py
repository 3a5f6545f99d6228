"""From WebNLG entries to batches: delexicalise, encode, and the `tf.data` input pipeline.

- `encode_entries`: entries -> `EncodedExample`s. For training, one example per
  (tripleset, reference text); for decoding, one per entry (no target).
- `build_vocabulary`: the shared source/target vocabulary, from training examples only.
- `make_training_dataset`: `(x, y)` batches for `model.fit`, with
  `x = {"source": ids, "target": BOS + text}` and `y = text + EOS`, both padded with PAD (0),
  bucketed by length so that a batch holds sequences of similar length (less padding),
  shuffled with a seed, prefetched.
- `source_batches`: fixed-shape source batches for decoding, sorted by length, with the
  indices that put the outputs back in entry order.

TensorFlow is used here only for `tf.data`, as DESIGN.md allows.
"""

import dataclasses
import logging

import numpy as np
import tensorflow as tf

from onestep_gan.rdf2text import preprocessing
from onestep_gan.rdf2text.vocabulary import Vocabulary

logger = logging.getLogger(__name__)

# Upper edges of the length buckets of `make_training_dataset` (longest of source and
# decoder input). WebNLG 2017 delexicalised sources have 3-57 tokens, texts 1-68 tokens.
DEFAULT_BUCKET_BOUNDARIES = (16, 24, 32, 48)
# Decoding pads source lengths up to a multiple of this, so a compiled decoder sees a
# handful of shapes rather than one per length.
SOURCE_LENGTH_MULTIPLE = 16


@dataclasses.dataclass(frozen=True)
class EncodedExample:
    """One encoded example.

    Attributes:
        entry_id: id of the WebNLG entry it comes from.
        source_ids: delexicalised linearised triples, as ids (no BOS/EOS).
        target_ids: delexicalised reference text, as ids without BOS/EOS; `None` when
            encoded for decoding.
        entity_map: placeholder -> entity, for `preprocessing.relexicalise`.
    """

    entry_id: str
    source_ids: tuple
    target_ids: tuple | None
    entity_map: dict


def delexicalise_entries(entries, one_per_reference=True):
    """Entries -> list of `(entry, DelexicalisedExample)`.

    With `one_per_reference`, one pair per reference text (training); otherwise one pair per
    entry, without target tokens (decoding).
    """
    pairs = []
    for entry in entries:
        if one_per_reference:
            pairs.extend((entry, preprocessing.delexicalise(entry.triples, text)) for text in entry.texts)
        else:
            pairs.append((entry, preprocessing.delexicalise(entry.triples)))
    return pairs


def build_vocabulary(delexicalised_pairs, min_count=1, max_size=None):
    """Vocabulary over the source and target tokens of `(entry, DelexicalisedExample)` pairs.

    Pass the training pairs only: dev/test words then encode as UNK, as they would for
    any new input.
    """
    token_lists = []
    for _, example in delexicalised_pairs:
        token_lists.append(example.source_tokens)
        if example.target_tokens is not None:
            token_lists.append(example.target_tokens)
    return Vocabulary.build(token_lists, min_count=min_count, max_size=max_size)


def encode_pairs(delexicalised_pairs, vocabulary, max_source_length, max_target_length):
    """`(entry, DelexicalisedExample)` pairs -> `EncodedExample`s.

    Sources longer than `max_source_length` and targets longer than `max_target_length - 1`
    (room for BOS/EOS) are truncated; the number truncated is logged.
    """
    if max_source_length < 1 or max_target_length < 2:
        raise ValueError(
            "Expected max_source_length >= 1 and max_target_length >= 2. Received: "
            f"max_source_length={max_source_length}, max_target_length={max_target_length}"
        )
    examples, truncated = [], 0
    for entry, delexicalised in delexicalised_pairs:
        source_ids = vocabulary.encode(delexicalised.source_tokens)
        target_ids = None
        if delexicalised.target_tokens is not None:
            target_ids = vocabulary.encode(delexicalised.target_tokens)
            if len(target_ids) > max_target_length - 1:
                target_ids = target_ids[: max_target_length - 1]
                truncated += 1
            target_ids = tuple(target_ids)
        if len(source_ids) > max_source_length:
            source_ids = source_ids[:max_source_length]
            truncated += 1
        examples.append(
            EncodedExample(entry.entry_id, tuple(source_ids), target_ids, dict(delexicalised.entity_map))
        )
    if truncated:
        logger.warning("Truncated %d of %d sequences to the maximum lengths.", truncated, len(examples))
    return examples


def encode_entries(entries, vocabulary, max_source_length, max_target_length, for_training=True):
    """Entries -> `EncodedExample`s: one per reference if `for_training`, else one per entry."""
    pairs = delexicalise_entries(entries, one_per_reference=for_training)
    return encode_pairs(pairs, vocabulary, max_source_length, max_target_length)


def make_training_dataset(
    examples,
    batch_size,
    shuffle=True,
    seed=0,
    bucket_boundaries=DEFAULT_BUCKET_BOUNDARIES,
    pad_id=Vocabulary.PAD,
    bos_id=Vocabulary.BOS,
    eos_id=Vocabulary.EOS,
):
    """`tf.data.Dataset` of `({"source": (b, s), "target": (b, t)}, labels (b, t))` int32.

    `target` is BOS + text, `labels` is text + EOS; both have the same length and are padded
    with `pad_id`, which the loss ignores. Batches come from length buckets
    (`bucket_by_sequence_length`, upper edges `bucket_boundaries`), so a batch may hold fewer
    than `batch_size` examples; every example appears exactly once per pass. The shuffle is
    seeded and differs between epochs.
    """
    if not examples:
        raise ValueError("Expected at least one training example. Received: 0 examples.")
    if batch_size < 1:
        raise ValueError(f"`batch_size` must be positive. Received: batch_size={batch_size}")
    missing_target = [example.entry_id for example in examples if example.target_ids is None]
    if missing_target:
        raise ValueError(
            "Training examples need target ids (encode with for_training=True). "
            f"Received examples without target: {missing_target[:3]}"
        )
    boundaries = sorted(int(boundary) for boundary in bucket_boundaries)
    sources = tf.ragged.constant([list(example.source_ids) for example in examples], dtype=tf.int32)
    texts = tf.ragged.constant(
        [list(example.target_ids) for example in examples], dtype=tf.int32, ragged_rank=1
    )
    dataset = tf.data.Dataset.from_tensor_slices((sources, texts))
    if shuffle:
        dataset = dataset.shuffle(len(examples), seed=seed, reshuffle_each_iteration=True)

    def to_model_inputs(source, text):
        decoder_input = tf.concat([[bos_id], text], axis=0)
        labels = tf.concat([text, [eos_id]], axis=0)
        return {"source": source, "target": decoder_input}, labels

    dataset = dataset.map(to_model_inputs, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    dataset = dataset.bucket_by_sequence_length(
        element_length_func=lambda inputs, labels: tf.maximum(
            tf.shape(inputs["source"])[0], tf.shape(labels)[0]
        ),
        bucket_boundaries=boundaries,
        bucket_batch_sizes=[batch_size] * (len(boundaries) + 1),
        padding_values=({"source": pad_id, "target": pad_id}, pad_id),
    )
    return dataset.prefetch(tf.data.AUTOTUNE)


def with_known_length(dataset):
    """Returns `(dataset, number of batches)`, the dataset annotated with that number.

    Counts by iterating once. Bucketing hides the length from `tf.data` (Keras' progress bar
    then shows `Unknown`), but it does not depend on the shuffle order: each bucket yields
    `ceil(examples_in_bucket / batch_size)` batches.
    """
    num_batches = int(dataset.reduce(np.int64(0), lambda count, _: count + 1).numpy())
    return dataset.apply(tf.data.experimental.assert_cardinality(num_batches)), num_batches


def source_batches(examples, batch_size, pad_id=Vocabulary.PAD, length_multiple=SOURCE_LENGTH_MULTIPLE):
    """Fixed-shape source batches for decoding, shortest sources first.

    Every batch is `(batch_size, L)` int32 with `L` a multiple of `length_multiple`; the last
    batch is filled up with all-PAD rows. Yields `(source_ids, indices)` where `indices` are the
    positions in `examples` of the real rows (the first `len(indices)` rows).
    """
    if batch_size < 1:
        raise ValueError(f"`batch_size` must be positive. Received: batch_size={batch_size}")
    order = sorted(range(len(examples)), key=lambda index: len(examples[index].source_ids))
    for start in range(0, len(order), batch_size):
        indices = order[start : start + batch_size]
        longest = max(len(examples[index].source_ids) for index in indices)
        width = max(length_multiple, -(-longest // length_multiple) * length_multiple)
        source_ids = np.full((batch_size, width), pad_id, dtype="int32")
        for row, index in enumerate(indices):
            ids = examples[index].source_ids
            source_ids[row, : len(ids)] = ids
        yield source_ids, indices
