"""Template texts: exact strings for each relation shape, and the fallback's record."""

import pytest

from onestep_gan.rdf2text import templates
from onestep_gan.rdf2text.faithfulness import SlotAligner
from onestep_gan.rdf2text.webnlg import Triple


def triples(line):
    return [Triple(*(part.strip() for part in triple.split("|"))) for triple in line.split(";")]


@pytest.mark.parametrize("line, expected", [
    ("Alan_Bean | birthPlace | Wheeler,_Texas ; Alan_Bean | occupation | Test_pilot",
     "The birth place of Alan Bean is Wheeler, Texas. The occupation of Alan Bean is Test pilot."),
    # values as outputs write them: a date written out, a unit out of its parentheses, a qualifier dropped
    ("Abradab | birthDate | 1978-11-12 ; Lake_Titicaca | area | \"8372.0\"(squareKilometres)",
     "The birth date of Abradab is 12 November 1978. The area of Lake Titicaca is 8372.0 square kilometres."),
    # a verb phrase, a participle with a preposition, a participle alone
    ("Buzz_Aldrin | was selected by NASA | 1963 ; Canberra | isPartOf | Australian_Capital_Territory",
     "Buzz Aldrin was selected by NASA in 1963. Canberra is part of Australian Capital Territory."),
    ("Bananaman | broadcastedBy | BBC ; University_of_Oxford | established | 1096",
     "Bananaman is broadcasted by BBC. University of Oxford was established in 1096."),
    # objects of one subject under one relation in one sentence; a merged predicate reads as its first name
    ("Lake_Titicaca | country | Peru ; Lake_Titicaca | country | Bolivia ; Lake_Titicaca | country | Chile ; "
     "Abradab | associatedBand/associatedMusicalArtist | Magik_(rapper)",
     "The country of Lake Titicaca is Peru, Bolivia and Chile. The associated band of Abradab is Magik."),
    # a date takes "on", a year "in"; a participle alone with a value that is no date reads "S is P O"
    ("107_Camilla | discovered | 2001-03-01 ; Buzz_Aldrin | was awarded | 1969",
     "107 Camilla was discovered on 1 March 2001. Buzz Aldrin was awarded in 1969."),
    ("Bakewell_pudding | served | Warm_or_cold ; English_language | spokenIn | Great_Britain",
     "Bakewell pudding is served Warm or cold. English is spoken in Great Britain."),
    # a plural noun: "one of" for one value, "are" for several, a number or a list ("number of ..." is singular)
    ("Alan_Shepard | awards | Distinguished_Service_Medal ; Ajax | numberOfMembers | 53502",
     "One of the awards of Alan Shepard is Distinguished Service Medal. The number of members of Ajax is 53502."),
    ("Aaron_S._Daggett | battles | Battle_of_Salem_Church ; Aaron_S._Daggett | battles | Battle_of_Fredericksburg ; "
     "ALV_X-1 | rocketStages | 2 ; Batchoy | mainIngredients | \"noodles, pork organs, vegetables\"",
     "The battles of Aaron S. Daggett are Battle of Salem Church and Battle of Fredericksburg. The rocket stages "
     "of ALV X-1 are 2. The main ingredients of Batchoy are noodles, pork organs, vegetables."),
    ("Abilene_Regional_Airport | cityServed | Abilene,_Texas ; A-Rosa_Luna | shipOrdered | 2004-01-22 ; "
     "Alhambra | topSpeed | 18.52",
     "The city served by Abilene Regional Airport is Abilene, Texas. The ship ordered of A-Rosa Luna is "
     "22 January 2004. The top speed of Alhambra is 18.52."),
    # typed literals (DBpedia's `"1950"^^xsd:gYear`) read as their values: a year takes "in", a date "on"
    ("A_B | established | \"1950\"^^xsd:gYear ; C_D | discovered | \"2001-03-01\"^^xsd:date ; "
     "E_F | awards | \"12\"^^xsd:integer",
     "A B was established in 1950. C D was discovered on 1 March 2001. The awards of E F are 12."),
    # the same object twice under one relation is written once
    ("Ajoblanco | ingredient | Garlic ; Ajoblanco | ingredient | Garlic",
     "The ingredient of Ajoblanco is Garlic."),
])
def test_template_text_states_each_triple_in_one_of_three_shapes(line, expected):
    assert templates.template_text(triples(line)) == expected


def test_relation_shape_reads_the_predicates_words():
    assert [templates.relation_shape(p) for p in ("birthPlace", "isPartOf", "has to its north", "dedicatedTo",
                                                  "compete in", "established", "spouse",
                                                  "served as Chief of the Astronaut Office in")] == [
        "noun", "verb", "verb", "participle", "verb", "dated", "noun", "verb"]


@pytest.fixture(scope="module")
def checker():
    from tests.test_faithfulness import _training_entries

    aligner = SlotAligner.from_entries(_training_entries(), min_count=1, smoothing=0.0, margin=1.5, min_rival=2.0)
    return aligner.with_settings(inversions=True, subjects=True)


def test_checked_text_keeps_a_faithful_text_and_replaces_a_flagged_one_with_the_template(checker):
    facts = triples("Alan_Bean | birthPlace | Wheeler,_Texas ; Alan_Bean | occupation | Test_pilot")
    good = "Alan Bean was born in Wheeler, Texas and served as a Test pilot."
    swapped = "Alan Bean was born in Test pilot and served as a Wheeler, Texas."
    kept = templates.checked_text(checker, facts, good, unfaithful="template")
    assert (kept["text"], kept["faithful"], kept["fallback"]) == (good, True, False)
    assert "model_text" not in kept
    flagged = templates.checked_text(checker, facts, swapped, unfaithful="keep")
    assert (flagged["text"], flagged["faithful"], flagged["fallback"]) == (swapped, False, False)
    assert [t["label"] for t in flagged["triples"]] == ["wrong", "wrong"]
    replaced = templates.checked_text(checker, facts, swapped, unfaithful="template")
    assert replaced["text"] == "The birth place of Alan Bean is Wheeler, Texas. The occupation of Alan Bean is Test pilot."
    assert (replaced["faithful"], replaced["fallback"], replaced["model_text"]) == (True, True, swapped)
    assert [t["label"] for t in replaced["triples"]] == ["correct", "correct"]
    # a text that leaves an input entity unnamed is not faithful either
    omitted = templates.checked_text(checker, facts, "Alan Bean was born in Wheeler, Texas.", unfaithful="template")
    assert omitted["fallback"] and omitted["model_text"] == "Alan Bean was born in Wheeler, Texas."
    with pytest.raises(ValueError, match="unfaithful='drop'"):
        templates.checked_text(checker, facts, good, unfaithful="drop")


@pytest.mark.parametrize("triples, text", [
    # A verb phrase ending in a preposition takes the date as it is ("launched from on 21 December" before).
    ([Triple("Apollo_8", "was launched from", "1968-12-21")], "Apollo 8 was launched from 21 December 1968."),
    # A year after a verb without a preposition stays bare ("awarded in 1969" would state another relation).
    ([Triple("Buzz_Aldrin", "was awarded", "1969"), Triple("Buzz_Aldrin", "was awarded", "Bronze_Star")],
     "Buzz Aldrin was awarded 1969 and Bronze Star."),
    # "series" is no plural: not "One of the series of".
    ([Triple("Doctor_Who", "series", "BBC_One")], "The series of Doctor Who is BBC One."),
])
def test_template_texts_of_verb_phrases_years_and_nouns_ending_in_s(triples, text):
    assert templates.template_text(triples) == text
