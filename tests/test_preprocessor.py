"""TextPreprocessor: entries -> encoded examples (per reference / per entry), vocabulary from
train only, truncation, special ids, and ids back to relexicalised text."""

import warnings

import pytest

from onestep_gan.rdf2text import webnlg
from onestep_gan.rdf2text.preprocessor import TextPreprocessor
from onestep_gan.rdf2text.vocabulary import Vocabulary
from tests.conftest import fixture_2017_dir

FIXTURE_2017 = fixture_2017_dir()


def load_fixture(split):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # a fixture entry without text is skipped
        return webnlg.load_webnlg(split, FIXTURE_2017)


def test_one_example_per_reference_for_training_one_per_entry_for_decoding():
    entries = load_fixture("train")
    preprocessor = TextPreprocessor.build(entries, 64, 64)
    training = preprocessor.encode_entries(entries, for_training=True)
    decoding = preprocessor.encode_entries(entries, for_training=False)
    assert len(training) == sum(len(entry.texts) for entry in entries) == 3
    assert [example.entry_id for example in decoding] == [entry.entry_id for entry in entries]
    assert all(example.target_ids is None for example in decoding)
    assert all(example.target_ids for example in training)
    # Placeholders, not entities, reach the ids: the entity map holds the way back.
    assert decoding[0].entity_map == {"ENT_1": "Abilene Regional Airport", "ENT_2": "Abilene, Texas"}


def test_vocabulary_comes_from_train_only():
    preprocessor = TextPreprocessor.build(load_fixture("train"), 64, 64)
    vocabulary = preprocessor.vocabulary
    assert "serves" in vocabulary and "born" in vocabulary
    # "comes" and the predicate word "region" occur only in the dev fixture.
    assert "comes" not in vocabulary and "region" not in vocabulary
    dev = preprocessor.encode_entries(load_fixture("dev"), for_training=True)
    assert Vocabulary.UNK in dev[0].target_ids


def test_truncation_to_maximum_lengths():
    entries = load_fixture("train")
    preprocessor = TextPreprocessor.build(entries, max_source_length=3, max_target_length=4)
    examples = preprocessor.encode_entries(entries, for_training=True)
    assert max(len(example.source_ids) for example in examples) == 3
    assert max(len(example.target_ids) for example in examples) == 3  # room for BOS / EOS


def test_special_ids_come_from_the_vocabulary():
    preprocessor = TextPreprocessor.build(load_fixture("train"), 64, 64)
    assert preprocessor.special_ids == {"pad_id": Vocabulary.PAD, "bos_id": Vocabulary.BOS, "eos_id": Vocabulary.EOS}
    assert preprocessor.vocabulary_size == len(preprocessor.vocabulary)


def test_decode_relexicalises_and_stops_at_eos():
    preprocessor = TextPreprocessor.build(load_fixture("train"), 64, 64)
    example = preprocessor.encode_triples([[("Alan_Bean", "birthPlace", "Wheeler,_Texas")]])[0]
    ids = preprocessor.vocabulary.encode(["ENT_1", "was", "born", "in", "ENT_2", "."], add_eos=True)
    ids += preprocessor.vocabulary.encode(["born"])  # after EOS: ignored
    assert preprocessor.decode(ids, example.entity_map) == "Alan Bean was born in Wheeler, Texas."


def test_encode_triples_accepts_tuples_and_refuses_empty_sets():
    preprocessor = TextPreprocessor.build(load_fixture("train"), 64, 64)
    (example,) = preprocessor.encode_triples([[("A", "b", "C")]])
    assert example.target_ids is None and example.entity_map == {"ENT_1": "A", "ENT_2": "C"}
    with pytest.raises(ValueError, match="empty set at index 1"):
        preprocessor.encode_triples([[("A", "b", "C")], []])
    with pytest.raises(ValueError, match="max_target_length >= 2"):
        TextPreprocessor(preprocessor.vocabulary, 4, 1)
