"""Transformer building blocks shared by the generator and the discriminator.

- `PositionEmbedding`: learned absolute positions, added to the inputs (a decode step passes
  its position as `start_index`).
- `CachedMultiHeadAttention`: scaled dot-product attention whose query / key-value
  projections can be called apart, so a decode cache can keep projected keys and values.
- `TransformerEncoderBlock`: pre-LayerNorm self-attention + feed-forward.
- `TransformerDecoderBlock`: pre-LayerNorm self-attention (causal by default; `causal=False`
  makes it the discriminator's bidirectional text block), cross-attention to a memory,
  feed-forward, and the single-position `decode_step` over a fixed-shape cache.
- `validate_transformer_args`, `is_integer`: argument checks and the ids-or-distributions test
  used by every model here.

References:
- Vaswani et al., 2017. Attention Is All You Need.
- Xiong et al., 2020. On Layer Normalization in the Transformer Architecture (pre-LN).
"""

import math

import keras
from keras import ops

# Added to the attention scores of masked positions; exp() of it underflows to exactly 0
# in float32, so appending masked (padding) positions leaves the output unchanged.
_MASK_VALUE = -1e9


def is_integer(tensor):
    """Whether `tensor` holds integer ids (rather than float distributions)."""
    return "int" in keras.backend.standardize_dtype(tensor.dtype)


@keras.saving.register_keras_serializable(package="onestep_gan")
class PositionEmbedding(keras.layers.Layer):
    """Learned absolute position embeddings, added to the inputs.

    Args:
        sequence_length: the largest number of positions.
        initializer: initializer of the `(sequence_length, hidden_dim)` table.

    Call arguments:
        inputs: `(batch, length, hidden_dim)` float tensor.
        start_index: int (Python or scalar tensor), the position of `inputs[:, 0]`;
            a decode step passes its step here.

    Returns `inputs + positions[start_index : start_index + length]`.
    """

    def __init__(self, sequence_length, initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        if sequence_length is None or int(sequence_length) < 1:
            raise ValueError(
                "`sequence_length` must be a positive integer. "
                f"Received: sequence_length={sequence_length}"
            )
        self.sequence_length = int(sequence_length)
        self.initializer = keras.initializers.get(initializer)

    def build(self, input_shape):
        hidden_dim = input_shape[-1]
        if hidden_dim is None:
            raise ValueError(
                "The last dimension of the inputs to `PositionEmbedding` must be known. "
                f"Received: input_shape={input_shape}"
            )
        self.position_embeddings = self.add_weight(
            name="position_embeddings",
            shape=(self.sequence_length, hidden_dim),
            initializer=self.initializer,
        )

    def call(self, inputs, start_index=0):
        length = ops.shape(inputs)[1]
        hidden_dim = ops.shape(self.position_embeddings)[1]
        # The variable's value, not the variable: JAX's `slice` does not take a Keras Variable.
        positions = ops.slice(
            ops.convert_to_tensor(self.position_embeddings), (start_index, 0), (length, hidden_dim)
        )
        return inputs + ops.cast(positions, inputs.dtype)[None, :, :]

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "sequence_length": self.sequence_length,
                "initializer": keras.initializers.serialize(self.initializer),
            }
        )
        return config


@keras.saving.register_keras_serializable(package="onestep_gan")
class CachedMultiHeadAttention(keras.layers.Layer):
    """Multi-head scaled dot-product attention whose projections can be called apart.

    `keras.layers.MultiHeadAttention` hides its key/value projections; a decode cache needs
    them, so this layer exposes `project_query`, `project_key_value` and `attend`.

    Args:
        num_heads: number of attention heads.
        key_dim: size of each head; the output size is the query's last dimension.

    Call arguments:
        query: `(batch, query_len, dim)`.
        value: `(batch, key_len, dim)`, used for both keys and values.
        attention_mask: bool, broadcastable to `(batch, query_len, key_len)`; True = attend.

    Returns `(batch, query_len, dim)`.
    """

    def __init__(self, num_heads, key_dim, **kwargs):
        super().__init__(**kwargs)
        if int(num_heads) < 1:
            raise ValueError(f"`num_heads` must be positive. Received: num_heads={num_heads}")
        if int(key_dim) < 1:
            raise ValueError(f"`key_dim` must be positive. Received: key_dim={key_dim}")
        self.num_heads = int(num_heads)
        self.key_dim = int(key_dim)

    def build(self, query_shape, value_shape=None):
        model_dim = query_shape[-1]
        if model_dim is None:
            raise ValueError(
                "The last dimension of the query must be known. "
                f"Received: query_shape={query_shape}"
            )
        value_shape = query_shape if value_shape is None else value_shape
        heads_shape = (None, self.num_heads, self.key_dim)
        self.query_dense = keras.layers.EinsumDense(
            "btd,dhk->bthk", output_shape=heads_shape, bias_axes="hk", name="query"
        )
        self.key_dense = keras.layers.EinsumDense(
            "btd,dhk->bthk", output_shape=heads_shape, bias_axes="hk", name="key"
        )
        self.value_dense = keras.layers.EinsumDense(
            "btd,dhk->bthk", output_shape=heads_shape, bias_axes="hk", name="value"
        )
        self.output_dense = keras.layers.EinsumDense(
            "bthk,hkd->btd", output_shape=(None, model_dim), bias_axes="d", name="attention_output"
        )
        self.query_dense.build(query_shape)
        self.key_dense.build(value_shape)
        self.value_dense.build(value_shape)
        self.output_dense.build((None, None, self.num_heads, self.key_dim))

    def project_query(self, query):
        return self.query_dense(query)  # (batch, query_len, heads, key_dim)

    def project_key_value(self, value):
        return self.key_dense(value), self.value_dense(value)  # 2 x (batch, key_len, heads, key_dim)

    def project_key_value_heads_first(self, value):
        """Keys `(batch, heads, key_dim, key_len)` and values `(batch, heads, key_len, key_dim)`:
        the layouts `attend_heads_first` multiplies as they are (a decode cache keeps them)."""
        key_heads, value_heads = self.project_key_value(value)
        return ops.transpose(key_heads, (0, 2, 3, 1)), ops.transpose(value_heads, (0, 2, 1, 3))

    def _attention_weights(self, attention_scores, attention_mask):
        if attention_mask is not None:
            attention_mask = ops.expand_dims(attention_mask, axis=1)  # (batch, 1, query, key)
            attention_scores = ops.where(
                attention_mask, attention_scores, ops.cast(_MASK_VALUE, attention_scores.dtype)
            )
        return ops.softmax(attention_scores, axis=-1)  # (batch, heads, query, key)

    def attend(self, query_heads, key_heads, value_heads, attention_mask=None):
        """Attention over already projected heads; returns `(batch, query_len, dim)`."""
        query_heads = query_heads * ops.cast(1.0 / math.sqrt(self.key_dim), query_heads.dtype)
        attention_scores = ops.einsum("bqhk,bthk->bhqt", query_heads, key_heads)
        attention_weights = self._attention_weights(attention_scores, attention_mask)
        context = ops.einsum("bhqt,bthk->bqhk", attention_weights, value_heads)
        return self.output_dense(context)

    def attend_heads_first(self, query_heads, keys, values, attention_mask=None):
        """`attend` over keys and values in `project_key_value_heads_first`'s layouts.

        A decode step attends to the whole cache: kept in these layouts, the cache enters
        the two products without the two transposes per step and layer that `attend`'s
        einsums make of it (TensorFlow materialises them), and TensorFlow multiplies the same
        operands, so the values are `attend`'s bit for bit.
        """
        query_heads = query_heads * ops.cast(1.0 / math.sqrt(self.key_dim), query_heads.dtype)
        query_heads = ops.transpose(query_heads, (0, 2, 1, 3))  # (batch, heads, query, key_dim)
        attention_weights = self._attention_weights(ops.matmul(query_heads, keys), attention_mask)
        context = ops.matmul(attention_weights, values)  # (batch, heads, query, key_dim)
        return self.output_dense(ops.transpose(context, (0, 2, 1, 3)))

    def call(self, query, value, attention_mask=None):
        key_heads, value_heads = self.project_key_value(value)
        return self.attend(self.project_query(query), key_heads, value_heads, attention_mask)

    def get_config(self):
        config = super().get_config()
        config.update({"num_heads": self.num_heads, "key_dim": self.key_dim})
        return config


def validate_block_args(model_dim, num_heads, feedforward_dim, dropout):
    if int(model_dim) < 1:
        raise ValueError(f"`model_dim` must be positive. Received: model_dim={model_dim}")
    if int(num_heads) < 1 or int(model_dim) % int(num_heads) != 0:
        raise ValueError(
            "`model_dim` must be divisible by a positive `num_heads`. "
            f"Received: model_dim={model_dim}, num_heads={num_heads}"
        )
    if int(feedforward_dim) < 1:
        raise ValueError(
            f"`feedforward_dim` must be positive. Received: feedforward_dim={feedforward_dim}"
        )
    if not 0.0 <= float(dropout) < 1.0:
        raise ValueError(f"`dropout` must be in [0, 1). Received: dropout={dropout}")


class _TransformerBlock(keras.layers.Layer):
    """Shared argument handling and feed-forward sublayer of the two block types."""

    def __init__(self, model_dim, num_heads, feedforward_dim, dropout=0.0, **kwargs):
        super().__init__(**kwargs)
        validate_block_args(model_dim, num_heads, feedforward_dim, dropout)
        self.model_dim = int(model_dim)
        self.num_heads = int(num_heads)
        self.feedforward_dim = int(feedforward_dim)
        self.dropout = float(dropout)

    def _build_feedforward(self, input_shape):
        self.feedforward_norm = keras.layers.LayerNormalization(epsilon=1e-5, name="feedforward_norm")
        self.feedforward_hidden = keras.layers.Dense(
            self.feedforward_dim, activation="gelu", name="feedforward_hidden"
        )
        self.feedforward_output = keras.layers.Dense(self.model_dim, name="feedforward_output")
        self.dropout_layer = keras.layers.Dropout(self.dropout)
        self.feedforward_norm.build(input_shape)
        self.feedforward_hidden.build(input_shape)
        self.feedforward_output.build(tuple(input_shape[:-1]) + (self.feedforward_dim,))

    def _build_attention(self, name, input_shape):
        norm = keras.layers.LayerNormalization(epsilon=1e-5, name=f"{name}_norm")
        attention = CachedMultiHeadAttention(
            self.num_heads, self.model_dim // self.num_heads, name=name
        )
        norm.build(input_shape)
        attention.build(input_shape, input_shape)
        return norm, attention

    def _feedforward(self, inputs, training):
        hidden = self.feedforward_output(self.feedforward_hidden(self.feedforward_norm(inputs)))
        return inputs + self.dropout_layer(hidden, training=training)

    def _check_input_shape(self, input_shape):
        if input_shape[-1] != self.model_dim:
            raise ValueError(
                f"Expected inputs with last dimension model_dim={self.model_dim}. "
                f"Received: input_shape={input_shape}"
            )

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "model_dim": self.model_dim,
                "num_heads": self.num_heads,
                "feedforward_dim": self.feedforward_dim,
                "dropout": self.dropout,
            }
        )
        return config


@keras.saving.register_keras_serializable(package="onestep_gan")
class TransformerEncoderBlock(_TransformerBlock):
    """Pre-LayerNorm encoder block: self-attention then feed-forward, each residual.

    Args:
        model_dim: size of the hidden states.
        num_heads: attention heads; must divide `model_dim`.
        feedforward_dim: hidden size of the feed-forward sublayer.
        dropout: dropout rate on each residual branch.

    Call arguments:
        inputs: `(batch, source_len, model_dim)`.
        padding_mask: bool `(batch, source_len)`, True on real tokens; or None.
        training: bool.
    """

    def build(self, input_shape):
        self._check_input_shape(input_shape)
        self.self_attention_norm, self.self_attention = self._build_attention(
            "self_attention", input_shape
        )
        self._build_feedforward(input_shape)

    def call(self, inputs, padding_mask=None, training=False):
        attention_mask = None if padding_mask is None else padding_mask[:, None, :]
        normed = self.self_attention_norm(inputs)
        attended = self.self_attention(normed, normed, attention_mask=attention_mask)
        hidden = inputs + self.dropout_layer(attended, training=training)
        return self._feedforward(hidden, training)


@keras.saving.register_keras_serializable(package="onestep_gan")
class TransformerDecoderBlock(_TransformerBlock):
    """Pre-LayerNorm decoder block: self-attention, cross-attention, feed-forward.

    Args: as `TransformerEncoderBlock`, and
        causal: True (a decoder): position i attends to positions <= i. False: every
            position attends to every non-padding position, a text encoder that reads a
            memory (the discriminator's text blocks); such a block has no `decode_step`.

    Call arguments:
        inputs: `(batch, target_len, model_dim)`.
        memory: `(batch, source_len, model_dim)`, the encoder output.
        target_padding_mask: bool `(batch, target_len)` or None; padded keys are ignored.
        source_padding_mask: bool `(batch, source_len)` or None.
        training: bool.

    `decode_step` is the single-position path over a fixed-shape cache.
    """

    def __init__(self, model_dim, num_heads, feedforward_dim, dropout=0.0, causal=True, **kwargs):
        super().__init__(model_dim, num_heads, feedforward_dim, dropout, **kwargs)
        if not isinstance(causal, bool):
            raise ValueError(f"`causal` must be True or False. Received: causal={causal!r}")
        self.causal = causal

    def build(self, input_shape, memory_shape=None):
        self._check_input_shape(input_shape)
        self.self_attention_norm, self.self_attention = self._build_attention(
            "self_attention", input_shape
        )
        self.cross_attention_norm, self.cross_attention = self._build_attention(
            "cross_attention", input_shape
        )
        self._build_feedforward(input_shape)

    def call(
        self, inputs, memory, target_padding_mask=None, source_padding_mask=None, training=False
    ):
        if self.causal:
            target_len = ops.shape(inputs)[1]
            positions = ops.arange(target_len)
            self_attention_mask = (positions[None, :] <= positions[:, None])[None, :, :]  # (1, t, t)
            if target_padding_mask is not None:
                self_attention_mask = ops.logical_and(
                    self_attention_mask, target_padding_mask[:, None, :]
                )
        else:
            self_attention_mask = (
                None if target_padding_mask is None else target_padding_mask[:, None, :]
            )  # (batch, 1, t)
        normed = self.self_attention_norm(inputs)
        attended = self.self_attention(normed, normed, attention_mask=self_attention_mask)
        hidden = inputs + self.dropout_layer(attended, training=training)

        cross_mask = None if source_padding_mask is None else source_padding_mask[:, None, :]
        attended = self.cross_attention(self.cross_attention_norm(hidden), memory, cross_mask)
        hidden = hidden + self.dropout_layer(attended, training=training)
        return self._feedforward(hidden, training)

    def decode_step(
        self, inputs, step, layer_cache, source_padding_mask=None, training=False
    ):
        """One position. `inputs`: (batch, 1, model_dim); `layer_cache`: dict with
        `self_attention_keys` (batch, heads, head_dim, max_length), `self_attention_values`
        (batch, heads, max_length, head_dim), and `cross_attention_keys` / `cross_attention_values`
        in the same layouts over the source positions (`project_key_value_heads_first`).
        Returns `(outputs (batch, 1, model_dim), updated layer_cache)`."""
        if not self.causal:
            raise ValueError(
                "`decode_step` needs a causal block: a bidirectional (causal=False) block "
                "attends to later positions, which a step-by-step decoder has not written yet."
            )
        normed = self.self_attention_norm(inputs)
        query_heads = self.self_attention.project_query(normed)
        key_heads, value_heads = self.self_attention.project_key_value_heads_first(normed)
        # Write position `step` with a select rather than `ops.slice_update`: on the TensorFlow
        # backend slice_update lowers to XlaDynamicUpdateSlice, which has no gradient, and the
        # Gumbel-softmax sampler backpropagates through this cache.
        max_length = ops.shape(layer_cache["self_attention_values"])[2]
        positions = ops.arange(max_length)
        is_step = positions == step  # (max_length,)
        keys = ops.where(is_step[None, None, None, :], key_heads, layer_cache["self_attention_keys"])
        values = ops.where(is_step[None, None, :, None], value_heads, layer_cache["self_attention_values"])
        self_attention_mask = (positions <= step)[None, None, :]  # (1, 1, max_length)
        attended = self.self_attention.attend_heads_first(query_heads, keys, values, self_attention_mask)
        hidden = inputs + self.dropout_layer(attended, training=training)

        cross_mask = None if source_padding_mask is None else source_padding_mask[:, None, :]
        query_heads = self.cross_attention.project_query(self.cross_attention_norm(hidden))
        attended = self.cross_attention.attend_heads_first(
            query_heads,
            layer_cache["cross_attention_keys"],
            layer_cache["cross_attention_values"],
            cross_mask,
        )
        hidden = hidden + self.dropout_layer(attended, training=training)
        new_cache = dict(layer_cache, self_attention_keys=keys, self_attention_values=values)
        return self._feedforward(hidden, training), new_cache

    def get_config(self):
        config = super().get_config()
        config["causal"] = self.causal
        return config
