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
