"""`TextDiscriminator`: scores a text given its RDF triples, for the conditional text GAN.

D reads two inputs, the linearised triples (int ids) and a text, either as int ids or as
distributions over the vocabulary `(batch, length, vocab)`: generated texts are the
straight-through Gumbel one-hots of `TextSampler`, embedded as `probs @ embedding_matrix`
(the id's embedding for a one-hot, and differentiable for the generator's gradient). Real
texts are looked up by id, which gives bit for bit the vectors of their exact one-hots, so
ids and one-hots score identically.

Architecture: `TransformerBackbone`, the generator's body, with bidirectional text blocks:
an encoder over the triples; text blocks that self-attend over the whole text (padding
masked) and cross-attend to the triples, so D can judge whether the text says what the
triples say; a masked mean over the text positions; a linear score. Padding positions (PAD
probability > 0.5) are masked as keys and left out of the mean, so appending PADs leaves
the score unchanged.
"""

import keras
from keras import ops

from onestep_gan.rdf2text.backbone import TransformerBackbone


@keras.saving.register_keras_serializable(package="onestep_gan")
class TextDiscriminator(TransformerBackbone):
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
        if int(num_layers) < 1:
            raise ValueError(f"`num_layers` must be positive. Received: num_layers={num_layers}")
        super().__init__(
            vocabulary_size,
            max_source_length,
            max_target_length,
            model_dim,
            num_heads,
            feedforward_dim,
            num_encoder_layers=num_layers,
            num_decoder_layers=num_layers,
            dropout=dropout,
            pad_id=pad_id,
            causal=False,
            **kwargs,
        )
        self.num_layers = int(num_layers)
        self.score_dense = keras.layers.Dense(1, name="score")

    def build_head(self):
        self.score_dense.build((None, self.model_dim))

    def embed_text(self, text):
        """Text -> `(embedded (batch, len, model_dim) scaled by sqrt(d), mask (batch, len))`.

        Distributions `(batch, len, vocab)` are embedded as `probs @ embedding_matrix`, the
        path gradients take to the generator. Int ids `(batch, len)` are looked up: the row
        of `E` is bit for bit what their exact one-hot times `E` gives (one 1.0 and zeros),
        without a `(batch, len, vocab) @ (vocab, d)` product for texts no gradient needs to
        reach. The mask is True at non-PAD positions.
        """
        self._ensure_built()
        return self.embed_tokens(text), self.padding_mask(text)

    def call(self, inputs, training=False):
        if not isinstance(inputs, (list, tuple)) or len(inputs) != 2:
            raise ValueError(
                "TextDiscriminator takes [source_ids, text]. "
                f"Received: {type(inputs).__name__} of length "
                f"{len(inputs) if isinstance(inputs, (list, tuple)) else 'n/a'}"
            )
        source_ids, text = (ops.convert_to_tensor(part) for part in inputs)
        memory, source_mask = self.encode(source_ids, training=training)
        return self._score(text, memory, source_mask, training)

    def score_texts(self, source_ids, texts, training=False):
        """Scores of several texts against one batch of triplesets, the triplesets encoded once.

        Args:
            source_ids: int `(batch, source_len)`.
            texts: a list of texts for those rows, each as `call` takes it (ids or distributions).

        Returns a list of `(batch, 1)` scores, one a text. Without dropout each equals
        `self([source_ids, text])` exactly; in training all texts read one encoding, with one
        dropout draw, where separate calls would draw one a text.
        """
        memory, source_mask = self.encode(ops.convert_to_tensor(source_ids), training=training)
        return [self._score(ops.convert_to_tensor(text), memory, source_mask, training) for text in texts]

    def _score(self, text, memory, source_mask, training):
        hidden, text_mask = self.read_text(text, memory, source_mask, training=training)
        weights = ops.cast(text_mask, hidden.dtype)[:, :, None]  # (batch, text_len, 1)
        pooled = ops.sum(hidden * weights, axis=1) / ops.maximum(ops.sum(weights, axis=1), 1.0)
        return self.score_dense(pooled)  # (batch, 1)

    def compute_output_shape(self, input_shape):
        return (input_shape[0][0], 1)

    def get_config(self):
        config = super().get_config()
        config.update(self.backbone_config())
        config["num_layers"] = self.num_layers
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
