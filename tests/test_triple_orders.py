import pytest

from onestep_gan.rdf2text import preprocessing
from onestep_gan.rdf2text.triple_orders import reorder_triples
from onestep_gan.rdf2text.webnlg import Triple, WebNLGEntry

ALAN_BEAN = WebNLGEntry(
    "train/Id1", "Astronaut", 3,
    (
        Triple("Alan_Bean", "birthPlace", "Wheeler,_Texas"),
        Triple("Alan_Bean", "occupation", "Test_pilot"),
        Triple("Alan_Bean", "mission", "Apollo_12"),
    ),
    ("Alan Bean, born in Wheeler, Texas, was a test pilot and flew on Apollo 12.",),
    mentions=((("Test_pilot", "test pilot"),),),
)
ONE_TRIPLE = WebNLGEntry("train/Id2", "Food", 1, (Triple("Bacon", "country", "France"),), ("Bacon is from France.",))


def test_reorder_triples_permutes_each_entry_by_seed_and_variant_and_keeps_the_rest():
    entries = [ALAN_BEAN, ONE_TRIPLE] * 3  # the same entry at three positions: three draws
    reordered = reorder_triples(entries, seed=1234, variant=1)
    assert reordered == reorder_triples(entries, seed=1234, variant=1)  # seeded: the same again
    for before, after in zip(entries, reordered, strict=True):
        assert sorted(after.triples, key=str) == sorted(before.triples, key=str)
        assert (after.entry_id, after.texts, after.mentions, after.size) == (
            before.entry_id, before.texts, before.mentions, before.size)
    assert all(entry.triples == ONE_TRIPLE.triples for entry in reordered[1::2])
    # Other variants, seeds and positions draw other orders: of the 3 x 5 draws below, several
    # orders come out (6 are possible), not the corpus's alone.
    drawn = {entry.triples for variant in range(1, 6) for entry in reorder_triples(entries, 1234, variant)[::2]}
    assert len(drawn) >= 3
    assert [e.triples for e in reorder_triples(entries, 7, 1)] != [e.triples for e in reordered]
    # Within one variant, the same entry at three positions draws by its position too (not one order for all).
    assert len({entry.triples for entry in reorder_triples([ALAN_BEAN] * 3, 1234, 1)}) > 1
    with pytest.raises(ValueError, match="variant >= 0"):
        reorder_triples(entries, 1234, -1)


def test_a_reordered_entry_numbers_its_placeholders_by_the_new_order():
    """What training sees: the source in the new order, the same text delexicalised with the
    new numbering, and the same text back after relexicalisation."""
    mentions = ALAN_BEAN.mentions[0]
    before = preprocessing.delexicalise(ALAN_BEAN.triples, ALAN_BEAN.texts[0], True, mentions)
    after = preprocessing.delexicalise(ALAN_BEAN.triples[::-1], ALAN_BEAN.texts[0], True, mentions)
    assert " ".join(before.target_tokens) == (
        "ENT_1 , born in ENT_2 , was a ENT_3 and flew on ENT_4 ."
    )
    assert " ".join(after.source_tokens) == (
        "<S> ENT_1 <P> PRED_1 mission <O> ENT_2 <S> ENT_1 <P> PRED_2 occupation <O> ENT_3 "
        "<S> ENT_1 <P> PRED_3 birth place <O> ENT_4"
    )
    assert " ".join(after.target_tokens) == "ENT_1 , born in ENT_4 , was a ENT_3 and flew on ENT_2 ."
    for example in (before, after):
        text = preprocessing.detokenize(preprocessing.relexicalise(example.target_tokens, example.entity_map))
        assert text == "Alan Bean, born in Wheeler, Texas, was a Test pilot and flew on Apollo 12."


def test_canonical_order_walks_from_the_root_breadth_first_whatever_the_listing():
    import itertools

    from onestep_gan.rdf2text.triple_orders import canonical_order

    # Alan Bean (no triple's object) is the root; Wheeler, Texas, reached from him, comes next;
    # each entity's triples sorted by predicate, then object; the unreached part (Texas) after.
    triples = (
        Triple("Wheeler,_Texas", "country", "United_States"),
        Triple("Alan_Bean", "occupation", "Test_pilot"),
        Triple("Texas", "capital", "Austin"),
        Triple("Alan_Bean", "birthPlace", "Wheeler,_Texas"),
        Triple("Alan_Bean", "award", "Navy_Medal"),
        Triple("Alan_Bean", "award", "Air_Medal"),
    )
    expected = (
        Triple("Alan_Bean", "award", "Air_Medal"),
        Triple("Alan_Bean", "award", "Navy_Medal"),
        Triple("Alan_Bean", "birthPlace", "Wheeler,_Texas"),
        Triple("Alan_Bean", "occupation", "Test_pilot"),
        Triple("Wheeler,_Texas", "country", "United_States"),
        Triple("Texas", "capital", "Austin"),
    )
    assert canonical_order(triples) == expected
    assert {canonical_order(order) for order in itertools.permutations(triples)} == {expected}
    # A cycle has no root: the subject with the most triples starts, then by name.
    cycle = (Triple("B", "p", "A"), Triple("A", "p", "B"), Triple("B", "q", "C"))
    assert canonical_order(cycle) == (Triple("B", "p", "A"), Triple("B", "q", "C"), Triple("A", "p", "B"))
    # A repeated triple stays.
    assert canonical_order(ONE_TRIPLE.triples * 2) == ONE_TRIPLE.triples * 2


def test_a_canonical_preprocessor_encodes_every_listing_of_a_set_alike():
    """Train and decoding see one source for one set of triples; the encoded example's triples are
    in the source's order, which the reranker numbers placeholders by."""
    import dataclasses

    from onestep_gan.rdf2text.preprocessor import TextPreprocessor

    reversed_entry = dataclasses.replace(ALAN_BEAN, triples=ALAN_BEAN.triples[::-1])
    entries = [ALAN_BEAN, ONE_TRIPLE]
    canonical = TextPreprocessor.build(entries, 64, 72, predicate_placeholders=True, canonical_order=True)
    plain = TextPreprocessor(canonical.vocabulary, 64, 72, predicate_placeholders=True)
    for for_training in (True, False):
        a, b = (canonical.encode_entries([entry], for_training)[0] for entry in (ALAN_BEAN, reversed_entry))
        assert (a.source_ids, a.target_ids, a.entity_map, a.triples) == (b.source_ids, b.target_ids, b.entity_map, b.triples)
        # The plain preprocessor follows the listing.
        assert plain.encode_entries([ALAN_BEAN], for_training)[0].source_ids != plain.encode_entries(
            [reversed_entry], for_training)[0].source_ids
    example = canonical.encode_entries([ALAN_BEAN], True)[0]
    # birthPlace < mission < occupation: Wheeler, Texas is ENT_2, Apollo 12 ENT_3, Test pilot ENT_4.
    assert canonical.vocabulary.decode(example.target_ids) == [
        "ENT_1", ",", "born", "in", "ENT_2", ",", "was", "a", "ENT_4", "and", "flew", "on", "ENT_3", "."]
    assert [t.predicate for t in example.triples] == ["birthPlace", "mission", "occupation"]
    delexicalised = preprocessing.delexicalise(list(example.triples), None, True)
    assert canonical.vocabulary.encode(delexicalised.source_tokens) == list(example.source_ids)


def test_canonical_order_is_breadth_first_and_starts_at_a_subject_no_triple_points_to():
    """Breadth first: both of the root's triples before either child's (a depth-first walk put C's before B's).
    The root is a subject that is no triple's object, even when another subject has more triples."""
    from onestep_gan.rdf2text.triple_orders import canonical_order

    wide = [Triple("A", "p", "B"), Triple("A", "q", "C"), Triple("B", "r", "X"), Triple("C", "s", "Y")]
    for listing in (wide, wide[::-1], [wide[2], wide[0], wide[3], wide[1]]):
        assert canonical_order(listing) == tuple(wide)
    chain = [Triple("A", "p", "B"), Triple("B", "q", "C"), Triple("B", "r", "D")]
    assert canonical_order(chain[::-1]) == tuple(chain)
