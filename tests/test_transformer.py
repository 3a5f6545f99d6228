"""TransformerGenerator: cache equivalence, soft inputs, masks, saving, arguments, sizes."""

import numpy as np
import pytest

import keras
from keras import ops

from onestep_gan.gradients import input_gradients, value_and_gradients
from onestep_gan.rdf2text.layers import TransformerDecoderBlock, TransformerEncoderBlock
from onestep_gan.rdf2text.transformer import TransformerGenerator

TINY = dict(
    vocabulary_size=11,
    max_source_length=7,
    max_target_length=6,
    model_dim=8,
    num_heads=2,
    feedforward_dim=16,
    num_encoder_layers=1,
    num_decoder_layers=2,
    dropout=0.0,
)
SOURCE = np.array([[5, 6, 7, 8, 0], [9, 4, 0, 0, 0]], dtype="int32")
# Decoder inputs (BOS + text[:-1]) without padding, so every position is a real query.
TARGET = np.array([[2, 4, 5, 6, 7, 3], [2, 10, 9, 8, 3, 3]], dtype="int32")


@pytest.fixture
def model():
    keras.utils.set_random_seed(1)
    generator = TransformerGenerator(**TINY)
    generator({"source": SOURCE, "target": TARGET})
    return generator


def _logits(model, source=SOURCE, target=TARGET, training=False):
    return ops.convert_to_numpy(model({"source": source, "target": target}, training=training))


def test_output_shape(model):
    logits = _logits(model)
    assert logits.shape == (2, 6, 11)
    assert logits.dtype == np.float32
    assert tuple(model.embedding_matrix.shape) == (11, 8)


def test_cached_decode_step_equals_full_call_at_every_position(model):
    full_logits = _logits(model)
    memory, source_mask = model.encode(SOURCE)
    cache = model.init_cache(memory, source_mask, max_length=6)
    # Heads first: keys (batch, heads, head_dim, length), values (batch, heads, length, head_dim).
    assert tuple(cache["layers"][0]["self_attention_keys"].shape) == (2, 2, 4, 6)
    assert tuple(cache["layers"][0]["self_attention_values"].shape) == (2, 2, 6, 4)
    assert tuple(cache["layers"][1]["cross_attention_keys"].shape) == (2, 2, 4, 5)
    for step in range(6):
        step_logits, cache = model.decode_step(TARGET[:, step], ops.convert_to_tensor(step), cache)
        np.testing.assert_allclose(ops.convert_to_numpy(step_logits), full_logits[:, step], atol=1e-5)


def test_decode_step_inside_while_loop(model):
    memory, source_mask = model.encode(SOURCE)
    targets = ops.convert_to_tensor(TARGET)
    logits_buffer = ops.zeros((2, 6, 11))

    def body(step, cache, logits_buffer):
        step_logits, cache = model.decode_step(ops.take(targets, step, axis=1), step, cache)
        logits_buffer = ops.slice_update(logits_buffer, (0, step, 0), step_logits[:, None, :])
        return step + 1, cache, logits_buffer

    _, _, logits_buffer = ops.while_loop(
        lambda step, cache, logits_buffer: step < 6,
        body,
        (ops.convert_to_tensor(0), model.init_cache(memory, source_mask, 6), logits_buffer),
    )
    np.testing.assert_allclose(ops.convert_to_numpy(logits_buffer), _logits(model), atol=1e-5)


def test_one_hot_distributions_equal_ids(model):
    one_hot = ops.one_hot(TARGET, 11)
    np.testing.assert_allclose(_logits(model, target=one_hot), _logits(model), atol=1e-6)

    memory, source_mask = model.encode(SOURCE)
    id_cache = soft_cache = model.init_cache(memory, source_mask, 6)
    for step in range(3):
        id_logits, id_cache = model.decode_step(TARGET[:, step], step, id_cache)
        soft_logits, soft_cache = model.decode_step(one_hot[:, step], step, soft_cache)
        np.testing.assert_allclose(ops.convert_to_numpy(soft_logits), ops.convert_to_numpy(id_logits), atol=1e-6)


def test_target_padding_from_ids_and_from_pad_mass_agree(model):
    padded = TARGET.copy()
    padded[1, 4:] = 0
    np.testing.assert_allclose(
        _logits(model, target=ops.one_hot(padded, 11)), _logits(model, target=padded), atol=1e-6
    )
    # Causal attention: padding at the end does not change the earlier positions.
    np.testing.assert_allclose(_logits(model, target=padded)[1, :4], _logits(model)[1, :4], atol=1e-6)


def test_appending_source_padding_keeps_logits(model):
    padded_source = np.pad(SOURCE, ((0, 0), (0, 2)))  # length 5 -> 7 = max_source_length
    np.testing.assert_allclose(_logits(model, source=padded_source), _logits(model), atol=1e-5)


def test_gradient_flows_from_logits_to_target_distribution(model):
    distribution = ops.softmax(keras.random.normal((2, 6, 11), seed=12))
    distribution_variable = keras.Variable(distribution, trainable=True)
    _, (distribution_gradient, embedding_gradient) = value_and_gradients(
        lambda: ops.sum(model({"source": SOURCE, "target": distribution_variable})[:, :, 5]),
        [distribution_variable, model.embedding_matrix],
    )
    for gradient in (distribution_gradient, embedding_gradient):
        gradient = ops.convert_to_numpy(ops.convert_to_tensor(gradient))
        assert np.all(np.isfinite(gradient))
        assert np.abs(gradient).sum() > 0
    # Position 0 only sees the first input distribution, so later inputs get gradient only
    # from later logits (causality): the gradient of logits[:, 0] w.r.t. inputs[:, 1:] is 0.
    (first_gradient,) = input_gradients(
        lambda inputs: ops.sum(model({"source": SOURCE, "target": inputs[0]})[:, 0]), [distribution]
    )
    np.testing.assert_array_equal(ops.convert_to_numpy(first_gradient)[:, 1:], 0.0)


def test_gradient_through_cached_decode_step(model):
    memory, source_mask = model.encode(SOURCE)
    cache = model.init_cache(memory, source_mask, 6)

    def loss(inputs):
        _, next_cache = model.decode_step(ops.one_hot([2, 2], 11), 0, cache)
        logits, _ = model.decode_step(inputs[0], 1, next_cache)
        return ops.sum(logits[:, 3])

    (gradient,) = input_gradients(loss, [ops.one_hot([4, 9], 11)])
    gradient = ops.convert_to_numpy(gradient)
    assert np.all(np.isfinite(gradient)) and np.abs(gradient).sum() > 0


def test_dropout_only_in_training():
    keras.utils.set_random_seed(2)
    model = TransformerGenerator(**dict(TINY, dropout=0.5))
    np.testing.assert_array_equal(_logits(model), _logits(model))
    assert not np.allclose(_logits(model, training=True), _logits(model))


def test_keras_file_round_trip(model, tmp_path):
    path = str(tmp_path / "generator.keras")
    model.save(path)
    restored = keras.saving.load_model(path, safe_mode=True)
    assert isinstance(restored, TransformerGenerator)
    np.testing.assert_array_equal(_logits(restored), _logits(model))


def test_get_config_round_trip(model):
    config = model.get_config()
    for key, value in TINY.items():
        assert config[key] == value
    clone = TransformerGenerator.from_config(config)
    clone({"source": SOURCE, "target": TARGET})
    clone.set_weights(model.get_weights())
    assert clone.get_config() == config
    np.testing.assert_array_equal(_logits(clone), _logits(model))
    block = TransformerDecoderBlock(8, 2, 16, dropout=0.1)
    assert TransformerDecoderBlock.from_config(block.get_config()).get_config() == block.get_config()


@pytest.mark.parametrize(
    "overrides, message",
    [
        (dict(model_dim=10, num_heads=4), "model_dim=10, num_heads=4"),
        (dict(dropout=-0.1), "dropout=-0.1"),
        (dict(vocabulary_size=3), "vocabulary_size=3"),
        (dict(num_decoder_layers=0), "num_decoder_layers=0"),
        (dict(eos_id=11), "eos_id=11"),
    ],
)
def test_bad_arguments_raise(overrides, message):
    with pytest.raises(ValueError, match=message):
        TransformerGenerator(**dict(TINY, **overrides))


def test_bad_block_arguments_and_cache_length_raise(model):
    with pytest.raises(ValueError, match="dropout=1.0"):
        TransformerEncoderBlock(8, 2, 16, dropout=1.0)
    with pytest.raises(ValueError, match="model_dim=8"):
        TransformerEncoderBlock(8, 2, 16).build((None, None, 6))
    memory, source_mask = model.encode(SOURCE)
    with pytest.raises(ValueError, match="max_length=7"):
        model.init_cache(memory, source_mask, max_length=7)


def test_trainable_weight_count(model):
    vocabulary, source_len, target_len, dim, feedforward = 11, 7, 6, 8, 16
    attention = 4 * (dim * dim + dim)  # query, key, value, output kernels and biases
    feedforward_params = dim * feedforward + feedforward + feedforward * dim + dim
    layer_norm = 2 * dim
    encoder_block = attention + feedforward_params + 2 * layer_norm
    decoder_block = 2 * attention + feedforward_params + 3 * layer_norm
    expected = (
        vocabulary * dim  # shared token embedding, tied to the output projection
        + (source_len + target_len) * dim  # learned positions
        + 1 * encoder_block
        + 2 * decoder_block
        + 2 * layer_norm  # final encoder and decoder norms
        + vocabulary  # output bias
    )
    assert expected == 2643
    assert sum(int(np.prod(weight.shape)) for weight in model.trainable_weights) == expected
    assert len(model.trainable_weights) == 1 + 2 + 16 + 2 * 26 + 4 + 1


COPY = dict(TINY, placeholder_ids=(4, 5, 6))
COPY_SOURCE = np.array([[7, 4, 8, 5, 0], [9, 6, 10, 0, 0]], dtype="int32")  # ids 4-6: placeholders
COPY_TARGET = np.array([[2, 4, 7, 5], [2, 6, 8, 3]], dtype="int32")


def _probabilities(logits):
    logits = ops.convert_to_numpy(logits)
    probabilities = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return probabilities / probabilities.sum(axis=-1, keepdims=True)


def test_copying_gives_absent_placeholders_no_probability():
    model = TransformerGenerator(**COPY)
    probabilities = _probabilities(model({"source": COPY_SOURCE, "target": COPY_TARGET}))
    # Row 0 holds placeholders 4 and 5, row 1 only 6.
    assert probabilities[0, :, 6].max() < 1e-10
    assert probabilities[1, :, 4].max() < 1e-10 and probabilities[1, :, 5].max() < 1e-10
    assert probabilities[0, :, 4].min() > 0.0 and probabilities[1, :, 6].min() > 0.0
    np.testing.assert_allclose(probabilities.sum(axis=-1), 1.0, rtol=1e-5)


def test_copying_cached_decode_step_equals_full_call():
    model = TransformerGenerator(**COPY)
    full = ops.convert_to_numpy(model({"source": COPY_SOURCE, "target": COPY_TARGET}))
    memory, source_mask = model.encode(COPY_SOURCE)
    cache = model.init_cache(memory, source_mask, max_length=4, source_ids=COPY_SOURCE)
    for step in range(4):
        step_logits, cache = model.decode_step(COPY_TARGET[:, step], step, cache)
        np.testing.assert_allclose(ops.convert_to_numpy(step_logits), full[:, step], atol=1e-5)
    with pytest.raises(ValueError, match="source_ids"):
        model.init_cache(memory, source_mask, max_length=4)


def test_copying_leaves_the_backbone_initialisation_and_round_trips(tmp_path):
    keras.utils.set_random_seed(5)
    plain = TransformerGenerator(**TINY)
    plain.build()
    keras.utils.set_random_seed(5)
    copying = TransformerGenerator(**COPY)
    copying.build()
    def by_path(model):  # paths without the model's own (numbered) name
        return {weight.path.split("/", 1)[1]: ops.convert_to_numpy(weight) for weight in model.weights}

    plain_weights, copy_weights = by_path(plain), by_path(copying)
    assert set(plain_weights) < set(copy_weights)
    for path, value in plain_weights.items():
        np.testing.assert_array_equal(value, copy_weights[path])
    assert len(copying.trainable_weights) == len(plain.trainable_weights) + 4  # query, key, gate (+bias)
    path = tmp_path / "copying.keras"
    copying.save(path)
    restored = keras.saving.load_model(path, safe_mode=True)
    assert restored.placeholder_ids == (4, 5, 6)
    inputs = {"source": COPY_SOURCE, "target": COPY_TARGET}
    np.testing.assert_array_equal(ops.convert_to_numpy(restored(inputs)), ops.convert_to_numpy(copying(inputs)))


def test_bad_placeholder_ids_raise():
    with pytest.raises(ValueError, match="exclude the PAD"):
        TransformerGenerator(**dict(TINY, placeholder_ids=(0, 4)))
    with pytest.raises(ValueError, match="placeholder_ids"):
        TransformerGenerator(**dict(TINY, placeholder_ids=(11,)))


def _gathered_copy_logits(model, hidden, copy_keys, source_ids):
    """The copying output layer as a gather and a select (the formulation of earlier releases): each
    placeholder's logit is its copy logit, every other logit the tied projection's."""
    projection = ops.matmul(hidden, ops.transpose(model.embedding_matrix)) + model.output_bias
    slots = ops.equal(ops.cast(source_ids, "int32")[:, :, None], np.array(model.placeholder_ids, "int32"))
    scores = ops.einsum("btd,bsd->bts", model.copy_query(hidden), copy_keys) * (1.0 / np.sqrt(model.model_dim))
    scores = ops.where(ops.any(slots, axis=-1)[:, None, :], scores, -1e9)
    pointer = ops.log_softmax(scores, axis=-1)
    per_placeholder = ops.logsumexp(pointer[..., None] + ops.where(slots, 0.0, -1e9)[:, None, :, :], axis=2)
    copy_logits = model.copy_gate(hidden) + per_placeholder
    copy_logits = ops.where(ops.logical_not(ops.any(slots, axis=1))[:, None, :], -30.0, copy_logits)
    slot_of_id = [len(model.placeholder_ids)] * model.vocabulary_size
    for slot, index in enumerate(model.placeholder_ids):
        slot_of_id[index] = slot
    extended = ops.concatenate([copy_logits, ops.zeros_like(copy_logits[..., :1])], axis=-1)
    copied = ops.take(extended, np.array(slot_of_id, "int32"), axis=-1)
    return ops.where(np.array(slot_of_id) < len(model.placeholder_ids), copied, projection)


def test_copying_output_layer_equals_a_gather_and_select_to_the_last_bit():
    # The placeholders' columns come from the copy logits through a 0/1 product and the other
    # columns from a projection with those columns zeroed: the same logits as a gather and a
    # select, and the same gradients, bit for bit (each sum has one non-zero term).
    keras.utils.set_random_seed(3)
    model = TransformerGenerator(**COPY)
    model({"source": COPY_SOURCE, "target": COPY_TARGET})
    memory, source_mask = model.encode(COPY_SOURCE)
    hidden, _ = model.read_text(COPY_TARGET, memory, source_mask)
    copy_keys = model.copy_key(memory)
    # Constants, so that the gradients below come from the output layer alone (PyTorch would
    # otherwise follow `hidden` back to the input embedding).
    hidden, copy_keys = (ops.convert_to_tensor(ops.convert_to_numpy(tensor)) for tensor in (hidden, copy_keys))
    weights = np.random.default_rng(0).normal(size=(2, 4, 11)).astype("float32")

    def loss(project):
        return lambda: ops.sum(ops.convert_to_tensor(weights) * project(model, hidden, copy_keys, COPY_SOURCE))

    ours = lambda model, hidden, keys, source: model._project_to_vocabulary(hidden, keys, source)  # noqa: E731
    np.testing.assert_array_equal(
        ops.convert_to_numpy(ours(model, hidden, copy_keys, COPY_SOURCE)),
        ops.convert_to_numpy(_gathered_copy_logits(model, hidden, copy_keys, COPY_SOURCE)),
    )
    variables = [model.embedding_matrix, model.output_bias, *model.copy_query.trainable_weights,
                 *model.copy_gate.trainable_weights]
    _, ours_gradients = value_and_gradients(loss(ours), variables)
    _, gathered_gradients = value_and_gradients(loss(_gathered_copy_logits), variables)
    for ours_gradient, gathered_gradient in zip(ours_gradients, gathered_gradients, strict=True):
        np.testing.assert_array_equal(ops.convert_to_numpy(ours_gradient), ops.convert_to_numpy(gathered_gradient))
    # The placeholders' output columns get no gradient from the projection: only the copy path.
    embedding_gradient = ops.convert_to_numpy(ours_gradients[0])
    np.testing.assert_array_equal(embedding_gradient[list(COPY["placeholder_ids"])], 0.0)
    assert np.abs(embedding_gradient).sum() > 0


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_the_copy_head_has_finite_gradients_under_mixed_precision(policy):
    """Under mixed_float16 the pointer's mask value (-1e9) is -inf in float16: a logsumexp over a
    placeholder the source lacks was all -inf, and its discarded branch's gradient NaN everywhere."""
    keras.mixed_precision.set_global_policy(policy)
    try:
        keras.utils.set_random_seed(0)
        model = TransformerGenerator(**COPY)
        source, target = COPY_SOURCE, COPY_TARGET  # each source row lacks a placeholder

        def loss():
            logits = model({"source": source, "target": target}, training=True)
            return ops.mean(ops.square(ops.cast(logits, "float32")))

        model({"source": source, "target": target})
        value, gradients = value_and_gradients(loss, model.trainable_variables)
        assert np.isfinite(float(value))
        assert all(np.all(np.isfinite(ops.convert_to_numpy(g))) for g in gradients if g is not None)
    finally:
        keras.mixed_precision.set_global_policy("float32")
