"""Evaluation of RDF-to-text outputs on WebNLG: corpus-level, multi-reference.

Metrics
- `bleu_2017`: BLEU as the WebNLG 2017 challenge reported it (Gardent et al., 2017,
  "The WebNLG Challenge: Generating Text from RDF Data"): lowercased, tokenised text,
  the first 3 references, `multi-bleu.perl` arithmetic. `nltk`'s `corpus_bleu` without
  smoothing is the same computation (clipped n-gram counts summed over the corpus,
  brevity penalty against the closest reference length, ties to the shorter one).
- `sacrebleu_bleu`: sacreBLEU (Post, 2018) on detokenised, cased text, all references.
- `chrf_plus_plus`: chrF++ (Popovic, 2017), character 6-grams plus word 2-grams.
- `entity_coverage`: share of the input subjects/objects whose surface form the output
  contains, a cheap faithfulness proxy (omissions).
- `repeated_trigram_share`: share of outputs repeating a token 3-gram, a proxy for the
  repetition loops of neural decoders.
- With a `faithfulness.SlotAligner`: `slot_error_rate` (input triples missing or bound to the
  wrong triple), `wrong_binding_rate`, `missing_rate` and `outputs_with_extra_entities`.

`evaluate_outputs` computes all of them on the whole set and on the WebNLG "seen" and
"unseen" categories; `write_report` saves hypotheses and scores (JSON and Markdown).

Entries are duck-typed: anything with `entry_id`, `triples` (each with `subject` and
`object`), `texts` (the references) and `seen` (True, False or None) works, so this
module does not import the WebNLG reader.
"""

import json
import logging
import pathlib
import re
import warnings

import sacrebleu
from nltk.tokenize import NLTKWordTokenizer
from nltk.translate.bleu_score import corpus_bleu

from onestep_gan.rdf2text import preprocessing
from onestep_gan.rdf2text.atomic_files import atomic_write_all

logger = logging.getLogger(__name__)

# Subsets of `evaluate_outputs`, in report order; "seen"/"unseen" follow `entry.seen`.
SUBSETS = ("all", "seen", "unseen")
# (score key, Markdown column header, multiplier applied for display)
REPORT_COLUMNS = (
    ("bleu_2017", "BLEU-2017", 1.0),
    ("sacrebleu", "sacreBLEU", 1.0),
    ("chrf_pp", "chrF++", 1.0),
    ("entity_coverage", "coverage %", 100.0),
    ("repeated_trigram_share", "repeated-3gram %", 100.0),
    ("slot_error_rate", "slot errors %", 100.0),
    ("wrong_binding_rate", "wrong bindings %", 100.0),
    ("count", "count", None),
)
# Keys of `faithfulness.slot_error_scores` copied into the scores.
SLOT_ERROR_KEYS = ("slot_error_rate", "wrong_binding_rate", "missing_rate", "outputs_with_extra_entities")

_WORD_TOKENIZER = NLTKWordTokenizer()
# A word ending in sentence punctuation before whitespace ("Texas. He"). The Treebank
# rules only split a period at the very end of the string, and splitting sentences with
# punkt would need downloaded data; words with an inner period ("U.S.") are left whole.
_SENTENCE_END = re.compile(r"(\S+?)([.!?])(?=\s)")
_WHITESPACE = re.compile(r"\s+")


def _split_sentence_end(match):
    word, punctuation = match.group(1), match.group(2)
    if "." in word:
        return match.group(0)
    return f"{word} {punctuation}"


def tokenize_for_bleu(text):
    """Lowercase and tokenise `text` the way the 2017 challenge scored it.

    Penn-Treebank style tokenisation (NLTK's `NLTKWordTokenizer`, no downloaded data),
    with sentence-final punctuation also split inside multi-sentence texts.

    Example:
        >>> tokenize_for_bleu("Born in Wheeler, Texas. He died.")
        ['born', 'in', 'wheeler', ',', 'texas', '.', 'he', 'died', '.']
    """
    if not isinstance(text, str):
        raise ValueError(f"Expected `text` to be a str. Received: text={text!r}")
    text = _SENTENCE_END.sub(_split_sentence_end, text)
    return [token.lower() for token in _WORD_TOKENIZER.tokenize(text)]


def _check_corpus(hypotheses, references):
    if len(hypotheses) == 0:
        raise ValueError(
            "Expected at least one hypothesis. Received: 0 hypotheses."
        )
    if len(hypotheses) != len(references):
        raise ValueError(
            "Expected one list of references per hypothesis. Received: "
            f"{len(hypotheses)} hypotheses and {len(references)} reference lists."
        )
    for index, example_references in enumerate(references):
        if isinstance(example_references, str):
            raise ValueError(
                "Expected each element of `references` to be a list of strings. "
                f"Received: references[{index}]={example_references!r}"
            )
        if len(example_references) == 0:
            raise ValueError(
                "Expected at least one reference per hypothesis. Received: "
                f"no reference for example {index}."
            )


def bleu_2017(hypotheses, references, max_references=3):
    """Corpus BLEU (0..100) as the WebNLG 2017 challenge computed it.

    Lowercased, tokenised with `tokenize_for_bleu`, scored against the first
    `max_references` references of each example, 4-gram BLEU without smoothing
    (`multi-bleu.perl`): a corpus with no matching n-gram of some order scores 0.

    Args:
        hypotheses: list of output strings, one per example.
        references: list (one per example) of lists of reference strings; counts may
            differ between examples.
        max_references: how many references per example to use, 3 in the challenge.
    """
    if max_references < 1:
        raise ValueError(
            f"Expected `max_references` >= 1. Received: max_references={max_references}"
        )
    _check_corpus(hypotheses, references)
    hypothesis_tokens = [tokenize_for_bleu(hypothesis) for hypothesis in hypotheses]
    reference_tokens = [
        [tokenize_for_bleu(reference) for reference in example_references[:max_references]]
        for example_references in references
    ]
    with warnings.catch_warnings():
        # nltk warns when an n-gram order has no match; multi-bleu.perl silently gives 0.
        warnings.simplefilter("ignore", UserWarning)
        score = corpus_bleu(reference_tokens, hypothesis_tokens)
    return 100.0 * float(score)


def reference_streams(references):
    """Transposes per-example references into sacreBLEU's reference streams.

    sacreBLEU wants `streams[k][i]` = k-th reference of example i. Examples with fewer
    references are padded with `None`, which sacreBLEU drops per segment; an empty
    string `''` would instead count as a real, empty reference (it would shorten the
    BLEU reference length and lower chrF), so it is never used as padding.
    Stream 0 is always full because each example has at least one reference.
    """
    stream_count = max(len(example_references) for example_references in references)
    return [
        [
            example_references[k] if k < len(example_references) else None
            for example_references in references
        ]
        for k in range(stream_count)
    ]


def sacrebleu_bleu(hypotheses, references):
    """sacreBLEU corpus BLEU (0..100): detokenised, cased text, all references."""
    _check_corpus(hypotheses, references)
    metric = sacrebleu.metrics.BLEU()
    return float(metric.corpus_score(list(hypotheses), reference_streams(references)).score)


def chrf_plus_plus(hypotheses, references):
    """chrF++ (0..100): sacreBLEU's chrF with word bigrams (`word_order=2`)."""
    _check_corpus(hypotheses, references)
    metric = sacrebleu.metrics.CHRF(word_order=2)
    return float(metric.corpus_score(list(hypotheses), reference_streams(references)).score)


def _normalize_text(text):
    return _WHITESPACE.sub(" ", text).strip().lower()


def normalize_entity(entity):
    """Surface form of an RDF subject/object (`preprocessing.normalise_entity`), lowercased.

    `Wheeler,_Texas` -> `wheeler, texas`; `"Bread"@en` -> `bread`;
    `"1.5"^^xsd:double` -> `1.5`.
    """
    return _normalize_text(preprocessing.normalise_entity(entity))


_ISO_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
           "october", "november", "december")


def entity_coverage(hypotheses, triples_per_example):
    """Share (0..1) of input entities whose surface form appears in the output.

    Per example, the distinct subjects and objects of its triples are normalised with
    `normalize_entity` and looked up as case-insensitive substrings of the
    whitespace-normalised output; an ISO date also counts when written out in full ("12 March
    1950", "March 12, 1950"), and any value in the forms `preprocessing.write_out` gives outputs
    ("Ardmore Airport" for "Ardmore_Airport_(New_Zealand)", "English" for "English_language").
    The share is over all entities of the corpus (micro average).
    Entities that normalise to an empty string are skipped.
    """
    _check_corpus(hypotheses, triples_per_example)
    found, total = 0, 0
    for hypothesis, triples in zip(hypotheses, triples_per_example):
        entities = _distinct_entities(triples)
        total += len(entities)
        found += len(entities) - len(_unmentioned(hypothesis, entities))
    return found / total if total else 0.0


def unmentioned_entities(hypothesis, triples):
    """The input entities (WebNLG spelling, in input order) whose surface form `entity_coverage`
    does not find in `hypothesis`."""
    return _unmentioned(hypothesis, _distinct_entities(triples))


def _unmentioned(hypothesis, entities):
    text = _normalize_text(hypothesis)
    return [
        raw_entity for entity, raw_entity in entities.items()
        if not any(form in text for form in _written_forms(entity) + _output_forms(raw_entity))
    ]


def check_text(aligner, triples, text):
    """One text checked against its input triples by `aligner` (a `faithfulness.SlotAligner`), as a
    JSON-ready record (`generate --format jsonl` prints one per line): the text, `faithful` (no
    triple missing or wrong, no entity outside the input, every input entity named:
    `unmentioned_entities` lists those `entity_coverage` does not find), and per input triple its
    label ("correct", "missing", "wrong") and, for "wrong", why: "bound elsewhere" (the value sits
    where another relation's words are), "swapped" (subject and object, or the relation stated
    backwards), "outside the input" (stated under a relation the input does not have), "wrong
    subject" (the relation stated of another input entity), "attached elsewhere" (the value, or the
    relation, attached to another relation's own words: `SlotAligner(attachments=True)`)."""
    judgement = aligner.judge(triples, text)
    records = []
    for triple in judgement.triples:
        reason = None
        if triple.label == "wrong":
            reason = ("wrong subject" if triple.wrong_subject else "attached elsewhere" if triple.attached
                      else "swapped" if triple.swapped
                      else "outside the input" if triple.foreign else "bound elsewhere")
        records.append({"subject": triple.triple.subject, "predicate": triple.triple.predicate,
                        "object": triple.triple.object, "label": triple.label, "reason": reason})
    unmentioned = unmentioned_entities(text, triples)
    return {"text": text, "faithful": judgement.is_faithful and not unmentioned, "triples": records,
            "extra_entities": list(judgement.extra_entities), "unmentioned_entities": unmentioned}


def _distinct_entities(triples):
    """{normalised entity: entity as given} for the subjects and objects of `triples`, in input
    order, without those that normalise to an empty string."""
    entities = {}
    for triple in triples:
        for raw_entity in (triple.subject, triple.object):
            entities.setdefault(normalize_entity(raw_entity), raw_entity)
    entities.pop("", None)
    return entities


def _written_forms(entity):
    """`entity` (normalised) and, for an ISO date, its two written-out full forms."""
    date = _ISO_DATE.match(entity)
    if not date or not 1 <= int(date.group(2)) <= 12:
        return (entity,)
    year, month, day = date.group(1), _MONTHS[int(date.group(2)) - 1], int(date.group(3))
    return (entity, f"{day} {month} {year}", f"{month} {day}, {year}")


def _output_forms(raw_entity):
    """The forms `preprocessing.write_out` gives `raw_entity` in outputs, normalised."""
    surface = preprocessing.normalise_entity(raw_entity)
    return tuple(
        form for form in {_normalize_text(preprocessing.write_out(surface, previous))
                          for previous in (None, "the")}
        if form
    )


def _has_repeated_trigram(tokens):
    trigrams = list(zip(tokens, tokens[1:], tokens[2:]))
    return len(set(trigrams)) < len(trigrams)


def repeated_trigram_share(hypotheses):
    """Share (0..1) of outputs in which some token 3-gram occurs at least twice.

    Tokens are those of `tokenize_for_bleu` (lowercased, punctuation split).
    """
    if len(hypotheses) == 0:
        raise ValueError("Expected at least one hypothesis. Received: 0 hypotheses.")
    repeated = sum(
        _has_repeated_trigram(tokenize_for_bleu(hypothesis)) for hypothesis in hypotheses
    )
    return repeated / len(hypotheses)


def _score_subset(hypotheses, entries, aligner=None):
    references = [list(entry.texts) for entry in entries]
    slot_errors = {}
    if aligner is not None:
        from onestep_gan.rdf2text.faithfulness import slot_error_scores

        scores = slot_error_scores(aligner, hypotheses, entries)
        slot_errors = {key: scores[key] for key in SLOT_ERROR_KEYS}
    return {
        "bleu_2017": bleu_2017(hypotheses, references),
        "sacrebleu": sacrebleu_bleu(hypotheses, references),
        "chrf_pp": chrf_plus_plus(hypotheses, references),
        "entity_coverage": entity_coverage(hypotheses, [entry.triples for entry in entries]),
        "repeated_trigram_share": repeated_trigram_share(hypotheses),
        **slot_errors,
        "count": len(hypotheses),
    }


def _check_entries(hypotheses, entries):
    if len(entries) == 0:
        raise ValueError("Expected at least one entry. Received: 0 entries.")
    if len(hypotheses) != len(entries):
        raise ValueError(
            "Expected one hypothesis per entry. Received: "
            f"{len(hypotheses)} hypotheses and {len(entries)} entries."
        )
    for entry in entries:
        if len(entry.texts) == 0:
            raise ValueError(
                "Expected at least one reference text per entry. Received: "
                f"entry {entry.entry_id!r} has none."
            )


def evaluate_outputs(hypotheses, entries, aligner=None):
    """Scores outputs on all entries and on the seen / unseen categories.

    Args:
        hypotheses: list of output strings, in the order of `entries`.
        entries: WebNLG entries (`texts`, `triples`, `seen`, `entry_id`).
        aligner: a `faithfulness.SlotAligner` (mined from train); adds the slot error rates.

    Returns:
        `{"all": scores, "seen": scores, "unseen": scores}` where scores holds
        `bleu_2017`, `sacrebleu`, `chrf_pp` (0..100), `entity_coverage`,
        `repeated_trigram_share` (0..1) and `count`. A subset with no entry is
        omitted (train/dev entries have `seen=None`, so only "all" is returned).
    """
    hypotheses, entries = list(hypotheses), list(entries)
    _check_entries(hypotheses, entries)
    pairs = list(zip(hypotheses, entries))
    subsets = {
        "all": pairs,
        "seen": [(h, e) for h, e in pairs if e.seen is True],
        "unseen": [(h, e) for h, e in pairs if e.seen is False],
    }
    scores = {}
    for name in SUBSETS:
        if subsets[name]:
            subset_hypotheses, subset_entries = zip(*subsets[name])
            scores[name] = _score_subset(list(subset_hypotheses), list(subset_entries), aligner)
    return scores


def format_markdown_table(scores):
    """Markdown table of `evaluate_outputs` scores: one row per subset present."""
    columns = [column for column in REPORT_COLUMNS if column[0] in scores.get("all", {})]
    header = "| subset | " + " | ".join(title for _, title, _ in columns) + " |"
    separator = "|---|" + "---:|" * len(columns)
    lines = [header, separator]
    for name in SUBSETS:
        if name not in scores:
            continue
        cells = []
        for key, _, scale in columns:
            value = scores[name][key]
            cells.append(str(int(value)) if scale is None else f"{value * scale:.2f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write_report(run_dir, hypotheses, entries, scores=None, name="test", aligner=None):
    """Writes hypotheses and scores of one evaluation to `run_dir`.

    Files: `{name}_hypotheses.txt` (one output per line, in entry order; whitespace runs
    inside an output, newlines included, become one space), `{name}_scores.json` and `{name}_scores.md`.

    Args:
        run_dir: directory, created if missing.
        hypotheses: list of output strings, in the order of `entries`.
        entries: WebNLG entries.
        scores: precomputed `evaluate_outputs` result; computed when None.
        name: file name prefix, e.g. "test" or "dev".
        aligner: a `faithfulness.SlotAligner`, passed to `evaluate_outputs`.

    Returns:
        The scores dict.
    """
    hypotheses, entries = list(hypotheses), list(entries)
    _check_entries(hypotheses, entries)
    if scores is None:
        scores = evaluate_outputs(hypotheses, entries, aligner)
    run_dir = pathlib.Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    lines = [_WHITESPACE.sub(" ", hypothesis).strip() for hypothesis in hypotheses]
    atomic_write_all({  # one set: a failed write (a full disk) leaves the three files as they were
        run_dir / f"{name}_hypotheses.txt": "".join(line + "\n" for line in lines),
        run_dir / f"{name}_scores.json": json.dumps(scores, indent=2) + "\n",
        run_dir / f"{name}_scores.md": format_markdown_table(scores),
    })
    logger.info("Wrote %s report to %s", name, run_dir)
    return scores


def format_comparison(mle_scores, adversarial_scores, accuracy, timing):
    """Markdown table: MLE vs MLE+GAN on the same test set, with the discriminator's held-out
    accuracies and the stage's wall time."""
    rows = [
        ("BLEU-2017 (all)", "bleu_2017", 1.0), ("sacreBLEU (all)", "sacrebleu", 1.0),
        ("chrF++ (all)", "chrf_pp", 1.0), ("entity coverage % (all)", "entity_coverage", 100.0),
        ("repeated 3-gram % (all)", "repeated_trigram_share", 100.0),
        ("slot errors % (all)", "slot_error_rate", 100.0),
        ("wrong bindings % (all)", "wrong_binding_rate", 100.0),
    ]
    lines = ["| metric | MLE | MLE+GAN |", "|---|---:|---:|"]
    for label, key, scale in rows:
        if key not in adversarial_scores["all"]:
            continue
        mle = f"{mle_scores['all'][key] * scale:.2f}" if mle_scores and key in mle_scores["all"] else "n/a"
        lines.append(f"| {label} | {mle} | {adversarial_scores['all'][key] * scale:.2f} |")
    for subset in ("seen", "unseen"):
        if subset in adversarial_scores:
            mle = f"{mle_scores[subset]['bleu_2017']:.2f}" if mle_scores and subset in mle_scores else "n/a"
            lines.append(f"| BLEU-2017 ({subset}) | {mle} | {adversarial_scores[subset]['bleu_2017']:.2f} |")
    for stage, values in accuracy.items():
        parts = ", ".join(
            f"{name.replace('_accuracy', '')} {value * 100:.0f}" for name, value in values.items() if name != "accuracy"
        )
        lines.append(
            f"| D held-out accuracy, {stage.replace('_', ' ')} | | {values['accuracy'] * 100:.1f}% ({parts}) |"
        )
    lines.append(
        f"| adversarial wall time | | {timing.get('adversarial_seconds', 0) / 60:.1f} min "
        f"({timing.get('adversarial_steps', 0)} steps) |"
    )
    return "\n".join(lines) + "\n"
