"""`TransformerBackbone`: the encoder-decoder body that the generator and discriminator share.

Both models read the linearised triples with the same token encoder and read a text with a
second stack of blocks that cross-attends to the triples; only the heads differ:

    source ids  -> token embedding + positions -> encoder blocks -> norm  = memory
    text (ids or distributions) -> token embedding + positions -> text blocks(memory) -> norm
    TransformerGenerator: causal text blocks, logits through the tied embedding (decoder)
    TextDiscriminator:    bidirectional text blocks, masked mean, one score

One token embedding serves the source and the text (the vocabulary is shared), so a
placeholder such as `ENT_1` has one vector on both sides. Text may be int ids or float
distributions `(batch, length, vocab)`; a distribution is embedded as `probs @ E`, exactly the
id's embedding for a one-hot, and differentiable for the GAN generator's gradient.

The attribute names (`token_embedding`, `encoder_blocks`, `decoder_blocks`, ...) are the
weight paths of saved `.keras` files: renaming one breaks loading of saved generators. The
layers are constructed and built in a fixed order, which fixes their seeded initialisation.
"""

import math

import keras
from keras import ops

from onestep_gan.rdf2text.layers import (
    PositionEmbedding,
    TransformerDecoderBlock,
    TransformerEncoderBlock,
    is_integer,
    validate_block_args,
)


class TransformerBackbone(keras.Model):
    """Token encoder over the triples plus a stack of text blocks that reads the encoder output.

    Not used alone: `TransformerGenerator` and `TextDiscriminator` add their heads.

    Args:
        vocabulary_size: size of the vocabulary shared by source and text (>= 4).
        max_source_length: number of learned source positions.
        max_target_length: number of learned text positions.
        model_dim: hidden size.
        num_heads: attention heads; must divide `model_dim`.
        feedforward_dim: feed-forward hidden size.
        num_encoder_layers, num_decoder_layers: block counts (>= 1) of the source and text stacks.
        dropout: dropout rate in [0, 1).
        pad_id: the padding token id.
        causal: whether the text blocks are causal (a decoder) or bidirectional.
    """

    def __init__(
        self,
        vocabulary_size,
        max_source_length,
        max_target_length,
        model_dim,
        num_heads,
        feedforward_dim,
        num_encoder_layers,
        num_decoder_layers,
        dropout,
        pad_id,
        causal,
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
        validate_block_args(model_dim, num_heads, feedforward_dim, dropout)
        self._check_token_id("pad_id", pad_id, vocabulary_size)
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
        # One dropout layer for both embeddings (one seed stream, as in saved runs).
        self.embedding_dropout = keras.layers.Dropout(self.dropout)
        block_args = (self.model_dim, self.num_heads, self.feedforward_dim, self.dropout)
        self.encoder_blocks = [
            TransformerEncoderBlock(*block_args, name=f"encoder_block_{index}")
            for index in range(self.num_encoder_layers)
        ]
        self.decoder_blocks = [
            TransformerDecoderBlock(*block_args, causal=causal, name=f"decoder_block_{index}")
            for index in range(self.num_decoder_layers)
        ]
        self.encoder_norm = keras.layers.LayerNormalization(epsilon=1e-5, name="encoder_norm")
        self.decoder_norm = keras.layers.LayerNormalization(epsilon=1e-5, name="decoder_norm")

    @staticmethod
    def _check_token_id(name, value, vocabulary_size):
        if not 0 <= int(value) < int(vocabulary_size):
            raise ValueError(
                f"`{name}` must be in [0, vocabulary_size={vocabulary_size}). "
                f"Received: {name}={value}"
            )

    def build(self, input_shape=None):
        # Every size comes from the config, so `input_shape` is not used; this lets
        # `encode` / `decode_step` run on a model that was never called.
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
        self.build_head()
        self.built = True

    def build_head(self):
        """Creates the subclass's own weights (called at the end of `build`)."""

    def _ensure_built(self):
        if not self.built:
            self.build()

    @property
    def embedding_matrix(self):
        """The `(vocabulary_size, model_dim)` token embedding."""
        self._ensure_built()
        return self.token_embedding.embeddings

    def embed_tokens(self, tokens):
        """Ids `(...)` or distributions `(..., vocab)` -> `(..., model_dim)`, scaled by sqrt(d)."""
        if is_integer(tokens):
            embedded = self.token_embedding(tokens)
        else:
            if tokens.shape[-1] != self.vocabulary_size:
                raise ValueError(
                    "Expected tokens as int ids or distributions over the last axis "
                    f"(..., vocabulary_size={self.vocabulary_size}); the generator and "
                    f"discriminator must share one vocabulary. Received: shape {tuple(tokens.shape)}"
                )
            embedded = ops.matmul(tokens, ops.cast(self.embedding_matrix, tokens.dtype))
        return embedded * ops.cast(math.sqrt(self.model_dim), embedded.dtype)

    def padding_mask(self, tokens):
        """True at real tokens: ids other than PAD, or distributions with PAD probability <= 0.5."""
        if is_integer(tokens):
            return ops.not_equal(tokens, self.pad_id)
        return tokens[..., self.pad_id] <= 0.5

    def encode(self, source_ids, training=False):
        """Returns `memory (batch, source_len, model_dim)` and `source_mask (batch, source_len)`."""
        self._ensure_built()
        source_mask = self.padding_mask(source_ids)
        hidden = self.source_position_embedding(self.embed_tokens(source_ids))
        hidden = self.embedding_dropout(hidden, training=training)
        for block in self.encoder_blocks:
            hidden = block(hidden, padding_mask=source_mask, training=training)
        return self.encoder_norm(hidden), source_mask

    def read_text(self, text, memory, source_mask, training=False):
        """Text ids or distributions -> `(hidden (batch, text_len, model_dim), text_mask)`."""
        text_mask = self.padding_mask(text)
        hidden = self.target_position_embedding(self.embed_tokens(text))
        hidden = self.embedding_dropout(hidden, training=training)
        for block in self.decoder_blocks:
            hidden = block(
                hidden,
                memory,
                target_padding_mask=text_mask,
                source_padding_mask=source_mask,
                training=training,
            )
        return self.decoder_norm(hidden), text_mask

    def backbone_config(self):
        """The constructor arguments both models share (for their `get_config`)."""
        return {
            "vocabulary_size": self.vocabulary_size,
            "max_source_length": self.max_source_length,
            "max_target_length": self.max_target_length,
            "model_dim": self.model_dim,
            "num_heads": self.num_heads,
            "feedforward_dim": self.feedforward_dim,
            "dropout": self.dropout,
            "pad_id": self.pad_id,
        }
