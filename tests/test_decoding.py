"""Decoders against a fake Markov-chain step function with exact expected tokens."""

import functools

import keras
import numpy as np
import pytest
from keras import ops

from onestep_gan.rdf2text import decoding
from onestep_gan.rdf2text.decoding import tile_beams

PAD, UNK, BOS, EOS, A, B, C, D = range(8)
greedy_search = functools.partial(decoding.greedy_search, bos_id=BOS, eos_id=EOS, pad_id=PAD)
beam_search = functools.partial(decoding.beam_search, bos_id=BOS, eos_id=EOS, pad_id=PAD)
VOCABULARY_SIZE = 8


def _table(transitions):
    """{token: {next_token: probability}} -> (vocab, vocab) log-probability table."""
    probabilities = np.full((VOCABULARY_SIZE, VOCABULARY_SIZE), 1e-12)
    for token, row in transitions.items():
        for next_token, probability in row.items():
            probabilities[token, next_token] = probability
    return np.log(probabilities).astype("float32")


# Greedy takes A (0.55) then C: A C EOS has probability 0.22; beam search finds B EOS (0.405).
BEAM_BEATS_GREEDY = _table(
    {BOS: {A: 0.55, B: 0.45}, A: {C: 0.4, D: 0.3, EOS: 0.3}, B: {EOS: 0.9, C: 0.1},
     C: {EOS: 1.0}, D: {EOS: 1.0}}
)
# B EOS has 0.4 > A C EOS 0.372, but with length_penalty=1, -log(0.372) / (8/6) < -log(0.4) / (7/6).
LENGTH_MATTERS = _table(
    {BOS: {A: 0.6, B: 0.4}, A: {C: 0.62, D: 0.38}, B: {EOS: 1.0}, C: {EOS: 1.0}, D: {EOS: 1.0}}
)
# A then B forever, never EOS.
NEVER_ENDS = _table({BOS: {A: 1.0}, A: {B: 1.0}, B: {A: 1.0}})


# The steps a loop ran can be counted where its body is a Python call per step (TensorFlow
# eagerly, PyTorch); JAX traces the body once.
_LOOP_RUNS_IN_PYTHON = keras.backend.backend() != "jax"


def _assert_steps(calls, expected):
    if _LOOP_RUNS_IN_PYTHON:
        assert calls == expected


def markov_step_fn(tables):
    """Fake step function: row i of the batch follows table state["table"][i]."""
    tables = ops.convert_to_tensor(np.stack(tables))  # (num_tables, vocab, vocab)
    calls = []

    def step_fn(tokens, step, state):
        if _LOOP_RUNS_IN_PYTHON:
            calls.append(int(step))
        rows = ops.take(tables, state["table"], axis=0)  # (batch, vocab, vocab)
        logits = ops.take_along_axis(rows, ops.cast(tokens, "int32")[:, None, None], axis=1)
        return logits[:, 0, :], state

    return step_fn, calls


def _state(table_indices, beam_width=1):
    state = {"table": ops.convert_to_tensor(np.array(table_indices, dtype="int32"))}
    return tile_beams(state, beam_width) if beam_width > 1 else state


def test_greedy_exact_tokens_and_pad_after_eos():
    step_fn, calls = markov_step_fn([BEAM_BEATS_GREEDY, LENGTH_MATTERS])
    ids = greedy_search(step_fn, _state([0, 1]), batch_size=2, max_length=5)
    assert ops.convert_to_numpy(ids).dtype == np.int32
    np.testing.assert_array_equal(ids, [[A, C, EOS, PAD, PAD], [A, C, EOS, PAD, PAD]])
    _assert_steps(calls, [0, 1, 2])  # stops once every row has emitted EOS


def test_greedy_pads_only_the_finished_row():
    step_fn, calls = markov_step_fn([LENGTH_MATTERS, NEVER_ENDS])
    ids = greedy_search(step_fn, _state([0, 1]), batch_size=2, max_length=4)
    np.testing.assert_array_equal(ids, [[A, C, EOS, PAD], [A, B, A, B]])
    _assert_steps(calls, [0, 1, 2, 3])


def test_beam_finds_better_sequence_than_greedy():
    step_fn, _ = markov_step_fn([BEAM_BEATS_GREEDY])
    greedy = greedy_search(step_fn, _state([0]), batch_size=1, max_length=4)
    beam = beam_search(step_fn, _state([0], 2), batch_size=1, max_length=4, beam_width=2)
    np.testing.assert_array_equal(greedy, [[A, C, EOS, PAD]])
    np.testing.assert_array_equal(beam, [[B, EOS, PAD, PAD]])


def test_beam_in_batch_matches_each_example_alone():
    tables = [BEAM_BEATS_GREEDY, NEVER_ENDS, LENGTH_MATTERS]
    step_fn, _ = markov_step_fn(tables)
    batched = beam_search(step_fn, _state([0, 1, 2], 3), batch_size=3, max_length=5, beam_width=3)
    np.testing.assert_array_equal(
        batched, [[B, EOS, PAD, PAD, PAD], [A, B, A, B, A], [A, C, EOS, PAD, PAD]]
    )
    for index in range(3):
        alone = beam_search(step_fn, _state([index], 3), batch_size=1, max_length=5, beam_width=3)
        np.testing.assert_array_equal(alone[0], batched[index])


def test_length_penalty_changes_the_choice():
    step_fn, _ = markov_step_fn([LENGTH_MATTERS])
    kwargs = dict(batch_size=1, max_length=4, beam_width=2)
    short = beam_search(step_fn, _state([0], 2), length_penalty=0.0, **kwargs)
    long = beam_search(step_fn, _state([0], 2), length_penalty=1.0, **kwargs)
    np.testing.assert_array_equal(short, [[B, EOS, PAD, PAD]])
    np.testing.assert_array_equal(long, [[A, C, EOS, PAD]])


@pytest.mark.parametrize("table", [BEAM_BEATS_GREEDY, LENGTH_MATTERS, NEVER_ENDS])
def test_beam_width_one_equals_greedy(table):
    rng = np.random.default_rng(0)
    random_table = rng.normal(size=(VOCABULARY_SIZE, VOCABULARY_SIZE)).astype("float32")
    step_fn, _ = markov_step_fn([table, random_table])
    greedy = greedy_search(step_fn, _state([0, 1]), batch_size=2, max_length=6)
    beam = beam_search(step_fn, _state([0, 1]), batch_size=2, max_length=6, beam_width=1)
    np.testing.assert_array_equal(beam, greedy)


def test_tile_beams_repeats_each_row_adjacently():
    state = {"a": ops.convert_to_tensor([[1, 2], [3, 4]]), "b": [ops.convert_to_tensor([5, 6])]}
    tiled = tile_beams(state, 3)
    np.testing.assert_array_equal(tiled["a"], [[1, 2]] * 3 + [[3, 4]] * 3)
    np.testing.assert_array_equal(tiled["b"][0], [5, 5, 5, 6, 6, 6])


def test_bad_arguments_raise():
    step_fn, _ = markov_step_fn([NEVER_ENDS])
    with pytest.raises(ValueError, match="max_length=0"):
        greedy_search(step_fn, _state([0]), batch_size=1, max_length=0)
    with pytest.raises(ValueError, match="beam_width=0"):
        beam_search(step_fn, _state([0]), batch_size=1, max_length=3, beam_width=0)


def test_beam_returns_every_candidate_best_first_on_request():
    step_fn, _ = markov_step_fn([BEAM_BEATS_GREEDY])
    sequences, scores = beam_search(
        step_fn, _state([0], 2), batch_size=1, max_length=4, beam_width=2, length_penalty=0.0,
        return_all=True,
    )
    # B EOS (0.45 * 0.9 = 0.405) beats A C EOS (0.55 * 0.4 * 1.0 = 0.22).
    np.testing.assert_array_equal(sequences, [[[B, EOS, PAD, PAD], [A, C, EOS, PAD]]])
    np.testing.assert_allclose(ops.convert_to_numpy(scores), [[np.log(0.405), np.log(0.22)]], rtol=1e-4)
    best = beam_search(step_fn, _state([0], 2), batch_size=1, max_length=4, beam_width=2, length_penalty=0.0)
    np.testing.assert_array_equal(best, sequences[:, 0])
