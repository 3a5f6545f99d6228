"""Greedy and beam search over a step function.

A step function maps `(token_ids (batch,), step (scalar int32), state)` to
`(logits (batch, vocab), new_state)`. The decoders never look inside `state`, so they can
be tested with a fake logits function and used with `TransformerGenerator.decode_step`
(`inference.generate`). The special ids are the caller's (`TextPreprocessor.special_ids`).

Both decoders are a `keras.ops.while_loop` over fixed-shape loop variables, stopping early
once every sequence has emitted EOS; they run eagerly and inside a compiled function.
Outputs are the ids after BOS, `(batch, max_length)` int32, with PAD after EOS.

Beam search follows Wu et al., 2016 (GNMT): hypotheses are ranked by
`log_prob / ((5 + length) / 6) ** length_penalty`, where `length` counts the EOS.
Finished hypotheses stay in the beam with their score and emit PAD, so one pool of
`beam_width` hypotheses per example holds both finished and alive ones.

Both take `constraints`, a `PlaceholderConstraints` for the batch: hard limits on the
delexicalised placeholders (none written more often than the source holds it, so none that
the source lacks; EOS only once every required placeholder the source holds is written).
Blocked tokens get `_NEGATIVE_INFINITY` added to their log-probability; the others keep theirs
(no renormalisation), so scores stay the model's.

Both also take `no_repeat_ngram_size` (Hugging Face `generate`'s setting of that name): with n > 0, a
text never writes a token that would make an n-gram it already holds a second time
(`repeated_ngram_penalty`; placeholders are tokens like any other). Blocked the same way.
"""

import keras
from keras import ops

# Log-probability of impossible continuations. Finite, so sums and divisions stay finite.
_NEGATIVE_INFINITY = -1e9


def tile_beams(state, beam_width):
    """Repeats every tensor of a nest along axis 0: `(batch, ...)` -> `(batch * beam, ...)`.

    Beams of one example are adjacent: row `batch_index * beam_width + beam_index`.
    """
    return keras.tree.map_structure(
        lambda tensor: ops.repeat(tensor, beam_width, axis=0), state
    )


class PlaceholderConstraints:
    """Hard placeholder constraints for one batch of sources, for `greedy_search` and `beam_search`.

    Each of `placeholder_ids` may be written at most as many times as the source row holds it
    (a placeholder the source lacks: never; the subject of three triples: up to three times),
    and EOS may not be written while one of `required_ids` that the source holds is still
    unwritten. A search that cannot satisfy them stops at `max_length` without EOS, as any
    search does.

    Args:
        source_ids: int `(batch, source_len)`, the sources being decoded.
        placeholder_ids: vocabulary ids of the placeholders to limit (distinct).
        required_ids: the subset of `placeholder_ids` that must be written before EOS.
        rows_per_source: rows of the search per source row (`beam_width` for beam search).

    Example (`TextPreprocessor` ids: every entity placeholder required, predicate placeholders
    limited but optional):
    >>> constraints = PlaceholderConstraints(source_ids, preprocessor.copy_ids,
    ...                                      required_ids=preprocessor.placeholder_ids)
    """

    def __init__(self, source_ids, placeholder_ids, required_ids=(), rows_per_source=1):
        placeholder_ids = tuple(int(index) for index in placeholder_ids)
        required_ids = {int(index) for index in required_ids}
        unknown = sorted(required_ids - set(placeholder_ids))
        if not placeholder_ids or len(set(placeholder_ids)) != len(placeholder_ids) or unknown:
            raise ValueError(
                "`placeholder_ids` must be distinct and non-empty, and hold every `required_ids`. "
                f"Received: placeholder_ids={list(placeholder_ids)}, required_ids not among them={unknown}"
            )
        self.placeholder_ids = ops.convert_to_tensor(placeholder_ids, dtype="int32")  # (P,)
        holds = ops.equal(ops.cast(source_ids, "int32")[:, :, None], self.placeholder_ids)  # (b, s, P)
        allowed = ops.sum(ops.cast(holds, "int32"), axis=1)  # (b, P)
        is_required = ops.convert_to_tensor([index in required_ids for index in placeholder_ids])
        required = ops.logical_and(allowed > 0, is_required[None, :])
        self.allowed = ops.repeat(allowed, rows_per_source, axis=0)  # (rows, P)
        self.required = ops.repeat(required, rows_per_source, axis=0)

    def initial_counts(self):
        """How often each row has written each placeholder: zeros `(rows, P)` int32."""
        return ops.zeros_like(self.allowed)

    def count(self, counts, tokens):
        """`counts` after each row writes `tokens (rows,)`."""
        return counts + ops.cast(ops.equal(ops.cast(tokens, "int32")[:, None], self.placeholder_ids), "int32")

    def penalty(self, counts, vocabulary_size, eos_id):
        """`(rows, vocab)`: `_NEGATIVE_INFINITY` on the tokens each row may not write next, else 0."""
        exhausted = ops.cast(counts >= self.allowed, "float32")  # (rows, P)
        columns = ops.one_hot(self.placeholder_ids, vocabulary_size, dtype="float32")  # (P, vocab)
        unwritten = ops.any(ops.logical_and(self.required, counts == 0), axis=-1)  # (rows,)
        eos_column = ops.cast(ops.arange(vocabulary_size) == eos_id, "float32")  # (vocab,)
        blocked = ops.matmul(exhausted, columns) + ops.cast(unwritten, "float32")[:, None] * eos_column
        return blocked * _NEGATIVE_INFINITY


def repeated_ngram_penalty(sequences, step, ngram_size, vocabulary_size):
    """`(rows, vocab)`: `_NEGATIVE_INFINITY` on each token that, written at position `step` of
    `sequences (rows, length)` (its first `step` tokens written), would repeat an n-gram of
    `ngram_size` tokens that the row already holds; 0 elsewhere. With n = 3 and a row "a b c a b",
    "c" is blocked at step 5; with n = 1, every token written so far."""
    ngram_size = int(ngram_size)
    rows, length = ops.shape(sequences)[0], int(ops.shape(sequences)[1])
    starts = length - ngram_size + 1  # n-grams that fit in a row
    if starts < 1:
        return ops.zeros((rows, vocabulary_size), dtype="float32")
    # The n-gram starting at `start` is whole before `step` when start + n - 1 < step; it is repeated by
    # the token at `step` when its first n - 1 tokens are the row's last n - 1.
    matches = ops.broadcast_to(ops.arange(starts)[None, :] <= step - ngram_size, (rows, starts))
    for offset in range(ngram_size - 1):
        last = ops.take(sequences, ops.maximum(step - (ngram_size - 1) + offset, 0), axis=1)  # (rows,)
        matches = ops.logical_and(matches, ops.equal(sequences[:, offset: offset + starts], last[:, None]))
    # The token that ends each repeated n-gram, or a spare column past the vocabulary: every write is a 1,
    # so n-grams that end in the same token may write it in any order (no `reduction`: Keras >= 3.6).
    completing = ops.where(matches, ops.cast(sequences[:, ngram_size - 1:], "int32"), vocabulary_size)
    row_ids = ops.broadcast_to(ops.arange(rows, dtype="int32")[:, None], (rows, starts))
    indices = ops.reshape(ops.stack([row_ids, completing], axis=-1), (-1, 2))
    ones = ops.reshape(ops.ones_like(completing, dtype="float32"), (-1,))
    blocked = ops.scatter_update(ops.zeros((rows, vocabulary_size + 1), dtype="float32"), indices, ones)
    return blocked[:, :vocabulary_size] * _NEGATIVE_INFINITY


def _check_ngram_size(no_repeat_ngram_size):
    if int(no_repeat_ngram_size) < 0:
        raise ValueError(
            f"`no_repeat_ngram_size` must be >= 0 (0: off). Received: no_repeat_ngram_size={no_repeat_ngram_size}"
        )
    return int(no_repeat_ngram_size)


def write_column(sequences, step, tokens):
    """`sequences[..., step] = tokens` for `sequences (..., length)`, with a tensor `step`."""
    length = ops.shape(sequences)[-1]
    return ops.where(ops.arange(length) == step, tokens[..., None], sequences)


def _without_pad(scores, pad_id):
    """`scores` (..., vocab) with PAD's at -inf: a live text never emits PAD (only a finished one is
    padded). The full decoder masks a PAD input, the cached one would attend to it."""
    return ops.where(ops.arange(ops.shape(scores)[-1]) == pad_id, _NEGATIVE_INFINITY, scores)


def greedy_search(step_fn, state, batch_size, max_length, *, bos_id, eos_id, pad_id, constraints=None,
                  no_repeat_ngram_size=0):
    """Argmax decoding. Returns ids after BOS, `(batch_size, max_length)` int32.

    `constraints`: None, or a `PlaceholderConstraints` for the batch (`rows_per_source=1`).
    `no_repeat_ngram_size`: 0 (off) or n: no n-gram written twice (`repeated_ngram_penalty`).
    """
    max_length = int(max_length)
    no_repeat_ngram_size = _check_ngram_size(no_repeat_ngram_size)
    if max_length < 1:
        raise ValueError(f"`max_length` must be positive. Received: max_length={max_length}")
    sequences = ops.full((batch_size, max_length), pad_id, dtype="int32")
    tokens = ops.full((batch_size,), bos_id, dtype="int32")
    finished = ops.zeros((batch_size,), dtype="bool")
    step = ops.convert_to_tensor(0, dtype="int32")
    counts = constraints.initial_counts() if constraints is not None else ops.zeros((batch_size, 0), dtype="int32")

    def condition(step, tokens, finished, sequences, counts, state):
        return ops.logical_and(step < max_length, ops.logical_not(ops.all(finished)))

    def body(step, tokens, finished, sequences, counts, state):
        logits, state = step_fn(tokens, step, state)
        logits = _without_pad(ops.cast(logits, "float32"), pad_id)
        if constraints is not None:
            logits = logits + constraints.penalty(counts, ops.shape(logits)[-1], eos_id)
        if no_repeat_ngram_size:
            logits = logits + repeated_ngram_penalty(sequences, step, no_repeat_ngram_size, ops.shape(logits)[-1])
        next_tokens = ops.cast(ops.argmax(logits, axis=-1), "int32")
        next_tokens = ops.where(finished, pad_id, next_tokens)
        sequences = write_column(sequences, step, next_tokens)
        finished = ops.logical_or(finished, next_tokens == eos_id)
        if constraints is not None:
            counts = constraints.count(counts, next_tokens)
        return step + 1, next_tokens, finished, sequences, counts, state

    _, _, _, sequences, _, _ = ops.while_loop(
        condition, body, (step, tokens, finished, sequences, counts, state)
    )
    return sequences


def _length_penalty(lengths, alpha):
    """GNMT length penalty ((5 + length) / 6) ** alpha."""
    return ops.power((5.0 + ops.cast(lengths, "float32")) / 6.0, alpha)


def beam_search(
    step_fn,
    state,
    batch_size,
    max_length,
    beam_width=4,
    length_penalty=0.6,
    *,
    bos_id,
    eos_id,
    pad_id,
    return_all=False,
    constraints=None,
    no_repeat_ngram_size=0,
):
    """Beam search. `state` has leading dim `batch_size * beam_width` (see `tile_beams`).

    Returns the best hypothesis per example, ids after BOS, `(batch_size, max_length)` int32;
    with `return_all`, every final hypothesis, best first: `(sequences (batch, beam,
    max_length), scores (batch, beam))` with the length-normalised log-probabilities (for
    reranking). `constraints`: None, or a `PlaceholderConstraints` for the batch
    (`rows_per_source=beam_width`); each hypothesis keeps its own counts. `no_repeat_ngram_size`:
    0 (off) or n: no hypothesis writes an n-gram twice (`repeated_ngram_penalty`).
    """
    max_length = int(max_length)
    beam_width = int(beam_width)
    if max_length < 1:
        raise ValueError(f"`max_length` must be positive. Received: max_length={max_length}")
    if beam_width < 1:
        raise ValueError(f"`beam_width` must be positive. Received: beam_width={beam_width}")
    if float(length_penalty) < 0:
        raise ValueError(
            f"`length_penalty` must be non-negative. Received: length_penalty={length_penalty}"
        )
    no_repeat_ngram_size = _check_ngram_size(no_repeat_ngram_size)
    alpha = float(length_penalty)
    num_rows = batch_size * beam_width
    # All beams start identical, so only beam 0 may expand at the first step.
    scores = ops.tile(
        ops.convert_to_tensor([[0.0] + [_NEGATIVE_INFINITY] * (beam_width - 1)]),
        (batch_size, 1),
    )  # (batch, beam)
    sequences = ops.full((batch_size, beam_width, max_length), pad_id, dtype="int32")
    lengths = ops.zeros((batch_size, beam_width), dtype="int32")
    finished = ops.zeros((batch_size, beam_width), dtype="bool")
    tokens = ops.full((num_rows,), bos_id, dtype="int32")
    step = ops.convert_to_tensor(0, dtype="int32")
    batch_offsets = ops.arange(batch_size, dtype="int32")[:, None] * beam_width  # (batch, 1)
    counts = constraints.initial_counts() if constraints is not None else ops.zeros((num_rows, 0), dtype="int32")

    def condition(step, tokens, scores, lengths, finished, sequences, counts, state):
        return ops.logical_and(step < max_length, ops.logical_not(ops.all(finished)))

    def body(step, tokens, scores, lengths, finished, sequences, counts, state):
        logits, state = step_fn(tokens, step, state)
        vocabulary_size = ops.shape(logits)[-1]
        log_probs = _without_pad(ops.log_softmax(ops.cast(logits, "float32"), axis=-1), pad_id)
        if constraints is not None:
            log_probs = log_probs + constraints.penalty(counts, vocabulary_size, eos_id)
        if no_repeat_ngram_size:
            log_probs = log_probs + repeated_ngram_penalty(
                ops.reshape(sequences, (num_rows, max_length)), step, no_repeat_ngram_size, vocabulary_size
            )
        log_probs = ops.reshape(log_probs, (batch_size, beam_width, vocabulary_size))
        # A finished hypothesis has one continuation, PAD, which keeps its score.
        pad_only = ops.where(
            ops.arange(vocabulary_size) == pad_id, 0.0, _NEGATIVE_INFINITY
        )  # (vocab,)
        log_probs = ops.where(finished[..., None], pad_only[None, None, :], log_probs)
        candidate_scores = scores[..., None] + log_probs  # (batch, beam, vocab)
        candidate_lengths = lengths + ops.cast(ops.logical_not(finished), "int32")
        normalized = candidate_scores / _length_penalty(candidate_lengths, alpha)[..., None]

        flat_normalized = ops.reshape(normalized, (batch_size, beam_width * vocabulary_size))
        _, top_indices = ops.top_k(flat_normalized, k=beam_width)  # (batch, beam)
        top_indices = ops.cast(top_indices, "int32")
        parent_beams = top_indices // vocabulary_size
        next_tokens = top_indices % vocabulary_size

        flat_scores = ops.reshape(candidate_scores, (batch_size, beam_width * vocabulary_size))
        scores = ops.take_along_axis(flat_scores, top_indices, axis=1)
        lengths = ops.take_along_axis(candidate_lengths, parent_beams, axis=1)
        parent_finished = ops.take_along_axis(finished, parent_beams, axis=1)
        finished = ops.logical_or(parent_finished, next_tokens == eos_id)
        sequences = ops.take_along_axis(sequences, parent_beams[..., None], axis=1)
        sequences = write_column(sequences, step, next_tokens)

        parent_rows = ops.reshape(batch_offsets + parent_beams, (num_rows,))
        state = keras.tree.map_structure(
            lambda tensor: ops.take(tensor, parent_rows, axis=0), state
        )
        tokens = ops.reshape(next_tokens, (num_rows,))
        if constraints is not None:
            counts = constraints.count(ops.take(counts, parent_rows, axis=0), tokens)
        return step + 1, tokens, scores, lengths, finished, sequences, counts, state

    _, _, scores, lengths, _, sequences, _, _ = ops.while_loop(
        condition, body, (step, tokens, scores, lengths, finished, sequences, counts, state)
    )
    normalized = scores / _length_penalty(lengths, alpha)  # (batch, beam)
    if return_all:
        ranked_scores, order = ops.top_k(normalized, k=beam_width)  # (batch, beam), best first
        order = ops.cast(order, "int32")
        return ops.take_along_axis(sequences, order[..., None], axis=1), ranked_scores
    best_beams = ops.argmax(normalized, axis=-1)  # (batch,)
    best_beams = ops.cast(best_beams, "int32")[:, None, None]
    return ops.take_along_axis(sequences, best_beams, axis=1)[:, 0, :]
