"""Shared layers: a causal decoder block ignores later tokens, a bidirectional one does not;
a bidirectional block has no decode step; configs round-trip; attention over a heads-first
cache gives `attend`'s values and gradients."""

import keras
import numpy as np
import pytest
from keras import ops

from onestep_gan.gradients import value_and_gradients
from onestep_gan.rdf2text.layers import CachedMultiHeadAttention, TransformerDecoderBlock


def _outputs_before_and_after_changing_the_last_token(causal):
    """The block's outputs for 4 tokens, and for the same tokens with a new last one (a new
    vector, not a constant shift, which the pre-LayerNorm would remove)."""
    block = TransformerDecoderBlock(8, 2, 16, causal=causal)
    block.build((None, None, 8), (None, None, 8))
    inputs = keras.random.normal((1, 4, 8), seed=1)
    memory = keras.random.normal((1, 3, 8), seed=2)
    changed = ops.concatenate([inputs[:, :3], keras.random.normal((1, 1, 8), seed=3)], axis=1)
    return ops.convert_to_numpy(block(inputs, memory)), ops.convert_to_numpy(block(changed, memory))


def test_causal_block_ignores_later_tokens():
    first, second = _outputs_before_and_after_changing_the_last_token(causal=True)
    np.testing.assert_allclose(first[:, :3], second[:, :3], atol=1e-6)
    assert np.abs(first[:, 3] - second[:, 3]).max() > 1e-3


def test_text_block_is_bidirectional():
    """A later token changes earlier positions' states (a causal block would not)."""
    first, second = _outputs_before_and_after_changing_the_last_token(causal=False)
    assert np.abs(first[:, 0] - second[:, 0]).max() > 1e-3


def test_bidirectional_block_has_no_decode_step_and_causal_round_trips():
    block = TransformerDecoderBlock(8, 2, 16, causal=False)
    with pytest.raises(ValueError, match="causal"):
        block.decode_step(None, 0, {})
    config = block.get_config()
    assert config["causal"] is False
    assert TransformerDecoderBlock.from_config(config).causal is False
    assert TransformerDecoderBlock(8, 2, 16).get_config()["causal"] is True
    with pytest.raises(ValueError, match="causal=1"):
        TransformerDecoderBlock(8, 2, 16, causal=1)


def test_heads_first_attention_equals_attend_in_values_and_gradients():
    """The decode cache's layout (`project_key_value_heads_first` + `attend_heads_first`) computes
    what `attend` computes; on TensorFlow bit for bit (the same products of the same operands)."""
    attention = CachedMultiHeadAttention(num_heads=2, key_dim=4)
    attention.build((None, None, 8), (None, None, 8))
    query = keras.Variable(keras.random.normal((3, 1, 8), seed=1))
    memory = keras.Variable(keras.random.normal((3, 5, 8), seed=2))
    mask = ops.convert_to_tensor(np.arange(5)[None, None, :] < np.array([5, 3, 1])[:, None, None])

    def loss(attend, project):
        outputs = attend(attention.project_query(query), *project(memory), attention_mask=mask)
        return ops.sum(outputs * ops.arange(8, dtype="float32")), outputs

    variables = [query, memory] + attention.trainable_variables
    results = [
        value_and_gradients(lambda: loss(attend, project), variables, has_aux=True)
        for attend, project in (
            (attention.attend, attention.project_key_value),
            (attention.attend_heads_first, attention.project_key_value_heads_first),
        )
    ]
    (_, outputs), gradients = results[0]
    (_, heads_first_outputs), heads_first_gradients = results[1]
    exact = keras.backend.backend() == "tensorflow"
    compare = np.testing.assert_array_equal if exact else lambda a, b: np.testing.assert_allclose(a, b, atol=1e-6)
    compare(ops.convert_to_numpy(outputs), ops.convert_to_numpy(heads_first_outputs))
    assert len(gradients) == len(variables) == 10
    for gradient, heads_first_gradient in zip(gradients, heads_first_gradients):
        compare(ops.convert_to_numpy(gradient), ops.convert_to_numpy(heads_first_gradient))
