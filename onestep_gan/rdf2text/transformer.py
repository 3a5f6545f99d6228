"""Transformer encoder-decoder generator for RDF-to-text, with a cached decode step.

The generator reads a linearised set of RDF triples and writes text. Source and target
share one vocabulary and one token embedding, and the output projection is tied to that
embedding (Press & Wolf, 2017), which saves `vocabulary_size * model_dim` parameters.

Two features serve the GAN trainer:

- Soft inputs. `call` and `decode_step` accept either integer token ids or float
  distributions over the vocabulary; a distribution is embedded as `probs @ E`, which is
  exactly the id embedding for a one-hot, and lets gradients flow back through
  straight-through Gumbel-softmax samples (Jang et al., 2017).
- A fixed-shape cache. `init_cache` preallocates self-attention keys/values of shape
  `(batch, max_length, heads, head_dim)` and computes the cross-attention keys/values
  once; `decode_step` writes position `step` with a position-mask select (differentiable,
  unlike `slice_update` on TensorFlow) and masks positions `> step`, so it runs inside
  `keras.ops.while_loop` (and under XLA) with fixed shapes.

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


def _is_integer(tensor):
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
        positions = ops.slice(self.position_embeddings, (start_index, 0), (length, hidden_dim))
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

    def attend(self, query_heads, key_heads, value_heads, attention_mask=None):
        """Attention over already projected heads; returns `(batch, query_len, dim)`."""
        query_heads = query_heads * ops.cast(1.0 / math.sqrt(self.key_dim), query_heads.dtype)
        attention_scores = ops.einsum("bqhk,bthk->bhqt", query_heads, key_heads)
        if attention_mask is not None:
            attention_mask = ops.expand_dims(attention_mask, axis=1)  # (batch, 1, query, key)
            attention_scores = ops.where(
                attention_mask, attention_scores, ops.cast(_MASK_VALUE, attention_scores.dtype)
            )
        attention_weights = ops.softmax(attention_scores, axis=-1)  # (batch, heads, query, key)
        context = ops.einsum("bhqt,bthk->bqhk", attention_weights, value_heads)
        return self.output_dense(context)

    def call(self, query, value, attention_mask=None):
        key_heads, value_heads = self.project_key_value(value)
        return self.attend(self.project_query(query), key_heads, value_heads, attention_mask)

    def get_config(self):
        config = super().get_config()
        config.update({"num_heads": self.num_heads, "key_dim": self.key_dim})
        return config


def _validate_block_args(model_dim, num_heads, feedforward_dim, dropout):
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
        _validate_block_args(model_dim, num_heads, feedforward_dim, dropout)
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
    """Pre-LayerNorm decoder block: causal self-attention, cross-attention, feed-forward.

    Args: as `TransformerEncoderBlock`.

    Call arguments:
        inputs: `(batch, target_len, model_dim)`.
        memory: `(batch, source_len, model_dim)`, the encoder output.
        target_padding_mask: bool `(batch, target_len)` or None; padded keys are ignored.
        source_padding_mask: bool `(batch, source_len)` or None.
        training: bool.

    `decode_step` is the single-position path over a fixed-shape cache.
    """

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
        target_len = ops.shape(inputs)[1]
        positions = ops.arange(target_len)
        self_attention_mask = (positions[None, :] <= positions[:, None])[None, :, :]  # (1, t, t)
        if target_padding_mask is not None:
            self_attention_mask = ops.logical_and(
                self_attention_mask, target_padding_mask[:, None, :]
            )
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
        `self_attention_keys`/`self_attention_values` (batch, max_length, heads, head_dim)
        and `cross_attention_keys`/`cross_attention_values` (batch, source_len, heads, head_dim).
        Returns `(outputs (batch, 1, model_dim), updated layer_cache)`."""
        normed = self.self_attention_norm(inputs)
        query_heads = self.self_attention.project_query(normed)
        key_heads, value_heads = self.self_attention.project_key_value(normed)
        # Write position `step` with a select rather than `ops.slice_update`: on the TensorFlow
        # backend slice_update lowers to XlaDynamicUpdateSlice, which has no gradient, and the
        # Gumbel-softmax sampler backpropagates through this cache.
        max_length = ops.shape(layer_cache["self_attention_keys"])[1]
        positions = ops.arange(max_length)
        is_step = (positions == step)[None, :, None, None]  # (1, max_length, 1, 1)
        keys = ops.where(is_step, key_heads, layer_cache["self_attention_keys"])
        values = ops.where(is_step, value_heads, layer_cache["self_attention_values"])
        self_attention_mask = (positions <= step)[None, None, :]  # (1, 1, max_length)
        attended = self.self_attention.attend(query_heads, keys, values, self_attention_mask)
        hidden = inputs + self.dropout_layer(attended, training=training)

        cross_mask = None if source_padding_mask is None else source_padding_mask[:, None, :]
        query_heads = self.cross_attention.project_query(self.cross_attention_norm(hidden))
        attended = self.cross_attention.attend(
            query_heads,
            layer_cache["cross_attention_keys"],
            layer_cache["cross_attention_values"],
            cross_mask,
        )
        hidden = hidden + self.dropout_layer(attended, training=training)
        new_cache = dict(layer_cache, self_attention_keys=keys, self_attention_values=values)
        return self._feedforward(hidden, training), new_cache


@keras.saving.register_keras_serializable(package="onestep_gan")
class TransformerGenerator(keras.Model):
    """Encoder-decoder Transformer that writes text from linearised RDF triples.

    Args:
        vocabulary_size: size of the vocabulary shared by source and target (>= 4:
            PAD, UNK, BOS, EOS).
        max_source_length: number of learned source positions.
        max_target_length: number of learned target positions (also the longest decode).
        model_dim: hidden size.
        num_heads: attention heads; must divide `model_dim`.
        feedforward_dim: feed-forward hidden size.
        num_encoder_layers, num_decoder_layers: block counts (>= 1).
        dropout: dropout rate in [0, 1).
        pad_id, bos_id, eos_id: special token ids.

    Call arguments:
        inputs: dict with `"source"`, int `(batch, source_len)`, and `"target"`, the decoder
            input (BOS + text[:-1]) as int ids `(batch, target_len)` or as float
            distributions `(batch, target_len, vocabulary_size)`. A distribution position is
            padding when its pad probability exceeds 0.5.
        training: bool.

    Returns logits `(batch, target_len, vocabulary_size)`.

    Example:

    >>> model = TransformerGenerator(vocabulary_size=100, model_dim=32, num_heads=2,
    ...                              feedforward_dim=64, num_encoder_layers=1, num_decoder_layers=1)
    >>> logits = model({"source": source_ids, "target": decoder_input_ids})
    """

    def __init__(
        self,
        vocabulary_size,
        max_source_length=128,
        max_target_length=64,
        model_dim=256,
        num_heads=4,
        feedforward_dim=1024,
        num_encoder_layers=3,
        num_decoder_layers=3,
        dropout=0.1,
        pad_id=0,
        bos_id=2,
        eos_id=3,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if int(vocabulary_size) < 4:
            raise ValueError(
                "`vocabulary_size` must be at least 4 (PAD, UNK, BOS, EOS). "
                f"Received: vocabulary_size={vocabulary_size}"
            )
        for name, value in (
            ("max_source_length", max_source_length),
            ("max_target_length", max_target_length),
            ("num_encoder_layers", num_encoder_layers),
            ("num_decoder_layers", num_decoder_layers),
        ):
            if int(value) < 1:
                raise ValueError(f"`{name}` must be positive. Received: {name}={value}")
        _validate_block_args(model_dim, num_heads, feedforward_dim, dropout)
        for name, value in (("pad_id", pad_id), ("bos_id", bos_id), ("eos_id", eos_id)):
            if not 0 <= int(value) < int(vocabulary_size):
                raise ValueError(
                    f"`{name}` must be in [0, vocabulary_size={vocabulary_size}). "
                    f"Received: {name}={value}"
                )
        self.vocabulary_size = int(vocabulary_size)
        self.max_source_length = int(max_source_length)
        self.max_target_length = int(max_target_length)
        self.model_dim = int(model_dim)
        self.num_heads = int(num_heads)
        self.feedforward_dim = int(feedforward_dim)
        self.num_encoder_layers = int(num_encoder_layers)
        self.num_decoder_layers = int(num_decoder_layers)
        self.dropout = float(dropout)
        self.pad_id = int(pad_id)
        self.bos_id = int(bos_id)
        self.eos_id = int(eos_id)

        self.token_embedding = keras.layers.Embedding(
            self.vocabulary_size,
            self.model_dim,
            embeddings_initializer=keras.initializers.RandomNormal(stddev=self.model_dim**-0.5),
            name="token_embedding",
        )
        self.source_position_embedding = PositionEmbedding(
            self.max_source_length, name="source_position_embedding"
        )
        self.target_position_embedding = PositionEmbedding(
            self.max_target_length, name="target_position_embedding"
        )
        self.embedding_dropout = keras.layers.Dropout(self.dropout)
        block_args = (self.model_dim, self.num_heads, self.feedforward_dim, self.dropout)
        self.encoder_blocks = [
            TransformerEncoderBlock(*block_args, name=f"encoder_block_{index}")
            for index in range(self.num_encoder_layers)
        ]
        self.decoder_blocks = [
            TransformerDecoderBlock(*block_args, name=f"decoder_block_{index}")
            for index in range(self.num_decoder_layers)
        ]
        self.encoder_norm = keras.layers.LayerNormalization(epsilon=1e-5, name="encoder_norm")
        self.decoder_norm = keras.layers.LayerNormalization(epsilon=1e-5, name="decoder_norm")

    def build(self, input_shape=None):
        # Every size comes from the config, so `input_shape` is only checked, not used;
        # this lets `encode`/`decode_step` run on a model that was never called.
        hidden_shape = (None, None, self.model_dim)
        self.token_embedding.build((None, None))
        self.source_position_embedding.build(hidden_shape)
        self.target_position_embedding.build(hidden_shape)
        for block in self.encoder_blocks:
            block.build(hidden_shape)
        for block in self.decoder_blocks:
            block.build(hidden_shape, hidden_shape)
        self.encoder_norm.build(hidden_shape)
        self.decoder_norm.build(hidden_shape)
        self.output_bias = self.add_weight(
            name="output_bias", shape=(self.vocabulary_size,), initializer="zeros"
        )
        self.built = True

    def _ensure_built(self):
        if not self.built:
            self.build()

    @property
    def embedding_matrix(self):
        """The `(vocabulary_size, model_dim)` token embedding, tied to the output layer."""
        self._ensure_built()
        return self.token_embedding.embeddings

    def _embed_tokens(self, tokens):
        """Ids `(...)` or distributions `(..., vocab)` -> `(..., model_dim)`, scaled by sqrt(d)."""
        if _is_integer(tokens):
            embedded = self.token_embedding(tokens)
        else:
            embedded = ops.matmul(tokens, ops.cast(self.embedding_matrix, tokens.dtype))
        return embedded * ops.cast(math.sqrt(self.model_dim), embedded.dtype)

    def _project_to_vocabulary(self, hidden):
        return ops.matmul(hidden, ops.transpose(self.embedding_matrix)) + self.output_bias

    def encode(self, source_ids, training=False):
        """Returns `memory (batch, source_len, model_dim)` and `source_mask (batch, source_len)`."""
        self._ensure_built()
        source_mask = ops.not_equal(source_ids, self.pad_id)
        hidden = self.source_position_embedding(self._embed_tokens(source_ids))
        hidden = self.embedding_dropout(hidden, training=training)
        for block in self.encoder_blocks:
            hidden = block(hidden, padding_mask=source_mask, training=training)
        return self.encoder_norm(hidden), source_mask

    def decode(self, target, memory, source_mask, training=False):
        """Teacher-forced decoder: target ids or distributions -> logits `(b, t, vocab)`."""
        if _is_integer(target):
            target_mask = ops.not_equal(target, self.pad_id)
        else:
            target_mask = target[..., self.pad_id] <= 0.5
        hidden = self.target_position_embedding(self._embed_tokens(target))
        hidden = self.embedding_dropout(hidden, training=training)
        for block in self.decoder_blocks:
            hidden = block(
                hidden,
                memory,
                target_padding_mask=target_mask,
                source_padding_mask=source_mask,
                training=training,
            )
        return self._project_to_vocabulary(self.decoder_norm(hidden))

    def call(self, inputs, training=False):
        memory, source_mask = self.encode(inputs["source"], training=training)
        return self.decode(inputs["target"], memory, source_mask, training=training)

    def init_cache(self, memory, source_mask, max_length):
        """Fixed-shape decode cache for `memory (batch, source_len, model_dim)`.

        Returns a dict: `"source_mask"` (batch, source_len) bool and `"layers"`, a list with
        one dict per decoder block holding `self_attention_keys`/`self_attention_values`
        (zeros, `(batch, max_length, heads, head_dim)`) and `cross_attention_keys`/
        `cross_attention_values` (`(batch, source_len, heads, head_dim)`, computed here once).
        Every tensor has the batch as its leading axis, so beam search can reorder it.
        """
        self._ensure_built()
        max_length = int(max_length)
        if not 1 <= max_length <= self.max_target_length:
            raise ValueError(
                f"`max_length` must be in [1, max_target_length={self.max_target_length}]. "
                f"Received: max_length={max_length}"
            )
        batch_size = ops.shape(memory)[0]
        head_dim = self.model_dim // self.num_heads
        empty = ops.zeros((batch_size, max_length, self.num_heads, head_dim), dtype=memory.dtype)
        layers = []
        for block in self.decoder_blocks:
            cross_keys, cross_values = block.cross_attention.project_key_value(memory)
            layers.append(
                {
                    "self_attention_keys": empty,
                    "self_attention_values": empty,
                    "cross_attention_keys": cross_keys,
                    "cross_attention_values": cross_values,
                }
            )
        return {"source_mask": source_mask, "layers": layers}

    def decode_step(self, token, step, cache, training=False):
        """Logits for position `step` given the token at `step`.

        `token`: int `(batch,)` ids or float `(batch, vocab)` distributions; `step`: scalar
        int (Python or tensor). Returns `(logits (batch, vocab), new_cache)`.
        """
        self._ensure_built()
        step = ops.convert_to_tensor(step, dtype="int32")
        hidden = ops.expand_dims(self._embed_tokens(token), axis=1)  # (batch, 1, model_dim)
        hidden = self.target_position_embedding(hidden, start_index=step)
        hidden = self.embedding_dropout(hidden, training=training)
        new_layers = []
        for block, layer_cache in zip(self.decoder_blocks, cache["layers"]):
            hidden, layer_cache = block.decode_step(
                hidden, step, layer_cache, cache["source_mask"], training=training
            )
            new_layers.append(layer_cache)
        logits = self._project_to_vocabulary(self.decoder_norm(hidden))[:, 0, :]
        return logits, {"source_mask": cache["source_mask"], "layers": new_layers}

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "max_source_length": self.max_source_length,
                "max_target_length": self.max_target_length,
                "model_dim": self.model_dim,
                "num_heads": self.num_heads,
                "feedforward_dim": self.feedforward_dim,
                "num_encoder_layers": self.num_encoder_layers,
                "num_decoder_layers": self.num_decoder_layers,
                "dropout": self.dropout,
                "pad_id": self.pad_id,
                "bos_id": self.bos_id,
                "eos_id": self.eos_id,
            }
        )
        return config
