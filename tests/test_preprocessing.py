import pytest

from onestep_gan.rdf2text.preprocessing import (
    SPECIAL_SOURCE_TOKENS, delexicalise, detokenize, entity_role_tokens, is_placeholder, is_predicate_placeholder,
    linearise, measure_clauses, normalise_entity, relexicalise, relexicalise_predicates, split_predicate, tokenize,
    write_out)
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
    # DBpedia's merged properties name alternatives: the first one is the relation's words.
    ("associatedBand/associatedMusicalArtist", "associated band"),
    ("associatedBand/", "associated band"),
    ("/associatedBand", "associated band"),
    # A label with the property's names as a gloss after a space: the label alone.
    ("office (workedAt, workedAs)", "office"),
    ("(workedAt)", "worked at"),
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


def test_delexicalise_with_gold_mentions_finds_what_the_forms_miss():
    triples = [Triple("Carroll_County,_Maryland", "country", "United_States"),
               Triple("Carroll_County,_Maryland", "leaderName", "Edna_Kenny")]
    text = "Carrol County, Maryland is in the US and led by Edna Kenny."
    without = delexicalise(triples, text)
    assert without.target_tokens == [
        "Carrol", "County", ",", "Maryland", "is", "in", "the", "ENT_2", "and", "led", "by", "ENT_3", "."]
    mentions = [("Carroll_County,_Maryland", "Carrol County, Maryland"), ("United_States", "the US"),  # a mention beats a shorter fallback ("US")
                ("Edna_Kenny", "Edna"),  # the entity's own form is tried first: "Edna Kenny" stays whole
                ("Ireland", "Maryland")]  # an entity outside the input is ignored
    example = delexicalise(triples, text, mentions=mentions)
    assert example.target_tokens == ["ENT_1", "is", "in", "ENT_2", "and", "led", "by", "ENT_3", "."]
    assert example.source_tokens == without.source_tokens and example.entity_map == without.entity_map


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


def test_predicate_placeholders_in_source_and_text_and_back():
    triples = [
        Triple("United_States", "language", "English_language"),
        Triple("Alan_Bean", "birthPlace", "Wheeler,_Texas"),
        Triple("Wheeler,_Texas", "country", "United_States"),
        Triple("Elliot_See", "birthPlace", "Dallas"),  # a repeated predicate: one placeholder
    ]
    text = ("Alan Bean was born in Wheeler, Texas and Elliot See in Dallas, both in the Country of "
            "the United States, where the English language is spoken.")
    example = delexicalise(triples, text, predicate_placeholders=True)
    assert example.source_tokens == [
        "<S>", "ENT_1", "<P>", "PRED_1", "language", "<O>", "ENT_2",
        "<S>", "ENT_3", "<P>", "PRED_2", "birth", "place", "<O>", "ENT_4",
        "<S>", "ENT_4", "<P>", "PRED_3", "country", "<O>", "ENT_1",
        "<S>", "ENT_5", "<P>", "PRED_2", "birth", "place", "<O>", "ENT_6"]
    assert example.predicate_map == {"PRED_1": "language", "PRED_2": "birth place", "PRED_3": "country"}
    # "birth place" is not in the text; "language" only inside the entity "English language";
    # "Country" matches ignoring case.
    assert example.target_tokens == [
        "ENT_3", "was", "born", "in", "ENT_4", "and", "ENT_5", "in", "ENT_6", ",", "both", "in", "the",
        "PRED_3", "of", "the", "ENT_1", ",", "where", "the", "ENT_2", "is", "spoken", "."]
    assert detokenize(relexicalise(example.target_tokens, example.entity_map, example.predicate_map)) == (
        "Alan Bean was born in Wheeler, Texas and Elliot See in Dallas, both in the country of "
        "the United States, where the English language is spoken.")
    # Off (the default): the entity delexicalisation alone, as before.
    default = delexicalise(triples, text)
    assert default.predicate_map == {}
    assert default.source_tokens == [token for token in example.source_tokens if not is_predicate_placeholder(token)]
    assert "Country" in default.target_tokens


@pytest.mark.parametrize("triples, text, expected", [
    # longest phrase first: "largest city" is not split into "largest" + the PRED of "city"
    ([Triple("Texas", "largestCity", "Houston"), Triple("Akron_Zips", "city", "Akron,_Ohio")],
     "Houston is the largest city of Texas; the Akron Zips play in the city of Akron, Ohio.",
     ["ENT_2", "is", "the", "PRED_1", "of", "ENT_1", ";", "the", "ENT_3", "play", "in", "the", "PRED_2",
      "of", "ENT_4", "."]),
    # a phrase with a content word is replaced; one of stopwords only is not
    ([Triple("Bern", "isPartOf", "Switzerland")], "Bern is part of Switzerland.",
     ["ENT_1", "PRED_1", "ENT_2", "."]),
    ([Triple("Bern", "in", "Switzerland")], "Bern is in Switzerland.", ["ENT_1", "is", "in", "ENT_2", "."]),
    # whole tokens only: "leaders" is not "leader"
    ([Triple("Akron", "leader", "Bob")], "The leaders of Akron include Bob; its Leader is Bob.",
     ["The", "leaders", "of", "ENT_1", "include", "ENT_2", ";", "its", "PRED_1", "is", "ENT_2", "."]),
])
def test_delexicalise_text_with_predicate_placeholders(triples, text, expected):
    assert delexicalise(triples, text, predicate_placeholders=True).target_tokens == expected


def test_predicate_placeholders_are_not_entity_placeholders():
    assert is_predicate_placeholder("PRED_12") and not is_placeholder("PRED_12")
    assert is_placeholder("ENT_1") and not is_predicate_placeholder("ENT_1")
    assert not is_predicate_placeholder("PRED") and not is_predicate_placeholder("PRED_1x")
    # The reranker's view: predicates put back, entity placeholders kept, unknown ones dropped.
    predicate_map = {"PRED_1": "birth place", "PRED_2": "ISBN number"}
    assert relexicalise_predicates(["ENT_1", "'s", "PRED_1", "is", "ENT_2", "PRED_9"], predicate_map) == [
        "ENT_1", "'s", "birth", "place", "is", "ENT_2"]
    assert relexicalise(["its", "PRED_2", "is", "ENT_1", "PRED_3"], {"ENT_1": "0-7"}, predicate_map) == [
        "its", "ISBN", "number", "is", "0-7"]
    assert relexicalise(["PRED_1", "x"], {}) == ["x"]


def test_predicate_placeholder_starting_a_sentence_is_capitalised():
    predicate_map = {"PRED_1": "capital", "PRED_2": "runway length"}
    assert relexicalise_predicates(
        ["PRED_1", "of", "ENT_1", "is", "ENT_2", ".", "PRED_2", "is", "ENT_3", ";", "its", "PRED_2", "."],
        predicate_map,
    ) == ["Capital", "of", "ENT_1", "is", "ENT_2", ".", "Runway", "length", "is", "ENT_3", ";", "its",
          "runway", "length", "."]


@pytest.mark.parametrize("surface, expected", [
    # A name's qualifier in parentheses: train references drop it 1183 times, keep it 555.
    ("Ardmore Airport (New Zealand)", "Ardmore Airport"),
    ("Republican Party (United States)", "Republican Party"),
    # A measure with its unit in parentheses: references write the number, then the unit's words.
    ('"13017.0"(minutes)', "13017.0 minutes"),
    ("254989570.60815 (kilometres)", "254989570.60815 kilometres"),
    # A camelCase unit as English writes it: the head plural, the unit after "per" singular,
    # "degrees Celsius".
    ("0.0252 (kilometrePerSeconds)", "0.0252 kilometres per second"),
    ('"2.0"(gramPerCubicCentimetres)', "2.0 grams per cubic centimetre"),
    ('"-6.0"(degreeCelsius)', "-6.0 degrees Celsius"),
    ("837080.744 (squareKilometres)", "837080.744 square kilometres"),
    ("1999.0 (cubicCentimetres)", "1999.0 cubic centimetres"),
    ('"5.0"(litrePer100Kilometres)', "5.0 litres per 100 kilometres"),  # a count after "per": plural
    ("429.9 (inhabitants per square kilometre)", "429.9 inhabitants per square kilometre"),
    ("12.5 (%)", "12.5 %"),  # a unit with no letters is kept as written, not dropped
    # An amount in millions: a measure too (the currency was dropped as a name's qualifier).
    ("110 million (dollars)", "110 million dollars"),
    ("120 million (Australian dollars)", "120 million Australian dollars"),  # a capitalised word kept
    ("75.0 million (dollars)", "75.0 million dollars"),
    ("3.0 (m/s)", "3.0 m/s"),
    # "X language": references write "X" 982 times, "X language" 274.
    ("English language", "English"),
    (("English language", "the"), "English language"),  # "the English language" is kept
    (("English language", "in"), "English"),
    ("Wheeler, Texas", "Wheeler, Texas"),
    ("4000.0", "4000.0"),
    ("(1993)", "(1993)"),  # nothing before the parenthesis: unchanged
    ("language", "language"),
])
def test_write_out_uses_the_forms_references_use_most(surface, expected):
    surface, previous_word = surface if isinstance(surface, tuple) else (surface, None)
    assert write_out(surface, previous_word) == expected


def test_relexicalise_writes_names_units_and_languages_out():
    entity_map = {"ENT_1": "Ardmore Airport (New Zealand)", "ENT_2": "English language",
                  "ENT_3": '"13017.0"(minutes)'}
    tokens = ["ENT_1", "speaks", "ENT_2", "for", "ENT_3", ";", "the", "ENT_2", "."]
    assert detokenize(relexicalise(tokens, entity_map)) == (
        "Ardmore Airport speaks English for 13017.0 minutes; the English language.")


@pytest.mark.parametrize("article, value, expected", [
    ("a", "Architect", "an Architect"),
    ("a", "engineer", "an engineer"),
    ("an", "Test pilot", "a Test pilot"),
    ("A", "Indian dish", "An Indian dish"),
    ("An", "dessert", "A dessert"),
    ("a", "university", "a university"),  # "you-": a
    ("a", "European city", "a European city"),
    ("an", "honorary title", "an honorary title"),  # silent h: an
    ("a", "MBA", "an MBA"),  # an acronym read letter by letter: "em-bee-ay"
    ("an", "NASA mission", "a NASA mission"),  # an acronym read as a word
    ("a", "1950 film", "a 1950 film"),  # numbers are left as the model wrote them
    ("the", "Architect", "the Architect"),
])
def test_relexicalise_fits_the_indefinite_article_to_the_value(article, value, expected):
    # The model writes "a"/"an" before a placeholder without seeing the value's first sound.
    tokens = relexicalise(["ENT_1", "is", article, "ENT_2", "."], {"ENT_1": "X", "ENT_2": value})
    assert detokenize(tokens) == f"X is {expected}."


def test_a_matched_entity_takes_its_closing_parenthesis_along():
    # The matcher ignores punctuation, so "(New Zealand)" matched up to "Zealand" and left ")"
    # behind in 414 train references ("The runway length of ENT_1 ) is ENT_2").
    triples = [Triple("Ardmore_Airport_(New_Zealand)", "runwayLength", '"597.0"^^xsd:double')]
    example = delexicalise(triples, "The runway length of Ardmore Airport (New Zealand) is 597.0 (metres).")
    assert example.target_tokens == ["The", "runway", "length", "of", "ENT_1", "is", "ENT_2", "(", "metres", ")", "."]


def test_relexicalise_drops_a_parenthesis_that_closes_nothing():
    # Models trained before the matcher took ")" along learned to write it after a placeholder.
    entity_map = {"ENT_1": "Ardmore Airport (New Zealand)", "ENT_2": "597.0"}
    tokens = ["ENT_1", ")", "is", "ENT_2", "(", "metres", ")", ")", "."]
    assert detokenize(relexicalise(tokens, entity_map)) == "Ardmore Airport is 597.0 (metres)."


def test_a_noun_predicate_after_its_subject_and_before_a_copula_takes_a_possessive():
    # "ENT_1 PRED_2 is ENT_3" wrote "1000 Piazzia escape velocity is 0.0252 ..." (31 test outputs of
    # the default chain, 30 of them unseen categories); references write "1000 Piazzia's escape
    # velocity is" or "The escape velocity of 1000 Piazzia is".
    predicate_map = {"PRED_1": "escape velocity", "PRED_2": "is part of", "PRED_3": "launch site",
                     "PRED_4": "located in", "PRED_5": "established", "PRED_6": "in office while prime minister"}
    assert relexicalise_predicates(["ENT_1", "PRED_1", "is", "ENT_2", "."], predicate_map) == [
        "ENT_1", "'s", "escape", "velocity", "is", "ENT_2", "."]
    assert relexicalise_predicates(["ENT_1", "PRED_3", "Was", "ENT_2", "and", "ENT_3", "PRED_1", "are"],
                                   predicate_map) == [
        "ENT_1", "'s", "launch", "site", "Was", "ENT_2", "and", "ENT_3", "'s", "escape", "velocity", "are"]
    unchanged = [
        ["ENT_1", "'s", "PRED_1", "is", "ENT_2"],  # already there
        ["the", "PRED_1", "is", "ENT_2"],  # no entity before it
        ["ENT_1", "PRED_1", "of", "ENT_2"],  # no copula after it
        ["ENT_1", "PRED_1", ",", "is", "ENT_2"],
        ["ENT_1", "PRED_9", "is", "ENT_2"],  # a predicate the input lacks (dropped)
        # Verb phrases, participles: not nouns.
        ["ENT_1", "PRED_2", "is", "ENT_2"],
        ["ENT_1", "PRED_4", "is", "ENT_2"],
        ["ENT_1", "PRED_5", "was", "ENT_2"],
        ["ENT_1", "PRED_6", "was", "ENT_2"],  # a preposition first
    ]
    for tokens in unchanged:
        assert relexicalise_predicates(tokens, predicate_map).count("'s") == tokens.count("'s"), tokens
    # The text a reader gets (a value that is no number: a number takes `measure_clauses`' "has a").
    assert detokenize(relexicalise(["ENT_1", "PRED_3", "is", "ENT_2", "."],
                                   {"ENT_1": "Ariane 5", "ENT_2": "Guiana Space Centre"},
                                   predicate_map)) == "Ariane 5's launch site is Guiana Space Centre."


def test_a_measure_stated_with_a_copula_is_written_with_has_a_of():
    # "(410777) 2009 FD's apoapsis is 259776702.47055 kilometres": train references naming such a
    # predicate verbatim with a number write "has a P of N" 408 times, "N's P is" 27.
    predicate_map = {"PRED_1": "apoapsis", "PRED_2": "escape velocity", "PRED_3": "OCLC number",
                     "PRED_4": "number of members", "PRED_5": "discoverer", "PRED_6": "is part of",
                     "PRED_7": "area code", "PRED_8": "launch year", "PRED_10": "rocket stages",
                     "PRED_11": "elevation above the sea level in metres"}
    entity_map = {"ENT_1": "(410777) 2009 FD", "ENT_2": "259776702.47055 (kilometres)", "ENT_3": "Spacewatch",
                  "ENT_4": "1872", "ENT_5": "2013-11-04", "ENT_6": '"0.0925"', "ENT_7": "94.8024 kilograms"}
    assert measure_clauses("ENT_1 PRED_1 is ENT_2 .".split(), entity_map, predicate_map) == (
        "ENT_1 has a PRED_1 of ENT_2 .".split())
    assert measure_clauses("Then ENT_1 PRED_2 Was ENT_6 and ENT_1 PRED_1 are ENT_7".split(), entity_map,
                           predicate_map) == "Then ENT_1 Had a PRED_2 of ENT_6 and ENT_1 have a PRED_1 of ENT_7".split()
    # A unit after the head noun is no plural.
    assert measure_clauses("ENT_1 PRED_11 is ENT_2 .".split(), entity_map, predicate_map) == (
        "ENT_1 has a PRED_11 of ENT_2 .".split())
    # The model's own possessive; "and it's", "and its", "Its"; a second measure after the first.
    assert measure_clauses("The ENT_1 's PRED_1 is ENT_2 and the PRED_2 is ENT_6 .".split(), entity_map,
                           predicate_map) == "The ENT_1 has a PRED_1 of ENT_2 and a PRED_2 of ENT_6 .".split()
    assert measure_clauses("ENT_1 is ENT_3 's and it 's PRED_1 was ENT_2 .".split(), entity_map, predicate_map) == (
        "ENT_1 is ENT_3 's and had a PRED_1 of ENT_2 .".split())
    assert measure_clauses("ENT_3 is here . The ENT_1 , a rock , is ENT_3 's and its PRED_1 is ENT_2 .".split(),
                           entity_map, predicate_map) == (
        "ENT_3 is here . The ENT_1 , a rock , is ENT_3 's and has a PRED_1 of ENT_2 .".split())
    assert measure_clauses("ENT_1 and its PRED_1 is ENT_2 . It 's PRED_2 is ENT_6 . Its PRED_1 is ENT_7".split(),
                           entity_map, predicate_map) == (
        "ENT_1 and has a PRED_1 of ENT_2 . It has a PRED_2 of ENT_6 . It has a PRED_1 of ENT_7".split())
    unchanged = [
        # "and" in a sentence whose subject is no entity: "has" would give the measure to the discoverer.
        "The PRED_5 of ENT_1 is ENT_3 and it 's PRED_1 is ENT_2 .",
        "ENT_1 's PRED_5 is ENT_3 and its PRED_1 is ENT_2 .",
        "ENT_1 PRED_5 is ENT_3 and its PRED_1 is ENT_2 .",
        "ENT_1 is ENT_3 . The PRED_5 of ENT_1 is ENT_3 and its PRED_1 is ENT_2 .",
        "The PRED_5 of ENT_1 has a PRED_1 of ENT_2 and the PRED_2 is ENT_6 .",
        "ENT_1 is ENT_3 and the PRED_1 is ENT_2 .",  # "the" after no measure clause: whose?
        "ENT_1 has a PRED_5 of ENT_3 and the PRED_1 is ENT_2 .",  # ... after a clause that is no measure
        "ENT_1 has a PRED_1 of ENT_2 . The PRED_2 is ENT_6 .",  # a new sentence
        "ENT_1 , it 's PRED_1 is ENT_2 .",  # "it" after no "and"
        "ENT_1 , its PRED_1 is ENT_2 .",
        "ENT_1 's PRED_5 is ENT_3 .",
        "ENT_1 PRED_5 is ENT_3 .",  # a name, not a number
        "ENT_1 PRED_1 is ENT_4 .",  # a year
        "ENT_1 PRED_1 is ENT_5 .",  # a date
        "ENT_1 PRED_3 is ENT_2 .",  # codes and counts
        "ENT_1 PRED_4 is ENT_2 .",
        "ENT_1 PRED_7 is ENT_2 .",
        "ENT_1 PRED_8 is ENT_2 .",
        "ENT_1 PRED_10 is ENT_2 .",  # a plural: no "a rocket stages"
        "ENT_1 PRED_6 is ENT_2 .",  # a verb phrase
        "ENT_1 PRED_9 is ENT_2 .",  # a predicate the input lacks
        "The PRED_1 of ENT_1 is ENT_2 .",  # already a frame references use
        "ENT_1 PRED_1 , is ENT_2 .",
        "ENT_1 PRED_1 is about ENT_2 .",
        "ENT_1 PRED_1 is",  # cut short
    ]
    for text in unchanged:
        assert measure_clauses(text.split(), entity_map, predicate_map) == text.split(), text
    # The text a reader gets: the article fitted to the predicate, the unit written out.
    assert detokenize(relexicalise("ENT_1 PRED_1 is ENT_2 .".split(), entity_map, predicate_map)) == (
        "(410777) 2009 FD has an apoapsis of 259776702.47055 kilometres.")
    assert detokenize(relexicalise("ENT_1 PRED_5 is ENT_3 .".split(), entity_map, predicate_map)) == (
        "(410777) 2009 FD's discoverer is Spacewatch.")


def test_relexicalise_fits_the_article_before_a_predicate_too():
    tokens = ["ENT_1", "has", "a", "PRED_1", "of", "ENT_2", "and", "an", "PRED_2", "."]
    predicate_map = {"PRED_1": "elevation above the sea level", "PRED_2": "runway name"}
    assert detokenize(relexicalise(tokens, {"ENT_1": "X", "ENT_2": "5"}, predicate_map)) == (
        "X has an elevation above the sea level of 5 and a runway name.")


def test_relexicalise_does_not_double_a_word_at_a_predicate_boundary():
    # Verb-phrase predicates ("was selected by NASA", "is part of") next to the model's own
    # words: the shared word is written once.
    predicate_map = {"PRED_1": "was selected by NASA", "PRED_2": "is part of", "PRED_3": "birth place"}
    entity_map = {"ENT_1": "Buzz Aldrin", "ENT_2": "1963", "ENT_3": "Texas"}
    tokens = ["ENT_1", "was", "PRED_1", "in", "ENT_2", "and", "PRED_2", "of", "ENT_3", "."]
    assert detokenize(relexicalise(tokens, entity_map, predicate_map)) == (
        "Buzz Aldrin was selected by NASA in 1963 and is part of Texas.")
    # Case-insensitive; the reranker's view (entity placeholders kept) is the same text.
    assert relexicalise_predicates(["Was", "PRED_1", "ENT_2"], predicate_map) == [
        "Was", "selected", "by", "NASA", "ENT_2"]
    # Only a doubled word at the boundary: other words, punctuation and placeholders are kept.
    assert relexicalise_predicates(["the", "PRED_3", "of", "ENT_1", "is", "ENT_3"], predicate_map) == [
        "the", "birth", "place", "of", "ENT_1", "is", "ENT_3"]
    assert relexicalise_predicates(["PRED_2", "PRED_2", "."], predicate_map) == [
        "Is", "part", "of", "is", "part", "of", "."]


def test_relexicalise_does_not_double_a_word_at_an_entity_boundary():
    entity_map = {"ENT_1": "The Star-Spangled Banner", "ENT_2": "2011 PDL season", "ENT_3": "A Long Long Way"}
    tokens = ["its", "anthem", "is", "the", "ENT_1", ";", "it", "played", "in", "the", "ENT_2", "season", "."]
    assert detokenize(relexicalise(tokens, entity_map)) == (
        "its anthem is The Star-Spangled Banner; it played in the 2011 PDL season.")
    # Words doubled inside an entity are its own; numbers and punctuation are not words.
    assert relexicalise(["ENT_3", "long", "ago"], entity_map) == ["A", "Long", "Long", "Way", "long", "ago"]
    assert relexicalise(["1", "ENT_4", "1", ",", "ENT_5", ","], {"ENT_4": "1", "ENT_5": "x ,"}) == [
        "1", "1", "1", ",", "x", ",", ","]
    # Two entities side by side keep all their words.
    assert relexicalise(["ENT_6", "ENT_7"], {"ENT_6": "Fort Worth", "ENT_7": "Worth Texas"}) == [
        "Fort", "Worth", "Worth", "Texas"]
    # A name whose edge word is a preposition, verb or conjunction keeps the model's word beside it:
    # only an article or a word of the name's kind ("season", "league") is the model's echo of the name.
    entity_map = {"ENT_1": "Colin Farrell", "ENT_2": "In Bruges", "ENT_3": "Love Is", "ENT_4": "Of Mice and Men",
                  "ENT_5": "Tony Award for Best Play", "ENT_6": "Born to Run"}
    tokens = ["ENT_1", "starred", "in", "ENT_2", "and", "ENT_3", "is", "a", "song", "."]
    assert detokenize(relexicalise(tokens, entity_map)) == "Colin Farrell starred in In Bruges and Love Is is a song."
    assert detokenize(relexicalise(["the", "author", "of", "ENT_4", "won", "the", "ENT_5", "for", "ENT_6"],
                                   entity_map)) == (
        "the author of Of Mice and Men won the Tony Award for Best Play for Born to Run")
    assert detokenize(relexicalise(["The", "ENT_7", "and", "a", "ENT_8", "."],
                                   {"ENT_7": "The Hague", "ENT_8": "A Long Long Way"})) == (
        "The Hague and A Long Long Way.")


def test_relexicalise_writes_one_period_after_a_value_that_ends_with_one():
    # "Chelsea F.C." tokenises to "F.C" "." at the end of a text: the value's period closes the
    # sentence, as train references write it ("plays for Chelsea F.C.", not "F.C..").
    entity_map = {"ENT_1": "Christian Panucci", "ENT_2": "Chelsea F.C.", "ENT_3": "Washington, D.C."}
    assert relexicalise(["ENT_1", "plays", "for", "ENT_2", "."], entity_map) == [
        "Christian", "Panucci", "plays", "for", "Chelsea", "F.C", "."]
    assert detokenize(relexicalise(["ENT_1", "plays", "for", "ENT_2", "."], entity_map)) == (
        "Christian Panucci plays for Chelsea F.C.")
    # Inside a text too ("... is Washington, D.C. Americans live there", not "D.C. . Americans"), as
    # train references write it ("D.C. The country ...").
    assert relexicalise(["ENT_2", ".", "ENT_3", "is", "a", "capital", "."], entity_map) == [
        "Chelsea", "F.C", ".", "Washington", ",", "D.C", ".", "is", "a", "capital", "."]
    assert detokenize(relexicalise(["the", "capital", "is", "ENT_3", ".", "ENT_1", "lives", "there", "."],
                                   entity_map)) == "the capital is Washington, D.C. Christian Panucci lives there."
    # Any other punctuation after the value stays, and so does a period after any other value.
    assert relexicalise(["ENT_2", ",", "ENT_1", "."], entity_map) == ["Chelsea", "F.C", ".", ",", "Christian",
                                                                    "Panucci", "."]
    assert relexicalise(["ENT_1", ".", "ENT_2", "."], entity_map) == [
        "Christian", "Panucci", ".", "Chelsea", "F.C", "."]
    assert relexicalise(["ENT_1", "."], entity_map) == ["Christian", "Panucci", "."]


def test_relexicalise_writes_a_value_as_given_where_tokens_would_respace_it():
    # Treebank tokens of "Madrid–Barajas", "T&TEC" or a quoted name detokenise with other spacing.
    entity_map = {"ENT_1": "Adolfo Suárez Madrid–Barajas Airport", "ENT_2": "T&TEC Sports Club",
                  "ENT_3": "18R/36L 'Polderbaan'", "ENT_4": "2014–15 Serie A", "ENT_5": "Bangalore – 560090"}
    assert detokenize(relexicalise(["ENT_1", "is", "in", "Madrid", "."], entity_map)) == (
        "Adolfo Suárez Madrid–Barajas Airport is in Madrid.")
    assert detokenize(relexicalise(["ENT_2", "and", "ENT_3", "."], entity_map)) == (
        "T&TEC Sports Club and 18R/36L 'Polderbaan'.")
    assert detokenize(relexicalise(["it", "played", "in", "the", "ENT_4", "season", "."], entity_map)) == (
        "it played in the 2014–15 Serie A season.")
    # A value already spaced as its tokens keeps its tokens (and what relexicalisation does with them).
    assert relexicalise(["in", "ENT_5", "."], entity_map) == ["in", "Bangalore", "–", "560090", "."]
    assert relexicalise(["the", "ENT_1"], entity_map) == ["the", "Adolfo Suárez Madrid–Barajas Airport"]
    # Around a comma the tokens' spacing is the better one, and they are kept.
    assert relexicalise(["ENT_6", "."], {"ENT_6": "Joden , Godenzonen"}) == ["Joden", ",", "Godenzonen", "."]
    assert relexicalise(["ENT_6", "."], {"ENT_6": "Bacon,sausage"}) == ["Bacon", ",", "sausage", "."]


def test_entity_roles_follow_each_placeholder_of_the_source():
    triples = [Triple("Aarhus_Airport", "location", "Tirstrup"), Triple("Tirstrup", "country", "Denmark"),
               Triple("Aarhus_Airport", "elevation", "25.0")]
    example = delexicalise(triples, "Aarhus Airport is in Tirstrup, Denmark.", entity_roles=True)
    assert example.source_tokens == [
        "<S>", "ENT_1", "<AGENT>", "<P>", "location", "<O>", "ENT_2", "<BRIDGE>",
        "<S>", "ENT_2", "<BRIDGE>", "<P>", "country", "<O>", "ENT_3", "<PATIENT>",
        "<S>", "ENT_1", "<AGENT>", "<P>", "elevation", "<O>", "ENT_4", "<PATIENT>"]
    assert example.target_tokens == ["ENT_1", "is", "in", "ENT_2", ",", "ENT_3", "."]  # the text is unchanged
    # An entity that is its own object is both; off (the default), no role tokens.
    assert entity_role_tokens([Triple("A", "p", "A")]) == {"A": ("<BRIDGE>",)}
    assert "<AGENT>" not in delexicalise(triples).source_tokens


def test_entity_words_follow_the_first_placeholder_of_each_entity_in_the_source():
    triples = [Triple("Aarhus_Airport", "location", "Tirstrup"), Triple("Tirstrup", "country", "Denmark"),
               Triple("Aarhus_Airport", "runwayName", "\"10R/28L\""),
               Triple("Aarhus_Airport", "operatingOrganisation", "Aarhus_Lufthavn_A/S")]
    example = delexicalise(triples, "Aarhus Airport is in Tirstrup, Denmark.", entity_words=2)
    assert example.source_tokens == [
        "<S>", "ENT_1", "Aarhus", "Airport", "<P>", "location", "<O>", "ENT_2", "Tirstrup",
        "<S>", "ENT_2", "<P>", "country", "<O>", "ENT_3", "Denmark",
        "<S>", "ENT_1", "<P>", "runway", "name", "<O>", "ENT_4", "10R/28L",
        "<S>", "ENT_1", "<P>", "operating", "organisation", "<O>", "ENT_5", "Aarhus", "Lufthavn"]
    assert example.target_tokens == ["ENT_1", "is", "in", "ENT_2", ",", "ENT_3", "."]  # the text is unchanged
    assert example.entity_map == delexicalise(triples).entity_map
    # With roles, the words come first; off (the default), none.
    assert delexicalise(triples[:1], entity_words=1, entity_roles=True).source_tokens == [
        "<S>", "ENT_1", "Aarhus", "<AGENT>", "<P>", "location", "<O>", "ENT_2", "Tirstrup", "<PATIENT>"]
    assert delexicalise(triples).source_tokens == delexicalise(triples, entity_words=0).source_tokens
    assert "Tirstrup" not in delexicalise(triples).source_tokens


def test_in_right_before_a_full_date_becomes_on():
    # The model writes "in ENT_2" for years and dates alike; train references write "on D Month YYYY"
    # 283 times, "in D Month YYYY" once.
    entity_map = {"ENT_1": "Alan Bean", "ENT_2": "1932-03-15", "ENT_3": "1932", "ENT_4": "Wheeler, Texas",
                  "ENT_5": "1932-13-45"}
    cases = {
        "ENT_1 was born in ENT_2 .": "Alan Bean was born on 15 March 1932.",
        "In ENT_2 , ENT_1 was born .": "On 15 March 1932, Alan Bean was born.",
        "ENT_1 was born in ENT_3 .": "Alan Bean was born in 1932.",  # a year keeps "in"
        "ENT_1 was born in ENT_4 .": "Alan Bean was born in Wheeler, Texas.",
        "ENT_1 was born in ENT_5 .": "Alan Bean was born in 1932-13-45.",  # no date: written as given
        "ENT_1 was born within ENT_2 .": "Alan Bean was born within 15 March 1932.",
    }
    for tokens, text in cases.items():
        assert detokenize(relexicalise(tokens.split(), entity_map)) == text, tokens


def test_day_words_right_before_a_full_date_are_dropped():
    # Train references write "on the 15th of March 1932" and the date's placeholder matched "March 1932" only,
    # so the model learned "the 15th of ENT_2" and wrote another day before the date's own: "born on the
    # 15th of 20 January 1930". The date written out carries its day; the model's day words go.
    entity_map = {"ENT_1": "Buzz Aldrin", "ENT_2": "1930-01-20", "ENT_3": "1930", "ENT_4": "Apollo 11"}
    cases = {
        "ENT_1 was born on the 15th of ENT_2 .": "Buzz Aldrin was born on 20 January 1930.",
        "ENT_1 was born the 15th of ENT_2 .": "Buzz Aldrin was born 20 January 1930.",
        "ENT_1 was born on 15th of ENT_2 .": "Buzz Aldrin was born on 20 January 1930.",
        "ENT_1 retired on 1st ENT_2 .": "Buzz Aldrin retired on 20 January 1930.",
        "ENT_1 retired in the 1st of ENT_2 .": "Buzz Aldrin retired on 20 January 1930.",
        "ENT_1 retired on January ENT_2 .": "Buzz Aldrin retired on 20 January 1930.",
        "The 21st of ENT_2 is the day .": "20 January 1930 is the day.",
        # Before a year the day words are the model's only day: kept, as are words that are no day.
        "ENT_1 was born on the 15th of ENT_3 .": "Buzz Aldrin was born on the 15th of 1930.",
        "ENT_1 flew the 15th ENT_4 mission .": "Buzz Aldrin flew the 15th Apollo 11 mission.",
        "ENT_1 was born in the month of ENT_2 .": "Buzz Aldrin was born in the month of 20 January 1930.",
        "ENT_1 was 15 on ENT_2 .": "Buzz Aldrin was 15 on 20 January 1930.",
    }
    for tokens, text in cases.items():
        assert detokenize(relexicalise(tokens.split(), entity_map)) == text, tokens


def test_a_date_is_matched_by_its_year_alone_a_match_covers_whole_tokens_and_one_fallback_form_is_used():
    """A text may give a date's year only ("born in 1932"); an entity is never matched inside a token
    ("Madrid-Barajas" is not Barajas); of an entity's other names only the first one found is replaced."""
    from onestep_gan.rdf2text.preprocessing import delexicalise

    assert delexicalise([Triple("Alan_Bean", "birthDate", "1932-03-15")], "Alan Bean was born in 1932.").target_tokens \
        == ["ENT_1", "was", "born", "in", "ENT_2", "."]
    assert delexicalise([Triple("Barajas", "location", "Spain")], "Madrid-Barajas is in Spain.").target_tokens \
        == ["Madrid-Barajas", "is", "in", "ENT_2", "."]
    assert delexicalise([Triple("Akron", "country", "United_States")],
                        "Akron is in the USA, also called America.").target_tokens \
        == ["ENT_1", "is", "in", "the", "ENT_2", ",", "also", "called", "America", "."]


def test_the_last_day_of_a_month_is_written_as_a_date():
    from onestep_gan.rdf2text.preprocessing import write_out

    assert write_out("1950-03-31") == "31 March 1950"
    assert write_out("1950-12-01") == "1 December 1950"
    assert write_out("2000-02-29") == "29 February 2000"  # a leap year


def test_a_day_that_its_month_lacks_is_no_date_and_the_value_stays_as_given():
    from onestep_gan.rdf2text.preprocessing import write_out

    # Written out, "1950-02-30" would state a day that never was ("30 February 1950").
    for value in ("1950-02-30", "1900-02-29", "1950-04-31", "1950-03-00"):
        assert write_out(value) == value


def test_were_becomes_had_before_a_measure_an_article_follows_the_sound_and_britain_is_the_uk():
    from onestep_gan.rdf2text.preprocessing import delexicalise, detokenize, measure_clauses, relexicalise

    assert measure_clauses("ENT_1 PRED_1 were ENT_2 .".split(), {"ENT_1": "X", "ENT_2": "259776702.47055 (kilometres)"},
                           {"PRED_1": "apoapsis"}) == "ENT_1 had a PRED_1 of ENT_2 .".split()
    assert detokenize(relexicalise(["ENT_1", "is", "a", "ENT_2", "."], {"ENT_1": "X", "ENT_2": "HBO"})) == "X is an HBO."
    assert delexicalise([Triple("London", "country", "United_Kingdom")], "London is in Britain.").target_tokens == [
        "ENT_1", "is", "in", "ENT_2", "."]
