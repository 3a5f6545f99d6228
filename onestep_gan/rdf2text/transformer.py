"""`TransformerGenerator`: the encoder-decoder that writes text from linearised RDF triples.

The body is `TransformerBackbone` (shared with the discriminator) with causal text blocks;
the output projection is tied to the token embedding (Press & Wolf, 2017), which saves
`vocabulary_size * model_dim` parameters.

Two features serve the GAN trainer:

- Soft inputs. `call` and `decode_step` accept either integer token ids or float
  distributions over the vocabulary; a distribution is embedded as `probs @ E`, which is
  exactly the id embedding for a one-hot, and lets gradients flow back through
  straight-through Gumbel-softmax samples (Jang et al., 2017).
- Placeholder copying (`placeholder_ids`). Entities reach the text as delexicalised
  placeholders (`ENT_1`, ...). With tied embeddings alone, a placeholder's logit comes from
  its one embedding, which says nothing about which triple it fills in this input; the model
  must learn the binding through attention, and small models bind values to the wrong triple.
  With `placeholder_ids`, the logit of each placeholder is a pointer over the source
  (Vinyals et al., 2015; See et al., 2017): `gate(h) + log sum_j softmax_j(q(h) . k(m_j))` over
  the source positions j holding that placeholder, where `m_j` is the encoder state there (which
  has read the predicate next to it). Placeholders absent from the source get no probability,
  so the model cannot invent one (their logit is -30). The other logits are unchanged.
- A fixed-shape cache. `init_cache` preallocates self-attention keys/values (heads first:
  `(batch, heads, head_dim, max_length)` and `(batch, heads, max_length, head_dim)`, the layouts
  the attention products take as they are) and computes the cross-attention keys/values
  once; `decode_step` writes position `step` with a position-mask select (differentiable,
  unlike `slice_update` on TensorFlow) and masks positions `> step`, so it runs inside
  `keras.ops.while_loop` (and under XLA) with fixed shapes.

References:
- Vaswani et al., 2017. Attention Is All You Need.
- Press & Wolf, 2017. Using the Output Embedding to Improve Language Models.
- Vinyals, Fortunato & Jaitly, 2015. Pointer Networks.
- See, Liu & Manning, 2017. Get To The Point: Summarization with Pointer-Generator Networks.
"""

import math

import keras
import numpy as np
from keras import ops

from onestep_gan.rdf2text.backbone import TransformerBackbone

# Added to the copy scores of source positions that hold no placeholder (exp() underflows to 0).
_MASK_VALUE = -1e9
# Logit of a placeholder absent from the source: probability ~1e-13 next to ordinary logits, so
# it is never chosen, yet finite, so a label-smoothed loss (which puts eps / vocab on every id)
# stays small instead of adding eps / vocab * 1e9.
_ABSENT_PLACEHOLDER_LOGIT = -30.0


@keras.saving.register_keras_serializable(package="onestep_gan")
class TransformerGenerator(TransformerBackbone):
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
        pad_id, bos_id, eos_id: special token ids (a `TextPreprocessor` has them:
            `**preprocessor.special_ids`).
        placeholder_ids: ids of the placeholders to copy from the source by pointer
            (`preprocessor.copy_ids`: the entity placeholders, and the predicate ones of a
            preprocessor with `predicate_placeholders`); empty (the default) gives a plain
            tied-softmax decoder. With copying, `decode` and `init_cache` need the `source_ids`.

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
        placeholder_ids=(),
        **kwargs,
    ):
        super().__init__(
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
            causal=True,
            **kwargs,
        )
        for name, value in (("bos_id", bos_id), ("eos_id", eos_id)):
            self._check_token_id(name, value, vocabulary_size)
        self.bos_id = int(bos_id)
        self.eos_id = int(eos_id)
        placeholder_ids = tuple(int(index) for index in placeholder_ids)
        for index in placeholder_ids:
            self._check_token_id("placeholder_ids", index, vocabulary_size)
        special = {self.pad_id, self.bos_id, self.eos_id} & set(placeholder_ids)
        if special or len(set(placeholder_ids)) != len(placeholder_ids):
            raise ValueError(
                "`placeholder_ids` must be distinct and exclude the PAD, BOS and EOS ids. "
                f"Received: placeholder_ids={list(placeholder_ids)}"
            )
        self.placeholder_ids = placeholder_ids
        # `(P, vocabulary)` 0/1: row p has its 1 at the id of placeholder p (`_project_to_vocabulary`).
        self._placeholder_scatter = np.zeros((len(placeholder_ids), vocabulary_size), dtype="float32")
        self._placeholder_scatter[range(len(placeholder_ids)), placeholder_ids] = 1
        self._projection_keep = 1.0 - self._placeholder_scatter.sum(axis=0)  # (vocabulary,): 0 at the placeholders

    def build_head(self):
        self.output_bias = self.add_weight(
            name="output_bias", shape=(self.vocabulary_size,), initializer="zeros"
        )
        if self.placeholder_ids:
            # Created here, after every backbone layer: their initialisers draw seeds last, so
            # the backbone's seeded initialisation is the same with and without copying.
            self.copy_query = keras.layers.Dense(self.model_dim, use_bias=False, name="copy_query")
            self.copy_key = keras.layers.Dense(self.model_dim, use_bias=False, name="copy_key")
            self.copy_gate = keras.layers.Dense(1, name="copy_gate")
            hidden_shape = (None, None, self.model_dim)
            for layer in (self.copy_query, self.copy_key, self.copy_gate):
                layer.build(hidden_shape)

    def _check_copy_inputs(self, source_ids):
        if self.placeholder_ids and source_ids is None:
            raise ValueError(
                "This generator copies placeholders from the source (placeholder_ids="
                f"{list(self.placeholder_ids)[:4]}...): pass `source_ids` to `decode` and `init_cache`."
            )

    def _project_to_vocabulary(self, hidden, copy_keys=None, source_ids=None):
        """Logits `(batch, t, vocab)`; with copying, placeholders' logits point into the source."""
        output_matrix = ops.transpose(self.embedding_matrix)  # (model_dim, vocab)
        if not self.placeholder_ids:
            return ops.matmul(hidden, output_matrix) + self.output_bias
        # The copy logits reach the vocabulary axis through a fixed 0/1 matrix whose row p has one
        # 1, at the id of placeholder p, and the placeholders' columns of the output projection
        # are zeroed: logits = hidden @ (W * keep) + b * keep + copy_logits @ scatter. Each
        # placeholder's logit is then its copy logit and every other logit the projection's, exactly
        # (every sum has one non-zero term), and so are their gradients. A gather of the copy logits
        # along the vocabulary axis and a select did the same at a higher cost on a CPU (the
        # gather's gradient is a segment sum over that axis). Where float32 products run in TF32 (TensorFlow's
        # and JAX's default on recent NVIDIA GPUs), the copy logits are rounded as the projection's are.
        scatter = self._placeholder_scatter
        keep = ops.cast(self._projection_keep, output_matrix.dtype)  # (vocab,)
        logits = ops.matmul(hidden, output_matrix * keep) + self.output_bias * ops.cast(keep, self.output_bias.dtype)
        placeholder_ids = ops.convert_to_tensor(self.placeholder_ids, dtype="int32")
        slots = ops.equal(ops.cast(source_ids, "int32")[:, :, None], placeholder_ids)  # (b, s, P)
        # The pointer in float32 under any policy: its mask value is -inf in float16, and a
        # logsumexp over only masked entries then has NaN gradients.
        scores = ops.cast(ops.einsum("btd,bsd->bts", self.copy_query(hidden), copy_keys), "float32")
        scores = scores * (1.0 / math.sqrt(self.model_dim))
        holds_placeholder = ops.any(slots, axis=-1)[:, None, :]  # (b, 1, s)
        scores = ops.where(holds_placeholder, scores, _MASK_VALUE)
        pointer = ops.log_softmax(scores, axis=-1)  # (b, t, s), over placeholder positions
        slot_bias = ops.where(slots, 0.0, _MASK_VALUE)[:, None, :, :]  # (b, 1, s, P)
        per_placeholder = ops.logsumexp(pointer[..., None] + slot_bias, axis=2)
        copy_logits = ops.cast(self.copy_gate(hidden), "float32") + per_placeholder  # (b, t, P)
        absent = ops.logical_not(ops.any(slots, axis=1))[:, None, :]  # (b, 1, P)
        copy_logits = ops.where(absent, ops.cast(_ABSENT_PLACEHOLDER_LOGIT, copy_logits.dtype), copy_logits)
        copied = ops.matmul(copy_logits, ops.cast(scatter, copy_logits.dtype))  # (b, t, vocab)
        return logits + ops.cast(copied, logits.dtype)

    def decode(self, target, memory, source_mask, training=False, source_ids=None):
        """Teacher-forced decoder: target ids or distributions -> logits `(b, t, vocab)`."""
        self._check_copy_inputs(source_ids)
        hidden, _ = self.read_text(target, memory, source_mask, training=training)
        copy_keys = self.copy_key(memory) if self.placeholder_ids else None
        return self._project_to_vocabulary(hidden, copy_keys, source_ids)

    def call(self, inputs, training=False):
        memory, source_mask = self.encode(inputs["source"], training=training)
        return self.decode(
            inputs["target"], memory, source_mask, training=training, source_ids=inputs["source"]
        )

    def init_cache(self, memory, source_mask, max_length, source_ids=None):
        """Fixed-shape decode cache for `memory (batch, source_len, model_dim)`.

        Returns a dict: `"source_mask"` (batch, source_len) bool and `"layers"`, a list with
        one dict per decoder block holding `self_attention_keys` (zeros, `(batch, heads,
        head_dim, max_length)`), `self_attention_values` (zeros, `(batch, heads, max_length,
        head_dim)`) and `cross_attention_keys`/`cross_attention_values` (the same layouts over
        `source_len`, computed here once).
        With copying it also holds `"source_ids"` and the pointer keys `"copy_keys"`.
        Every tensor has the batch as its leading axis, so beam search can reorder it.
        """
        self._ensure_built()
        self._check_copy_inputs(source_ids)
        max_length = int(max_length)
        if not 1 <= max_length <= self.max_target_length:
            raise ValueError(
                f"`max_length` must be in [1, max_target_length={self.max_target_length}]. "
                f"Received: max_length={max_length}"
            )
        batch_size = ops.shape(memory)[0]
        head_dim = self.model_dim // self.num_heads
        empty_keys = ops.zeros((batch_size, self.num_heads, head_dim, max_length), dtype=memory.dtype)
        empty_values = ops.zeros((batch_size, self.num_heads, max_length, head_dim), dtype=memory.dtype)
        layers = []
        for block in self.decoder_blocks:
            cross_keys, cross_values = block.cross_attention.project_key_value_heads_first(memory)
            layers.append(
                {
                    "self_attention_keys": empty_keys,
                    "self_attention_values": empty_values,
                    "cross_attention_keys": cross_keys,
                    "cross_attention_values": cross_values,
                }
            )
        cache = {"source_mask": source_mask, "layers": layers}
        if self.placeholder_ids:
            cache["source_ids"] = ops.cast(source_ids, "int32")
            cache["copy_keys"] = self.copy_key(memory)
        return cache

    def decode_step(self, token, step, cache, training=False):
        """Logits for position `step` given the token at `step`.

        `token`: int `(batch,)` ids or float `(batch, vocab)` distributions; `step`: scalar
        int (Python or tensor). Returns `(logits (batch, vocab), new_cache)`.
        """
        self._ensure_built()
        step = ops.convert_to_tensor(step, dtype="int32")
        hidden = ops.expand_dims(self.embed_tokens(token), axis=1)  # (batch, 1, model_dim)
        hidden = self.target_position_embedding(hidden, start_index=step)
        hidden = self.embedding_dropout(hidden, training=training)
        new_layers = []
        for block, layer_cache in zip(self.decoder_blocks, cache["layers"]):
            hidden, layer_cache = block.decode_step(
                hidden, step, layer_cache, cache["source_mask"], training=training
            )
            new_layers.append(layer_cache)
        logits = self._project_to_vocabulary(
            self.decoder_norm(hidden), cache.get("copy_keys"), cache.get("source_ids")
        )[:, 0, :]
        return logits, dict(cache, layers=new_layers)

    def get_config(self):
        config = super().get_config()
        config.update(self.backbone_config())
        config.update(
            {
                "num_encoder_layers": self.num_encoder_layers,
                "num_decoder_layers": self.num_decoder_layers,
                "bos_id": self.bos_id,
                "eos_id": self.eos_id,
                "placeholder_ids": list(self.placeholder_ids),
            }
        )
        return config
