import math
import os
import subprocess
import sys

import pytest

from onestep_gan.rdf2text import faithfulness
from onestep_gan.rdf2text.faithfulness import SlotAligner, slot_error_scores
from onestep_gan.rdf2text.preprocessing import delexicalise, relexicalise, detokenize
from onestep_gan.rdf2text.webnlg import Triple, WebNLGEntry

PEOPLE = [
    ("Alan_Bean", "Wheeler,_Texas", "Test_pilot", "1932-03-15"),
    ("Buzz_Aldrin", "Glen_Ridge,_New_Jersey", "Fighter_pilot", "1930-01-20"),
    ("Elliot_See", "Dallas", "Engineer", "1927-07-23"),
    ("Alan_Shepard", "New_Hampshire", "Naval_aviator", "1923-11-18"),
    ("Walter_Schirra", "Hackensack", "Astronaut", "1923-03-12"),
    ("Frank_Borman", "Gary,_Indiana", "Test_pilot", "1928-03-14"),
]


def _name(entity):
    return entity.replace("_", " ")


def _training_entries():
    """A tiny hand-made train set: birth place, occupation, birth date, death place."""
    entries = []
    for index, (person, place, job, date) in enumerate(PEOPLE):
        name, place_name, job_name = _name(person), _name(place), _name(job).lower()
        triples = (
            Triple(person, "birthPlace", place),
            Triple(person, "occupation", job),
            Triple(person, "birthDate", f'"{date}"'),
        )
        texts = (
            f"{name} was born in {place_name} on {date} and worked as a {job_name}.",
            f"{name}, who served as a {job_name}, was born in {place_name} on {date}.",
            f"Born in {place_name} on {date}, {name} worked as a {job_name}.",
        )
        entries.append(WebNLGEntry(f"train/3triples/Astronaut/Id{index}", "Astronaut", 3, triples, texts))
        death_place = PEOPLE[(index + 1) % len(PEOPLE)][1]
        entries.append(WebNLGEntry(
            f"train/1triples/Astronaut/Id{index}", "Astronaut", 1,
            (Triple(person, "deathPlace", death_place),),
            (f"{name} died in {_name(death_place)}.", f"{name} passed away in {_name(death_place)}."),
        ))
    entries.append(WebNLGEntry(
        "train/1triples/City/Id1", "City", 1, (Triple("Houston", "country", "United_States"),),
        ("Houston is in the United States.",)))
    return entries


@pytest.fixture(scope="module")
def aligner():
    # A tiny corpus gives small cue weights (few predicates to contrast): lower thresholds.
    return SlotAligner.from_entries(
        _training_entries(), min_count=1, smoothing=0.0, margin=1.5, min_rival=2.0)


BEAN = (
    Triple("Alan_Bean", "birthPlace", "Wheeler,_Texas"),
    Triple("Alan_Bean", "occupation", "Test_pilot"),
)


@pytest.mark.parametrize("text, labels", [
    ("Alan Bean was born in Wheeler, Texas and worked as a test pilot.", ("correct", "correct")),
    ("Alan Bean was born in Wheeler, Texas.", ("correct", "missing")),
    ("Alan Bean was born in Test pilot and served as a Wheeler, Texas.", ("wrong", "wrong")),
    ("Alan Bean was born in Wheeler, Texas. He worked as a test pilot.", ("correct", "correct")),
    ("Born in Wheeler, he worked as a test pilot.", ("correct", "correct")),
    ("Alan Bean was a test pilot.", ("missing", "correct")),
    ("Alan Bean was born in Wheelr, Texas and worked as a test pilote.", ("correct", "correct")),
    ("Alan Bean was born in Wheeling and worked as a pilot.", ("missing", "missing")),
])
def test_judge_labels(aligner, text, labels):
    judgement = aligner.judge(BEAN, text)
    assert judgement.labels == labels
    assert judgement.extra_entities == ()


def test_swapped_pair_names_the_rival_predicates(aligner):
    judgement = aligner.judge(BEAN, "Alan Bean was born in Test pilot and served as a Wheeler, Texas.")
    assert [t.rival_predicate for t in judgement.triples] == ["occupation", "birthPlace"]
    assert (judgement.num_triples, judgement.num_correct, judgement.num_missing,
            judgement.num_wrong, judgement.num_errors) == (2, 0, 0, 2, 2)
    assert not judgement.is_faithful


def test_shared_object_is_not_a_rival(aligner):
    triples = (
        Triple("Alan_Bean", "birthPlace", "Dallas"),
        Triple("Alan_Bean", "deathPlace", "Dallas"),
        Triple("Alan_Bean", "occupation", "Test_pilot"),
    )
    assert aligner.judge(
        triples, "Alan Bean was born in Dallas, where he died, and worked as a test pilot."
    ).labels == ("correct", "correct", "correct")
    assert aligner.judge(triples, "Alan Bean died in Dallas.").labels == ("correct", "correct", "missing")


@pytest.mark.parametrize("text", [
    "Alan Bean was born on 15 March 1932.",
    "Alan Bean was born on March 15, 1932.",
    "Alan Bean was born on March 15th, 1932.",
    "Alan Bean was born on the 15th of March 1932.",
    "Alan Bean was born on 1932-03-15.",
])
def test_date_fallback_forms_are_mentions(aligner, text):
    triples = (Triple("Alan_Bean", "birthDate", '"1932-03-15"'),)
    assert aligner.judge(triples, text).labels == ("correct",)


def test_ordinals_other_than_days_are_kept(aligner):
    triples = (Triple("Asser_Levy_Public_Baths", "location", "23rd_Street_(Manhattan)"),)
    assert aligner.judge(triples, "Asser Levy Public Baths is on 23rd Street (Manhattan).").labels == (
        "correct",)


def test_looser_forms_and_nested_mentions(aligner):
    triples = (Triple("Alan_Bean", "nationality", "United_States"),)
    assert aligner.judge(triples, "Alan Bean was an American.").labels == ("correct",)
    nested = (
        Triple("Alan_Bean", "birthPlace", "Wheeler,_Texas"),
        Triple("Wheeler,_Texas", "isPartOf", "Texas"),
    )
    # "Texas" is written only inside "Wheeler, Texas": mentioned.
    judgement = aligner.judge(nested, "Alan Bean was born in Wheeler, Texas.")
    assert judgement.labels == ("correct", "correct")
    assert judgement.num_no_evidence == 1


def test_a_value_that_ends_with_its_own_period_ends_the_sentence_before_a_capitalised_word(aligner):
    # Outputs write "Washington, D.C. He ..." with the value's period closing the sentence (not
    # "D.C. . He"): the mention's context stops there, or the next sentence's "born" (a cue of
    # occupation in this tiny corpus: "..., who served as a pilot, was born in ...") binds it elsewhere.
    triples = (Triple("Alan_Bean", "birthPlace", "Washington,_D.C."), Triple("Alan_Bean", "occupation", "Test_pilot"))
    for text in ("Alan Bean, a test pilot, is from Washington, D.C. He was born there.",
                 "Alan Bean, a test pilot, is from Washington, D.C. . He was born there."):
        assert aligner.judge(triples, text).labels == ("correct", "correct")
    # Not before a lower-case word, and not after a value without a period of its own.
    assert faithfulness._sentence_ends_after_values(
        ["ENT_1", "is", "in", "ENT_2", "He", "ENT_2", "is", "ENT_3", "It", "ENT_2", "ENT_1"],
        {"ENT_1": "Alan Bean", "ENT_2": "Washington, D.C.", "ENT_3": "Texas"},
    ) == ["ENT_1", "is", "in", "ENT_2", ".", "He", "ENT_2", "is", "ENT_3", "It", "ENT_2", ".", "ENT_1"]


def test_extra_entities(aligner):
    text = "Alan Bean was born in Wheeler, Texas and worked as a test pilot in Houston."
    judgement = aligner.judge(BEAN, text)
    assert judgement.labels == ("correct", "correct")
    assert judgement.extra_entities == ("Houston",)
    assert not judgement.is_faithful
    tokens = "ENT_1 was born in ENT_2 and worked as a ENT_3 with ENT_7 .".split()
    judgement = aligner.judge_delexicalised(BEAN, tokens)
    assert judgement.labels == ("correct", "correct")
    assert judgement.extra_entities == ("ENT_7",)
    # Words of an input entity are not extra ("Texas" of "Wheeler, Texas").
    assert aligner.judge(BEAN, "Alan Bean was born in Wheeler in Texas.").extra_entities == ()


@pytest.mark.parametrize("tokens, labels", [
    ("ENT_1 was born in ENT_2 and worked as a ENT_3 .", ("correct", "correct")),
    ("ENT_1 was born in ENT_3 and served as a ENT_2 .", ("wrong", "wrong")),
    ("ENT_1 was born in ENT_2 .", ("correct", "missing")),
    ("He worked as a ENT_3 .", ("missing", "correct")),
])
def test_delexicalised_path_agrees_with_surface_path(aligner, tokens, labels):
    tokens = tokens.split()
    entity_map = delexicalise(list(BEAN)).entity_map
    assert entity_map == {"ENT_1": "Alan Bean", "ENT_2": "Wheeler, Texas", "ENT_3": "Test pilot"}
    delexicalised = aligner.judge_delexicalised(BEAN, tokens)
    surface = aligner.judge(BEAN, detokenize(relexicalise(tokens, entity_map)))
    assert delexicalised.labels == surface.labels == labels
    assert delexicalised.extra_entities == surface.extra_entities == ()


def test_unseen_predicate_uses_its_own_words(aligner):
    triples = (
        Triple("Alan_Bean", "almaMater", "UT_Austin"),
        Triple("Alan_Bean", "birthPlace", "Wheeler,_Texas"),
    )
    # No cues were mined for almaMater: a plain mention is correct, with no evidence.
    judgement = aligner.judge(triples, "Alan Bean went to UT Austin and was born in Wheeler, Texas.")
    assert judgement.labels == ("correct", "correct")
    assert judgement.triples[0].no_evidence
    # Its object in the birth place slot is bound elsewhere.
    judgement = aligner.judge(triples, "Alan Bean was born in UT Austin.")
    assert judgement.labels == ("wrong", "missing")


def test_a_value_stated_under_a_relation_outside_the_input_is_wrong_with_min_foreign(aligner):
    """"Alan Bean was born in UT Austin" for `almaMater` alone: no input triple's cues fit, but
    a mined predicate outside the input (birth place) does, far better than almaMater's own
    words. Off by default (no evidence either way: correct); `min_foreign` makes it wrong."""
    strict = SlotAligner.from_config({**aligner.get_config(), "min_foreign": 2.0})
    triples = (Triple("Alan_Bean", "almaMater", "UT_Austin"),)
    text = "Alan Bean was born in UT Austin."
    assert aligner.judge(triples, text).labels == ("correct",)
    judgement = strict.judge(triples, text).triples[0]
    assert (judgement.label, judgement.foreign, judgement.rival_predicate) == ("wrong", True, "birth place")
    # Its own words beside it: correct; a context no predicate fits: correct.
    assert strict.judge(triples, "Alan Bean's alma mater is UT Austin.").labels == ("correct",)
    assert strict.judge(triples, "Alan Bean studied at UT Austin.").labels == ("correct",)
    # An input predicate is a rival, not a foreign relation: the birth place test decides.
    both = triples + (Triple("Alan_Bean", "birthPlace", "Wheeler,_Texas"),)
    judgement = strict.judge(both, "Alan Bean was born in UT Austin.").triples[0]
    assert (judgement.label, judgement.foreign) == ("wrong", False)
    assert strict.judge(both, "Alan Bean was born in Wheeler, Texas and studied at UT Austin.").labels == (
        "correct", "correct")


def test_foreign_known_only_leaves_relations_mining_never_met_to_their_own_words(aligner):
    """An unseen predicate has no cues but its own words, so a mined predicate of like meaning
    outscores it wherever it is stated ("the total population of Kyoto" for `populationTotal`
    against the mined `population`). With `foreign_known_only` the check outside the input is
    made only for predicates mining met: `almaMater` (never met here) is not judged by it, while
    "born in Test pilot" for `occupation` (met) is still wrong."""
    strict = aligner.with_settings(min_foreign=2.0)
    known_only = aligner.with_settings(min_foreign=2.0, foreign_known_only=True)
    assert not aligner.knows_predicate("almaMater") and aligner.knows_predicate("occupation")
    unseen = (Triple("Alan_Bean", "almaMater", "UT_Austin"),)
    assert strict.judge(unseen, "Alan Bean was born in UT Austin.").labels == ("wrong",)
    assert known_only.judge(unseen, "Alan Bean was born in UT Austin.").labels == ("correct",)
    seen = (Triple("Alan_Bean", "occupation", "Test_pilot"),)
    for judge in (strict, known_only):
        judgement = judge.judge(seen, "Alan Bean was born in Test pilot.").triples[0]
        assert (judgement.label, judgement.foreign, judgement.rival_predicate) == ("wrong", True, "birth place")
        assert judge.judge(seen, "Alan Bean worked as a test pilot.").labels == ("correct",)
    # Saved and loaded with the aligner; off when an aligner.json saved before it is loaded.
    assert SlotAligner.from_config(known_only.get_config()).foreign_known_only
    config = known_only.get_config()
    del config["foreign_known_only"]
    assert not SlotAligner.from_config(config).foreign_known_only


def test_slot_error_scores(aligner):
    entries = [
        WebNLGEntry("dev/2triples/Astronaut/Id1", "Astronaut", 2, BEAN, ("ref",)),
        WebNLGEntry("dev/2triples/Astronaut/Id2", "Astronaut", 2, BEAN, ("ref",)),
        WebNLGEntry("dev/2triples/Astronaut/Id3", "Astronaut", 2, BEAN, ("ref",)),
    ]
    hypotheses = [
        "Alan Bean was born in Wheeler, Texas and worked as a test pilot.",
        "Alan Bean was born in Test pilot and served as a Wheeler, Texas in Houston.",
        "ENT_1 was born in ENT_2 .".split(),
    ]
    assert slot_error_scores(aligner, hypotheses, entries) == {
        "count": 3, "triples": 6, "correct": 3, "missing": 1, "wrong": 2,
        "slot_error_rate": 0.5, "missing_rate": 1 / 6, "wrong_binding_rate": 2 / 6,
        "outputs_with_errors": 2 / 3, "outputs_with_extra_entities": 1 / 3, "extra_entities": 1,
        "no_evidence_rate": 0.0,
    }
    with pytest.raises(ValueError, match="one hypothesis per entry"):
        slot_error_scores(aligner, hypotheses[:2], entries)


def test_slot_error_report_subsets(aligner):
    seen = WebNLGEntry("test/Id1", "Astronaut", 2, BEAN, ("ref",), seen=True)
    unseen = WebNLGEntry("test/Id2", "Astronaut", 2, BEAN, ("ref",), seen=False)
    report = faithfulness.slot_error_report(
        aligner, ["Alan Bean was born in Wheeler, Texas.", "Alan Bean was a test pilot."], [seen, unseen])
    assert sorted(report) == ["all", "seen", "unseen"]
    assert (report["seen"]["missing"], report["unseen"]["missing"], report["all"]["missing"]) == (1, 1, 2)


def test_save_load_round_trip(aligner, tmp_path):
    path = aligner.save(tmp_path / "run" / "aligner.json")
    loaded = SlotAligner.load(path)
    assert loaded.get_config() == aligner.get_config()
    assert SlotAligner.from_config(aligner.get_config()).get_config() == aligner.get_config()
    for text in ("Alan Bean was born in Test pilot and served as a Wheeler, Texas.",
                 "Alan Bean was born in Wheeler, Texas in Houston."):
        assert loaded.judge(BEAN, text) == aligner.judge(BEAN, text)


def test_mined_cues(aligner):
    assert sorted(aligner.cues) == ["birth date", "birth place", "country", "death place", "occupation"]
    # "born" left of a birth place: in all its 18 mentions, and in no other of the 67 object
    # mentions (6 people x 3 texts x 3 predicates, 12 death places, 1 country).
    assert aligner.cues["birth place"]["L:born"] == round(math.log((18 / 18) / (18 / 67)), 3)
    assert "L:born" not in aligner.cues["occupation"]
    assert aligner.gazetteer == (
        "Alan Bean", "Alan Shepard", "Astronaut", "Buzz Aldrin", "Dallas", "Elliot See", "Engineer",
        "Fighter pilot", "Frank Borman", "Gary, Indiana", "Glen Ridge, New Jersey", "Hackensack",
        "Houston", "Naval aviator", "New Hampshire", "Test pilot", "United States", "Walter Schirra",
        "Wheeler, Texas")


@pytest.mark.slow
def test_real_corpus_references_and_the_issue_example(webnlg_path):
    from onestep_gan.rdf2text.webnlg import load_webnlg

    aligner = SlotAligner.from_entries(load_webnlg("train", webnlg_path))
    dev = load_webnlg("dev", webnlg_path)
    hypotheses = [text for entry in dev for text in entry.texts]
    entries = [entry for entry in dev for _ in entry.texts]
    scores = slot_error_scores(aligner, hypotheses, entries)
    # 370 missing: 3 of them references that misspell a number ("7877110" for 78771100), read as the wrong number
    assert (scores["count"], scores["triples"], scores["missing"], scores["wrong"]) == (2268, 6803, 370, 95)
    triples = (
        Triple("Alan_Bean", "birthPlace", "Wheeler,_Texas"),
        Triple("Alan_Bean", "occupation", "Test_pilot"),
    )
    swapped = "Alan Bean was born in Test pilot and served as a Wheeler, Texas."
    faithful = "Alan Bean was born in Wheeler, Texas and served as a test pilot."
    assert aligner.judge(triples, swapped).labels == ("wrong", "wrong")
    assert aligner.judge(triples, faithful).labels == ("correct", "correct")
    # A dev reference that states Elliot See's death date as his birth: `opposed` (with the check outside the
    # input) calls it wrong; a reference stating it right stays right.
    see = (Triple("Elliot_See", "deathDate", '"1966-02-28"'),)
    outside = aligner.with_settings(min_foreign=6.0, foreign_known_only=True)
    born = "Elliot See, who was born on the 28th February 1966 in Dallas, has died in St Louis."
    assert (outside.judge(see, born).labels, outside.with_settings(opposed=True).judge(see, born).labels) == (
        ("correct",), ("wrong",))
    assert outside.with_settings(opposed=True).judge(see, "Elliot See died on 28 February 1966.").labels == ("correct",)


def test_inversions_call_a_relation_stated_the_wrong_way_round_wrong(aligner):
    """"X is the P of Y" says P(Y) = X: for `Alan_Bean birthPlace Wheeler,_Texas`, "Wheeler, Texas
    is the birth place of Alan Bean" is right and "Alan Bean is the birth place of Wheeler, Texas"
    wrong, with or without cues for the predicate; a verb-named predicate is left alone."""
    inverting = aligner.with_settings(inversions=True)
    born = (Triple("Alan_Bean", "birthPlace", "Wheeler,_Texas"),)
    right = ("Wheeler, Texas is the birth place of Alan Bean.", "The birth place of Alan Bean is Wheeler, Texas.")
    wrong = ("Alan Bean is the birth place of Wheeler, Texas.", "The birth place of Wheeler, Texas is Alan Bean.")
    assert [inverting.judge(born, text).labels for text in right] == [("correct",), ("correct",)]
    judgements = [inverting.judge(born, text) for text in wrong]
    assert [j.labels for j in judgements] == [("wrong",), ("wrong",)] and all(j.triples[0].swapped for j in judgements)
    assert aligner.judge(born, wrong[0]).labels == ("correct",)  # off by default
    engine = (Triple("Alvis_Speed_25", "engine", "Straight-six_engine"),)  # no mined cues
    assert inverting.judge(engine, "Alvis Speed 25 is the engine of Straight-six engine.").labels == ("wrong",)
    assert inverting.judge(engine, "The engine of Alvis Speed 25 is Straight-six engine.").labels == ("correct",)
    part = (Triple("Texas", "isPartOf", "United_States"),)
    assert inverting.judge(part, "Texas is part of the United States.").labels == ("correct",)
    spouse = (Triple("Albert_B._White", "spouse", "Agnes_Ward_White"),)  # holds both ways
    assert inverting.judge(spouse, "Albert B. White is the spouse of Agnes Ward White.").labels == ("correct",)
    # Every mention decides: one mention stated the right way keeps the triple correct.
    both = "Alan Bean is the birth place of Wheeler, Texas. Alan Bean was born in Wheeler, Texas."
    assert inverting.judge(born, both).labels == ("correct",)


def test_inversions_read_the_p_of_subject_is_object_the_right_way_round(aligner):
    """"The birth place of Alan Bean is Wheeler, Texas" states P(subject) = object. The swap test
    (the subject where the predicate's cues are, the object with none) reads it as a swap once the
    subject's context scores `swap_score`; with `inversions` (which reads "the P of X is Y" phrases)
    the form is right, and so is a relation that holds both ways. The wrong way round stays wrong."""
    strict = aligner.with_settings(swap_score=2.0)  # the tiny corpus's cue weights are small
    reading = strict.with_settings(inversions=True)
    born = (Triple("Alan_Bean", "birthPlace", "Wheeler,_Texas"),)
    engine = (Triple("Alvis_Speed_25", "engine", "Straight-six_engine"),)  # no mined cues
    spouse = (Triple("Albert_B._White", "spouse", "Agnes_Ward_White"),)  # holds both ways
    served = (Triple("Abilene_Regional_Airport", "cityServed", "Abilene,_Texas"),)  # a noun and its participle
    cases = [(born, "The birth place of Alan Bean is Wheeler, Texas."),
             (born, "The birth place of Alan Bean was the Wheeler, Texas."),
             (engine, "The engine of Alvis Speed 25 is Straight-six engine."),
             (spouse, "The spouse of Albert B. White is Agnes Ward White."),
             (served, "The city served by Abilene Regional Airport is Abilene, Texas.")]
    assert [strict.judge(triples, text).labels for triples, text in cases] == [("wrong",)] * 5
    assert all(strict.judge(triples, text).triples[0].swapped for triples, text in cases)
    assert [reading.judge(triples, text).labels for triples, text in cases] == [("correct",)] * 5
    # `of_phrases` reads the right-way form so without looking for inversions.
    plain = strict.with_settings(of_phrases=True)
    assert [plain.judge(triples, text).labels for triples, text in cases] == [("correct",)] * 5
    assert plain.judge(born, "Alan Bean is the birth place of Wheeler, Texas.").labels == ("correct",)  # no inversions
    # Any other text reads as without it: the phrase must be the triple's own words and subject.
    for text in ("The birth place of Wheeler, Texas is Alan Bean.", "The death place of Alan Bean is Wheeler, Texas.",
                 "The birth place by Alan Bean is Wheeler, Texas.", "Alan Bean was born in Wheeler, Texas."):
        assert plain.judge(born, text).labels == strict.judge(born, text).labels, text
    assert plain.judge(born, "The death place of Alan Bean is Wheeler, Texas.").labels == ("wrong",)
    assert SlotAligner.from_config(plain.get_config()).of_phrases
    old_config = dict(plain.get_config())
    del old_config["of_phrases"]  # an aligner.json saved before the option
    assert not SlotAligner.from_config(old_config).of_phrases
    # the predicate's words must be the triple's own, and the subject the triple's subject
    assert reading.judge(born, "The death place of Alan Bean is Wheeler, Texas.").labels == ("wrong",)
    assert reading.judge(born, "The birth place of Wheeler, Texas is Alan Bean.").labels == ("wrong",)
    assert reading.judge(served, "The city served by Abilene, Texas is Abilene Regional Airport.").labels == ("wrong",)
    # "by" follows a participle only: "the birth place by X" is no such phrase
    assert reading.judge(born, "The birth place by Alan Bean is Wheeler, Texas.").labels == ("wrong",)


def test_subjects_call_a_relation_stated_of_another_input_entity_wrong(aligner):
    """With `subjects`, "the P of X", "X's P" and "X, whose P" state P of X: wrong when X is an
    input entity that holds no such relation in the input. Not judged: the triple's own subject,
    an object after "of" (apposition, or the inversion test's case), an entity linked to the
    object by an input triple, and "Y P of X" compounds."""
    checking = aligner.with_settings(subjects=True)
    car = (Triple("Italy", "capital", "Rome"), Triple("Alfa_Romeo_164", "assembly", "Italy"))
    wrong = (
        "The capital of Alfa Romeo 164 is Rome and it is assembled in Italy.",
        "Alfa Romeo 164's capital is Rome and it is assembled in Italy.",
        "Alfa Romeo 164, whose capital is Rome, is assembled in Italy.",
    )
    judgements = [checking.judge(car, text) for text in wrong]
    assert [j.labels for j in judgements] == [("wrong", "correct")] * 3
    assert all(j.triples[0].wrong_subject and not j.triples[1].wrong_subject for j in judgements)
    assert [aligner.judge(car, text).labels for text in wrong] == [("correct", "correct")] * 3  # off by default
    right = (
        "The capital of Italy is Rome and Alfa Romeo 164 is assembled in Italy.",
        "Italy's capital is Rome; the Alfa Romeo 164 is assembled there.",
        "Alfa Romeo 164 is assembled in Italy, whose capital is Rome.",
        "Alfa Romeo 164 is assembled in Italy. The capital is Rome.",  # no entity named: no evidence
    )
    assert [checking.judge(car, text).labels for text in right] == [("correct", "correct")] * 4
    # Both subjects named: the relation is stated of its own subject too.
    both = "The capital of Italy is Rome; the capital of Alfa Romeo 164 is Rome and it is assembled in Italy."
    assert checking.judge(car, both).labels == ("correct", "correct")
    # An object after "of": apposition ("the region of Guadalajara") is left alone.
    dish = (Triple("Bionico", "region", "Guadalajara"), Triple("Bionico", "country", "Mexico"))
    assert checking.judge(dish, "Bionico comes from the region of Guadalajara in Mexico.").labels == ("correct", "correct")
    # "Y P of X" is a compound: "the Catalonia region of Spain" says nothing of Spain's region.
    rice = (Triple("Arròs_negre", "region", "Catalonia"), Triple("Spain", "leader", "Felipe_VI"))
    compound = "Arròs negre comes from the Catalonia region of Spain, whose leader is Felipe VI."
    assert [t.wrong_subject for t in checking.judge(rice, compound).triples] == [False, False]
    # An entity an input triple links to the object: "English, the language of Great Britain".
    book = (Triple("A_Wizard_of_Mars", "language", "English_language"),
            Triple("English_language", "spokenIn", "Great_Britain"))
    linked = checking.judge(book, "A Wizard of Mars is in English, the language of Great Britain.")
    assert linked.triples[0].label == "correct" and not any(t.wrong_subject for t in linked.triples)
    # A predicate named by a verb phrase is left alone, as by the inversion test.
    part = (Triple("Texas", "isPartOf", "United_States"), Triple("Austin", "country", "United_States"))
    assert checking.judge(part, "Austin is part of Texas, in the United States.").labels == ("correct", "correct")
    # The delexicalised path (the reranker's) gives the same verdict.
    tokens = "The capital of ENT_3 is ENT_2 and it is assembled in ENT_1 .".split()
    assert checking.judge_delexicalised(car, tokens).labels == ("wrong", "correct")
    assert checking.get_config()["subjects"] is True
    assert SlotAligner.from_config(checking.get_config()).subjects is True


def test_attached_entities_reads_what_a_predicates_own_words_are_stated_of():
    """`attached_entities`: the placeholder after the predicate's words over "of", "is", articles,
    then the one behind a copula; the one before "'s" or ", whose"; none after "this"/"that"; not a
    determiner ("NASA 's"); and "the PRED_a of the PRED_b is X" attaches X to PRED_a only."""
    attached = faithfulness.attached_entities
    tokens = "The PRED_2 of ENT_1 is ENT_2 and the PRED_2 is ENT_3 .".split()
    assert attached(tokens, 1) == [3, 5]
    assert attached(tokens, 8) == [10]
    assert attached("ENT_1 has a PRED_1 of ENT_2 .".split(), 3) == [5]
    assert attached("ENT_1 's PRED_1 is ENT_2 .".split(), 2) == [4, 0]
    assert attached("ENT_1 , whose PRED_1 is ENT_2 , flies .".split(), 3) == [5, 0]
    assert attached("The leaders of that PRED_1 are ENT_2 .".split(), 4) == []
    assert attached("ENT_1 PRED_1 ENT_4 's ENT_2 mission .".split(), 1) == []
    # An entity that modifies the noun after it is not what the phrase is stated of; a copula after "in
    # the PRED" names a place ("the language used in the country is Tamil"), "of the PRED" still states it;
    # a predicate's words after another's ("the capital PRED_2 is") name a kind.
    assert attached("The PRED_1 of the ENT_1 dish of ENT_2 are ENT_3 .".split(), 1) == []
    assert attached("The PRED_1 of the ENT_1 operated ENT_2 mission .".split(), 1) == []
    assert attached("The PRED_1 of ENT_1 , where he lives , is ENT_2 .".split(), 1) == [3]
    assert attached("The language used in the PRED_1 is ENT_2 .".split(), 5) == []
    assert attached("ENT_1 is located in the PRED_1 of ENT_2 .".split(), 5) == [7]
    assert attached("The PRED_1 PRED_2 is ENT_2 .".split(), 2) == []
    assert attached("The PRED_1 of the PRED_2 is ENT_2 .".split(), 4) == []
    assert attached("The PRED_1 of the PRED_2 is ENT_2 .".split(), 1) == []  # a predicate, not an entity, follows
    assert attached("ENT_1 was born in the PRED_1 , near ENT_2 .".split(), 5) == []  # a comma ends it
    assert attached("The PRED_1 is one of the many of ENT_2 .".split(), 1) == []  # too far


def test_attachments_call_a_value_attached_to_another_relations_words_wrong():
    """With `attachments`, a value whose every mention the text attaches to the own words of an
    input relation it does not belong to is wrong, and so is a relation stated of its value only next
    to an entity that does not hold it. No cue is needed: an aligner without any judges it."""
    checking = SlotAligner({}, attachments=True)
    rocket = (Triple("Ariane_5", "launchSite", "Guiana_Space_Centre"), Triple("Ariane_5", "diameter", "5.4 (metres)"))
    wrong = checking.judge(rocket, "The diameter of Ariane 5 is Guiana Space Centre and the diameter is 5.4 metres.")
    assert wrong.labels == ("wrong", "correct")
    assert wrong.triples[0].attached and wrong.triples[0].rival_predicate == "diameter"
    assert not wrong.triples[1].attached
    assert wrong.to_dict()["details"][0]["attached"] is True
    assert SlotAligner({}).judge(rocket, "The diameter of Ariane 5 is Guiana Space Centre.").labels == (
        "correct", "missing")  # off by default
    right = (
        "The launch site of Ariane 5 is Guiana Space Centre and its diameter is 5.4 metres.",
        "Ariane 5, whose diameter is 5.4 metres, was launched from Guiana Space Centre.",
        "Guiana Space Centre is the launch site of Ariane 5, which has a diameter of 5.4 metres.",
    )
    assert [checking.judge(rocket, text).labels for text in right] == [("correct", "correct")] * 3
    # One mention of the value stated as it should be is enough, as for the cue test.
    twice = "The diameter of Ariane 5 is Guiana Space Centre; it flew from Guiana Space Centre and the diameter is 5.4 metres."
    assert checking.judge(rocket, twice).labels == ("correct", "correct")
    # The relation stated of a wrong entity: "The manager of Abel Hernandez is Jorge da Silva".
    club = (Triple("Abel_Hernández", "youthclub", "Peñarol"), Triple("Peñarol", "manager", "Jorge_da_Silva"))
    stated = checking.judge(club, "The manager of Abel Hernández is Jorge da Silva. His youth club was Peñarol.")
    assert stated.labels == ("correct", "wrong") and stated.triples[1].attached
    fine = checking.judge(club, "The manager of Peñarol is Jorge da Silva. Abel Hernández played for Peñarol.")
    assert fine.labels == ("correct", "correct")
    # A compound ("the Karnataka region of India") and an anaphor ("that country") attach nothing.
    dish = (Triple("Bhajji", "region", "Karnataka"), Triple("Bhajji", "country", "India"),
            Triple("India", "leader", "Narendra_Modi"))
    text = "Bhajji comes from the Karnataka region of India. The leader of that country is Narendra Modi."
    assert checking.judge(dish, text).labels == ("correct", "correct", "correct")
    # Relations that share a word hold each other's values ("the main ingredient is bacon" for
    # `ingredient`, whatever the mined cues say of their likeness).
    sandwich = (Triple("Bacon_sandwich", "ingredient", "Bacon"), Triple("Bacon_sandwich", "mainIngredients", "Bread"))
    unlike = SlotAligner({"ingredient": {"L:contain": 9.0}, "main ingredients": {"R:serve": 9.0}}, attachments=True)
    assert not unlike.similar_predicates("ingredient", "mainIngredients")
    for text in ("The main ingredients of the Bacon sandwich are bacon and bread.",
                 "The main ingredient of the Bacon sandwich is bread, and its ingredient is bacon."):
        assert unlike.judge(sandwich, text).labels == ("correct", "correct")
    assert faithfulness._share_a_word("awards", "was awarded") and not faithfulness._share_a_word("city", "state")
    # The delexicalised path (the reranker's) gives the same verdict; the setting round-trips, and an
    # aligner saved before it loads with it off.
    tokens = "The diameter of ENT_1 is ENT_2 and the diameter is ENT_3 .".split()
    assert checking.judge_delexicalised(rocket, tokens).labels == ("wrong", "correct")
    assert SlotAligner.from_config(checking.get_config()).attachments is True
    config = checking.get_config()
    del config["attachments"]
    assert SlotAligner.from_config(config).attachments is False


_HASH_SEED_PROBE = """
from onestep_gan.rdf2text.faithfulness import SlotAligner
from onestep_gan.rdf2text.webnlg import Triple

# Weights whose float sum depends on the order they are added in: 0.1 + 0.2 + 0.3 != 0.3 + 0.2 + 0.1.
cues = {
    "birth place": {"L1:in": 0.1, "L2:born": 0.2, "L:born": 0.3, "L:was": 0.7},
    "occupation": {"L1:in": 0.3, "L2:born": 0.1, "L:born": 0.2, "L:as": 0.7},
    "death place": {"L1:in": 0.2, "L2:born": 0.3, "L:born": 0.1, "L:was": 0.6},
}
aligner = SlotAligner(cues, margin=0.0, min_rival=0.0, max_own_share=10.0, min_foreign=0.0)
triples = (Triple("Alan_Bean", "birthPlace", "Wheeler"), Triple("Alan_Bean", "occupation", "Test_pilot"))
tokens = "ENT_1 was born in ENT_2 , he served as ENT_3 .".split()
judgement = aligner.judge_delexicalised(triples, tokens)
print([(t.label, repr(t.own), repr(t.rival), t.rival_predicate, t.foreign) for t in judgement.triples])
print(aligner.similar_predicates("birthPlace", "deathPlace"), aligner.similar_predicates("birthPlace", "occupation"))
"""


def test_scores_and_labels_do_not_depend_on_the_hash_seed():
    # Python orders a set of strings by their hashes, which change with PYTHONHASHSEED from one
    # process to the next; the aligner sums cue weights over sets, so the order must not matter.
    outputs = set()
    for seed in range(8):
        result = subprocess.run(
            [sys.executable, "-c", _HASH_SEED_PROBE], capture_output=True, text=True, check=True,
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
        )
        outputs.add(result.stdout)
    assert len(outputs) == 1, outputs


def test_value_shape_on_webnlg_spellings():
    assert [faithfulness.value_shape(value) for value in (
        '"1986-10-12"', "1872", "94.8024 (kilograms)", '"310"^^xsd:positiveInteger', "4000.0", "1,500", "-6",
        "Wheeler,_Texas", '"Massachusetts Institute of Technology, Sc.D. 1963"', "14L/32R", "1.8 litre I4",
    )] == ["date", "year", "number", "number", "number", "number", "number", "other", "other", "other", "other"]


def test_value_shapes_keep_a_year_from_a_rival_that_never_takes_one(aligner):
    """`birthYear` has no mined cues: without the option its year next to "born in" is bound to
    `birthPlace` (wrong); with it, a place predicate cannot take a year. A triple whose predicate
    has cues keeps every rival, so a place written where the date's words are stays wrong."""
    assert aligner.shapes["birth place"] == {"other": 6} and aligner.shapes["birth date"] == {"date": 6}
    assert not aligner.takes_shape("birthPlace", "year") and aligner.takes_shape("birthYear", "year")
    triples = (Triple("Alfred_Jones", "birthPlace", "England"), Triple("Alfred_Jones", "birthYear", "1872"))
    text = "Alfred Jones, born in 1872, was born in England."
    shaped = aligner.with_settings(value_shapes=True)
    assert aligner.judge(triples, text).labels == ("correct", "wrong")
    assert shaped.judge(triples, text).labels == ("correct", "correct")
    known = (Triple("Alan_Bean", "birthPlace", "Wheeler,_Texas"), Triple("Alan_Bean", "birthDate", '"1932-03-15"'))
    swapped = "Alan Bean was born in 15 March 1932 on Wheeler, Texas."
    assert aligner.judge(known, swapped).labels == shaped.judge(known, swapped).labels == ("wrong", "wrong")
    # The shapes travel with the aligner; one saved before they were mined cannot use the option.
    assert SlotAligner.from_config(shaped.get_config()).judge(triples, text).labels == ("correct", "correct")
    old = {key: value for key, value in aligner.get_config().items()
           if key not in ("shapes", "value_shapes", "min_shape_share")}
    assert SlotAligner.from_config(old).judge(triples, text).labels == ("correct", "wrong")
    with pytest.raises(ValueError, match="saved before they were mined"):
        SlotAligner.from_config({**old, "value_shapes": True})


@pytest.mark.parametrize("setting", ["min_foreign", "margin", "min_rival", "swap_score", "min_shape_share"])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), -1.0])
def test_a_judging_threshold_that_is_not_a_finite_number_ge_0_is_refused(aligner, setting, value):
    """A nan threshold compares false with every score, so every triple would pass as correct
    (`--min-foreign nan` turned the check off in silence): refused, naming the setting."""
    with pytest.raises(ValueError, match=f"`{setting}`.*finite number >= 0.*Received"):
        aligner.with_settings(**{setting: value})


def test_bound_elsewhere_at_the_margin_exactly_and_only_while_the_own_score_is_a_small_share():
    """Hand-set cues, so each threshold is met exactly: a rival `margin` above the own score binds the value
    elsewhere (>=); a rival that beats the own score by the margin does not while the own score is above
    `max_own_share` of it (the text states the own relation well too)."""
    tokens = "ENT_1 was born in ENT_2 .".split()
    at_margin = SlotAligner({"occupation": {"L:born": 3.0}}, margin=3.0, min_rival=3.0)
    assert at_margin.judge_delexicalised(BEAN, tokens).labels == ("wrong", "missing")
    below = SlotAligner({"occupation": {"L:born": 2.99}}, margin=3.0, min_rival=2.0)
    assert below.judge_delexicalised(BEAN, tokens).labels == ("correct", "missing")
    both = {"birth place": {"L:born": 2.0}, "occupation": {"L:born": 4.0}}  # own 2, rival 4: a margin of 2
    assert SlotAligner(both, margin=1.0, min_rival=1.0).judge_delexicalised(BEAN, tokens).labels == (
        "correct", "missing")  # 2 > 0.35 * 4
    assert SlotAligner(both, margin=1.0, min_rival=1.0, max_own_share=0.5).judge_delexicalised(BEAN, tokens).labels == (
        "wrong", "missing")  # 2 <= 0.5 * 4


def test_context_features_mark_the_sentence_start_and_an_extra_entity_counts_once():
    assert faithfulness.context_features("ENT_1 was born in ENT_2 .".split(), 4, "ENT_1", window=5, near=4) == [
        "L1:in", "L2:born", "L:born", "L3:was", "L4:<S>", "R1:<B>"]
    judged = SlotAligner({}).judge_delexicalised(BEAN, "ENT_1 was born in ENT_2 near ENT_7 and ENT_7 .".split())
    assert judged.extra_entities == ("ENT_7",)
    assert (faithfulness._lemma("analysis"), faithfulness._lemma("awards")) == ("analysis", "award")


def test_mining_keeps_a_feature_seen_exactly_min_count_times():
    born = WebNLGEntry("train/1triples/Astronaut/Id1", "Astronaut", 1, (Triple("Alan_Bean", "birthPlace", "Dallas"),),
                       ("Alan Bean was born in Dallas.",) * 2)
    worked = WebNLGEntry("train/1triples/Astronaut/Id2", "Astronaut", 1, (Triple("Elliot_See", "occupation", "Engineer"),),
                         ("Elliot See worked as an Engineer.",) * 2)
    # Each feature is seen twice; R1:<B> is seen with both predicates, so it tells neither apart.
    assert sorted(SlotAligner.from_entries([born, worked], min_count=2, smoothing=0.0).cues["birth place"]) == [
        "L1:in", "L2:born", "L:born"]
    assert SlotAligner.from_entries([born, worked], min_count=3, smoothing=0.0).cues["birth place"] == {}


def test_among_equally_good_mentions_the_first_decides():
    """"ENT_2 is nice . ENT_1 was born in ENT_2 .": both mentions of Wheeler, Texas score own - rival = 0;
    the first (no cue either way) decides, so the triple counts as stated without evidence."""
    cues = {"birth place": {"L:born": 2.0}, "occupation": {"L:born": 2.0}}
    judged = SlotAligner(cues, margin=3.0, min_rival=3.0).judge_delexicalised(
        BEAN, "ENT_2 is nice . ENT_1 was born in ENT_2 .".split()).triples[0]
    assert (judged.label, judged.own, judged.no_evidence) == ("correct", 0.0, True)


def test_predicates_whose_cues_have_a_cosine_of_max_similarity_exactly_are_similar():
    # Each predicate's own words weigh 2.0 on both sides: p {L:p, R:p}; q {L:q, R:q, L:p, R:p, a, b, c, d},
    # a cosine of 8 / (sqrt(8) sqrt(32)) = 0.5.
    aligner = SlotAligner({"p": {}, "q": {"L:p": 2.0, "R:p": 2.0, "a": 2.0, "b": 2.0, "c": 2.0, "d": 2.0}})
    assert aligner.similar_predicates("p", "q") and aligner.similar_predicates("q", "p")
    assert not aligner.with_settings(max_similarity=0.51).similar_predicates("p", "q")


def test_a_value_stated_in_the_opposed_relations_words_is_wrong_with_opposed():
    """"Marie Curie was born on 4 July 1934" for her `deathDate`: the date's own cue, "on", is birth date's as
    much, so the own-share test let it pass (own 3.4 > 0.35 x 9.4). With `opposed` the test reads the own
    score without the words the relation of opposed meaning shares (0 here); only for opposed relations."""
    cues = {"birth date": {"L1:on": 3.4, "L2:born": 3.0, "L:born": 3.0},
            "death date": {"L1:on": 3.4, "L2:died": 3.0, "L:died": 3.0},
            "origin": {"L1:on": 3.4, "L2:born": 3.0, "L:born": 3.0}}  # like birth date, but not its opposite
    curie = (Triple("Marie_Curie", "deathDate", "1934-07-04"),)
    born, died = "ENT_1 was born on ENT_2 .".split(), "ENT_1 died on ENT_2 .".split()
    plain = SlotAligner(cues, min_foreign=6.0)
    opposed = plain.with_settings(opposed=True)
    assert plain.judge_delexicalised(curie, born).labels == ("correct",)
    judged = opposed.judge_delexicalised(curie, born).triples[0]
    assert (judged.label, judged.foreign, judged.rival_predicate, judged.own, judged.rival) == (
        "wrong", True, "birth date", 3.4, 9.4)
    assert opposed.judge_delexicalised(curie, died).labels == ("correct",)
    # The same words under a relation that is not the opposite: the own-share test as before.
    assert opposed.judge_delexicalised(
        (Triple("Marie_Curie", "deathDate", "1934-07-04"), Triple("Marie_Curie", "birthDate", "1867-11-07")),
        born + "She was born on ENT_3 .".split()).labels == ("correct", "correct")  # birth date in the input
    no_birth = {key: weights for key, weights in cues.items() if key != "birth date"}
    assert SlotAligner(no_birth, min_foreign=6.0, opposed=True).judge_delexicalised(curie, born).labels == ("correct",)
    # Part of the check outside the input: nothing without min_foreign.
    assert SlotAligner(cues, opposed=True).judge_delexicalised(curie, born).labels == ("correct",)
    assert SlotAligner.from_config(SlotAligner(cues).get_config()).opposed is False
    assert faithfulness._OPPOSED_WORDS[0] == ("birth", "death")

