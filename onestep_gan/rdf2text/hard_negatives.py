"""Hard negatives for the text discriminator, made from the real text itself.

A discriminator that only sees generator samples and other triplesets' texts can tell them
apart by fluency or by topic, and never learns the error users see: a fluent text about the
right entities that binds a value to the wrong triple. These builders corrupt a real,
delexicalised text (ids, `(batch, length)`) in exactly that way:

- `swap_placeholders`: the first two distinct placeholders of the text trade places
  ("ENT_1 was born in ENT_3 and worked as a ENT_2");
- `move_value`: the text's last placeholder is replaced by another placeholder of the input
  (a value moved to another triple's slot), preferring one the text does not mention;
- `drop_clause`: the clause ending in the text's last placeholder is cut out: from the
  previous boundary token ("," "and" "."), included, or else from just after the previous
  placeholder, to that placeholder ("ENT_1 was born in ENT_2 and worked as a ENT_3 ." ->
  "ENT_1 was born in ENT_2 .").

Each returns `(negatives (batch, length), valid (batch,))`; `valid` is False where the
text has nothing to corrupt (fewer than two placeholders), and such rows are the input
unchanged. All are `keras.ops` on fixed shapes, so they run inside a compiled train step.
"""

from keras import ops

NEGATIVE_TYPES = ("swap", "move", "drop")


def _presence(ids, placeholder_ids):
    """`(batch, P)` bool: which placeholders occur in each row of `ids (batch, length)`."""
    placeholder_ids = ops.convert_to_tensor(placeholder_ids, dtype="int32")
    return ops.any(ops.equal(ops.cast(ids, "int32")[:, :, None], placeholder_ids), axis=1)


def swap_placeholders(texts, placeholder_ids):
    """Swaps the two lowest-numbered distinct placeholders of each text."""
    texts = ops.cast(texts, "int32")
    num_placeholders = len(placeholder_ids)
    present = _presence(texts, placeholder_ids)  # (batch, P)
    # Highest priority for the lowest placeholder present; 0 for absent ones.
    priority = ops.where(present, num_placeholders - ops.arange(num_placeholders), 0)
    top, slots = ops.top_k(priority, k=2)  # (batch, 2)
    valid = top[:, 1] > 0
    table = ops.convert_to_tensor(placeholder_ids, dtype="int32")
    first = ops.take(table, slots[:, 0])[:, None]
    second = ops.take(table, slots[:, 1])[:, None]
    swapped = ops.where(texts == first, second, ops.where(texts == second, first, texts))
    return ops.where(valid[:, None], swapped, texts), valid


def move_value(texts, source_ids, placeholder_ids):
    """Replaces the highest-numbered placeholder of each text by another one of its source."""
    texts = ops.cast(texts, "int32")
    num_placeholders = len(placeholder_ids)
    table = ops.convert_to_tensor(placeholder_ids, dtype="int32")
    in_text = _presence(texts, placeholder_ids)  # (batch, P)
    in_source = _presence(source_ids, placeholder_ids)
    # The value to move: the last placeholder the text mentions.
    moved_slot = ops.argmax(ops.where(in_text, ops.arange(num_placeholders) + 1, 0), axis=-1)
    # Its replacement: another placeholder of the source, unmentioned ones first, low ids first.
    others = ops.logical_and(in_source, ops.arange(num_placeholders)[None, :] != moved_slot[:, None])
    priority = ops.where(others, 2 * num_placeholders - ops.arange(num_placeholders), 0)
    priority = priority + ops.where(ops.logical_and(others, ops.logical_not(in_text)), num_placeholders, 0)
    best, replacement_slot = ops.top_k(priority, k=1)
    valid = ops.logical_and(ops.any(in_text, axis=-1), best[:, 0] > 0)
    moved = ops.take(table, moved_slot)[:, None]
    replacement = ops.take(table, replacement_slot[:, 0])[:, None]
    result = ops.where(texts == moved, replacement, texts)
    return ops.where(valid[:, None], result, texts), valid


def drop_clause(texts, placeholder_ids, boundary_ids, pad_id):
    """Cuts the clause of the text's last placeholder occurrence (see the module docstring);
    the rest moves left, PAD after."""
    texts = ops.cast(texts, "int32")
    length = ops.shape(texts)[1]
    positions = ops.arange(length, dtype="int32")[None, :]  # (1, length)
    is_placeholder = ops.any(
        ops.equal(texts[:, :, None], ops.convert_to_tensor(placeholder_ids, dtype="int32")), axis=-1
    )
    is_boundary = ops.any(
        ops.equal(texts[:, :, None], ops.convert_to_tensor(boundary_ids, dtype="int32")), axis=-1
    )
    count = ops.sum(ops.cast(is_placeholder, "int32"), axis=1)
    end = ops.max(ops.where(is_placeholder, positions, -1), axis=1)  # last placeholder
    before_end = positions < end[:, None]
    boundary_start = ops.where(ops.logical_and(is_boundary, before_end), positions, -1)
    placeholder_start = ops.where(ops.logical_and(is_placeholder, before_end), positions + 1, -1)
    start = ops.maximum(ops.max(ops.maximum(boundary_start, placeholder_start), axis=1), 0)
    valid = count >= 2
    cut = ops.logical_and(positions >= start[:, None], positions <= end[:, None])
    keep = ops.logical_or(ops.logical_not(cut), ops.logical_not(valid)[:, None])
    # Kept positions first, in order: sort by (dropped, position).
    order = ops.argsort(ops.where(keep, positions, positions + length), axis=1)
    compacted = ops.take_along_axis(texts, ops.cast(order, "int32"), axis=1)
    kept = ops.sum(ops.cast(keep, "int32"), axis=1)
    return ops.where(positions < kept[:, None], compacted, pad_id), valid


def build_negatives(texts, source_ids, placeholder_ids, boundary_ids, pad_id):
    """`{type: (negatives, valid)}` for the three builders, in `NEGATIVE_TYPES` order."""
    return {
        "swap": swap_placeholders(texts, placeholder_ids),
        "move": move_value(texts, source_ids, placeholder_ids),
        "drop": drop_clause(texts, placeholder_ids, boundary_ids, pad_id),
    }
