import collections
import json
import math

import pytest
import sacrebleu

from onestep_gan.rdf2text import evaluation
from onestep_gan.rdf2text.faithfulness import SlotAligner

Triple = collections.namedtuple("Triple", ["subject", "predicate", "object"])
Entry = collections.namedtuple("Entry", ["entry_id", "category", "triples", "texts", "seen"])


def make_entry(entry_id, texts, seen=None, triples=None):
    triples = triples or (Triple("Alan_Bean", "birthPlace", "Wheeler,_Texas"),)
    return Entry(entry_id, "Astronaut", tuple(triples), tuple(texts), seen)


def test_tokenize_for_bleu_lowercases_and_splits_sentences():
    tokens = evaluation.tokenize_for_bleu('Born in "Wheeler, Texas". He died in 1990. The U.S. Army.')
    assert tokens == [
        "born", "in", "``", "wheeler", ",", "texas", "''", ".",
        "he", "died", "in", "1990", ".", "the", "u.s.", "army", ".",
    ]


def test_bleu_2017_identical_is_100():
    assert evaluation.bleu_2017(["a b c d e"], [["a b c d e"]]) == pytest.approx(100.0)


def test_bleu_2017_hand_computed_with_brevity_penalty():
    # Precisions 5/6, 4/5, 3/4, 2/3 (product 1/3); hypothesis 6 tokens, reference 7.
    score = evaluation.bleu_2017(["a b c d e f"], [["a b c d e g h"]])
    expected = 100.0 * math.exp(1.0 - 7.0 / 6.0) * (1.0 / 3.0) ** 0.25
    assert score == pytest.approx(expected)


def test_bleu_2017_uses_closest_reference_length():
    # Lengths 4 and 7 for a 5-token hypothesis: closest is 4, so no brevity penalty.
    score = evaluation.bleu_2017(["a b c d e"], [["a b c d", "a b c d e x y"]])
    assert score == pytest.approx(100.0)


def test_bleu_2017_lowercases():
    score = evaluation.bleu_2017(["The Cat Sat On The Mat ."], [["the cat sat on the mat."]])
    assert score == pytest.approx(100.0)


def test_bleu_2017_uses_at_most_three_references():
    references = [["p q r s", "p q r s", "p q r s", "x y z w v"]]
    assert evaluation.bleu_2017(["x y z w v"], references) == 0.0
    assert evaluation.bleu_2017(["x y z w v"], references, max_references=4) == pytest.approx(100.0)


def test_reference_streams_pad_with_none():
    streams = evaluation.reference_streams([["a"], ["b", "c", "d"], ["e", "f"]])
    assert streams == [["a", "b", "e"], [None, "c", "f"], [None, "d", None]]


HYPOTHESES = [
    "Alan Bean was born in Wheeler, Texas.",
    "The Acharya Institute of Technology is in Bangalore, India.",
    "Bread is made of flour.",
]
REFERENCES = [
    ["Alan Bean was born in Wheeler, Texas.", "Wheeler, Texas is the birthplace of Alan Bean."],
    ["The Acharya Institute of Technology is located in Bangalore, India."],
    ["Bread contains flour.", "Flour is an ingredient of bread.", "Bread is made from flour."],
]


def test_sacrebleu_and_chrf_match_sacrebleu_with_ragged_references():
    streams = [
        [REFERENCES[0][0], REFERENCES[1][0], REFERENCES[2][0]],
        [REFERENCES[0][1], None, REFERENCES[2][1]],
        [None, None, REFERENCES[2][2]],
    ]
    expected_bleu = sacrebleu.corpus_bleu(HYPOTHESES, streams).score
    expected_chrf = sacrebleu.corpus_chrf(HYPOTHESES, streams, word_order=2).score
    assert evaluation.sacrebleu_bleu(HYPOTHESES, REFERENCES) == pytest.approx(expected_bleu)
    assert evaluation.chrf_plus_plus(HYPOTHESES, REFERENCES) == pytest.approx(expected_chrf)
    assert 0.0 < expected_bleu < 100.0 and 0.0 < expected_chrf < 100.0


def test_padding_is_ignored():
    # Duplicating a reference to fill the padding must not change any score.
    padded = [REFERENCES[0] + [REFERENCES[0][0]], REFERENCES[1] * 3, REFERENCES[2]]
    for metric in (evaluation.sacrebleu_bleu, evaluation.chrf_plus_plus, evaluation.bleu_2017):
        assert metric(HYPOTHESES, padded) == pytest.approx(metric(HYPOTHESES, REFERENCES))


def test_normalize_entity():
    assert evaluation.normalize_entity("Wheeler,_Texas") == "wheeler, texas"
    assert evaluation.normalize_entity('"Bread  Roll"@en') == "bread roll"
    assert evaluation.normalize_entity('"1.5"^^xsd:double') == "1.5"
    assert evaluation.normalize_entity('"2.0"^^<http://www.w3.org/2001/XMLSchema#double>') == "2.0"
    assert evaluation.normalize_entity(" Ardmore_Airport_(New_Zealand) ") == "ardmore airport (new zealand)"


def test_entity_coverage_hand_cases():
    wheeler = [Triple("Alan_Bean", "birthPlace", "Wheeler,_Texas")]
    assert evaluation.entity_coverage(["Alan Bean was born in Wheeler, Texas."], [wheeler]) == 1.0
    assert evaluation.entity_coverage(["He was born in WHEELER,\n Texas"], [wheeler]) == 0.5
    bread = [Triple("Bread", "ingredient", '"Flour"@en'), Triple("Bread", "mass", '"1.5"^^xsd:double')]
    # Entities: bread, flour, 1.5 (bread counted once) -> 2 found of 3, plus 2 of 2 above.
    share = evaluation.entity_coverage(
        ["Bread weighs 1.5 kg.", "Alan Bean was born in Wheeler, Texas."], [bread, wheeler]
    )
    assert share == pytest.approx(4 / 5)


def test_repeated_trigram_share_exact():
    hypotheses = ["a b c a b c", "a b c d", "The cat sat. the cat sat.", "", "x x x x"]
    # repeated: 1st, 3rd (case-insensitive), 5th ("x x x" twice); not: 2nd, empty.
    assert evaluation.repeated_trigram_share(hypotheses) == pytest.approx(3 / 5)


def _entries():
    return [
        make_entry("Id1", REFERENCES[0], seen=True),
        make_entry("Id2", REFERENCES[1], seen=False,
                   triples=[Triple("Acharya_Institute_of_Technology", "city", "Bangalore")]),
        make_entry("Id3", REFERENCES[2], seen=True,
                   triples=[Triple("Bread", "ingredient", '"Flour"@en')]),
    ]


def test_evaluate_outputs_splits_seen_unseen():
    scores = evaluation.evaluate_outputs(HYPOTHESES, _entries())
    assert list(scores) == ["all", "seen", "unseen"]
    assert [scores[name]["count"] for name in scores] == [3, 2, 1]
    seen_hypotheses = [HYPOTHESES[0], HYPOTHESES[2]]
    seen_references = [REFERENCES[0], REFERENCES[2]]
    assert scores["seen"]["bleu_2017"] == pytest.approx(
        evaluation.bleu_2017(seen_hypotheses, seen_references))
    assert scores["seen"]["sacrebleu"] == pytest.approx(
        evaluation.sacrebleu_bleu(seen_hypotheses, seen_references))
    assert scores["all"]["chrf_pp"] == pytest.approx(
        evaluation.chrf_plus_plus(HYPOTHESES, REFERENCES))
    assert scores["unseen"]["entity_coverage"] == 1.0  # both entities in output 2
    assert scores["seen"]["entity_coverage"] == 1.0  # alan bean, wheeler, bread, flour
    assert scores["all"]["repeated_trigram_share"] == 0.0


def test_evaluate_outputs_without_seen_flags_returns_only_all():
    entries = [make_entry("Id1", REFERENCES[0]), make_entry("Id2", REFERENCES[1])]
    scores = evaluation.evaluate_outputs(HYPOTHESES[:2], entries)
    assert list(scores) == ["all"]
    assert scores["all"]["count"] == 2


def test_write_report_writes_three_files(tmp_path):
    run_dir = tmp_path / "run"
    hypotheses = [HYPOTHESES[0], "Multi-line\noutput", HYPOTHESES[2]]
    scores = evaluation.write_report(run_dir, hypotheses, _entries(), name="dev")
    lines = (run_dir / "dev_hypotheses.txt").read_text(encoding="utf-8").splitlines()
    assert lines == [HYPOTHESES[0], "Multi-line output", HYPOTHESES[2]]
    assert json.loads((run_dir / "dev_scores.json").read_text(encoding="utf-8")) == scores
    markdown = (run_dir / "dev_scores.md").read_text(encoding="utf-8").splitlines()
    assert markdown[0] == (
        "| subset | BLEU-2017 | sacreBLEU | chrF++ | coverage % | repeated-3gram % | count |"
    )
    assert [row.split(" | ")[0] for row in markdown[2:]] == ["| all", "| seen", "| unseen"]
    all_cells = [cell.strip() for cell in markdown[2].strip("|").split("|")]
    assert all_cells[1] == f"{scores['all']['bleu_2017']:.2f}"
    assert all_cells[4] == f"{100 * scores['all']['entity_coverage']:.2f}"
    assert all_cells[6] == "3"


def test_write_report_uses_given_scores(tmp_path):
    scores = {"all": {"bleu_2017": 12.345, "sacrebleu": 1.0, "chrf_pp": 2.0,
                      "entity_coverage": 0.5, "repeated_trigram_share": 0.25, "count": 1}}
    returned = evaluation.write_report(tmp_path, ["x"], [make_entry("Id1", ["y"])], scores=scores)
    assert returned is scores
    table = (tmp_path / "test_scores.md").read_text(encoding="utf-8")
    assert table.splitlines()[2] == "| all | 12.35 | 1.00 | 2.00 | 50.00 | 25.00 | 1 |"


def test_length_mismatch_raises_with_both_numbers():
    with pytest.raises(ValueError, match=r"2 hypotheses and 3 reference lists"):
        evaluation.bleu_2017(["a", "b"], [["a"], ["b"], ["c"]])
    with pytest.raises(ValueError, match=r"2 hypotheses and 3 entries"):
        evaluation.evaluate_outputs(HYPOTHESES[:2], _entries())
    with pytest.raises(ValueError, match=r"1 hypotheses and 3 entries"):
        evaluation.write_report("unused", HYPOTHESES[:1], _entries())


def test_empty_input_and_missing_reference_raise():
    with pytest.raises(ValueError, match="Received: 0"):
        evaluation.evaluate_outputs([], [])
    with pytest.raises(ValueError, match="Received: 0"):
        evaluation.sacrebleu_bleu([], [])
    with pytest.raises(ValueError, match="example 1"):
        evaluation.chrf_plus_plus(["a", "b"], [["a"], []])
    with pytest.raises(ValueError, match="'Id2' has none"):
        evaluation.evaluate_outputs(["a", "b"], [make_entry("Id1", ["a"]), make_entry("Id2", [])])


def test_entity_coverage_counts_a_date_written_out():
    born = [Triple("Luigi_Rossi", "birthDate", '"1950-03-12"^^xsd:date')]
    for text in ("Luigi Rossi was born on 12 March 1950.", "Luigi Rossi was born on March 12, 1950.",
                 "Luigi Rossi was born on 1950-03-12."):
        assert evaluation.entity_coverage([text], [born]) == 1.0, text
    assert evaluation.entity_coverage(["Luigi Rossi was born in 1950."], [born]) == 0.5


def test_entity_coverage_counts_the_forms_outputs_write():
    # preprocessing.write_out: qualifiers dropped, units out of parentheses, "X language" -> "X".
    triples = [Triple("Ardmore_Airport_(New_Zealand)", "language", "English_language"),
               Triple("Ardmore_Airport_(New_Zealand)", "timeInSpace", '"13017.0"(minutes)')]
    text = "Ardmore Airport speaks English and spent 13017.0 minutes in space."
    assert evaluation.entity_coverage([text], [triples]) == 1.0
    assert evaluation.entity_coverage(["Ardmore Airport (New Zealand) speaks the English language."],
                                      [triples]) == 2 / 3
    assert evaluation.entity_coverage(["Ardmore speaks French."], [triples]) == 0.0


def test_check_text_labels_each_triple_and_says_why_one_is_wrong():
    from tests.test_faithfulness import _training_entries

    aligner = SlotAligner.from_entries(_training_entries(), min_count=1, smoothing=0.0, margin=1.5, min_rival=2.0)
    checker = aligner.with_settings(inversions=True, subjects=True)
    car = [Triple("Italy", "capital", "Rome"), Triple("Alfa_Romeo_164", "assembly", "Italy")]
    assert evaluation.check_text(checker, car, "The capital of Alfa Romeo 164 is Rome.") == {
        "text": "The capital of Alfa Romeo 164 is Rome.", "faithful": False, "extra_entities": [],
        "unmentioned_entities": ["Italy"],
        "triples": [
            {"subject": "Italy", "predicate": "capital", "object": "Rome", "label": "wrong", "reason": "wrong subject"},
            {"subject": "Alfa_Romeo_164", "predicate": "assembly", "object": "Italy", "label": "missing", "reason": None},
        ],
    }
    born = [Triple("Alan_Bean", "birthPlace", "Wheeler,_Texas")]
    assert evaluation.check_text(checker, born, "Alan Bean is the birth place of Wheeler, Texas.")["triples"][0]["reason"] == "swapped"
    assert evaluation.check_text(checker, born, "Alan Bean was born in Wheeler, Texas.")["faithful"] is True
    rocket = [Triple("Ariane_5", "launchSite", "Guiana_Space_Centre"), Triple("Ariane_5", "diameter", "5.4 (metres)")]
    attached = evaluation.check_text(SlotAligner({}, attachments=True), rocket,  # no cues: only this check
                                     "The diameter of Ariane 5 is Guiana Space Centre and the diameter is 5.4 metres.")
    assert [t["reason"] for t in attached["triples"]] == ["attached elsewhere", None]
    # A value stated under a mined relation the input does not have (`min_foreign`).
    alma = [Triple("Alan_Bean", "almaMater", "UT_Austin")]
    outside = evaluation.check_text(aligner.with_settings(min_foreign=2.0), alma, "Alan Bean was born in UT Austin.")
    assert [(t["label"], t["reason"]) for t in outside["triples"]] == [("wrong", "outside the input")]
    # Every triple "correct" by the aligner (a subject may go unnamed), but Alfa Romeo 164 is named nowhere.
    unnamed = evaluation.check_text(checker, car, "The capital of Italy is Rome.")
    assert [t["label"] for t in unnamed["triples"]] == ["correct", "correct"]
    assert (unnamed["unmentioned_entities"], unnamed["faithful"]) == (["Alfa_Romeo_164"], False)


def test_entity_coverage_reads_one_digit_days_skips_empty_values_and_survives_a_month_13():
    from onestep_gan.rdf2text.webnlg import Triple

    # "March 5, 1950" mentions 1950-03-05 (a zero-padded day would not be found).
    assert evaluation.entity_coverage(["Luigi Rossi was born on March 5, 1950."],
                                      [[Triple("Luigi_Rossi", "birthDate", '"1950-03-05"^^xsd:date')]]) == 1.0
    # An empty value is no entity (the empty string is "in" every text): only the subject counts, and it is absent.
    assert evaluation.entity_coverage(["Nothing."], [[Triple("Alan_Bean", "p", '""')]]) == 0.0
    # Not a date: read as a plain value, not an index error.
    assert evaluation.entity_coverage(["x"], [[Triple("A", "p", "1950-13-01")]]) == 0.0
