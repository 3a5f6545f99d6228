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


def write_column(sequences, step, tokens):
    """`sequences[..., step] = tokens` for `sequences (..., length)`, with a tensor `step`."""
    length = ops.shape(sequences)[-1]
    return ops.where(ops.arange(length) == step, tokens[..., None], sequences)


def greedy_search(step_fn, state, batch_size, max_length, *, bos_id, eos_id, pad_id):
    """Argmax decoding. Returns ids after BOS, `(batch_size, max_length)` int32."""
    max_length = int(max_length)
    if max_length < 1:
        raise ValueError(f"`max_length` must be positive. Received: max_length={max_length}")
    sequences = ops.full((batch_size, max_length), pad_id, dtype="int32")
    tokens = ops.full((batch_size,), bos_id, dtype="int32")
    finished = ops.zeros((batch_size,), dtype="bool")
    step = ops.convert_to_tensor(0, dtype="int32")

    def condition(step, tokens, finished, sequences, state):
        return ops.logical_and(step < max_length, ops.logical_not(ops.all(finished)))

    def body(step, tokens, finished, sequences, state):
        logits, state = step_fn(tokens, step, state)
        next_tokens = ops.cast(ops.argmax(logits, axis=-1), "int32")
        next_tokens = ops.where(finished, pad_id, next_tokens)
        sequences = write_column(sequences, step, next_tokens)
        finished = ops.logical_or(finished, next_tokens == eos_id)
        return step + 1, next_tokens, finished, sequences, state

    _, _, _, sequences, _ = ops.while_loop(
        condition, body, (step, tokens, finished, sequences, state)
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
):
    """Beam search. `state` has leading dim `batch_size * beam_width` (see `tile_beams`).

    Returns the best hypothesis per example, ids after BOS, `(batch_size, max_length)` int32;
    with `return_all`, every final hypothesis, best first: `(sequences (batch, beam,
    max_length), scores (batch, beam))` with the length-normalised log-probabilities (for
    reranking).
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

    def condition(step, tokens, scores, lengths, finished, sequences, state):
        return ops.logical_and(step < max_length, ops.logical_not(ops.all(finished)))

    def body(step, tokens, scores, lengths, finished, sequences, state):
        logits, state = step_fn(tokens, step, state)
        vocabulary_size = ops.shape(logits)[-1]
        log_probs = ops.log_softmax(ops.cast(logits, "float32"), axis=-1)
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
        return step + 1, tokens, scores, lengths, finished, sequences, state

    _, _, scores, lengths, _, sequences, _ = ops.while_loop(
        condition, body, (step, tokens, scores, lengths, finished, sequences, state)
    )
    normalized = scores / _length_penalty(lengths, alpha)  # (batch, beam)
    if return_all:
        ranked_scores, order = ops.top_k(normalized, k=beam_width)  # (batch, beam), best first
        order = ops.cast(order, "int32")
        return ops.take_along_axis(sequences, order[..., None], axis=1), ranked_scores
    best_beams = ops.argmax(normalized, axis=-1)  # (batch,)
    best_beams = ops.cast(best_beams, "int32")[:, None, None]
    return ops.take_along_axis(sequences, best_beams, axis=1)[:, 0, :]
