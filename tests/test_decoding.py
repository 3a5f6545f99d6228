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


def test_returned_scores_are_length_normalised_log_probabilities_under_a_length_penalty():
    """With length_penalty 1 each candidate's score is its log-probability over ((5 + length) / 6), length
    counting EOS (the reranker and the consensus read these scores); the running sums the beam extends stay
    unnormalised (a beam that carried normalised scores forward returned -0.5692 and -0.7300)."""
    step_fn, _ = markov_step_fn([BEAM_BEATS_GREEDY])
    sequences, scores = beam_search(
        step_fn, _state([0], 2), batch_size=1, max_length=4, beam_width=2, length_penalty=1.0, return_all=True,
    )
    np.testing.assert_array_equal(sequences, [[[B, EOS, PAD, PAD], [A, C, EOS, PAD]]])
    np.testing.assert_allclose(ops.convert_to_numpy(scores), [[np.log(0.405) / (7 / 6), np.log(0.22) / (8 / 6)]],
                               rtol=1e-4)


# Placeholder constraints: C and D play placeholders; a "source" is the ids the input holds.
def _constraints(sources, required=(C, D), beam_width=1):
    width = max(len(source) for source in sources)
    source_ids = np.array([list(source) + [PAD] * (width - len(source)) for source in sources], dtype="int32")
    return decoding.PlaceholderConstraints(source_ids, (C, D), required_ids=required, rows_per_source=beam_width)


# A ends the text at once (0.9) unless told otherwise; C is the only other way on.
SKIPS_C = _table({BOS: {A: 0.9, C: 0.1}, A: {EOS: 0.9, C: 0.1}, C: {EOS: 1.0}})
# C, then C again (0.8) rather than EOS.
REPEATS_C = _table({BOS: {C: 0.9, A: 0.1}, C: {C: 0.8, EOS: 0.2}, A: {EOS: 1.0}})
# D, absent from the source, is the likeliest first token.
INVENTS_D = _table({BOS: {D: 0.9, A: 0.1}, D: {EOS: 1.0}, A: {EOS: 1.0}})


def test_constraints_exact_tokens_greedy():
    step_fn, _ = markov_step_fn([SKIPS_C, REPEATS_C, INVENTS_D])
    free = greedy_search(step_fn, _state([0, 1, 2]), batch_size=3, max_length=4)
    np.testing.assert_array_equal(free, [[A, EOS, PAD, PAD], [C, C, C, C], [D, EOS, PAD, PAD]])
    constraints = _constraints([[C], [C], []])
    bound = greedy_search(step_fn, _state([0, 1, 2]), batch_size=3, max_length=4, constraints=constraints)
    # EOS waits for the required C; C at most once (the source holds it once); D never (absent).
    np.testing.assert_array_equal(bound, [[A, C, EOS, PAD], [C, EOS, PAD, PAD], [A, EOS, PAD, PAD]])
    # A placeholder the source holds twice may be written twice; one not required need not be.
    twice = greedy_search(step_fn, _state([1]), batch_size=1, max_length=4, constraints=_constraints([[C, C]]))
    np.testing.assert_array_equal(twice, [[C, C, EOS, PAD]])
    optional = greedy_search(step_fn, _state([0]), batch_size=1, max_length=4, constraints=_constraints([[C]], required=()))
    np.testing.assert_array_equal(optional, [[A, EOS, PAD, PAD]])


def test_constraints_exact_tokens_beam():
    step_fn, _ = markov_step_fn([SKIPS_C, INVENTS_D])
    kwargs = dict(batch_size=2, max_length=4, beam_width=2, length_penalty=0.0)
    free, _ = beam_search(step_fn, _state([0, 1], 2), return_all=True, **kwargs)
    np.testing.assert_array_equal(free[0], [[A, EOS, PAD, PAD], [C, EOS, PAD, PAD]])
    np.testing.assert_array_equal(free[1, 0], [D, EOS, PAD, PAD])
    bound, _ = beam_search(step_fn, _state([0, 1], 2), return_all=True,
                           constraints=_constraints([[C], []], beam_width=2), **kwargs)
    # C EOS (0.1) and A C EOS (0.09): A EOS (0.81) is blocked until C is written. D is absent.
    np.testing.assert_array_equal(bound[0], [[C, EOS, PAD, PAD], [A, C, EOS, PAD]])
    np.testing.assert_array_equal(bound[1, 0], [A, EOS, PAD, PAD])


# Step 2 swaps the beams' rows (A B overtakes C B), so each row must carry its parent's counts.
SWAPS_ROWS = _table({BOS: {C: 0.5, A: 0.495}, A: {B: 0.99}, C: {B: 0.9, EOS: 0.1}, B: {EOS: 0.7, C: 0.3}})


def test_constraint_counts_follow_their_hypothesis_when_the_beam_reorders():
    step_fn, _ = markov_step_fn([SWAPS_ROWS])
    best = beam_search(step_fn, _state([0], 2), batch_size=1, max_length=4, beam_width=2, length_penalty=0.0,
                       constraints=_constraints([[C]], beam_width=2))
    # C B EOS (0.315); A B EOS (0.343) is blocked: A B has not written C.
    np.testing.assert_array_equal(best, [[C, B, EOS, PAD]])


def _brute_force_best(table, source, required, max_length):
    """The most probable sequence under the constraints, by enumeration (length penalty 0)."""
    import itertools

    best, best_score = None, -np.inf
    for length in range(1, max_length + 1):
        for tokens in itertools.product(range(VOCABULARY_SIZE), repeat=length):
            ended = tokens[-1] == EOS
            if EOS in tokens[:-1] or (length < max_length and not ended):
                continue
            if any(tokens.count(p) > source.count(p) for p in (C, D)):
                continue
            if ended and any(p in source and p not in tokens[:-1] for p in required):
                continue
            score = sum(table[previous, token] for previous, token in zip((BOS,) + tokens[:-1], tokens))
            if score > best_score:
                best, best_score = list(tokens) + [PAD] * (max_length - length), score
    return best


def test_constrained_beam_search_finds_the_best_allowed_sequence():
    """With a beam that holds every prefix, beam search is exact: it must find what enumeration
    finds under the same constraints, for random tables and sources; each hypothesis keeps its
    own placeholder counts as the beam reorders."""
    rng = np.random.default_rng(3)
    tables, sources = [], [[C], [C, D], [C, C], [], [D, D, C]]
    for _ in sources:
        probabilities = rng.dirichlet(np.full(VOCABULARY_SIZE, 0.5), size=VOCABULARY_SIZE)
        probabilities[:, [PAD, UNK, BOS]] = 1e-6
        tables.append(np.log(probabilities / probabilities.sum(-1, keepdims=True)).astype("float32"))
    step_fn, _ = markov_step_fn(tables)
    beam_width, max_length = VOCABULARY_SIZE ** 2, 3
    got = beam_search(
        step_fn, _state(range(len(sources)), beam_width), batch_size=len(sources), max_length=max_length,
        beam_width=beam_width, length_penalty=0.0, constraints=_constraints(sources, beam_width=beam_width),
    )
    expected = [_brute_force_best(table, source, (C, D), max_length) for table, source in zip(tables, sources)]
    np.testing.assert_array_equal(got, expected)
    free = beam_search(
        step_fn, _state(range(len(sources)), beam_width), batch_size=len(sources), max_length=max_length,
        beam_width=beam_width, length_penalty=0.0,
    )
    assert (ops.convert_to_numpy(free) != np.array(expected)).any()  # the constraints changed something


def test_constraints_reject_bad_ids():
    with pytest.raises(ValueError, match="required_ids not among them=\\[5\\]"):
        decoding.PlaceholderConstraints(np.zeros((1, 2), "int32"), (C, D), required_ids=(B,))
    with pytest.raises(ValueError, match="distinct"):
        decoding.PlaceholderConstraints(np.zeros((1, 2), "int32"), (C, C))


# PAD is the likeliest next token after A: a live text never emits it (the full decoder masks PAD
# as an input, the cached one would attend to it); A C EOS is what is left.
PAD_AFTER_A = _table({BOS: {A: 0.9, B: 0.1}, A: {PAD: 0.6, C: 0.3, EOS: 0.1}, B: {EOS: 1.0}, C: {EOS: 1.0}})


def test_no_live_text_emits_pad():
    step_fn, _ = markov_step_fn([PAD_AFTER_A])
    greedy = greedy_search(step_fn, _state([0]), batch_size=1, max_length=4)
    np.testing.assert_array_equal(greedy, [[A, C, EOS, PAD]])
    beam = beam_search(step_fn, _state([0], 2), batch_size=1, max_length=4, beam_width=2)
    np.testing.assert_array_equal(beam, [[A, C, EOS, PAD]])  # 0.27 against B EOS's 0.1


# A B A B ... is by far the likeliest path; C ends a text at once. Greedy without blocking never ends.
REPEATS = _table({BOS: {A: 1.0}, A: {B: 0.9, C: 0.1}, B: {A: 0.6, EOS: 0.4}, C: {EOS: 1.0}})


def test_repeated_ngram_penalty_blocks_exactly_the_tokens_that_repeat_an_ngram():
    sequences = ops.convert_to_tensor(np.array([[A, B, C, A, B, PAD, PAD], [D, D, D, PAD, PAD, PAD, PAD]], "int32"))

    def blocked(step, ngram_size):
        penalty = ops.convert_to_numpy(
            decoding.repeated_ngram_penalty(sequences, ops.convert_to_tensor(step, "int32"), ngram_size, VOCABULARY_SIZE)
        )
        assert set(np.unique(penalty)) <= {0.0, decoding._NEGATIVE_INFINITY}
        return [sorted(np.nonzero(row)[0].tolist()) for row in penalty]

    assert blocked(5, 3) == [[C], []]  # "A B" ends row 0; "A B C" is written
    assert blocked(3, 3) == [[], [D]]  # "D D" ends row 1; "D D D" is written
    assert blocked(3, 2) == [[], [D]]  # row 0 ends in C, which no bigram starts with before it
    assert blocked(2, 2) == [[], [D]]  # "D D" at positions 0-1 is whole before step 2
    assert blocked(1, 2) == [[], []]  # ... and not before step 1
    assert blocked(5, 4) == [[], []]  # "C A B" was not seen before
    assert blocked(4, 4) == [[], []]
    assert blocked(3, 1) == [[A, B, C], [D]]  # n = 1: no token twice
    assert blocked(7, 8) == [[], []]  # no 8-gram fits in 7 tokens


def test_greedy_never_repeats_an_ngram_when_asked():
    step_fn, _ = markov_step_fn([REPEATS])
    np.testing.assert_array_equal(greedy_search(step_fn, _state([0]), batch_size=1, max_length=6), [[A, B, A, B, A, B]])
    # n = 2: "A B" may not come back, so A takes C; n = 3: "A B A" may not, so B ends the text.
    np.testing.assert_array_equal(
        greedy_search(step_fn, _state([0]), batch_size=1, max_length=6, no_repeat_ngram_size=2), [[A, B, A, C, EOS, PAD]]
    )
    np.testing.assert_array_equal(
        greedy_search(step_fn, _state([0]), batch_size=1, max_length=6, no_repeat_ngram_size=3), [[A, B, A, B, EOS, PAD]]
    )
    with pytest.raises(ValueError, match="no_repeat_ngram_size=-1"):
        greedy_search(step_fn, _state([0]), batch_size=1, max_length=6, no_repeat_ngram_size=-1)


def test_beam_search_never_repeats_an_ngram_in_any_hypothesis():
    step_fn, _ = markov_step_fn([REPEATS, REPEATS])
    search = functools.partial(beam_search, step_fn, _state([0, 1], 2), batch_size=2, max_length=5, beam_width=2,
                               length_penalty=0.0, return_all=True)
    # Unblocked, the beam keeps A B EOS (0.9 x 0.4 = 0.36) and the unfinished A B A B A (0.29).
    sequences, _ = search()
    for example in ops.convert_to_numpy(sequences):
        np.testing.assert_array_equal(example, [[A, B, EOS, PAD, PAD], [A, B, A, B, A]])
    # n = 2: "A B" never twice, so A B A takes C (0.054); each hypothesis is checked against its own text.
    sequences, scores = search(no_repeat_ngram_size=2)
    for example in ops.convert_to_numpy(sequences):
        np.testing.assert_array_equal(example, [[A, B, EOS, PAD, PAD], [A, B, A, C, EOS]])
    np.testing.assert_allclose(ops.convert_to_numpy(scores)[0], np.log([0.36, 0.054]), rtol=1e-4)
    sequences, _ = search(no_repeat_ngram_size=3)
    for example in ops.convert_to_numpy(sequences):
        np.testing.assert_array_equal(example, [[A, B, EOS, PAD, PAD], [A, B, A, B, EOS]])
