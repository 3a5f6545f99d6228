import pytest

from onestep_gan.rdf2text.preprocessing import (
    SPECIAL_SOURCE_TOKENS, delexicalise, detokenize, linearise, normalise_entity,
    relexicalise, split_predicate, tokenize, write_out)
from onestep_gan.rdf2text.webnlg import Triple

ALAN_BEAN = [
    Triple("Alan_Bean", "birthPlace", "Wheeler,_Texas"),
    Triple("Alan_Bean", "birthDate", '"1932-03-15"'),
    Triple("Alan_Bean", "occupation", "Test_pilot"),
]


@pytest.mark.parametrize("raw, expected", [
    ("Wheeler,_Texas", "Wheeler, Texas"),
    ('"Madrid"@en', "Madrid"),
    ('"1.5"^^xsd:double', "1.5"),
    ('"Drake  Stevens"', "Drake Stevens"),
    (" A_ _B ", "A B"),
])
def test_normalise_entity(raw, expected):
    assert normalise_entity(raw) == expected


@pytest.mark.parametrize("predicate, expected", [
    ("birthPlace", "birth place"),
    ("leaderName", "leader name"),
    ("ISBN_number", "ISBN number"),
    ("areaTotal", "area total"),
    ("UTCOffset", "UTC offset"),
    ("1st_runway_LengthFeet", "1st runway length feet"),
    ("elevationAboveTheSeaLevel_(in_metres)", "elevation above the sea level in metres"),
])
def test_split_predicate(predicate, expected):
    assert split_predicate(predicate) == expected


def test_tokenize_splits_inner_sentence_periods_but_not_abbreviations():
    assert tokenize('Bean was born in 1932. He flew "Apollo 12" in the U.S. and St. Louis.') == [
        "Bean", "was", "born", "in", "1932", ".", "He", "flew", "``", "Apollo", "12", "''",
        "in", "the", "U.S.", "and", "St.", "Louis", "."]


def test_detokenize_inverts_tokenize():
    text = 'Alan Bean, born in 1932, said "hi" (twice).'
    assert detokenize(tokenize(text)) == text


def test_linearise():
    assert linearise(ALAN_BEAN[:2]) == [
        "<S>", "Alan", "Bean", "<P>", "birth", "place", "<O>", "Wheeler", ",", "Texas",
        "<S>", "Alan", "Bean", "<P>", "birth", "date", "<O>", "1932-03-15"]
    assert SPECIAL_SOURCE_TOKENS == ("<S>", "<P>", "<O>")


def test_delexicalise_exact_and_fallback_matches():
    example = delexicalise(ALAN_BEAN, "Alan Bean, a test pilot, was born in Wheeler on March 15, 1932.")
    assert example.source_tokens == [
        "<S>", "ENT_1", "<P>", "birth", "place", "<O>", "ENT_2",
        "<S>", "ENT_1", "<P>", "birth", "date", "<O>", "ENT_3",
        "<S>", "ENT_1", "<P>", "occupation", "<O>", "ENT_4"]
    assert example.entity_map == {
        "ENT_1": "Alan Bean", "ENT_2": "Wheeler, Texas", "ENT_3": "1932-03-15", "ENT_4": "Test pilot"}
    # "test pilot": case-insensitive; "Wheeler": before the comma; the date written out.
    assert example.target_tokens == [
        "ENT_1", ",", "a", "ENT_4", ",", "was", "born", "in", "ENT_2", "on", "ENT_3", "."]


def test_delexicalise_without_text_and_repeated_entity():
    example = delexicalise([Triple("A", "p", "A")])
    assert example.target_tokens is None
    assert example.source_tokens == ["<S>", "ENT_1", "<P>", "p", "<O>", "ENT_1"]
    assert example.entity_map == {"ENT_1": "A"}


@pytest.mark.parametrize("triples, text, expected", [
    # accents and dashes ignored
    ([Triple("Adolfo_Suárez_Madrid–Barajas_Airport", "location", "Alcobendas")],
     "Adolfo Suarez Madrid-Barajas airport is in Alcobendas.",
     ["ENT_1", "is", "in", "ENT_2", "."]),
    # every occurrence; a sentence-final abbreviation period
    ([Triple("AEK_Athens_F.C.", "ground", "Athens")],
     "AEK Athens F.C. play in Athens. Fans love AEK Athens F.C.",
     ["ENT_1", "play", "in", "ENT_2", ".", "Fans", "love", "ENT_1", "."]),
    # longest entity first: "Athens" inside "AEK Athens" is not taken by ENT_2
    ([Triple("Athens", "team", "AEK_Athens")], "AEK Athens is from Athens.",
     ["ENT_2", "is", "from", "ENT_1", "."]),
    # alias, number without ".0", trailing parenthesis dropped
    ([Triple("Alpena,_Michigan", "country", "United_States")], "Alpena, Michigan is in the U.S.",
     ["ENT_1", "is", "in", "the", "ENT_2", "."]),
    ([Triple("Alan_Bean", "timeInSpace", '"100305.0"(minutes)')], "Alan Bean spent 100305 minutes.",
     ["ENT_1", "spent", "ENT_2", "minutes", "."]),
    ([Triple("Airman_(comicsCharacter)", "creator", "Harry_Sahle")], "Harry Sahle created Airman.",
     ["ENT_2", "created", "ENT_1", "."]),
    # not found: text left as is
    ([Triple("X", "p", "Deceased")], "X is dead.", ["ENT_1", "is", "dead", "."]),
])
def test_delexicalise_text(triples, text, expected):
    assert delexicalise(triples, text).target_tokens == expected


def test_relexicalise_round_trip_and_unknown_placeholders():
    example = delexicalise(ALAN_BEAN[:1], "Alan Bean was born in Wheeler, Texas.")
    assert example.target_tokens == ["ENT_1", "was", "born", "in", "ENT_2", "."]
    assert relexicalise(example.target_tokens + ["ENT_9"], example.entity_map) == tokenize(
        "Alan Bean was born in Wheeler, Texas.")
    assert relexicalise(["ENT_10", "x", "ENT"], {}) == ["x", "ENT"]


def test_relexicalise_writes_iso_dates_out_as_references_do():
    # Train references write dates out ("12 March 1950": 410, "March 12, 1950": 326) far more
    # often than in ISO form (126), so the output does too; other values stay as they are.
    entity_map = {"ENT_1": "Luigi Rossi", "ENT_2": "1950-03-12", "ENT_3": "1950-13-40", "ENT_4": "4000.0"}
    assert detokenize(relexicalise(["ENT_1", "was", "born", "on", "ENT_2", "."], entity_map)) == (
        "Luigi Rossi was born on 12 March 1950.")
    assert relexicalise(["ENT_3", "ENT_4"], entity_map) == ["1950-13-40", "4000.0"]  # not a date; a number
    assert write_out("2013-09-01") == "1 September 2013" and write_out("Wheeler, Texas") == "Wheeler, Texas"
