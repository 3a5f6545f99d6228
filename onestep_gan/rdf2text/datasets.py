"""The `tf.data` input pipelines: batches of `EncodedExample`s for training and decoding.

- `make_training_dataset`: `(x, y)` batches for the MLE `model.fit`, with
  `x = {"source": ids, "target": BOS + text}` and `y = text + EOS`, both padded with PAD,
  bucketed by length so that a batch holds sequences of similar length (less padding),
  shuffled with a seed, prefetched; optionally with source word dropout (`WordDropout`) or
  each text in one of several orders of its triples per epoch (`orders`), and with one fixed
  width per bucket (`fixed_shapes`, for XLA and `jax.jit`, which compile once per shape).
- `make_adversarial_dataset`: fixed-shape `(source_ids, text + EOS)` batches for the text GAN
  (the layout of the sampler's output), repeated for `steps_per_epoch`.
- `source_batches`: fixed-shape source batches for decoding, sorted by length, with the
  indices that put the outputs back in entry order.

Special ids (`pad_id`, `bos_id`, `eos_id`) come from the caller, normally
`TextPreprocessor.special_ids`. TensorFlow is used here only for `tf.data`, as DESIGN.md allows.
"""

import bisect
import dataclasses
import logging

import numpy as np
import tensorflow as tf

logger = logging.getLogger(__name__)

# Upper edges of the length buckets of `make_training_dataset` (longest of source and
# decoder input). WebNLG 2017 delexicalised sources have 3-57 tokens, texts 1-68 tokens.
DEFAULT_BUCKET_BOUNDARIES = (16, 24, 32, 48)
# Decoding pads source lengths up to a multiple of this, so a compiled decoder sees a
# handful of shapes rather than one per length.
SOURCE_LENGTH_MULTIPLE = 16
# Offsets of the second seed keys of `make_training_dataset`'s draws of triple orders and of
# placeholder numbers.
_ORDER_KEY = 2**40
_NUMBERING_KEY = 2**41


@dataclasses.dataclass(frozen=True)
class WordDropout:
    """Source word dropout for `make_training_dataset`.

    In epoch `e`, each source position of example `i` whose `maskable[i]` flag is set becomes
    `unk_id` with probability `rate`, drawn by a stateless generator seeded by `(seed, e, i)`,
    so a resumed run draws the masks the uninterrupted one drew.

    Attributes:
        rate: the probability, in [0, 1).
        maskable: one sequence of booleans per example, as long as its `source_ids`
            (`TextPreprocessor.predicate_word_mask`).
        unk_id: the id that replaces a dropped word.
    """

    rate: float
    maskable: tuple
    unk_id: int

    def __post_init__(self):
        if not 0 <= float(self.rate) < 1:
            raise ValueError(f"Expected a word dropout rate in [0, 1). Received: rate={self.rate}")


def make_training_dataset(
    examples,
    batch_size,
    shuffle=True,
    seed=0,
    bucket_boundaries=DEFAULT_BUCKET_BOUNDARIES,
    *,
    pad_id,
    bos_id,
    eos_id,
    epochs=None,
    initial_epoch=0,
    word_dropout=None,
    orders=(),
    renumbered_ids=(),
    fixed_shapes=False,
):
    """`tf.data.Dataset` of `({"source": (b, s), "target": (b, t)}, labels (b, t))` int32.

    `target` is BOS + text, `labels` is text + EOS; both have the same length and are padded
    with `pad_id`, which the loss ignores. Batches come from length buckets
    (`bucket_by_sequence_length`, upper edges `bucket_boundaries`), so a batch may hold fewer
    than `batch_size` examples; every example appears exactly once per pass. The shuffle is
    seeded and differs between epochs.

    With `epochs`, the dataset holds epochs `initial_epoch .. epochs - 1` back to back (fit it
    with `steps_per_epoch`), and epoch `e` is shuffled with a seed derived from `(seed, e)`: its
    batches depend on the epoch number only, so a run resumed at epoch `e` sees the batches the
    uninterrupted run saw. (Without `epochs`, the order of pass `k` depends on how many passes
    this dataset object made before.)

    `word_dropout` (a `WordDropout`, needs `epochs`) replaces source words by UNK, drawn anew
    in each epoch; the texts are unchanged.

    `orders` (needs `epochs`): lists of examples aligned with `examples`, the same texts with the
    triples in other orders (`triple_orders.reorder_triples`, then encoded). In epoch `e`, example
    `i` comes as it is in `examples` or as in one of the `orders`, each with equal chance, drawn by
    `(seed, e, i)`: source and text always from the same list, and a resumed run draws what the
    uninterrupted one drew.

    `renumbered_ids` (needs `epochs`): token ids whose numbering is drawn anew per example and
    epoch, normally the entity placeholders (`TextPreprocessor.placeholder_ids`). In epoch `e`,
    example `i`'s source and text both go through one permutation of these ids, drawn by
    `(seed, e, i)`: "ENT_1 was born in ENT_2" with source "<S> ENT_1 ... <O> ENT_2" may come as
    "ENT_7 was born in ENT_3" with source "<S> ENT_7 ... <O> ENT_3". Placeholders are numbered by
    first appearance in the source, so without it a model can tell which placeholder to write
    by its number alone; with it, only by reading the source.

    `fixed_shapes`: each batch padded further, to the longest source and the longest text of
    any example of its bucket (`orders` included), so the batches take at most two shapes per
    bucket (full and the bucket's last, smaller batch): a train step compiled per shape (XLA,
    `jax.jit`) compiles a handful of times instead of once per batch. Which examples form a
    batch, and in which order, does not change; the loss ignores the extra PAD.
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
    if word_dropout is not None:
        if epochs is None:
            raise ValueError("Word dropout is drawn per epoch: it needs `epochs`. Received: epochs=None")
        lengths = [len(flags) for flags in word_dropout.maskable]
        if lengths != [len(example.source_ids) for example in examples]:
            raise ValueError(
                "Expected one maskable flag per source position of each example. Received flags for "
                f"{len(lengths)} sources ({len(examples)} examples) or of other lengths."
            )
    orders = [list(order) for order in orders]
    if orders:
        if epochs is None:
            raise ValueError("The order of each text is drawn per epoch: it needs `epochs`. Received: epochs=None")
        if word_dropout is not None:
            raise ValueError("Expected word dropout or several triple orders, not both. Received both.")
        expected = [example.entry_id for example in examples]
        for number, order in enumerate(orders, start=1):
            aligned = [example.entry_id for example in order] == expected
            without_text = sum(example.target_ids is None for example in order)
            if not aligned or without_text:
                raise ValueError(
                    "Expected each order to hold the training examples' entries, in their order, each with "
                    f"a text. Received: order {number} holds {len(order)} examples (training: {len(examples)}), "
                    f"{'aligned' if aligned else 'not aligned'}, {without_text} without text."
                )
    renumbered_ids = [int(token_id) for token_id in renumbered_ids]
    if renumbered_ids:
        if epochs is None:
            raise ValueError(
                "Placeholder numbers are drawn per epoch: they need `epochs`. Received: epochs=None"
            )
        if len(set(renumbered_ids)) != len(renumbered_ids) or min(renumbered_ids) < 0:
            raise ValueError(
                f"Expected distinct non-negative ids to renumber. Received: renumbered_ids={renumbered_ids}"
            )
    everything = [*examples, *(example for order in orders for example in order)]
    boundaries = sorted(int(boundary) for boundary in bucket_boundaries)
    sources = tf.ragged.constant([list(example.source_ids) for example in everything], dtype=tf.int32)
    texts = tf.ragged.constant(
        [list(example.target_ids) for example in everything], dtype=tf.int32, ragged_rank=1
    )
    examples_dataset = tf.data.Dataset.from_tensor_slices((sources, texts))

    def to_model_inputs(source, text):
        decoder_input = tf.concat([[bos_id], text], axis=0)
        labels = tf.concat([text, [eos_id]], axis=0)
        return {"source": source, "target": decoder_input}, labels

    def batches(dataset):
        dataset = dataset.map(to_model_inputs, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        dataset = dataset.bucket_by_sequence_length(
            element_length_func=lambda inputs, labels: tf.maximum(
                tf.shape(inputs["source"])[0], tf.shape(labels)[0]
            ),
            bucket_boundaries=boundaries,
            bucket_batch_sizes=[batch_size] * (len(boundaries) + 1),
            padding_values=({"source": pad_id, "target": pad_id}, pad_id),
        )
        if fixed_shapes:
            dataset = dataset.map(pad_to_bucket_width)
        return dataset

    if fixed_shapes:
        source_widths, label_widths = bucket_widths(everything, boundaries)
        source_widths = tf.constant(source_widths, tf.int32)
        label_widths = tf.constant(label_widths, tf.int32)
        boundaries_tensor = tf.constant(boundaries, tf.int32)

        def pad_to_bucket_width(inputs, labels):
            # The batch's longer width is its longest example's length, in the same bucket as each
            # of its examples (bucket b holds lengths in [boundaries[b - 1], boundaries[b])).
            longest = tf.maximum(tf.shape(inputs["source"])[1], tf.shape(labels)[1])
            bucket = tf.reduce_sum(tf.cast(boundaries_tensor <= longest, tf.int32))

            def pad(ids, width):
                return tf.pad(ids, [[0, 0], [0, width - tf.shape(ids)[1]]], constant_values=pad_id)

            return (
                {"source": pad(inputs["source"], source_widths[bucket]),
                 "target": pad(inputs["target"], label_widths[bucket])},
                pad(labels, label_widths[bucket]),
            )

    if epochs is None:
        dataset = examples_dataset
        if shuffle:
            dataset = dataset.shuffle(len(examples), seed=seed, reshuffle_each_iteration=True)
        return batches(dataset).prefetch(tf.data.AUTOTUNE)

    if renumbered_ids:
        # id -> id, the identity but for the renumbered ids (a permutation of them per example).
        largest_id = max(
            [*renumbered_ids, *(max(example.source_ids + example.target_ids, default=0) for example in everything)]
        )
        identity = tf.range(largest_id + 1, dtype=tf.int32)
        renumbered = tf.constant(renumbered_ids, tf.int32)

    if word_dropout is not None:
        maskable = tf.ragged.constant([[bool(flag) for flag in flags] for flags in word_dropout.maskable],
                                      dtype=tf.bool)

    def example_at(epoch, index):
        row = index
        if orders:
            # Seeded by (seed, epoch, index), with second keys above any epoch number and any
            # word dropout key (negative), so the draw never repeats a shuffle's seed.
            draw_seed = tf.stack([tf.constant(int(seed), tf.int64), _ORDER_KEY + epoch * len(examples) + index])
            choice = tf.random.stateless_uniform(
                [], seed=draw_seed, minval=0, maxval=len(orders) + 1, dtype=tf.int64
            )
            row = choice * len(examples) + index
        source = sources[row]
        if word_dropout is not None:
            # Seeded by (seed, epoch, index), not by the shuffle's position; the second key is
            # negative, so it never equals a shuffle's (seed, epoch).
            draw_seed = tf.stack([tf.constant(int(seed), tf.int64), -1 - (epoch * len(examples) + index)])
            draws = tf.random.stateless_uniform(tf.shape(source), seed=draw_seed)
            dropped = tf.logical_and(maskable[index], draws < float(word_dropout.rate))
            source = tf.where(dropped, tf.constant(int(word_dropout.unk_id), tf.int32), source)
        text = texts[row]
        if renumbered_ids:
            # Seeded by (seed, epoch, index), with second keys above any triple order's key.
            draw_seed = tf.stack([tf.constant(int(seed), tf.int64), _NUMBERING_KEY + epoch * len(examples) + index])
            lookup = tf.tensor_scatter_nd_update(
                identity, renumbered[:, None], tf.random.experimental.stateless_shuffle(renumbered, seed=draw_seed)
            )
            source, text = tf.gather(lookup, source), tf.gather(lookup, text)
        return source, text

    def one_epoch(epoch):
        order = tf.range(len(examples), dtype=tf.int64)
        if shuffle:
            # A stateless permutation seeded by (seed, epoch): independent of any global state.
            order = tf.random.experimental.stateless_shuffle(
                order, seed=tf.stack([tf.constant(int(seed), tf.int64), epoch])
            )
        dataset = tf.data.Dataset.from_tensor_slices(order).map(
            lambda index: example_at(epoch, index), deterministic=True
        )
        return batches(dataset)

    dataset = tf.data.Dataset.range(int(initial_epoch), int(epochs)).flat_map(one_epoch)
    return dataset.prefetch(tf.data.AUTOTUNE)


def make_adversarial_dataset(
    examples, batch_size, max_length, max_source_length, shuffle=True, seed=0, *, pad_id, eos_id,
    epochs=None, initial_epoch=0, steps_per_epoch=None,
):
    """`(source_ids (b, max_source_length), text_ids (b, max_length))` int32 batches.

    The text is the reference + EOS, padded with PAD to exactly `max_length`: the layout of
    the sampler's output. Fixed shapes keep one compiled step; `drop_remainder` keeps the
    batch size fixed (and splittable over replicas). With `shuffle`, the dataset repeats
    forever (use `steps_per_epoch`). Examples whose text + EOS does not fit are skipped and
    counted in the log; longer sources are cut to `max_source_length`.

    With `epochs` (and `steps_per_epoch`, `shuffle=True`), the dataset holds epochs
    `initial_epoch .. epochs - 1` of `steps_per_epoch` batches each, and epoch `e` is drawn from
    passes over the examples shuffled by seeds derived from `(seed, e)`: a run resumed at epoch
    `e` sees the batches the uninterrupted run saw.
    """
    kept = [e for e in examples if e.target_ids is not None and len(e.target_ids) + 1 <= max_length]
    if len(kept) < len(examples):
        logger.info("Adversarial data: skipped %d of %d texts longer than %d tokens.",
                    len(examples) - len(kept), len(examples), max_length - 1)
    if len(kept) < (1 if shuffle else batch_size):
        raise ValueError(
            f"Expected at least {1 if shuffle else batch_size} example(s) of at most {max_length - 1} "
            f"tokens (batch_size={batch_size}, shuffle={shuffle}). Received: {len(kept)}"
        )
    sources = tf.ragged.constant(
        [list(e.source_ids[:max_source_length]) for e in kept], dtype=tf.int32, ragged_rank=1
    )
    texts = tf.ragged.constant([[*e.target_ids, eos_id] for e in kept], dtype=tf.int32, ragged_rank=1)

    def batches(dataset):
        # Rows of a ragged tensor come out as ragged specs; the identity map makes them dense.
        dataset = dataset.map(lambda source, text: (source, text), deterministic=True)
        return dataset.padded_batch(
            batch_size,
            padded_shapes=([max_source_length], [max_length]),
            padding_values=(pad_id, pad_id),
            drop_remainder=True,
        )

    if epochs is not None:
        if not shuffle or steps_per_epoch is None or steps_per_epoch < 1:
            raise ValueError(
                "Epoch-seeded adversarial batches need shuffle=True and a positive steps_per_epoch. "
                f"Received: shuffle={shuffle}, steps_per_epoch={steps_per_epoch}"
            )
        passes = -(-int(steps_per_epoch) * batch_size // len(kept))  # passes over the examples per epoch

        def one_pass(epoch, index):
            # A stateless permutation seeded by (seed, epoch, pass): independent of any global state.
            order = tf.random.experimental.stateless_shuffle(
                tf.range(len(kept), dtype=tf.int64),
                seed=tf.stack([tf.constant(int(seed), tf.int64), epoch * passes + index]),
            )
            return tf.data.Dataset.from_tensor_slices(order)

        def one_epoch(epoch):
            order = tf.data.Dataset.range(passes).flat_map(lambda index: one_pass(epoch, index))
            examples_dataset = order.map(lambda index: (sources[index], texts[index]), deterministic=True)
            return batches(examples_dataset).take(int(steps_per_epoch))

        dataset = tf.data.Dataset.range(int(initial_epoch), int(epochs)).flat_map(one_epoch)
        return dataset.prefetch(tf.data.AUTOTUNE)
    dataset = tf.data.Dataset.from_tensor_slices((sources, texts))
    if shuffle:
        dataset = dataset.shuffle(len(kept), seed=seed, reshuffle_each_iteration=True).repeat()
    return batches(dataset).prefetch(tf.data.AUTOTUNE)


def bucket_widths(examples, boundaries):
    """`(source widths, label widths)`, one per bucket of `make_training_dataset`: the longest
    source and the longest text + 1 (BOS + text, text + EOS) of the examples whose longer one
    falls in that bucket; 1 for an empty bucket."""
    source_widths = [1] * (len(boundaries) + 1)
    label_widths = [1] * (len(boundaries) + 1)
    for example in examples:
        source_length, label_length = len(example.source_ids), len(example.target_ids) + 1
        bucket = bisect.bisect_right(boundaries, max(source_length, label_length))
        source_widths[bucket] = max(source_widths[bucket], source_length)
        label_widths[bucket] = max(label_widths[bucket], label_length)
    return source_widths, label_widths


def with_known_length(dataset):
    """Returns `(dataset, number of batches)`, the dataset annotated with that number.

    Counts by iterating once. Bucketing hides the length from `tf.data` (Keras' progress bar
    then shows `Unknown`), but it does not depend on the shuffle order: each bucket yields
    `ceil(examples_in_bucket / batch_size)` batches.
    """
    num_batches = int(dataset.reduce(np.int64(0), lambda count, _: count + 1).numpy())
    return dataset.apply(tf.data.experimental.assert_cardinality(num_batches)), num_batches


def source_batches(examples, batch_size, pad_id, length_multiple=SOURCE_LENGTH_MULTIPLE, max_length=None):
    """Fixed-shape source batches for decoding, shortest sources first.

    Every batch is `(batch_size, L)` int32 with `L` a multiple of `length_multiple`, or
    `max_length` (the model's `max_source_length`, which its position embedding cannot pass)
    where that is smaller; the last batch is filled up with all-PAD rows. Yields `(source_ids,
    indices)` where `indices` are the positions in `examples` of the real rows (the first
    `len(indices)` rows).
    """
    if batch_size < 1:
        raise ValueError(f"`batch_size` must be positive. Received: batch_size={batch_size}")
    order = sorted(range(len(examples)), key=lambda index: len(examples[index].source_ids))
    for start in range(0, len(order), batch_size):
        indices = order[start : start + batch_size]
        longest = max(len(examples[index].source_ids) for index in indices)
        width = max(length_multiple, -(-longest // length_multiple) * length_multiple)
        if max_length is not None:
            width = min(width, max(max_length, longest))
        source_ids = np.full((batch_size, width), pad_id, dtype="int32")
        for row, index in enumerate(indices):
            ids = examples[index].source_ids
            source_ids[row, : len(ids)] = ids
        yield source_ids, indices
