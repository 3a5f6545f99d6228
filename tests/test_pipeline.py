import pathlib
import warnings

import numpy as np
import pytest

from onestep_gan.rdf2text import pipeline, webnlg
from onestep_gan.rdf2text.pipeline import EncodedExample
from onestep_gan.rdf2text.vocabulary import Vocabulary
from tests.conftest import fixture_2017_dir

FIXTURE_2017 = fixture_2017_dir()
PAD, BOS, EOS = Vocabulary.PAD, Vocabulary.BOS, Vocabulary.EOS


def load_fixture(split):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # a fixture entry without text is skipped
        return webnlg.load_webnlg(split, FIXTURE_2017)


def synthetic_examples(lengths):
    """Examples with source length s and target length t, ids 4.. (never special)."""
    return [
        EncodedExample(f"e{index}", tuple(range(4, 4 + s)), tuple(range(10, 10 + t)), {})
        for index, (s, t) in enumerate(lengths)
    ]


def test_one_example_per_reference_for_training_one_per_entry_for_decoding():
    entries = load_fixture("train")
    vocabulary = pipeline.build_vocabulary(pipeline.delexicalise_entries(entries))
    training = pipeline.encode_entries(entries, vocabulary, 64, 64, for_training=True)
    decoding = pipeline.encode_entries(entries, vocabulary, 64, 64, for_training=False)
    assert len(training) == sum(len(entry.texts) for entry in entries) == 3
    assert [example.entry_id for example in decoding] == [entry.entry_id for entry in entries]
    assert all(example.target_ids is None for example in decoding)
    assert all(example.target_ids for example in training)
    # Placeholders, not entities, reach the ids: the entity map holds the way back.
    assert decoding[0].entity_map == {"ENT_1": "Abilene Regional Airport", "ENT_2": "Abilene, Texas"}


def test_vocabulary_comes_from_train_only():
    train_pairs = pipeline.delexicalise_entries(load_fixture("train"))
    vocabulary = pipeline.build_vocabulary(train_pairs)
    assert "serves" in vocabulary and "born" in vocabulary
    # "comes" and the predicate word "region" occur only in the dev fixture.
    assert "comes" not in vocabulary and "region" not in vocabulary
    dev = pipeline.encode_entries(load_fixture("dev"), vocabulary, 64, 64)
    assert Vocabulary.UNK in dev[0].target_ids


def test_truncation_to_maximum_lengths():
    entries = load_fixture("train")
    vocabulary = pipeline.build_vocabulary(pipeline.delexicalise_entries(entries))
    examples = pipeline.encode_entries(entries, vocabulary, max_source_length=3, max_target_length=4)
    assert max(len(example.source_ids) for example in examples) == 3
    assert max(len(example.target_ids) for example in examples) == 3  # room for BOS / EOS


def test_batch_shapes_padding_and_shifted_targets():
    lengths = [(3, 2), (5, 4), (2, 6)]
    dataset = pipeline.make_training_dataset(
        synthetic_examples(lengths), batch_size=8, shuffle=False, bucket_boundaries=(100,)
    )
    (inputs, labels), = list(dataset)
    source, target, labels = (np.asarray(t) for t in (inputs["source"], inputs["target"], labels))
    assert source.shape == (3, 5) and target.shape == labels.shape == (3, 7)
    assert source.dtype == target.dtype == labels.dtype == np.int32
    order = {int(row[0]) for row in source}  # bucketing may reorder; match rows by lengths
    assert order == {4}
    for row in range(3):
        source_length = int(np.sum(source[row] != PAD))
        target_length = int(np.sum(labels[row] != PAD)) - 1
        assert (source_length, target_length) in lengths
        assert target[row, 0] == BOS
        assert labels[row, target_length] == EOS
        # The decoder input is the label sequence shifted right by one.
        np.testing.assert_array_equal(target[row, 1 : target_length + 1], labels[row, :target_length])
        assert np.all(labels[row, target_length + 1 :] == PAD)
        assert np.all(target[row, target_length + 1 :] == PAD)
        assert np.all(source[row, source_length:] == PAD)
    # Loss mask (labels != PAD) covers text + EOS only.
    assert int(np.sum(labels != PAD)) == sum(t + 1 for _, t in lengths)


def test_bucketing_keeps_every_example_once_and_groups_lengths():
    rng = np.random.default_rng(0)
    lengths = [(int(rng.integers(1, 20)), int(rng.integers(1, 30))) for _ in range(37)]
    examples = synthetic_examples(lengths)
    dataset = pipeline.make_training_dataset(examples, batch_size=5, seed=3, bucket_boundaries=(8, 16))
    seen = []
    for inputs, labels in dataset:
        source_lengths = np.sum(np.asarray(inputs["source"]) != PAD, axis=1)
        label_lengths = np.sum(np.asarray(labels) != PAD, axis=1)
        keys = np.maximum(source_lengths, label_lengths)
        assert len(set(np.digitize(keys, [8, 16]))) == 1  # one bucket per batch
        assert len(keys) <= 5
        seen.extend(zip(source_lengths.tolist(), (label_lengths - 1).tolist()))
    assert sorted(seen) == sorted(lengths)


def test_shuffle_is_seeded():
    examples = synthetic_examples([(3, 3)] * 20)
    examples = [
        EncodedExample(example.entry_id, (4 + index,) * 3, example.target_ids, {})
        for index, example in enumerate(examples)
    ]

    def first_column(seed):
        dataset = pipeline.make_training_dataset(examples, batch_size=20, seed=seed)
        return np.asarray(next(iter(dataset))[0]["source"])[:, 0].tolist()

    assert first_column(7) == first_column(7)
    assert first_column(7) != first_column(8)
    assert sorted(first_column(7)) == list(range(4, 24))


def test_training_dataset_rejects_examples_without_targets():
    examples = [EncodedExample("e0", (4, 5), None, {})]
    with pytest.raises(ValueError, match="target"):
        pipeline.make_training_dataset(examples, batch_size=2)


def test_source_batches_fixed_shapes_and_order():
    examples = synthetic_examples([(s, 1) for s in (20, 3, 9, 17, 1)])
    batches = list(pipeline.source_batches(examples, batch_size=2, length_multiple=8))
    # Sorted lengths 1, 3 | 9, 17 | 20, each batch padded up to a multiple of 8.
    assert [source.shape for source, _ in batches] == [(2, 8), (2, 24), (2, 24)]
    assert [indices for _, indices in batches] == [[4, 1], [2, 3], [0]]
    last_source, _ = batches[-1]
    assert np.all(last_source[1] == PAD)  # filler row
    np.testing.assert_array_equal(last_source[0, :20], examples[0].source_ids)


def test_with_known_length_counts_batches_of_every_bucket():
    examples = synthetic_examples([(2, 2)] * 5 + [(30, 30)] * 3)
    dataset = pipeline.make_training_dataset(examples, batch_size=2, bucket_boundaries=(10,))
    dataset, num_batches = pipeline.with_known_length(dataset)
    assert num_batches == 3 + 2  # ceil(5 / 2) + ceil(3 / 2)
    assert int(dataset.cardinality()) == num_batches == len(list(dataset))
