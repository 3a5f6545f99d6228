"""Inference: cached decoding equals the uncached reference; beam 1 equals greedy; rows are
independent; the text-level helpers are tested with a trained run in test_mle.py."""

import keras
import numpy as np
import pytest

from onestep_gan.rdf2text.inference import generate, make_generate_function
from onestep_gan.rdf2text.transformer import TransformerGenerator


def _tiny_generator():
    keras.utils.set_random_seed(3)
    return TransformerGenerator(
        vocabulary_size=13, max_source_length=8, max_target_length=7, model_dim=16,
        num_heads=2, feedforward_dim=32, num_encoder_layers=1, num_decoder_layers=2, dropout=0.0,
    )


GENERATOR_SOURCE = np.array([[5, 6, 7, 8, 9], [10, 4, 0, 0, 0], [12, 11, 6, 0, 0]], dtype="int32")


@pytest.mark.parametrize("method", ["greedy", "beam"])
def test_generate_cached_equals_uncached(method):
    model = _tiny_generator()
    cached = generate(model, GENERATOR_SOURCE, method=method, beam_width=3, use_cache=True)
    uncached = generate(model, GENERATOR_SOURCE, method=method, beam_width=3, use_cache=False)
    assert tuple(cached.shape) == (3, 7)
    np.testing.assert_array_equal(cached, uncached)


def test_generate_beam_width_one_equals_greedy_and_rows_are_independent():
    model = _tiny_generator()
    greedy = generate(model, GENERATOR_SOURCE, max_length=5)
    np.testing.assert_array_equal(
        generate(model, GENERATOR_SOURCE, method="beam", beam_width=1, max_length=5), greedy
    )
    beam = generate(model, GENERATOR_SOURCE, method="beam", beam_width=3, max_length=5)
    alone = generate(model, GENERATOR_SOURCE[1:2, :2], method="beam", beam_width=3, max_length=5)
    np.testing.assert_array_equal(alone[0], beam[1])
    with pytest.raises(ValueError, match="max_length=8"):
        generate(model, GENERATOR_SOURCE, max_length=8)
    with pytest.raises(ValueError, match="method='sample'"):
        generate(model, GENERATOR_SOURCE, method="sample")


@pytest.mark.parametrize("method", ["greedy", "beam"])
def test_copying_generator_cached_equals_uncached_and_never_invents_a_placeholder(method):
    keras.utils.set_random_seed(4)
    model = TransformerGenerator(
        vocabulary_size=13, max_source_length=8, max_target_length=7, model_dim=16, num_heads=2,
        feedforward_dim=32, num_encoder_layers=1, num_decoder_layers=1, dropout=0.0,
        placeholder_ids=(4, 5, 6),
    )
    source = np.array([[7, 4, 8, 5, 0], [9, 6, 10, 0, 0]], dtype="int32")
    cached = generate(model, source, method=method, beam_width=3, use_cache=True)
    uncached = generate(model, source, method=method, beam_width=3, use_cache=False)
    np.testing.assert_array_equal(cached, uncached)
    cached = keras.ops.convert_to_numpy(cached)
    assert not np.isin(cached[0], [6]).any() and not np.isin(cached[1], [4, 5]).any()


@pytest.mark.parametrize("method", ["greedy", "beam"])
def test_compiled_decoding_equals_the_uncompiled_reference(method):
    """`make_generate_function` (tf.function, jax.jit or eager torch) against the uncompiled,
    uncached reference on the same weights."""
    model = _tiny_generator()
    compiled = make_generate_function(model, method=method, beam_width=3)(GENERATOR_SOURCE)
    reference = generate(model, GENERATOR_SOURCE, method=method, beam_width=3, use_cache=False)
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(compiled), reference)


def test_compiled_decoding_reads_the_current_weights():
    """A compiled decoder made once (as `SampleGenerationLogger` keeps one over the epochs)
    must decode with the weights of the moment, not those of its first call."""
    model = _tiny_generator()
    generate_function = make_generate_function(model, method="greedy")
    before = keras.ops.convert_to_numpy(generate_function(GENERATOR_SOURCE))
    bias = np.zeros(13, "float32")
    bias[model.eos_id] = 100.0
    model.output_bias.assign(bias)
    after = keras.ops.convert_to_numpy(generate_function(GENERATOR_SOURCE))
    assert (before[:, 0] != model.eos_id).any()
    np.testing.assert_array_equal(after[:, 0], model.eos_id)
    np.testing.assert_array_equal(after[:, 1:], model.pad_id)


@pytest.mark.parametrize("method", ["greedy", "beam"])
def test_placeholder_constraints_hold_in_compiled_decoding(method):
    """With `placeholder_constraints`, no placeholder appears more often than the source holds it
    and a text ends (EOS) only after every required placeholder its source holds; the compiled
    decoder gives what the eager one gives. The model is biased to write ENT 4 (then 5, then EOS)
    far above anything else, so the exact outputs are known."""
    model = _tiny_generator()
    decode_step = model.decode_step
    bias = np.zeros(13, "float32")
    bias[[4, 5, model.eos_id]] = 30.0, 25.0, 20.0
    bias = keras.ops.convert_to_tensor(bias)

    def biased_decode_step(*args, **kwargs):
        logits, state = decode_step(*args, **kwargs)
        return keras.ops.add(logits, bias), state

    model.decode_step = biased_decode_step
    constraints = ((4, 5, 6), (4, 5))  # 4, 5, 6 limited; 4 and 5 required where the source holds them
    source = np.array([[7, 4, 8, 5, 0], [9, 6, 10, 6, 4], [11, 12, 0, 0, 0]], dtype="int32")
    free = generate(model, source, method=method, beam_width=3)
    np.testing.assert_array_equal(free, [[4] * 7] * 3)
    compiled = make_generate_function(model, method=method, beam_width=3, placeholder_constraints=constraints)
    got = keras.ops.convert_to_numpy(compiled(source))
    # Row 0 holds 4 and 5: each once, then EOS. Row 1 holds 4 (5 is absent): 4, EOS. Row 2 holds none.
    np.testing.assert_array_equal(got, [[4, 5, 3, 0, 0, 0, 0], [4, 3, 0, 0, 0, 0, 0], [3, 0, 0, 0, 0, 0, 0]])
    np.testing.assert_array_equal(got, generate(model, source, method=method, beam_width=3, placeholder_constraints=constraints))


def test_discriminator_preference_is_the_beam_score_plus_the_weighted_discriminator_score():
    """`discriminator_preference` scores each beam candidate with D exactly as D scores a text on
    its own; a candidate longer than D reads gets -inf."""
    from onestep_gan.rdf2text.discriminator import TextDiscriminator
    from onestep_gan.rdf2text.inference import discriminator_preference

    keras.utils.set_random_seed(5)
    discriminator = TextDiscriminator(
        vocabulary_size=13, max_source_length=8, max_target_length=5, model_dim=16, num_heads=2,
        feedforward_dim=32, num_layers=1, dropout=0.0,
    )
    source_ids = np.array([[5, 6, 7, 0], [10, 4, 0, 0]], dtype="int32")
    candidate_ids = np.array([  # (batch 2, beam 3, length 7): PAD (0) after EOS (2)
        [[7, 8, 2, 0, 0, 0, 0], [9, 2, 0, 0, 0, 0, 0], [7, 8, 9, 10, 11, 12, 2]],
        [[4, 2, 0, 0, 0, 0, 0], [11, 12, 4, 2, 0, 0, 0], [5, 5, 5, 5, 2, 0, 0]],
    ], dtype="int32")
    beam_scores = np.array([[-0.1, -0.2, -0.3], [-1.0, -2.0, -3.0]])
    # real_sign -1: a D trained with the hinge loss scores real texts LOW, so the preference is the
    # beam score MINUS the weighted score (with +1, as for the non-saturating loss, plus).
    for real_sign in (1, -1):
        preference = discriminator_preference(discriminator, weight=0.5, real_sign=real_sign)(
            source_ids, candidate_ids, beam_scores
        )
        assert preference.shape == (2, 3)
        for row in range(2):
            for beam in range(3):
                text = candidate_ids[row, beam]
                if (text[5:] != 0).any():  # longer than D's 5 positions
                    assert preference[row, beam] == -np.inf
                    continue
                alone = keras.ops.convert_to_numpy(discriminator([source_ids[row : row + 1], text[None, :5]]))[0, 0]
                expected = beam_scores[row, beam] + 0.5 * real_sign * alone
                np.testing.assert_allclose(preference[row, beam], expected, rtol=1e-5, atol=1e-6)
        assert np.isinf(preference).sum() == 1
    with pytest.raises(ValueError, match="must be positive"):
        discriminator_preference(discriminator, weight=0.0, real_sign=1)
    with pytest.raises(ValueError, match="real_sign` must be 1 or -1"):
        discriminator_preference(discriminator, weight=0.5, real_sign=0)


def test_decode_examples_batches_sources_no_wider_than_the_model_reads():
    import types

    from onestep_gan.rdf2text.inference import decode_examples

    preprocessor = types.SimpleNamespace(
        pad_id=0, max_source_length=20, decode=lambda ids, entity_map, predicate_map: "text"
    )
    examples = [types.SimpleNamespace(source_ids=tuple(range(4, 22)), entity_map={}, predicate_map={})]
    widths = []

    def generate_function(source_ids):
        widths.append(source_ids.shape[1])
        return np.zeros((source_ids.shape[0], 3), "int32")

    assert decode_examples(generate_function, examples, preprocessor, batch_size=4, progress=False) == ["text"]
    assert widths == [20]
