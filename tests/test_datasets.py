import warnings

import numpy as np
import pytest

from onestep_gan.rdf2text import datasets, webnlg
from onestep_gan.rdf2text.preprocessor import EncodedExample
from onestep_gan.rdf2text.vocabulary import Vocabulary
from tests.conftest import fixture_2017_dir

FIXTURE_2017 = fixture_2017_dir()
PAD, BOS, EOS = Vocabulary.PAD, Vocabulary.BOS, Vocabulary.EOS
SPECIAL_IDS = dict(pad_id=PAD, bos_id=BOS, eos_id=EOS)


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


def test_batch_shapes_padding_and_shifted_targets():
    lengths = [(3, 2), (5, 4), (2, 6)]
    dataset = datasets.make_training_dataset(
        synthetic_examples(lengths), batch_size=8, shuffle=False, bucket_boundaries=(100,), **SPECIAL_IDS
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
    dataset = datasets.make_training_dataset(examples, batch_size=5, seed=3, bucket_boundaries=(8, 16), **SPECIAL_IDS)
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
        dataset = datasets.make_training_dataset(examples, batch_size=20, seed=seed, **SPECIAL_IDS)
        return np.asarray(next(iter(dataset))[0]["source"])[:, 0].tolist()

    assert first_column(7) == first_column(7)
    assert first_column(7) != first_column(8)
    assert sorted(first_column(7)) == list(range(4, 24))


def test_training_dataset_rejects_examples_without_targets():
    examples = [EncodedExample("e0", (4, 5), None, {})]
    with pytest.raises(ValueError, match="target"):
        datasets.make_training_dataset(examples, batch_size=2, **SPECIAL_IDS)


def test_source_batches_fixed_shapes_and_order():
    examples = synthetic_examples([(s, 1) for s in (20, 3, 9, 17, 1)])
    batches = list(datasets.source_batches(examples, batch_size=2, pad_id=PAD, length_multiple=8))
    # Sorted lengths 1, 3 | 9, 17 | 20, each batch padded up to a multiple of 8.
    assert [source.shape for source, _ in batches] == [(2, 8), (2, 24), (2, 24)]
    assert [indices for _, indices in batches] == [[4, 1], [2, 3], [0]]
    last_source, _ = batches[-1]
    assert np.all(last_source[1] == PAD)  # filler row
    np.testing.assert_array_equal(last_source[0, :20], examples[0].source_ids)


def test_source_batches_keep_a_width_that_is_already_a_multiple():
    examples = synthetic_examples([(s, 1) for s in (16, 3, 17)])
    batches = list(datasets.source_batches(examples, batch_size=2, pad_id=PAD, length_multiple=16))
    assert [source.shape for source, _ in batches] == [(2, 16), (2, 32)]


def test_source_batches_never_pass_the_models_source_length():
    """A model with max_source_length 20 (not a multiple of 16) has no position 20: a batch whose
    longest source has 18 tokens is 20 wide, not 32; under 16, the batches are that wide."""
    examples = synthetic_examples([(s, 1) for s in (18, 3)])
    batches = list(datasets.source_batches(examples, batch_size=2, pad_id=PAD, max_length=20))
    assert [source.shape for source, _ in batches] == [(2, 20)]
    examples = synthetic_examples([(s, 1) for s in (9, 2, 4)])
    batches = list(datasets.source_batches(examples, batch_size=2, pad_id=PAD, max_length=10))
    assert [source.shape for source, _ in batches] == [(2, 10), (2, 10)]


def test_with_known_length_counts_batches_of_every_bucket():
    examples = synthetic_examples([(2, 2)] * 5 + [(30, 30)] * 3)
    dataset = datasets.make_training_dataset(examples, batch_size=2, bucket_boundaries=(10,), **SPECIAL_IDS)
    dataset, num_batches = datasets.with_known_length(dataset)
    assert num_batches == 3 + 2  # ceil(5 / 2) + ceil(3 / 2)
    assert int(dataset.cardinality()) == num_batches == len(list(dataset))


def test_adversarial_dataset_layout():
    examples = [EncodedExample(f"e{i}", (5, 6, 7)[: i + 1], (8,) * (i + 1), {}) for i in range(3)]
    examples.append(EncodedExample("long", (5,), (8,) * 10, {}))  # too long for max_length 5: skipped
    dataset = datasets.make_adversarial_dataset(
        examples, 3, max_length=5, max_source_length=4, shuffle=False, pad_id=PAD, eos_id=EOS
    )
    sources, texts = next(iter(dataset))
    np.testing.assert_array_equal(sources, [[5, 0, 0, 0], [5, 6, 0, 0], [5, 6, 7, 0]])
    np.testing.assert_array_equal(texts, [[8, 3, 0, 0, 0], [8, 8, 3, 0, 0], [8, 8, 8, 3, 0]])
    with pytest.raises(ValueError, match=r"at least 4 example\(s\) of at most 4 tokens .* Received: 3"):
        datasets.make_adversarial_dataset(
            examples, 4, max_length=5, max_source_length=4, shuffle=False, pad_id=PAD, eos_id=EOS
        )


def test_adversarial_data_keeps_a_text_that_fills_max_length_with_its_eos():
    examples = [EncodedExample("fits", (5,), (8, 9, 10, 11), {}), EncodedExample("long", (5,), (8,) * 5, {})]
    dataset = datasets.make_adversarial_dataset(
        examples, 1, max_length=5, max_source_length=2, shuffle=False, pad_id=PAD, eos_id=EOS)
    assert [texts.numpy().tolist() for _, texts in dataset] == [[[8, 9, 10, 11, EOS]]]


def test_adversarial_epochs_depend_on_seed_and_epoch_only():
    """Exact resume of the adversarial stage: epoch e's batches are those of an uninterrupted run."""
    examples = [EncodedExample(f"e{i}", (4 + i,), (20 + i,), {}) for i in range(5)]

    def epochs(initial_epoch, seed=7):
        dataset = datasets.make_adversarial_dataset(
            examples, 2, max_length=3, max_source_length=2, seed=seed, pad_id=PAD, eos_id=EOS,
            epochs=4, initial_epoch=initial_epoch, steps_per_epoch=4,
        )
        batches = [texts[:, 0].numpy().tolist() for _, texts in dataset]
        return [batches[start : start + 4] for start in range(0, len(batches), 4)]

    full = epochs(0)
    assert len(full) == 4 and all(len(epoch) == 4 for epoch in full)  # 8 texts: two passes over 5
    assert epochs(2) == full[2:]
    assert full[0] != full[1]
    assert epochs(0, seed=8) != full
    assert sorted(sum(full[0], [])[:5]) == [20, 21, 22, 23, 24]  # a pass is a permutation
    # Each (epoch, pass) has a seed of its own: epoch 1's first pass is not epoch 0's second.
    assert sum(full[1], [])[:3] != sum(full[0], [])[5:8]
    with pytest.raises(ValueError, match="steps_per_epoch"):
        datasets.make_adversarial_dataset(examples, 2, 3, 2, pad_id=PAD, eos_id=EOS, epochs=2)


def _epoch_sources(examples, word_dropout, initial_epoch=0, epochs=3, seed=5):
    dataset = datasets.make_training_dataset(
        examples, batch_size=len(examples), seed=seed, bucket_boundaries=(100,), **SPECIAL_IDS,
        epochs=epochs, initial_epoch=initial_epoch, word_dropout=word_dropout,
    )
    # One batch per epoch; rows sorted by their unmaskable first id, which names the example.
    return [sorted(map(tuple, np.asarray(inputs["source"]).tolist())) for inputs, _ in dataset]


def test_word_dropout_replaces_only_maskable_positions_anew_each_epoch():
    UNK = Vocabulary.UNK
    examples = [EncodedExample(f"e{i}", (100 + i, 7, 8, 9, 10, 11), (20,), {}) for i in range(40)]
    maskable = ((False, True, True, False, True, True),) * 40
    dropout = datasets.WordDropout(0.5, maskable, UNK)
    epochs = _epoch_sources(examples, dropout)
    for sources in epochs:
        rows = np.asarray(sources)
        np.testing.assert_array_equal(rows[:, 0], np.arange(100, 140))  # never maskable
        np.testing.assert_array_equal(rows[:, 3], 9)
        for column, word in ((1, 7), (2, 8), (4, 10), (5, 11)):
            assert set(rows[:, column].tolist()) <= {word, UNK}
        dropped = np.mean(rows[:, [1, 2, 4, 5]] == UNK)
        assert 0.35 < dropped < 0.65  # 160 draws at rate 0.5
    assert epochs[0] != epochs[1]  # drawn anew each epoch
    # Stateless: a run resumed at epoch 2 draws epoch 2's masks; another seed draws others.
    assert _epoch_sources(examples, dropout, initial_epoch=2) == epochs[2:]
    assert _epoch_sources(examples, dropout, seed=6) != epochs
    # Rate 0 leaves every source as it is.
    unchanged = _epoch_sources(examples, datasets.WordDropout(0.0, maskable, UNK), epochs=1)
    assert unchanged == [sorted(example.source_ids for example in examples)]


def test_word_dropout_rejects_bad_settings():
    examples = [EncodedExample("e0", (4, 5), (6,), {})]
    with pytest.raises(ValueError, match=r"rate in \[0, 1\)"):
        datasets.WordDropout(1.0, ((True, True),), Vocabulary.UNK)
    with pytest.raises(ValueError, match="needs `epochs`"):
        datasets.make_training_dataset(
            examples, 2, word_dropout=datasets.WordDropout(0.1, ((True, True),), 1), **SPECIAL_IDS
        )
    with pytest.raises(ValueError, match="one maskable flag per source position"):
        datasets.make_training_dataset(
            examples, 2, epochs=1, word_dropout=datasets.WordDropout(0.1, ((True,),), 1), **SPECIAL_IDS
        )


def _epoch_pairs(examples, orders, initial_epoch=0, epochs=6, seed=5):
    dataset = datasets.make_training_dataset(
        examples, batch_size=len(examples), seed=seed, bucket_boundaries=(100,), **SPECIAL_IDS,
        epochs=epochs, initial_epoch=initial_epoch, orders=orders,
    )
    # One batch per epoch; (source, text) rows sorted by the source's first id, which names the entry.
    return [
        sorted(zip(map(tuple, np.asarray(inputs["source"]).tolist()), map(tuple, np.asarray(labels).tolist())))
        for inputs, labels in dataset
    ]


def test_triple_orders_show_each_text_once_per_epoch_in_one_of_its_orders():
    # Order k of example i: source (100 + i, 5 + k), text (200 + 100 k + i); a row whose text
    # comes from another order than its source would pair 5 + k with another hundred.
    def order(k):
        return [EncodedExample(f"e{i}", (100 + i, 5 + k), (200 + 100 * k + i,), {}) for i in range(30)]

    examples, orders = order(0), [order(1), order(2)]
    epochs = _epoch_pairs(examples, orders)
    drawn = []
    for pairs in epochs:
        assert [source[0] for source, _ in pairs] == list(range(100, 130))  # each entry once
        for i, (source, text) in enumerate(pairs):
            k = source[1] - 5
            assert text == (200 + 100 * k + i, EOS)  # source and text of the same order
            drawn.append(k)
    assert all(40 <= drawn.count(k) <= 80 for k in range(3))  # 180 draws at 1/3 each
    assert epochs[0] != epochs[1]  # drawn anew each epoch
    # Stateless: a run resumed at epoch 2 draws epoch 2's orders; another seed draws others.
    assert _epoch_pairs(examples, orders, initial_epoch=2) == epochs[2:]
    assert _epoch_pairs(examples, orders, seed=6) != epochs
    # Without orders, every epoch shows the examples as they are.
    assert {k for pairs in _epoch_pairs(examples, ()) for (_, k), _ in pairs} == {5}


def test_triple_orders_reject_bad_settings():
    examples = [EncodedExample("e0", (4, 5), (6,), {})]
    with pytest.raises(ValueError, match="needs `epochs`"):
        datasets.make_training_dataset(examples, 2, orders=[examples], **SPECIAL_IDS)
    with pytest.raises(ValueError, match="not both"):
        datasets.make_training_dataset(
            examples, 2, epochs=1, orders=[examples],
            word_dropout=datasets.WordDropout(0.1, ((True, True),), 1), **SPECIAL_IDS,
        )
    with pytest.raises(ValueError, match=r"order 1 holds 2 examples \(training: 1\), not aligned, 0 without text"):
        datasets.make_training_dataset(examples, 2, epochs=1, orders=[examples * 2], **SPECIAL_IDS)
    with pytest.raises(ValueError, match=r"order 1 holds 1 examples \(training: 1\), aligned, 1 without text"):
        datasets.make_training_dataset(
            examples, 2, epochs=1, orders=[[EncodedExample("e0", (4, 5), None, {})]], **SPECIAL_IDS
        )


def _epoch_rows(examples, renumbered_ids, initial_epoch=0, epochs=4, seed=5):
    dataset = datasets.make_training_dataset(
        examples, batch_size=len(examples), seed=seed, bucket_boundaries=(100,), **SPECIAL_IDS,
        epochs=epochs, initial_epoch=initial_epoch, renumbered_ids=renumbered_ids,
    )
    # One batch per epoch; (source, target, labels) rows sorted by the source's first id, which
    # names the example.
    return [sorted(_unpadded_rows(inputs, labels)) for inputs, labels in dataset]


def test_renumbered_placeholders_go_through_one_permutation_per_example_and_epoch():
    # Ids 20-27 stand for ENT_1..ENT_8. Example i: source (100 + i, <S> 20 <O> 21, 9), text
    # "20 said 21 21 30": the first id names the example, 9 and 30 are words, never renumbered.
    placeholders = tuple(range(20, 28))
    examples = [EncodedExample(f"e{i}", (100 + i, 20, 21, 9), (20, 30, 21, 21), {}) for i in range(40)]
    epochs = _epoch_rows(examples, placeholders)
    numbers = []
    for rows in epochs:
        assert [source[0] for source, _, _ in rows] == list(range(100, 140))  # each example once
        for source, target, labels in rows:
            first, second = source[1], source[2]
            assert first != second and {first, second} <= set(placeholders) and source[3] == 9
            # The text goes through the source's permutation: the same two ids in the same roles.
            assert labels == (first, 30, second, second, EOS) and target == (BOS, first, 30, second, second)
            numbers.append((first, second))
    assert len(set(numbers)) > 20  # 160 draws of 56 possible pairs
    assert epochs[0] != epochs[1]  # drawn anew each epoch
    # Stateless: a run resumed at epoch 2 draws epoch 2's numbers; another seed draws others.
    assert _epoch_rows(examples, placeholders, initial_epoch=2) == epochs[2:]
    assert _epoch_rows(examples, placeholders, seed=6) != epochs
    # Without ids to renumber, every epoch shows the examples as they are.
    assert {rows[0][0][1:3] for rows in _epoch_rows(examples, ())} == {(20, 21)}


def test_renumbered_ids_reject_bad_settings():
    examples = [EncodedExample("e0", (4, 5), (6,), {})]
    with pytest.raises(ValueError, match="need `epochs`. Received: epochs=None"):
        datasets.make_training_dataset(examples, 2, renumbered_ids=(4, 5), **SPECIAL_IDS)
    with pytest.raises(ValueError, match=r"distinct non-negative ids to renumber. Received: renumbered_ids=\[4, 4\]"):
        datasets.make_training_dataset(examples, 2, epochs=1, renumbered_ids=(4, 4), **SPECIAL_IDS)


def _unpadded_rows(inputs, labels):
    """Each row of a batch with its PAD tail cut off: (source, target, labels) tuples."""
    def cut(row):
        row = [int(value) for value in row]
        while row and row[-1] == PAD:
            row.pop()
        return tuple(row)

    return [
        (cut(source), cut(target), cut(label))
        for source, target, label in zip(np.asarray(inputs["source"]), np.asarray(inputs["target"]), np.asarray(labels))
    ]


def test_fixed_shapes_put_a_batch_whose_longest_example_is_a_boundary_in_the_bucket_above():
    """Bucket b holds lengths in [boundaries[b - 1], boundaries[b]): a source of exactly 8 tokens is in
    bucket 1, whose width is its longest example's (9), not bucket 0's (3)."""
    examples = synthetic_examples([(8, 1)] * 2 + [(9, 1)] + [(3, 1)] * 2)
    batches = list(datasets.make_training_dataset(
        examples, batch_size=2, bucket_boundaries=(8, 16), fixed_shapes=True, **SPECIAL_IDS))
    assert sorted(tuple(np.shape(inputs["source"])) for inputs, _ in batches) == [(1, 9), (2, 3), (2, 9)]


@pytest.mark.parametrize("epochs", [None, 2])
def test_fixed_shapes_pad_the_same_batches_to_one_width_per_bucket(epochs):
    rng = np.random.default_rng(1)
    lengths = [(int(rng.integers(1, 20)), int(rng.integers(1, 30))) for _ in range(53)]
    examples = synthetic_examples(lengths)

    def batches(fixed_shapes):
        return list(datasets.make_training_dataset(
            examples, batch_size=4, seed=3, bucket_boundaries=(8, 16), epochs=epochs,
            fixed_shapes=fixed_shapes, **SPECIAL_IDS,
        ))

    variable, fixed = batches(False), batches(True)
    assert len(fixed) == len(variable)
    # The same examples in the same order, only padded further.
    assert [_unpadded_rows(*batch) for batch in fixed] == [_unpadded_rows(*batch) for batch in variable]
    # Widths per bucket: the longest source and text + 1 of the examples in it.
    widths = {}
    for source_length, text_length in lengths:
        longest = max(source_length, text_length + 1)
        bucket = 0 if longest < 8 else 1 if longest < 16 else 2
        source_width, label_width = widths.get(bucket, (0, 0))
        widths[bucket] = (max(source_width, source_length), max(label_width, text_length + 1))
    assert datasets.bucket_widths(examples, (8, 16)) == (
        [widths[0][0], widths[1][0], widths[2][0]], [widths[0][1], widths[1][1], widths[2][1]]
    )
    shapes = {(np.shape(inputs["source"])[1:], np.shape(inputs["target"])[1:], np.shape(labels)[1:])
              for inputs, labels in fixed}
    assert shapes == {((source_width,), (label_width,), (label_width,)) for source_width, label_width in widths.values()}
    # Batch sizes: full, or a bucket's last batch of each epoch.
    assert len({(np.shape(labels)[0], np.shape(labels)[1]) for _, labels in fixed}) <= 2 * len(widths)
    # Without fixed shapes, batches are as wide as their own longest example.
    assert len({np.shape(labels)[1] for _, labels in variable}) > len(widths)
