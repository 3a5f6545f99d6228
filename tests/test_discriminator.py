"""TextDiscriminator: ids == one-hots, padding invariance, shapes, saving, vocabulary checks."""

import numpy as np
import pytest

import keras
from keras import ops

from onestep_gan.gradients import value_and_gradients
from onestep_gan.rdf2text.discriminator import TextDiscriminator, check_compatible
from onestep_gan.rdf2text.sampling import TextSampler
from onestep_gan.rdf2text.transformer import TransformerGenerator

VOCABULARY_SIZE = 13
TINY = dict(
    vocabulary_size=VOCABULARY_SIZE,
    max_source_length=8,
    max_target_length=8,
    model_dim=8,
    num_heads=2,
    feedforward_dim=16,
    num_layers=2,
    dropout=0.0,
)
SOURCE = np.array([[5, 6, 7, 8, 0], [9, 4, 0, 0, 0]], dtype="int32")
TEXT = np.array([[4, 5, 6, 3, 0, 0], [7, 8, 9, 10, 11, 3]], dtype="int32")


@pytest.fixture
def discriminator():
    model = TextDiscriminator(**TINY)
    model([SOURCE, TEXT])
    return model


def _scores(model, source, text):
    return ops.convert_to_numpy(model([source, text]))


def test_output_shape_and_weight_count(discriminator):
    scores = _scores(discriminator, SOURCE, ops.one_hot(TEXT, VOCABULARY_SIZE))
    assert scores.shape == (2, 1)
    assert scores.dtype == np.float32
    # embeddings 1 + positions 2 + 16 per source block + 26 per text block + 2 norms x 2 + score 2
    assert len(discriminator.trainable_variables) == 3 + 16 * 2 + 26 * 2 + 4 + 2


def test_ids_and_one_hots_score_identically(discriminator):
    from_ids = _scores(discriminator, SOURCE, TEXT)
    from_one_hots = _scores(discriminator, SOURCE, ops.one_hot(TEXT, VOCABULARY_SIZE))
    np.testing.assert_array_equal(from_ids, from_one_hots)


def test_ids_and_one_hots_give_the_same_weight_gradients(discriminator):
    """Ids are looked up, one-hots multiplied: the training signal to D must not differ."""
    def gradients(text):
        _, grads = value_and_gradients(
            lambda: ops.sum(discriminator([SOURCE, text], training=True) ** 2),
            discriminator.trainable_variables,
        )
        return [ops.convert_to_tensor(g) for g in grads]  # TF: embedding IndexedSlices -> dense

    from_ids = gradients(TEXT)
    from_one_hots = gradients(ops.one_hot(TEXT, VOCABULARY_SIZE))
    for a, b in zip(from_ids, from_one_hots):
        np.testing.assert_allclose(ops.convert_to_numpy(a), ops.convert_to_numpy(b), atol=1e-6)


def test_appending_padding_leaves_scores_unchanged(discriminator):
    padded_text = np.pad(TEXT, ((0, 0), (0, 2)))  # two more PAD positions
    padded_source = np.pad(SOURCE, ((0, 0), (0, 3)))
    reference = _scores(discriminator, SOURCE, TEXT)
    np.testing.assert_allclose(_scores(discriminator, SOURCE, padded_text), reference, atol=1e-6)
    np.testing.assert_allclose(_scores(discriminator, padded_source, TEXT), reference, atol=1e-6)


def test_scores_depend_on_the_triples_and_on_the_text(discriminator):
    reference = _scores(discriminator, SOURCE, TEXT)
    other_source = SOURCE.copy()
    other_source[0, 0] = 12
    other_text = TEXT.copy()
    other_text[0, 1] = 12
    assert not np.allclose(_scores(discriminator, other_source, TEXT)[0], reference[0])
    assert not np.allclose(_scores(discriminator, SOURCE, other_text)[0], reference[0])
    # Each example is scored alone: changing row 0 leaves row 1's score.
    np.testing.assert_allclose(_scores(discriminator, SOURCE, other_text)[1], reference[1], atol=1e-6)


def test_keras_round_trip(discriminator, tmp_path):
    path = str(tmp_path / "discriminator.keras")
    discriminator.save(path)
    restored = keras.saving.load_model(path, safe_mode=True)
    assert isinstance(restored, TextDiscriminator)
    assert restored.get_config() == discriminator.get_config()
    np.testing.assert_array_equal(
        _scores(restored, SOURCE, TEXT), _scores(discriminator, SOURCE, TEXT)
    )


def test_wrong_vocabulary_text_raises(discriminator):
    with pytest.raises(ValueError, match=r"vocabulary_size=13.*Received: shape \(2, 6, 14\)"):
        discriminator([SOURCE, ops.one_hot(TEXT, VOCABULARY_SIZE + 1)])


def test_check_compatible():
    generator = TransformerGenerator(
        vocabulary_size=VOCABULARY_SIZE, max_source_length=8, max_target_length=6, model_dim=8,
        num_heads=2, feedforward_dim=16, num_encoder_layers=1, num_decoder_layers=1,
    )
    check_compatible(generator, TextDiscriminator(**TINY))
    check_compatible(TextSampler(generator), TextDiscriminator(**TINY))
    mismatched = TextDiscriminator(**dict(TINY, vocabulary_size=VOCABULARY_SIZE + 1))
    with pytest.raises(
        ValueError,
        match=r"share one vocabulary\. Received: generator vocabulary_size=13, "
        r"discriminator vocabulary_size=14",
    ):
        check_compatible(generator, mismatched)
    with pytest.raises(ValueError, match="pad_id"):
        check_compatible(generator, TextDiscriminator(**dict(TINY, pad_id=1)))


def test_check_compatible_after_loading(tmp_path):
    """Saved separately and loaded back, a mismatched pair is still caught."""
    generator = TransformerGenerator(
        vocabulary_size=VOCABULARY_SIZE + 2, max_source_length=8, max_target_length=6,
        model_dim=8, num_heads=2, feedforward_dim=16, num_encoder_layers=1, num_decoder_layers=1,
    )
    generator({"source": SOURCE, "target": TEXT})
    path = str(tmp_path / "generator.keras")
    generator.save(path)
    discriminator = TextDiscriminator(**TINY)
    discriminator([SOURCE, TEXT])
    with pytest.raises(ValueError, match="generator vocabulary_size=15"):
        check_compatible(keras.saving.load_model(path, safe_mode=True), discriminator)


@pytest.mark.parametrize(
    "overrides, match",
    [
        (dict(vocabulary_size=3), "vocabulary_size"),
        (dict(num_layers=0), "num_layers"),
        (dict(model_dim=9), "divisible"),
        (dict(dropout=1.0), "dropout"),
        (dict(pad_id=13), "pad_id"),
    ],
)
def test_bad_arguments_raise(overrides, match):
    with pytest.raises(ValueError, match=match):
        TextDiscriminator(**dict(TINY, **overrides))


def test_call_with_wrong_inputs_raises(discriminator):
    with pytest.raises(ValueError, match=r"\[source_ids, text\]"):
        discriminator(SOURCE)


def test_score_texts_encodes_the_triples_once_and_scores_as_one_call_a_text(discriminator, monkeypatch):
    texts = [TEXT, np.roll(TEXT, 1, axis=0), ops.one_hot(TEXT[:, ::-1], VOCABULARY_SIZE)]
    expected = [_scores(discriminator, SOURCE, text) for text in texts]
    encodings = []
    encode = type(discriminator).encode
    monkeypatch.setattr(type(discriminator), "encode",
                        lambda self, *args, **kwargs: encodings.append(1) or encode(self, *args, **kwargs))
    scores = discriminator.score_texts(SOURCE, texts)
    assert len(encodings) == 1 and len(scores) == len(texts)
    for got, want in zip(scores, expected):  # without dropout, exactly one call a text
        np.testing.assert_array_equal(ops.convert_to_numpy(got), want)
