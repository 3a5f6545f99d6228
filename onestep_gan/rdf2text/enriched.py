"""Gold entity mentions and sentence plans from the enriched WebNLG corpus, for training.

The enriched WebNLG (Castro Ferreira, Moussallem, Krahmer, Wubben: "Enriching the WebNLG
corpus", INLG 2018; v1.6, `data/v1.6/en` of github.com/ThiagoCF05/webnlg) holds the same
entries as WebNLG 2017, with each reference text's entity mentions aligned to the entities:
`<reference entity="Tirstrup" tag="BRIDGE-1" type="name">Tirstrup</reference>`.

The delexicaliser (`preprocessing.delexicalise`) finds an entity in a reference by its own
forms and a few fallbacks; it misses misspellings, inflections and descriptions ("Carrol
County", "Almonds", "the Dept of Commerce Gold Medal"), and a missed mention stays in the
training text as words, so the model learns to write entity names itself rather than copy
them. In 4,774 of the 17,512 train texts the enriched corpus aligns, it names an entity the
delexicaliser did not find. `load_mentions` reads those alignments; `with_mentions` gives each
entry's reference texts their mentions (`WebNLGEntry.mentions`), which `delexicalise` then
also looks for.

    mentions = load_mentions("train", "../shared/webnlg/enriched")
    entries = with_mentions(webnlg.load_webnlg("train"), mentions)

Pronouns are left out: "he" stays a word (the model writes it; a placeholder would put a name
where the reference has a pronoun). Texts are matched by their words (whitespace-normalised).

Each reference text's sentence plan (`<sortedtripleset>`: its triples grouped by sentence) and
template give its sentences one by one with the triples each states: `load_sentence_plans` reads
them, `sentence_entries` makes each sentence that names exactly its triples' entities a training
entry of its own (`MLEConfig.sentence_examples`, off by default).
"""

import dataclasses
import logging
import os
import pathlib
import re
import xml.etree.ElementTree as ET

from onestep_gan.rdf2text import preprocessing
from onestep_gan.rdf2text.webnlg import TRIPLE_SEPARATOR

logger = logging.getLogger(__name__)

ENRICHED_DIR_VARIABLE = "WEBNLG_ENRICHED_DIR"
# `<reference type=...>` values kept: every mention that names or describes the entity.
MENTION_TYPES = ("name", "description", "demonstrative")
# A mention more than this many tokens longer than its entity's own words is an alignment
# error ("Paul Ryan . The leader of the United States is President" for
# `President_of_the_United_States`), kept out; up to 3: "the comic character Ben Urich".
MAX_EXTRA_TOKENS = 3


def text_key(text):
    """The key a reference text is matched by: its whitespace-separated words."""
    return " ".join(text.split())


def resolve_enriched_dir(enriched_dir=None):
    """The enriched WebNLG folder (holding train/dev/test): `enriched_dir`, else
    `$WEBNLG_ENRICHED_DIR`; a `ValueError` naming both when neither is set."""
    enriched_dir = enriched_dir or os.environ.get(ENRICHED_DIR_VARIABLE)
    if not enriched_dir:
        raise ValueError(
            "Gold mentions (MLEConfig.gold_mentions, on by default) need the enriched WebNLG folder "
            f"(github.com/ThiagoCF05/webnlg, data/v1.6/en): pass --enriched-dir, set {ENRICHED_DIR_VARIABLE}, "
            "or train without them (--no-gold-mentions)."
        )
    return pathlib.Path(enriched_dir).expanduser()


def load_mentions(split, enriched_dir=None):
    """Reads the entity mentions of every reference text of one split of the enriched corpus.

    Args:
        split: "train", "dev" or "test" (the folder `enriched_dir/split/NtriplesN/*.xml`).
        enriched_dir: see `resolve_enriched_dir`.

    Returns:
        `{text_key(text): ((entity, surface), ...)}`, the mentions of the types in
        `MENTION_TYPES` in document order, entity as in the triples ("Carroll_County,_Maryland").

    Raises:
        ValueError: the split's folder holds no XML file, or a file is not well-formed XML
            (its path and line named).
    """
    mentions = {}
    for path in _split_files(split, enriched_dir):
        for lex in _parse(path).iter("lex"):
            text = lex.findtext("text")
            if not text or not text.strip():
                continue
            found = tuple(
                (reference.get("entity"), text_key(reference.text or ""))
                for reference in lex.iter("reference")
                if reference.get("type") in MENTION_TYPES
                and is_plausible_mention(reference.get("entity"), reference.text)
            )
            key = text_key(text)
            mentions[key] = tuple(dict.fromkeys(mentions.get(key, ()) + found))
    logger.info("Read the mentions of %d %s texts", len(mentions), split)
    return mentions


def _split_files(split, enriched_dir):
    """The XML files of one split, `enriched_dir/split/NtriplesN/*.xml`; a `ValueError` if none."""
    folder = resolve_enriched_dir(enriched_dir) / split
    files = sorted(folder.glob("*/*.xml"))
    if not files:
        raise ValueError(
            f"{folder}: expected the enriched WebNLG {split} files as NtriplesN/*.xml, found none."
        )
    return files


def _parse(path):
    """The root element of `path`; a `ValueError` naming the file (and line) if it is not XML or
    cannot be read."""
    try:
        return ET.parse(path).getroot()
    except ET.ParseError as error:
        raise ValueError(f"{path}: line {error.position[0]}: not well-formed XML ({error}).") from None
    except OSError as error:
        raise ValueError(f"{path}: cannot be read ({type(error).__name__}: {error.strerror or error}).") from None


def is_plausible_mention(entity, surface):
    """Whether `surface` can be a mention of `entity`: both given, no sentence end inside, and at
    most `MAX_EXTRA_TOKENS` tokens longer than the entity's own words."""
    if not entity or not surface or not surface.strip():
        return False
    tokens = preprocessing.tokenize(surface)
    if any(token in (".", "!", "?") for token in tokens[:-1]):
        return False
    return len(tokens) <= len(preprocessing.tokenize(preprocessing.normalise_entity(entity))) + MAX_EXTRA_TOKENS


def with_mentions(entries, mentions):
    """`entries` with `mentions` set: for each reference text, its gold mentions (`()` for a
    text the enriched corpus does not hold). Logs how many texts were found."""
    result, found, total = [], 0, 0
    for entry in entries:
        keys = [text_key(text) for text in entry.texts]
        per_text = tuple(mentions.get(key, ()) for key in keys)
        found += sum(key in mentions for key in keys)
        total += len(entry.texts)
        result.append(dataclasses.replace(entry, mentions=per_text))
    logger.info("Gold mentions for %d of %d reference texts", found, total)
    return result


# --- Sentence plans: one training entry per sentence -------------------------------------------

_TAG = re.compile(r"(?:AGENT|PATIENT|BRIDGE)-\d+")
_SENTENCE_ENDS = (".", "!", "?")
_PTB_QUOTES = {"``": '"', "''": '"'}  # the templates' tokeniser wrote quotes the Penn Treebank way


def load_sentence_plans(split, enriched_dir=None):
    """Reads each reference text's sentences as the enriched corpus plans them.

    A `<lex>`'s `<sortedtripleset>` groups its triples by sentence, and its `<template>` with
    `<references>` (one per tag, in text order by their `number`) spells each sentence out. Returns
    `{text_key(text): ((triple strings, sentence text, ((entity, surface, type), ...)), ...)}`, one
    tuple per sentence, for the texts of two or more sentences whose template splits at ".", "!"
    or "?" into as many sentences as the plan has groups and holds one tag per reference;
    other texts are left out. `sentence text` is the template's tokens with each tag replaced by
    its reference's words (and the templates' ``quotes'' as '"').

    Raises:
        ValueError: as `load_mentions`.
    """
    plans = {}
    for path in _split_files(split, enriched_dir):
        for lex in _parse(path).iter("lex"):
            text = lex.findtext("text")
            groups = [
                tuple(" ".join((striple.text or "").split()) for striple in sentence.iter("striple"))
                for sentence in lex.iter("sentence")
            ]
            groups = [group for group in groups if group]
            if not text or len(groups) < 2:
                continue
            references = sorted(lex.iter("reference"), key=lambda reference: _number(reference.get("number")))
            sentences = _template_sentences(lex.findtext("template") or "", references)
            if sentences is not None and len(sentences) == len(groups):
                plans[text_key(text)] = tuple(
                    (group, words, found) for group, (words, found) in zip(groups, sentences)
                )
    logger.info("Read the sentence plans of %d %s texts", len(plans), split)
    return plans


def _number(text):
    """A reference's `number`, its place in the text; one without a number goes last."""
    return int(text) if text and text.isdigit() else float("inf")


def _template_sentences(template, references):
    """A template's sentences as `(text, ((entity, surface, type), ...))`, tags replaced by their
    references' words; None when tags and references do not pair one to one."""
    tokens = template.split()
    tag_count = sum(1 for token in tokens if _TAG.fullmatch(token))
    if not tokens or tag_count != len(references) or any(
        _TAG.search(token) and not _TAG.fullmatch(token) for token in tokens
    ):
        return None
    sentences, words, found, reference_index = [], [], [], 0
    for token in tokens:
        if _TAG.fullmatch(token):
            reference = references[reference_index]
            reference_index += 1
            surface = " ".join((reference.text or "").split())
            if not surface:
                return None
            words.append(surface)
            found.append((reference.get("entity"), surface, reference.get("type")))
        else:
            words.append(_PTB_QUOTES.get(token, token))
        if token in _SENTENCE_ENDS:
            sentences.append((" ".join(words), tuple(found)))
            words, found = [], []
    if words:
        sentences.append((" ".join(words), tuple(found)))
    return sentences


def sentence_entries(entries, plans):
    """One entry per planned sentence of `entries`' texts (`load_sentence_plans`), for training
    on sentences as well as on whole texts (`MLEConfig.sentence_examples`).

    A sentence becomes an entry with the triples of its group, in its entry's order, and the
    sentence as its one text, only if every entity it names is an entity of those triples and
    each of those entities is named in it (by name, description or demonstrative; a pronoun
    alone would teach the model to leave an input entity out); its mentions are those names.
    Entry ids extend their entry's: "train/2triples/Airport/Id4/text2/sentence1".
    """
    result = []
    for entry in entries:
        spelt = [TRIPLE_SEPARATOR.join(dataclasses.astuple(triple)) for triple in entry.triples]
        for text_index, text in enumerate(entry.texts, start=1):
            for sentence_index, (group, sentence, found) in enumerate(plans.get(text_key(text), ()), start=1):
                if not set(group) <= set(spelt):
                    continue
                triples = tuple(triple for triple, spelling in zip(entry.triples, spelt) if spelling in group)
                entities = {part for triple in triples for part in (triple.subject, triple.object)}
                named = {entity for entity, _, kind in found if kind != "pronoun"}
                if named != entities:
                    continue
                mentions = tuple(dict.fromkeys(
                    (entity, surface) for entity, surface, kind in found
                    if kind in MENTION_TYPES and is_plausible_mention(entity, surface)
                ))
                result.append(dataclasses.replace(
                    entry, entry_id=f"{entry.entry_id}/text{text_index}/sentence{sentence_index}",
                    size=len(triples), triples=triples, texts=(sentence,), mentions=(mentions,),
                ))
    logger.info("%d sentence entries from %d entries", len(result), len(entries))
    return result
