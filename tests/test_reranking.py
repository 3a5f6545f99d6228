"""SlotErrorReranker: among beam candidates, the one with the fewest slot and placeholder
errors wins; ties go to the more likely (earlier) candidate."""

import dataclasses

import numpy as np
import pytest

from onestep_gan.rdf2text.config import MLEConfig
from onestep_gan.rdf2text.faithfulness import SlotAligner
from onestep_gan.rdf2text.inference import decode_examples
from onestep_gan.rdf2text.preprocessor import EncodedExample, TextPreprocessor
from onestep_gan.rdf2text.reranking import SlotErrorReranker, mbr_preference, ngram_counts, ngram_f1
from onestep_gan.rdf2text.vocabulary import Vocabulary
from onestep_gan.rdf2text.webnlg import Triple
from tests.test_faithfulness import _training_entries

TRIPLES = (Triple("Alan_Bean", "birthPlace", "Wheeler,_Texas"), Triple("Alan_Bean", "occupation", "Test_pilot"))
ENTITY_MAP = {"ENT_1": "Alan Bean", "ENT_2": "Wheeler, Texas", "ENT_3": "Test pilot"}


@pytest.fixture(scope="module")
def reranker():
    # The tiny hand-made corpus of test_faithfulness, with its lowered thresholds.
    aligner = SlotAligner.from_entries(_training_entries(), min_count=1, smoothing=0.0, margin=1.5, min_rival=2.0)
    return SlotErrorReranker(aligner)


SWAPPED = "ENT_1 was born in ENT_3 and served as a ENT_2 .".split()
RIGHT = "ENT_1 was born in ENT_2 and served as a ENT_3 .".split()


def test_a_swapped_candidate_loses_to_a_faithful_one(reranker):
    assert reranker.errors(TRIPLES, RIGHT, ENTITY_MAP) == 0
    assert reranker.errors(TRIPLES, SWAPPED, ENTITY_MAP) == 2  # both triples bound wrongly
    assert reranker.choose(TRIPLES, [SWAPPED, RIGHT], ENTITY_MAP) == 1


def test_min_foreign_counts_a_value_stated_under_a_relation_outside_the_input(reranker):
    """`almaMater` alone: "born in UT Austin" states a birth place the input does not have."""
    triples = (Triple("Alan_Bean", "almaMater", "UT_Austin"),)
    entity_map = {"ENT_1": "Alan Bean", "ENT_2": "UT Austin"}
    born, studied = "ENT_1 was born in ENT_2 .".split(), "ENT_1 studied at ENT_2 .".split()
    assert reranker.choose(triples, [born, studied], entity_map) == 0  # no error either way
    strict = SlotErrorReranker(reranker.aligner, min_foreign=2.0)
    assert (strict.errors(triples, born, entity_map), strict.errors(triples, studied, entity_map)) == (1, 0)
    assert strict.choose(triples, [born, studied], entity_map) == 1
    assert reranker.aligner.min_foreign is None  # the reranker's own copy, with the setting


def test_stated_relations_break_ties_for_a_relation_unseen_in_training(reranker):
    """`engine` has no mined cues: "is in ENT_2" states no relation the reader can trust,
    "has the engine ENT_2" states the input's. Slot errors still come first."""
    triples = (Triple("Alvis_Speed_25", "engine", "Straight-six_engine"),)
    entity_map = {"ENT_1": "Alvis Speed 25", "ENT_2": "Straight-six engine"}
    located, stated = "ENT_1 is in the ENT_2 .".split(), "ENT_1 has the engine ENT_2 .".split()
    assert not reranker.aligner.knows_predicate("engine") and reranker.aligner.knows_predicate("birthPlace")
    assert reranker.choose(triples, [located, stated], entity_map) == 0  # off: beam order
    stating = SlotErrorReranker(reranker.aligner, stated_relations=True)
    assert (stating.unstated_relations(triples, located), stating.unstated_relations(triples, stated)) == (1, 0)
    assert stating.choose(triples, [located, stated], entity_map) == 1
    # Fewer slot errors win over stated relations: a missing value loses.
    assert stating.choose(triples, ["ENT_1 has an engine .".split(), located], entity_map) == 1
    # A relation with mined cues is not an unstated relation, whatever its wording.
    born = (Triple("Alan_Bean", "birthPlace", "Wheeler,_Texas"),)
    assert stating.unstated_relations(born, "ENT_1 is in ENT_2 .".split()) == 0
    assert stating.choose(born, ["ENT_1 is from ENT_2 .".split(), "ENT_1 was born in ENT_2 .".split()],
                          {"ENT_1": "Alan Bean", "ENT_2": "Wheeler, Texas"}) == 0


def test_invented_and_repeated_placeholders_count_and_ties_keep_beam_order(reranker):
    invented = RIGHT[:-1] + ["near", "ENT_4", "."]
    repeated = RIGHT[:-1] + ["in", "ENT_2", "."]
    assert reranker.errors(TRIPLES, invented, ENTITY_MAP) == 1
    assert reranker.errors(TRIPLES, repeated, ENTITY_MAP) == 1
    # Two texts without errors: the first in beam order is chosen, whichever it is (the same text twice
    # could not tell first from last).
    also_right = "ENT_1 , born in ENT_2 , served as a ENT_3 .".split()
    assert reranker.errors(TRIPLES, also_right, ENTITY_MAP) == 0
    assert reranker.choose(TRIPLES, [RIGHT, also_right], ENTITY_MAP) == 0
    assert reranker.choose(TRIPLES, [also_right, RIGHT], ENTITY_MAP) == 0
    with pytest.raises(ValueError, match="at least one candidate"):
        reranker.choose(TRIPLES, [], ENTITY_MAP)


def test_decode_examples_relexicalises_the_chosen_candidate(reranker):
    vocabulary = Vocabulary(sorted(set(SWAPPED)))
    preprocessor = TextPreprocessor(vocabulary, 16, 16)
    example = EncodedExample("e0", (4, 5), None, ENTITY_MAP, TRIPLES)
    candidates = np.array([[vocabulary.encode(SWAPPED, add_eos=True), vocabulary.encode(RIGHT, add_eos=True)]])

    def generate_function(source_ids):  # (batch, beam, length) candidates, scores
        assert source_ids.shape[0] == 1
        return candidates, np.zeros((1, 2))

    texts = decode_examples(generate_function, [example], preprocessor, 1, progress=False, reranker=reranker)
    assert texts == ["Alan Bean was born in Wheeler, Texas and served as a Test pilot."]



def test_decode_examples_writes_the_chosen_candidate_as_the_unreranked_path_does(reranker):
    """The reranker reads the candidates with their predicates put back; the text written is the
    chosen candidate through the whole relexicalisation, `measure_clauses` included ("has an apoapsis
    of", not "'s apoapsis is")."""
    tokens = "ENT_1 PRED_1 is ENT_2 .".split()
    vocabulary = Vocabulary(sorted(set(tokens)))
    preprocessor = TextPreprocessor(vocabulary, 16, 16, predicate_placeholders=True)
    triples = (Triple("(410777)_2009_FD", "apoapsis", "259776702.47055 (kilometres)"),)
    example = EncodedExample("e0", (4, 5), None, {"ENT_1": "(410777) 2009 FD", "ENT_2": "259776702.47055 (kilometres)"},
                             triples, {"PRED_1": "apoapsis"})
    ids = vocabulary.encode(tokens, add_eos=True)
    candidates = np.array([[ids, ids]])
    texts = decode_examples(lambda source_ids: (candidates, np.zeros((1, 2))), [example], preprocessor, 1,
                            progress=False, reranker=reranker)
    assert texts == ["(410777) 2009 FD has an apoapsis of 259776702.47055 kilometres."]
    assert texts == [preprocessor.decode(ids, example.entity_map, example.predicate_map)]

def test_a_preference_breaks_ties_on_errors_and_never_outweighs_an_error(reranker):
    """`MLEConfig.rerank_discriminator_weight`: ties go to the preferred candidate, not the first."""
    studied = "ENT_1 , born in ENT_2 , served as a ENT_3 .".split()
    assert [reranker.errors(TRIPLES, tokens, ENTITY_MAP) for tokens in (RIGHT, studied, SWAPPED)] == [0, 0, 2]
    candidates = [RIGHT, studied, SWAPPED]
    assert reranker.choose(TRIPLES, candidates, ENTITY_MAP) == 0
    assert reranker.choose(TRIPLES, candidates, ENTITY_MAP, preference=[0.0, 1.0, 9.0]) == 1
    assert reranker.choose(TRIPLES, candidates, ENTITY_MAP, preference=[1.0, 0.0, 9.0]) == 0
    assert reranker.choose(TRIPLES, candidates, ENTITY_MAP, preference=[1.0, 1.0, 9.0]) == 0  # equal: beam order
    assert reranker.choose(TRIPLES, candidates, ENTITY_MAP, preference=[-np.inf, -5.0, 9.0]) == 1
    with pytest.raises(ValueError, match="one preference per candidate"):
        reranker.choose(TRIPLES, candidates, ENTITY_MAP, preference=[0.0, 1.0])


def test_decode_examples_breaks_ties_with_the_preference(reranker):
    """`decode_examples` hands the preference function the batch's source ids, candidate ids and
    beam scores, and the reranker its row."""
    studied = "ENT_1 , born in ENT_2 , served as a ENT_3 .".split()
    vocabulary = Vocabulary(sorted(set(SWAPPED) | set(studied)))
    preprocessor = TextPreprocessor(vocabulary, 16, 16)
    example = EncodedExample("e0", (4, 5), None, ENTITY_MAP, TRIPLES)
    length = len(studied) + 1
    candidates = np.array([[vocabulary.encode(RIGHT, add_eos=True) + [vocabulary.PAD] * (length - len(RIGHT) - 1),
                            vocabulary.encode(studied, add_eos=True)]])
    scores = np.array([[-0.5, -0.7]])
    seen = []

    def generate_function(source_ids):
        return candidates, scores

    def preference(source_ids, candidate_ids, beam_scores):
        seen.append((source_ids, candidate_ids, beam_scores))
        return beam_scores + np.array([[0.0, 0.3]])  # prefers the second

    texts = decode_examples(generate_function, [example], preprocessor, 1, progress=False, reranker=reranker,
                            preference=preference)
    assert texts == ["Alan Bean, born in Wheeler, Texas, served as a Test pilot."]
    (source_ids, candidate_ids, beam_scores), = seen
    assert source_ids[0, :2].tolist() == [4, 5] and np.array_equal(candidate_ids, candidates)
    assert np.array_equal(beam_scores, scores)
    with pytest.raises(ValueError, match="needs a `reranker`"):
        decode_examples(generate_function, [example], preprocessor, 1, progress=False, preference=preference)


def test_unstated_relations_as_errors_outrank_a_candidate_with_one_slot_error_fewer(reranker):
    """With `unstated_as_errors`, an unstated relation costs as much as a slot error: the
    candidate that leaves `engine` unstated no longer wins on slot errors alone."""
    triples = (Triple("Alvis_Speed_25", "engine", "Straight-six_engine"),
               Triple("Alvis_Speed_25", "birthPlace", "Wheeler,_Texas"))
    entity_map = {"ENT_1": "Alvis Speed 25", "ENT_2": "Straight-six engine", "ENT_3": "Wheeler, Texas"}
    unstated = "ENT_1 is in the ENT_2 and was born in ENT_3 .".split()  # 0 slot errors, 1 unstated
    stated_missing = "ENT_1 has the engine ENT_2 .".split()  # 1 slot error (ENT_3 missing), 0 unstated
    ties = SlotErrorReranker(reranker.aligner, stated_relations=True)
    counted = SlotErrorReranker(reranker.aligner, stated_relations=True, unstated_as_errors=True)
    assert (ties.errors(triples, unstated, entity_map), ties.errors(triples, stated_missing, entity_map)) == (0, 1)
    assert ties.choose(triples, [stated_missing, unstated], entity_map) == 1  # slot errors first
    assert (counted.errors(triples, unstated, entity_map), counted.errors(triples, stated_missing, entity_map)) == (1, 1)
    assert counted.choose(triples, [unstated, stated_missing], entity_map) == 1  # tie: fewer unstated
    both = "ENT_1 has the engine ENT_2 and was born in ENT_3 .".split()
    assert counted.errors(triples, both, entity_map) == 0
    assert counted.choose(triples, [unstated, stated_missing, both], entity_map) == 2
    # A relation with mined cues is never counted, whatever its wording.
    born = (Triple("Alan_Bean", "birthPlace", "Wheeler,_Texas"),)
    assert counted.errors(born, "ENT_1 is in ENT_2 .".split(), {"ENT_1": "Alan Bean", "ENT_2": "Wheeler, Texas"}) == 0


def test_unstated_as_errors_needs_stated_relations(reranker):
    with pytest.raises(ValueError, match="stated_relations"):
        SlotErrorReranker(reranker.aligner, stated_relations=False, unstated_as_errors=True)


def test_from_config_takes_the_runs_reranking_settings(reranker):
    """What `decode`, `generate`, the MLE job and the adversarial stage build (`decoder_for`)."""
    on = dataclasses.replace(MLEConfig.quick(), rerank_min_foreign=2.0, rerank_stated_relations=True,
                             rerank_unstated_as_errors=True, rerank_subjects="ties")
    off = dataclasses.replace(MLEConfig.quick(), rerank_min_foreign=None, rerank_stated_relations=False)
    built_on, built_off = (SlotErrorReranker.from_config(reranker.aligner, config) for config in (on, off))
    assert (built_on.stated_relations, built_on.unstated_as_errors, built_on.aligner.min_foreign) == (True, True, 2.0)
    assert (built_off.stated_relations, built_off.unstated_as_errors, built_off.aligner.min_foreign) == (False, False, None)
    assert (built_on.subjects, built_on.aligner.subjects, built_off.subjects, built_off.aligner.subjects) == (
        "ties", True, "off", False)
    attached = SlotErrorReranker.from_config(reranker.aligner, dataclasses.replace(on, rerank_attachments=True))
    unattached = SlotErrorReranker.from_config(reranker.aligner, dataclasses.replace(on, rerank_attachments=False))
    assert (attached.attachments, attached.aligner.attachments, unattached.aligner.attachments) == (True, True, False)
    assert MLEConfig().rerank_attachments and MLEConfig.quick().rerank_attachments  # on by default (lever 48, h9)


def test_attachments_count_a_value_attached_to_another_relations_words():
    """"the diameter of ENT_1 is ENT_2" for `ENT_1 launchSite ENT_2` states the launch site as the
    diameter: with `attachments` a slot error, so the candidate that states both relations wins."""
    triples = (Triple("Ariane_5", "launchSite", "Guiana_Space_Centre"), Triple("Ariane_5", "diameter", "5.4 (metres)"))
    entity_map = {"ENT_1": "Ariane 5", "ENT_2": "Guiana Space Centre", "ENT_3": "5.4 metres"}
    misattached = "the diameter of ENT_1 is ENT_2 and the diameter is ENT_3 .".split()
    right = "the launch site of ENT_1 is ENT_2 and the diameter is ENT_3 .".split()
    plain, counting = SlotErrorReranker(SlotAligner({})), SlotErrorReranker(SlotAligner({}), attachments=True)
    assert (plain.errors(triples, misattached, entity_map), counting.errors(triples, misattached, entity_map)) == (0, 1)
    assert counting.errors(triples, right, entity_map) == 0
    assert (plain.choose(triples, [misattached, right], entity_map),
            counting.choose(triples, [misattached, right], entity_map)) == (0, 1)


def test_subjects_count_a_relation_stated_of_another_input_entity(reranker):
    """"the capital of ENT_3" for `Italy capital Rome` states the capital of the car. With
    `subjects="errors"` it is a slot error; with "ties" it only breaks ties on slot errors, so a
    candidate that leaves a value out (one error the tables' aligner sees) never wins by it."""
    triples = (Triple("Italy", "capital", "Rome"), Triple("Alfa_Romeo_164", "assembly", "Italy"))
    entity_map = {"ENT_1": "Italy", "ENT_2": "Rome", "ENT_3": "Alfa Romeo 164"}
    car = "the capital of ENT_3 is ENT_2 and it is assembled in ENT_1 .".split()
    country = "ENT_3 is assembled in ENT_1 , whose capital is ENT_2 .".split()
    omitting = "ENT_3 is assembled in ENT_1 .".split()  # Rome left out: 1 slot error
    counting, breaking = (SlotErrorReranker(reranker.aligner, subjects=mode) for mode in ("errors", "ties"))
    assert [reranker.errors(triples, text, entity_map) for text in (car, country, omitting)] == [0, 0, 1]
    assert [counting.errors(triples, text, entity_map) for text in (car, country, omitting)] == [1, 0, 1]
    assert [breaking.errors(triples, text, entity_map) for text in (car, country, omitting)] == [0, 0, 1]
    assert reranker.choose(triples, [car, country], entity_map) == 0
    assert counting.choose(triples, [car, country], entity_map) == 1
    assert breaking.choose(triples, [car, country], entity_map) == 1  # a tie on errors: fewer wrong subjects
    # "errors" ties the car's wrong subject with the omission, and the more likely candidate wins;
    # "ties" keeps the candidate without a slot error by the tables' aligner.
    assert (counting.choose(triples, [omitting, car], entity_map), breaking.choose(triples, [omitting, car], entity_map)) == (
        0, 1)
    # The boolean of earlier releases: True is "errors", False "off".
    assert [SlotErrorReranker(reranker.aligner, subjects=flag).errors(triples, car, entity_map) for flag in (True, False)] == [
        1, 0]
    with pytest.raises(ValueError, match="subjects"):
        SlotErrorReranker(reranker.aligner, subjects="always")

def test_ngram_f1_on_hand_counted_pairs():
    """Mean over orders 1-4 of the clipped n-gram F1; orders neither text reaches are left out."""
    f1 = lambda a, b: ngram_f1(ngram_counts(a), ngram_counts(b))  # noqa: E731
    assert f1([1, 2, 3, 4], [1, 2, 3, 4]) == 1.0
    # 1-grams 2 of 3 + 3 (F1 2/3), 2-grams 1 of 2 + 2 (1/2), 3-grams 0 of 1 + 1 (0); no 4-grams.
    assert f1([1, 2, 3], [1, 2, 4]) == pytest.approx((2 / 3 + 1 / 2 + 0) / 3)
    assert f1([1], [2]) == 0.0  # not lifted by the orders neither has
    assert f1([7, 7, 7], [7]) == pytest.approx((2 * 1 / 4 + 0 + 0) / 3)  # clipped: one match, not three
    assert f1([], []) == 1.0 and f1([5], []) == 0.0


def test_mbr_preference_prefers_the_beams_consensus_weighted_by_its_probabilities():
    """Each candidate's preference is its expected n-gram F1 against the beam (EOS and PAD cut),
    weighted by the softmax of the beam scores."""
    eos, pad = Vocabulary.EOS, Vocabulary.PAD
    a, b, c = [10, 11, 12, 13], [10, 11, 12, 14], [20, 21]
    rows = [a + [eos, pad], b + [eos, pad], a + [eos, pad], c + [eos, pad, pad, pad]]
    candidate_ids = np.array([rows])
    scores = np.array([[-0.1, -0.2, -0.3, -0.4]])
    preference = mbr_preference(eos, pad)(None, candidate_ids, scores)[0]
    weights = np.exp(scores[0] - scores[0].max())
    weights /= weights.sum()
    texts = [a, b, a, c]
    expected = [sum(w * ngram_f1(ngram_counts(x), ngram_counts(y)) for w, y in zip(weights, texts)) for x in texts]
    np.testing.assert_allclose(preference, expected, rtol=1e-12)
    assert preference[0] == preference[2] > preference[1] > preference[3]
    # An outlier the beam finds far more likely than the rest becomes the consensus itself.
    lopsided = mbr_preference(eos, pad)(None, candidate_ids, np.array([[-9.0, -9.0, -9.0, 0.0]]))[0]
    assert int(np.argmax(lopsided)) == 3
    # A beam slot the search left empty (-inf) weighs nothing.
    empty = mbr_preference(eos, pad)(None, candidate_ids, np.array([[-0.1, -0.2, -0.3, -np.inf]]))[0]
    weights = np.exp(np.array([-0.1, -0.2, -0.3]) + 0.1)
    weights /= weights.sum()
    assert empty[3] == pytest.approx(sum(w * ngram_f1(ngram_counts(c), ngram_counts(y)) for w, y in zip(weights, texts)))
    # A row the search left wholly empty gets no preference, and the other rows theirs.
    two_rows = mbr_preference(eos, pad)(None, np.array([rows, rows]), np.array([[-np.inf] * 4, [-0.1, -0.2, -0.3, -0.4]]))
    np.testing.assert_array_equal(two_rows[0], np.zeros(4))
    np.testing.assert_allclose(two_rows[1], preference, rtol=1e-12)


def test_mbr_breaks_only_ties_on_errors(reranker):
    """With the consensus as preference, among candidates of equal errors the one the beam agrees
    with wins, not the first; a candidate with fewer slot errors still beats the consensus."""
    variants = [RIGHT] + [text.split() for text in (
        "ENT_1 , born in ENT_2 , served as a ENT_3 .", "ENT_1 , born in ENT_2 , served as ENT_3 .",
        "ENT_1 , who was born in ENT_2 , served as a ENT_3 .", "ENT_1 was born in ENT_3 and served as ENT_2 .",
    )] + [SWAPPED]
    vocabulary = Vocabulary(sorted({token for tokens in variants for token in tokens}))
    width = max(len(tokens) for tokens in variants) + 1

    def consensus(candidates):
        ids = np.array([[vocabulary.encode(tokens, add_eos=True) + [vocabulary.PAD] * (width - len(tokens) - 1)
                         for tokens in candidates]])
        return mbr_preference(vocabulary.EOS, vocabulary.PAD)(None, ids, np.zeros((1, len(candidates))))[0]

    equals = variants[:4]  # no slot errors: the three "ENT_1 , born in" texts agree with one another
    assert [reranker.errors(TRIPLES, tokens, ENTITY_MAP) for tokens in equals] == [0, 0, 0, 0]
    preference = consensus(equals)
    assert reranker.choose(TRIPLES, equals, ENTITY_MAP) == 0
    assert reranker.choose(TRIPLES, equals, ENTITY_MAP, preference=preference) == int(np.argmax(preference)) == 1
    swapped = [RIGHT, SWAPPED, variants[4], SWAPPED]  # the swapped texts are the beam's consensus
    preference = consensus(swapped)
    assert int(np.argmax(preference)) in (1, 3) and preference[0] < preference.max()
    assert reranker.choose(TRIPLES, swapped, ENTITY_MAP, preference=preference) == 0


def test_decoder_for_hands_the_consensus_to_the_reranker_when_the_config_asks(monkeypatch):
    """`MLEConfig.rerank_mbr` reaches decoding: `mle.decoder_for` passes `mbr_preference` for the
    reranker's ties, and nothing without it."""
    from onestep_gan.rdf2text import inference, mle

    seen = {}
    monkeypatch.setattr(inference, "make_generate_function", lambda model, **kwargs: "generate")
    monkeypatch.setattr(inference, "decode_examples",
                        lambda generate, examples, preprocessor, batch_size, **kwargs: seen.update(kwargs))
    aligner = SlotAligner.from_entries(_training_entries(), min_count=1, smoothing=0.0, margin=1.5, min_rival=2.0)
    preprocessor = TextPreprocessor(Vocabulary(["a"]), 8, 8)
    eos, pad = preprocessor.eos_id, preprocessor.pad_id
    candidate_ids = np.array([[[5, 6, 7, eos], [5, 6, 8, eos], [5, 6, 7, eos]]])
    for on in (True, False):
        mle.decoder_for(None, preprocessor, MLEConfig(rerank_mbr=on), aligner, progress=False)([])
        assert isinstance(seen["reranker"], SlotErrorReranker)
        if on:
            expected = mbr_preference(eos, pad)(None, candidate_ids, np.zeros((1, 3)))
            np.testing.assert_array_equal(seen["preference"](None, candidate_ids, np.zeros((1, 3))), expected)
        else:
            assert seen["preference"] is None


def test_value_shapes_in_the_reranker_let_a_year_stand_next_to_born_in(reranker):
    """`MLEConfig.rerank_value_shapes`: "born in ENT_3" for `birthYear` (no mined cues) is a wrong
    `birthPlace` to the plain aligner, so the candidate that leaves the year out ties with it and wins
    by beam order; with value shapes the year is not a place, and the text stating both wins."""
    triples = (Triple("Alfred_Jones", "birthPlace", "England"), Triple("Alfred_Jones", "birthYear", "1872"))
    entity_map = {"ENT_1": "Alfred Jones", "ENT_2": "England", "ENT_3": "1872"}
    silent = "ENT_1 was born in ENT_2 .".split()
    both = "ENT_1 , born in ENT_3 , was born in ENT_2 .".split()
    shaped = SlotErrorReranker.from_config(reranker.aligner, dataclasses.replace(MLEConfig.quick(), rerank_value_shapes=True))
    plain = SlotErrorReranker.from_config(reranker.aligner, MLEConfig.quick())
    assert (shaped.aligner.value_shapes, plain.aligner.value_shapes) == (True, False)
    assert [plain.errors(triples, tokens, entity_map) for tokens in (silent, both)] == [1, 1]
    assert [shaped.errors(triples, tokens, entity_map) for tokens in (silent, both)] == [1, 0]
    assert (plain.choose(triples, [silent, both], entity_map), shaped.choose(triples, [silent, both], entity_map)) == (0, 1)
    assert not MLEConfig().rerank_value_shapes


def test_foreign_known_only_in_the_reranker_spares_a_relation_mining_never_met(reranker):
    """`MLEConfig.rerank_foreign_known_only`: "born in ENT_2" for `almaMater` (never met in mining)
    is a value under a relation outside the input to the reranker's `min_foreign` check, and no
    error when that check is made only for relations mining met; for `occupation` (met) it stays an
    error either way."""
    entity_map = {"ENT_1": "Alan Bean", "ENT_2": "UT Austin"}
    born = "ENT_1 was born in ENT_2 .".split()
    on = dataclasses.replace(MLEConfig.quick(), rerank_min_foreign=2.0)
    plain = SlotErrorReranker.from_config(reranker.aligner, dataclasses.replace(on, rerank_foreign_known_only=False))
    known_only = SlotErrorReranker.from_config(reranker.aligner, dataclasses.replace(on, rerank_foreign_known_only=True))
    assert (plain.aligner.foreign_known_only, known_only.aligner.foreign_known_only) == (False, True)
    unseen = (Triple("Alan_Bean", "almaMater", "UT_Austin"),)
    assert (plain.errors(unseen, born, entity_map), known_only.errors(unseen, born, entity_map)) == (1, 0)
    seen = (Triple("Alan_Bean", "occupation", "UT_Austin"),)
    assert (plain.errors(seen, born, entity_map), known_only.errors(seen, born, entity_map)) == (1, 1)
    assert MLEConfig().rerank_foreign_known_only and MLEConfig.quick().rerank_foreign_known_only  # lever 53


def test_inversions_in_the_reranker_prefer_the_relation_the_right_way_round(reranker):
    """`MLEConfig.rerank_inversions`: "ENT_1 is the alma mater of ENT_2" for `ENT_1 almaMater ENT_2`
    states the relation backwards (English "X is the P of Y" says P(Y) = X); the plain reranker
    sees no error in it and keeps the beam's first candidate, the one with inversions prefers "the alma
    mater of ENT_1 is ENT_2"."""
    triples = (Triple("Alan_Bean", "almaMater", "UT_Austin"),)
    entity_map = {"ENT_1": "Alan Bean", "ENT_2": "UT Austin"}
    backwards = "ENT_1 is the alma mater of ENT_2 .".split()
    right = "the alma mater of ENT_1 is ENT_2 .".split()
    plain = SlotErrorReranker.from_config(reranker.aligner, MLEConfig.quick())
    inverted = SlotErrorReranker.from_config(reranker.aligner, dataclasses.replace(MLEConfig.quick(), rerank_inversions=True))
    assert (plain.aligner.inversions, inverted.aligner.inversions) == (False, True)
    assert [plain.errors(triples, tokens, entity_map) for tokens in (backwards, right)] == [0, 0]
    assert [inverted.errors(triples, tokens, entity_map) for tokens in (backwards, right)] == [1, 0]
    assert (plain.choose(triples, [backwards, right], entity_map),
            inverted.choose(triples, [backwards, right], entity_map)) == (0, 1)
    assert not MLEConfig().rerank_inversions


def test_of_phrases_in_the_reranker_stop_calling_the_right_way_form_a_swap(reranker):
    """`MLEConfig.rerank_of_phrases`: with the swap test strict enough to fire on the tiny corpus, the
    plain reranker calls the right-way "the birth place of ENT_1 is ENT_2" a swap and prefers a text
    that leaves the relation out; with `of_phrases` the right-way text has no error and wins."""
    triples = (Triple("Alan_Bean", "birthPlace", "Wheeler,_Texas"),)
    entity_map = {"ENT_1": "Alan Bean", "ENT_2": "Wheeler, Texas"}
    right = "The birth place of ENT_1 is ENT_2 .".split()
    strict = reranker.aligner.with_settings(swap_score=2.0)  # the tiny corpus's cue weights are small
    plain = SlotErrorReranker.from_config(strict, MLEConfig.quick())
    reading = SlotErrorReranker.from_config(strict, dataclasses.replace(MLEConfig.quick(), rerank_of_phrases=True))
    assert (plain.aligner.of_phrases, reading.aligner.of_phrases) == (False, True)
    assert (plain.errors(triples, right, entity_map), reading.errors(triples, right, entity_map)) == (1, 0)
    assert not MLEConfig().rerank_of_phrases


def test_opposed_counts_a_value_stated_in_the_words_of_the_opposed_relation():
    """"ENT_1 was born on ENT_2" for a death date (cues as in test_faithfulness): a slot error with
    `opposed` and the check outside the input, so the candidate that says "died" wins."""
    cues = {"birth date": {"L1:on": 3.4, "L2:born": 3.0, "L:born": 3.0},
            "death date": {"L1:on": 3.4, "L2:died": 3.0, "L:died": 3.0}}
    triples = (Triple("Marie_Curie", "deathDate", "1934-07-04"),)
    entity_map = {"ENT_1": "Marie Curie", "ENT_2": "4 July 1934"}
    born, died = "ENT_1 was born on ENT_2 .".split(), "ENT_1 died on ENT_2 .".split()
    plain, opposed = (SlotErrorReranker(SlotAligner(cues), min_foreign=6.0, opposed=flag) for flag in (False, True))
    assert [plain.errors(triples, text, entity_map) for text in (born, died)] == [0, 0]
    assert [opposed.errors(triples, text, entity_map) for text in (born, died)] == [1, 0]
    assert (plain.choose(triples, [born, died], entity_map), opposed.choose(triples, [born, died], entity_map)) == (0, 1)
    assert SlotErrorReranker.from_config(SlotAligner(cues), MLEConfig(rerank_opposed=True)).aligner.opposed
