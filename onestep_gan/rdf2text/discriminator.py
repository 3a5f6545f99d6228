"""`TextDiscriminator`: scores a text given its RDF triples, for the conditional text GAN.

D reads two inputs, the linearised triples (int ids) and a text given as distributions over
the vocabulary `(batch, length, vocab)`: real texts as exact one-hots, generated texts as the
straight-through Gumbel one-hots of `TextSampler`. A distribution is embedded as
`probs @ embedding_matrix`, the id's embedding for a one-hot, and differentiable for the
generator's gradient. Int ids are accepted too (one-hot encoded first, so ids and one-hots
score identically), convenient for evaluation.

Architecture: the blocks of `transformer.py`. A Transformer encoder over the triples; a text
encoder whose blocks self-attend over the whole text (bidirectional, padding masked) and
cross-attend to the triples, so D can judge whether the text says what the triples say; a
masked mean over the text positions; a linear score. Padding positions (PAD probability
> 0.5) are masked as keys and left out of the mean, so appending PADs leaves the score
unchanged.
"""

import math

import keras
from keras import ops

from onestep_gan.rdf2text.transformer import (
    PositionEmbedding,
    TransformerDecoderBlock,
    TransformerEncoderBlock,
    _validate_block_args,
)


def _is_integer(tensor):
    return "int" in keras.backend.standardize_dtype(tensor.dtype)


@keras.saving.register_keras_serializable(package="onestep_gan")
class BidirectionalCrossAttentionBlock(TransformerDecoderBlock):
    """`TransformerDecoderBlock` without the causal mask: a text encoder block.

    Self-attention over all (non-padding) positions, cross-attention to a memory, then
    feed-forward; pre-LayerNorm, residual. Same weights and arguments as the decoder block.

    Call arguments:
        inputs: `(batch, target_len, model_dim)`.
        memory: `(batch, source_len, model_dim)`.
        target_padding_mask: bool `(batch, target_len)` or None; True on real tokens.
        source_padding_mask: bool `(batch, source_len)` or None.
        training: bool.
    """

    def call(
        self, inputs, memory, target_padding_mask=None, source_padding_mask=None, training=False
    ):
        self_mask = None if target_padding_mask is None else target_padding_mask[:, None, :]
        normed = self.self_attention_norm(inputs)
        attended = self.self_attention(normed, normed, attention_mask=self_mask)
        hidden = inputs + self.dropout_layer(attended, training=training)

        cross_mask = None if source_padding_mask is None else source_padding_mask[:, None, :]
        attended = self.cross_attention(self.cross_attention_norm(hidden), memory, cross_mask)
        hidden = hidden + self.dropout_layer(attended, training=training)
        return self._feedforward(hidden, training)

    def decode_step(self, *args, **kwargs):
        raise NotImplementedError("A bidirectional block has no causal decode step.")


@keras.saving.register_keras_serializable(package="onestep_gan")
class TextDiscriminator(keras.Model):
    """Transformer discriminator of (triples, text) pairs; one score per example.

    Args:
        vocabulary_size: size of the vocabulary shared with the generator (>= 4).
        max_source_length: number of learned source positions.
        max_target_length: number of learned text positions (longest text).
        model_dim: hidden size.
        num_heads: attention heads; must divide `model_dim`.
        feedforward_dim: feed-forward hidden size.
        num_layers: number of encoder blocks and of text blocks (>= 1 each).
        dropout: dropout rate in [0, 1).
        pad_id: the padding token id.

    Call arguments:
        inputs: `[source_ids, text]`: int `(batch, source_len)` and either float
            `(batch, text_len, vocabulary_size)` distributions or int `(batch, text_len)` ids.
        training: bool.

    Returns raw scores (logits) `(batch, 1)`.

    Example:

    >>> discriminator = TextDiscriminator(vocabulary_size=3000, model_dim=128, num_heads=4,
    ...                                   feedforward_dim=512, num_layers=2)
    >>> scores = discriminator([source_ids, keras.ops.one_hot(text_ids, 3000)])
    """

    def __init__(
        self,
        vocabulary_size,
        max_source_length=128,
        max_target_length=64,
        model_dim=256,
        num_heads=4,
        feedforward_dim=1024,
        num_layers=2,
        dropout=0.1,
        pad_id=0,
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
            ("num_layers", num_layers),
        ):
            if int(value) < 1:
                raise ValueError(f"`{name}` must be positive. Received: {name}={value}")
        _validate_block_args(model_dim, num_heads, feedforward_dim, dropout)
        if not 0 <= int(pad_id) < int(vocabulary_size):
            raise ValueError(
                f"`pad_id` must be in [0, vocabulary_size={vocabulary_size}). "
                f"Received: pad_id={pad_id}"
            )
        self.vocabulary_size = int(vocabulary_size)
        self.max_source_length = int(max_source_length)
        self.max_target_length = int(max_target_length)
        self.model_dim = int(model_dim)
        self.num_heads = int(num_heads)
        self.feedforward_dim = int(feedforward_dim)
        self.num_layers = int(num_layers)
        self.dropout = float(dropout)
        self.pad_id = int(pad_id)

        self.token_embedding = keras.layers.Embedding(
            self.vocabulary_size,
            self.model_dim,
            embeddings_initializer=keras.initializers.RandomNormal(stddev=self.model_dim**-0.5),
            name="token_embedding",
        )
        self.source_position_embedding = PositionEmbedding(
            self.max_source_length, name="source_position_embedding"
        )
        self.text_position_embedding = PositionEmbedding(
            self.max_target_length, name="text_position_embedding"
        )
        self.embedding_dropout = keras.layers.Dropout(self.dropout)
        block_args = (self.model_dim, self.num_heads, self.feedforward_dim, self.dropout)
        self.source_blocks = [
            TransformerEncoderBlock(*block_args, name=f"source_block_{index}")
            for index in range(self.num_layers)
        ]
        self.text_blocks = [
            BidirectionalCrossAttentionBlock(*block_args, name=f"text_block_{index}")
            for index in range(self.num_layers)
        ]
        self.source_norm = keras.layers.LayerNormalization(epsilon=1e-5, name="source_norm")
        self.text_norm = keras.layers.LayerNormalization(epsilon=1e-5, name="text_norm")
        self.score_dense = keras.layers.Dense(1, name="score")

    def build(self, input_shape=None):
        # Sizes come from the config; the text's vocabulary axis is checked in `call`.
        hidden_shape = (None, None, self.model_dim)
        self.token_embedding.build((None, None))
        self.source_position_embedding.build(hidden_shape)
        self.text_position_embedding.build(hidden_shape)
        for block in self.source_blocks:
            block.build(hidden_shape)
        for block in self.text_blocks:
            block.build(hidden_shape, hidden_shape)
        self.source_norm.build(hidden_shape)
        self.text_norm.build(hidden_shape)
        self.score_dense.build((None, self.model_dim))
        self.built = True

    @property
    def embedding_matrix(self):
        """The `(vocabulary_size, model_dim)` token embedding (D's own, not G's)."""
        if not self.built:
            self.build()
        return self.token_embedding.embeddings

    def embed_text(self, text):
        """Text -> `(embedded (batch, len, model_dim) scaled by sqrt(d), mask (batch, len))`.

        Distributions `(batch, len, vocab)` are embedded as `probs @ embedding_matrix`, the
        path gradients take to the generator. Int ids `(batch, len)` are looked up: the row
        of `E` is bit for bit what their exact one-hot times `E` gives (one 1.0 and zeros),
        so real texts and one-hot samples look the same to the discriminator, without a
        `(batch, len, vocab) @ (vocab, d)` product for texts no gradient needs to reach.
        The mask is True at non-PAD positions.
        """
        if _is_integer(text):
            embedded = ops.cast(self.token_embedding(text), "float32")
            mask = ops.not_equal(text, self.pad_id)
        else:
            if len(text.shape) != 3 or text.shape[-1] != self.vocabulary_size:
                raise ValueError(
                    "Expected the text as int ids (batch, length) or distributions "
                    f"(batch, length, vocabulary_size={self.vocabulary_size}); the generator "
                    "and discriminator must share one vocabulary. "
                    f"Received: text shape {tuple(text.shape)}"
                )
            embedded = ops.matmul(text, ops.cast(self.embedding_matrix, text.dtype))
            mask = text[..., self.pad_id] <= 0.5
        return embedded * ops.cast(math.sqrt(self.model_dim), embedded.dtype), mask

    def call(self, inputs, training=False):
        if not isinstance(inputs, (list, tuple)) or len(inputs) != 2:
            raise ValueError(
                "TextDiscriminator takes [source_ids, text]. "
                f"Received: {type(inputs).__name__} of length "
                f"{len(inputs) if isinstance(inputs, (list, tuple)) else 'n/a'}"
            )
        source_ids, text = inputs
        source_ids = ops.convert_to_tensor(source_ids)
        text_embedded, text_mask = self.embed_text(ops.convert_to_tensor(text))
        # Source ids take the lookup path too: (batch, source_len, model_dim), mask.
        source_embedded, source_mask = self.embed_text(source_ids)
        memory = self.source_position_embedding(source_embedded)
        memory = self.embedding_dropout(memory, training=training)
        for block in self.source_blocks:
            memory = block(memory, padding_mask=source_mask, training=training)
        memory = self.source_norm(memory)  # (batch, source_len, model_dim)

        hidden = self.text_position_embedding(text_embedded)
        hidden = self.embedding_dropout(hidden, training=training)
        for block in self.text_blocks:
            hidden = block(
                hidden,
                memory,
                target_padding_mask=text_mask,
                source_padding_mask=source_mask,
                training=training,
            )
        hidden = self.text_norm(hidden)  # (batch, text_len, model_dim)

        weights = ops.cast(text_mask, hidden.dtype)[:, :, None]  # (batch, text_len, 1)
        pooled = ops.sum(hidden * weights, axis=1) / ops.maximum(ops.sum(weights, axis=1), 1.0)
        return self.score_dense(pooled)  # (batch, 1)

    def compute_output_shape(self, input_shape):
        return (input_shape[0][0], 1)

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
                "num_layers": self.num_layers,
                "dropout": self.dropout,
                "pad_id": self.pad_id,
            }
        )
        return config


def check_compatible(generator, discriminator):
    """Raises `ValueError` unless G and D share a vocabulary (size and PAD id).

    `generator`: a `TransformerGenerator` or a `TextSampler`; `discriminator`: a
    `TextDiscriminator`. Call it after building or loading the pair, before training:
    a mismatch otherwise surfaces as a shape error deep inside the first step, or not at
    all when the sizes happen to agree but the PAD ids do not.
    """
    for name in ("vocabulary_size", "pad_id"):
        generator_value = getattr(generator, name, None)
        discriminator_value = getattr(discriminator, name, None)
        if generator_value is None or discriminator_value is None:
            raise ValueError(
                f"Expected a text generator and discriminator with a `{name}`. Received: "
                f"{type(generator).__name__} and {type(discriminator).__name__}"
            )
        if generator_value != discriminator_value:
            raise ValueError(
                f"The generator and discriminator must share one vocabulary. Received: "
                f"generator {name}={generator_value}, discriminator {name}={discriminator_value}"
            )
