"""TextPreprocessor: entries -> encoded examples (per reference / per entry), vocabulary from
train only, truncation, special ids, and ids back to relexicalised text."""

import warnings

import pytest

from onestep_gan.rdf2text import runs, webnlg
from onestep_gan.rdf2text.config import MLEConfig
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


def test_placeholders_the_model_never_saw_are_named_in_a_warning(caplog):
    """The fixture's train entries hold at most 3 entities: a fourth entity's ENT_4 reads as UNK,
    which the model can neither copy nor be held to write; the user is told."""
    preprocessor = TextPreprocessor.build(load_fixture("train"), 64, 64)
    assert "ENT_3" in preprocessor.vocabulary and "ENT_4" not in preprocessor.vocabulary
    with caplog.at_level("WARNING", logger="onestep_gan.rdf2text.preprocessor"):
        preprocessor.encode_triples([[("A", "b", "C")]])
    assert not caplog.records
    with caplog.at_level("WARNING", logger="onestep_gan.rdf2text.preprocessor"):
        preprocessor.encode_triples([[("A", "b", "C"), ("A", "d", "E"), ("F", "g", "H")]])
    (record,) = caplog.records
    assert "never saw in training: ENT_4, ENT_5 (first in input/0)" in record.getMessage()
    caplog.clear()
    with caplog.at_level("WARNING", logger="onestep_gan.rdf2text.preprocessor"):  # `generate` names the input's line
        preprocessor.encode_triples([[("A", "b", "C")], [("A", "b", "C"), ("A", "d", "E"), ("F", "g", "H")]],
                                    names=["in.txt, line 1", "in.txt, line 3"])
    (record,) = caplog.records
    assert "never saw in training: ENT_4, ENT_5 (first in in.txt, line 3)" in record.getMessage()
    with pytest.raises(ValueError, match=r"one name per set of triples \(1\)\. Received: 2"):
        preprocessor.encode_triples([[("A", "b", "C")]], names=["a", "b"])


def test_predicate_placeholders_get_ids_and_the_copy_ids_but_not_the_entity_ids():
    entries = load_fixture("train")
    preprocessor = TextPreprocessor.build(entries, 64, 64, predicate_placeholders=True)
    tokens = preprocessor.vocabulary.tokens
    assert [tokens[index] for index in preprocessor.placeholder_ids] == ["ENT_1", "ENT_2", "ENT_3"]
    assert [tokens[index] for index in preprocessor.predicate_placeholder_ids] == ["PRED_1", "PRED_2"]
    assert preprocessor.copy_ids == (4, 5, 10, 12, 15)  # ENT_1, ENT_2, PRED_1, ENT_3, PRED_2
    (example,) = preprocessor.encode_entries(entries[-1:], for_training=False)
    assert preprocessor.vocabulary.decode(example.source_ids) == [
        "<S>", "ENT_1", "<P>", "PRED_1", "birth", "place", "<O>", "ENT_2",
        "<S>", "ENT_1", "<P>", "PRED_2", "birth", "date", "<O>", "ENT_3"]
    assert example.predicate_map == {"PRED_1": "birth place", "PRED_2": "birth date"}
    ids = preprocessor.vocabulary.encode(["the", "PRED_1", "is", "ENT_2", "."], add_eos=True)
    assert preprocessor.decode(ids, example.entity_map, example.predicate_map) == (
        "the birth place is Wheeler, Texas.")
    # Off (the default): no predicate ids, and the generator copies the entity placeholders alone.
    default = TextPreprocessor.build(entries, 64, 64)
    assert default.predicate_placeholder_ids == () and default.copy_ids == default.placeholder_ids == (4, 5, 11)
    assert default.encode_entries(entries[-1:], for_training=False)[0].predicate_map == {}


def test_predicate_word_mask_flags_the_predicate_words_alone():
    entries = load_fixture("train")
    for predicate_placeholders in (True, False):
        preprocessor = TextPreprocessor.build(entries, 64, 64, predicate_placeholders=predicate_placeholders)
        (example,) = preprocessor.encode_entries(entries[-1:], for_training=False)
        tokens = preprocessor.vocabulary.decode(example.source_ids)
        flagged = [token for token, flag in zip(tokens, preprocessor.predicate_word_mask(example.source_ids))
                   if flag]
        assert flagged == ["birth", "place", "birth", "date"]
    # An UNK word inside a predicate is flagged; one outside is not; `<O>` ends the predicate.
    ids = preprocessor.vocabulary.encode(["<S>", "ENT_1", "<P>", "birth", "<O>", "ENT_2"])
    ids[1], ids[3] = Vocabulary.UNK, Vocabulary.UNK
    assert preprocessor.predicate_word_mask(ids) == (False, False, False, True, False, False)


def test_a_vocabulary_with_predicate_placeholders_needs_the_option():
    preprocessor = TextPreprocessor.build(load_fixture("train"), 64, 64, predicate_placeholders=True)
    with pytest.raises(ValueError, match="holds predicate placeholders .* trained with predicate_placeholders=True"):
        TextPreprocessor(preprocessor.vocabulary, 64, 64)
    default = TextPreprocessor.build(load_fixture("train"), 64, 64)
    with pytest.raises(ValueError, match="has no predicate placeholders .* trained with predicate_placeholders=False"):
        TextPreprocessor(default.vocabulary, 64, 64, predicate_placeholders=True)
    config = MLEConfig(predicate_placeholders=True)
    assert runs.preprocessor_for(config, preprocessor.vocabulary).predicate_placeholders


def test_entity_roles_reach_the_vocabulary_and_a_run_without_them_refuses_them():
    entries = load_fixture("train")
    preprocessor = TextPreprocessor.build(entries, 64, 64, entity_roles=True)
    assert {"<AGENT>", "<PATIENT>"} <= set(preprocessor.vocabulary.tokens)
    (example,) = preprocessor.encode_entries(entries[-1:], for_training=False)
    assert preprocessor.vocabulary.decode(example.source_ids)[:4] == ["<S>", "ENT_1", "<AGENT>", "<P>"]
    with pytest.raises(ValueError, match="holds entity role tokens .* trained with entity_roles=True"):
        TextPreprocessor(preprocessor.vocabulary, 64, 64)
    with pytest.raises(ValueError, match="has no entity role tokens .* trained with entity_roles=False"):
        TextPreprocessor(TextPreprocessor.build(entries, 64, 64).vocabulary, 64, 64, entity_roles=True)
    # A run's preprocessor follows its config.
    config = MLEConfig(entity_roles=True, predicate_placeholders=False)
    assert runs.preprocessor_for(config, preprocessor.vocabulary).entity_roles


def test_entity_words_of_two_or_more_entities_reach_the_vocabulary_others_read_as_unk():
    triple = webnlg.Triple
    entries = [
        webnlg.WebNLGEntry("train/1", "Airport", 1, (triple("Abilene_Regional_Airport", "cityServed", "Dallas,_Texas"),),
                           ("Abilene Regional Airport serves Dallas, Texas.",)),
        webnlg.WebNLGEntry("train/2", "Airport", 1, (triple("Austin_Airport", "location", "Round_Rock,_Texas"),),
                           ("Austin Airport is in Round Rock, Texas.",)),
    ]
    plain = TextPreprocessor.build(entries, 64, 64)
    preprocessor = TextPreprocessor.build(entries, 64, 64, entity_words=4)
    # The former tokens keep their ids; "Texas", "," and "Airport" are words of two entities and come after.
    assert preprocessor.vocabulary.tokens[: len(plain.vocabulary)] == plain.vocabulary.tokens
    assert set(preprocessor.vocabulary.tokens[len(plain.vocabulary):]) == {"Texas", ",", "Airport"} - set(
        plain.vocabulary.tokens)
    assert "Texas" in preprocessor.vocabulary and "Abilene" not in preprocessor.vocabulary
    assert len(TextPreprocessor.build(entries, 64, 64, max_size=len(plain.vocabulary) + 1, entity_words=4).vocabulary) == (
        len(plain.vocabulary) + 1)
    (example,) = preprocessor.encode_entries(entries[:1], for_training=False)
    assert preprocessor.vocabulary.decode(example.source_ids) == [
        "<S>", "ENT_1", "<unk>", "<unk>", "Airport", "<P>", "city", "served", "<O>", "ENT_2", "<unk>", ",", "Texas"]
    assert runs.preprocessor_for(MLEConfig(entity_words=4, predicate_placeholders=False), preprocessor.vocabulary).entity_words == 4
    with pytest.raises(ValueError, match="entity_words >= 0. Received: entity_words=-1"):
        TextPreprocessor(preprocessor.vocabulary, 64, 64, entity_words=-1)
    with pytest.raises(ValueError, match="`entity_words` must be >= 0. Received: entity_words=-1"):
        MLEConfig(entity_words=-1)
