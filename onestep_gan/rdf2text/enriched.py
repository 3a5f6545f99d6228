"""Gold entity mentions from the enriched WebNLG corpus, for delexicalising references.

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
"""

import dataclasses
import logging
import os
import pathlib
import xml.etree.ElementTree as ET

from onestep_gan.rdf2text import preprocessing

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
    folder = resolve_enriched_dir(enriched_dir) / split
    files = sorted(folder.glob("*/*.xml"))
    if not files:
        raise ValueError(
            f"{folder}: expected the enriched WebNLG {split} files as NtriplesN/*.xml, found none."
        )
    mentions = {}
    for path in files:
        try:
            root = ET.parse(path).getroot()
        except ET.ParseError as error:
            raise ValueError(f"{path}: line {error.position[0]}: not well-formed XML ({error}).") from None
        for lex in root.iter("lex"):
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
    logger.info("Read the mentions of %d %s texts from %s", len(mentions), split, folder)
    return mentions


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
