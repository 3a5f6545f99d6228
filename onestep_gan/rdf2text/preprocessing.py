"""From WebNLG triples and texts to token sequences, and back.

Every function here is pure (no state, no I/O), so each is tested on exact strings.

- `normalise_entity`: DBpedia-style entity -> surface words ("Wheeler,_Texas" -> "Wheeler, Texas").
- `split_predicate`: camelCase / snake_case predicate -> words ("birthPlace" -> "birth place").
- `tokenize` / `detokenize`: NLTK Treebank tokeniser and detokeniser (no downloaded data needed).
- `linearise`: triples -> `<S> subject <P> predicate <O> object ...` with the entities as words.
- `delexicalise` / `relexicalise` (+ `write_out`): the same linearisation with entities replaced by placeholders
  `ENT_1`, `ENT_2`, ... in the source and in the reference text, and the way back. Delexicalisation
  is how entities of categories unseen in training reach the output: the model only learns to copy
  placeholders (the usual WebNLG 2017 baseline recipe, Gardent et al., 2017).
- With `predicate_placeholders=True`, predicates get placeholders too (`PRED_1`, ...; see
  "Predicate placeholders" below).
- With `entity_roles=True`, each entity placeholder of the source is followed by its role in the
  triple graph, as the enriched WebNLG tags them: `<AGENT>` (a subject and never an object),
  `<BRIDGE>` (both) or `<PATIENT>` (an object only):
  `<S> ENT_1 <AGENT> <P> ... <O> ENT_2 <BRIDGE> <S> ENT_2 <BRIDGE> <P> ... <O> ENT_3 <PATIENT>`.
- With `entity_words=N`, the first placeholder of each entity in the source is followed by the
  entity's first N tokens: `<S> ENT_1 Alan Bean <P> birth place <O> ENT_2 Wheeler , Texas`. The
  placeholders still carry the entity into the text; the words tell the model what kind of value
  it is ("Texas", "pilot", "FC", "language"), which a bare index does not.

Entity matching in the text (for `delexicalise`) compares token sequences ignoring case, accents,
dashes, punctuation tokens and periods inside words ("Suárez Madrid–Barajas" = "Suarez Madrid-Barajas",
"St. Louis" = "St Louis"); a match covers whole tokens, and every occurrence is replaced:
1. the normalised entity, longest entities first;
2. for entities not found, fallbacks, again longest first: a few aliases ("United States" -> "U.S."),
   the entity without a trailing parenthesis ("Airman (comicsCharacter)" -> "Airman"), the part
   before the first comma ("Abilene, Texas" -> "Abilene"), "X language" -> "X", "98.0" -> "98", and
   ISO dates written out ("1983-10-03" -> "3 October 1983", "October 3, 1983", "October 1983", "1983").
On WebNLG 2017 this finds 90% of the (reference, entity) pairs in train, 92-93% in test.
3. when given (`delexicalise(..., mentions=...)`), known mentions of an entity in this text, with
   the fallbacks: the enriched WebNLG's gold alignments (`enriched.py`) take train to 97%.

Predicate placeholders (opt-in). On the unseen test categories about half of the predicate
words are not in the train vocabulary ("rotation period" -> "UNK period"), so the model cannot
name the relation. With `delexicalise(..., predicate_placeholders=True)` each distinct predicate
(compared by its `split_predicate` words) gets a placeholder `PRED_k` in order of first
appearance, written before the predicate's words in the source
(`<S> ENT_1 <P> PRED_1 birth place <O> ENT_2`), so a seen predicate still reads its words. In
the text, a verbatim occurrence of a predicate's words (whole tokens, ignoring case, outside
entity placeholders, longest phrases first) becomes `PRED_k`, provided the phrase has a word
that is not a stopword ("is part of" counts, "is" alone would not). `relexicalise` writes
`PRED_k` back as the `split_predicate` words. `is_placeholder` stays true for entity
placeholders only: slot alignment, reranking and hard negatives are about entities.
"""

import dataclasses
import datetime
import functools
import re
import unicodedata

from nltk.tokenize import NLTKWordTokenizer
from nltk.tokenize.treebank import TreebankWordDetokenizer

SUBJECT_TOKEN, PREDICATE_TOKEN, OBJECT_TOKEN = "<S>", "<P>", "<O>"
SPECIAL_SOURCE_TOKENS = (SUBJECT_TOKEN, PREDICATE_TOKEN, OBJECT_TOKEN)
# An entity's role in the triple graph (`delexicalise(..., entity_roles=True)`), the enriched
# WebNLG's tags: subject only, subject and object, object only.
AGENT_TOKEN, BRIDGE_TOKEN, PATIENT_TOKEN = "<AGENT>", "<BRIDGE>", "<PATIENT>"
PLACEHOLDER_PREFIX = "ENT_"
PREDICATE_PLACEHOLDER_PREFIX = "PRED_"

_PLACEHOLDER_PATTERN = re.compile(rf"^{PLACEHOLDER_PREFIX}\d+$")
_PREDICATE_PLACEHOLDER_PATTERN = re.compile(rf"^{PREDICATE_PLACEHOLDER_PREFIX}\d+$")
_SENTENCE_ENDS = frozenset({".", "!", "?"})
# Words that alone do not make a predicate's phrase in a text ("is", "of"): a phrase needs
# another word to become a predicate placeholder.
_STOPWORDS = frozenset(
    "a an the is was are were be been being has have had do does did of in on at to for by with "
    "from as and or not no it its this that these those which who whom whose than then there "
    "here he she they his her their into onto over under up down out off about".split()
)
# `"1.5"^^xsd:double`, `"1.5"^^<http://...#double>`
_DATATYPE_PATTERN = re.compile(r'^"(.*)"\^\^\S+$', re.DOTALL)
# `"Madrid"@en`, `"Lisboa"@pt-PT`
_LANGUAGE_TAG_PATTERN = re.compile(r'^"(.*)"@[A-Za-z]+(?:-[A-Za-z0-9]+)*$', re.DOTALL)
# One word of a predicate: ordinals ("1st"), acronyms ("ISBN", "UTC" in "UTCOffset"),
# capitalised or lowercase words, any other run of letters.
_PREDICATE_WORD_PATTERN = re.compile(
    r"\d+(?:st|nd|rd|th)?|[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[^\W\d_]+"
)
# A gloss after a predicate's label: "office (workedAt, workedAs)" (44 triples of the WebNLG 2017
# test set, none of train); "elevationAboveTheSeaLevel_(in_metres)" has none (no space).
_PREDICATE_GLOSS_PATTERN = re.compile(r"\s+\([^()]*\)\s*$")
_ISO_DATE_PATTERN = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)
# Tokens that keep their final period when `tokenize` splits it off other words.
_ABBREVIATIONS = frozenset(
    {"mr.", "mrs.", "ms.", "dr.", "st.", "jr.", "sr.", "inc.", "ltd.", "co.", "no.", "vs.",
     "mt.", "ft.", "prof.", "gen.", "lt.", "col.", "capt.", "sgt.", "corp.", "etc."}
)
# Word beginnings that `_fit_article` reads against their letters: "an hour", "a university".
_SILENT_H = ("hour", "honest", "honor", "honour", "heir")
_CONSONANT_SOUND_VOWELS = ("uni", "use", "usu", "uti", "ura", "ure", "eu", "one", "once", "ubi", "uga", "uk")
_DASH_PATTERN = re.compile("[-\u2010\u2011\u2012\u2013\u2014]")
_NUMBER_PATTERN = re.compile(r"^[\d.,]+$")
# "Name (qualifier)", '"13017.0"(minutes)': something, then one parenthesis ending the value.
_QUALIFIED_PATTERN = re.compile(r"^(\S.*?)\s*\(([^()]*)\)$")
_QUOTED_NUMBER_PATTERN = re.compile(r'^"?(-?[\d.,]*\d(?: (?:thousand|million|billion|trillion))?)"?$')
# Common other names of frequent WebNLG entities, tried when the entity itself is not found.
_ALIASES = {
    "United States": ("U.S.A.", "U.S.", "USA", "US", "America"),
    "United Kingdom": ("U.K.", "UK", "Britain"),
}

_word_tokenizer = NLTKWordTokenizer()
_detokenizer = TreebankWordDetokenizer()


@dataclasses.dataclass
class DelexicalisedExample:
    """One delexicalised (triples, text) pair.

    Attributes:
        source_tokens: the linearised triples with entities replaced by placeholders.
        target_tokens: the tokenised text with matched entities replaced by placeholders,
            or `None` when no text was given.
        entity_map: placeholder -> entity surface form (the normalised entity).
        predicate_map: predicate placeholder -> predicate words (`split_predicate`); empty
            unless delexicalised with `predicate_placeholders=True`.
    """

    source_tokens: list
    target_tokens: list | None
    entity_map: dict
    predicate_map: dict = dataclasses.field(default_factory=dict)


def normalise_entity(text):
    """DBpedia entity or literal -> surface form.

    Strips a datatype (`"1.5"^^xsd:double` -> `1.5`), a language tag (`"Madrid"@en` -> `Madrid`)
    and surrounding double quotes, turns underscores into spaces and collapses whitespace.
    """
    text = text.strip()
    for pattern in (_DATATYPE_PATTERN, _LANGUAGE_TAG_PATTERN):
        match = pattern.match(text)
        if match:
            text = match.group(1)
            break
    else:
        if len(text) >= 2 and text[0] == '"' and text[-1] == '"':
            text = text[1:-1]
    return " ".join(text.replace("_", " ").split())


def split_predicate(predicate):
    """camelCase / snake_case predicate -> space-separated words.

    Words are lowercased except acronyms (runs of 2+ capitals), which are kept whole:
    "birthPlace" -> "birth place", "ISBN_number" -> "ISBN number",
    "UTCOffset" -> "UTC offset", "1st_runway_LengthFeet" -> "1st runway length feet".

    A predicate that DBpedia merged from several ("associatedBand/associatedMusicalArtist", in
    126 triples of the WebNLG 2017 test set and none of train) names alternatives of one relation:
    its words are the first non-empty alternative's ("associated band"), not all of them run
    together ("associated band associated musical artist"), which no text says. A label followed
    by a gloss in parentheses after a space ("office (workedAt, workedAs)", 44 test triples, none
    in train) is the label's words ("office"), not "office worked at worked as".
    """
    label = _PREDICATE_GLOSS_PATTERN.sub("", predicate)
    if _PREDICATE_WORD_PATTERN.search(label):
        predicate = label
    alternatives = [part for part in predicate.split("/") if _PREDICATE_WORD_PATTERN.search(part)]
    words = _PREDICATE_WORD_PATTERN.findall(alternatives[0] if alternatives else predicate)
    return " ".join(word if len(word) > 1 and word.isupper() else word.lower() for word in words)


def tokenize(text):
    """Splits text into word tokens (NLTK Treebank rules), keeping case.

    Needs no downloaded NLTK data (no punkt). The Treebank rules only split a sentence-final
    period; this also splits the period off words ending a sentence inside the text
    ("born in 1950. He" -> "1950", ".") unless the word has an inner period ("U.S.") or is a
    common abbreviation ("St.").
    """
    tokens = []
    for token in _word_tokenizer.tokenize(text):
        if (
            len(token) > 1
            and token.endswith(".")
            and "." not in token[:-1]
            and token.lower() not in _ABBREVIATIONS
        ):
            tokens.extend((token[:-1], "."))
        else:
            tokens.append(token)
    return tokens


def detokenize(tokens):
    """Joins tokens back into text (NLTK `TreebankWordDetokenizer`)."""
    return _detokenizer.detokenize(list(tokens))


def linearise(triples):
    """Triples -> `<S> subject words <P> predicate words <O> object words ...` (no placeholders)."""
    tokens = []
    for triple in triples:
        tokens.append(SUBJECT_TOKEN)
        tokens.extend(tokenize(normalise_entity(triple.subject)))
        tokens.append(PREDICATE_TOKEN)
        tokens.extend(split_predicate(triple.predicate).split())
        tokens.append(OBJECT_TOKEN)
        tokens.extend(tokenize(normalise_entity(triple.object)))
    return tokens


def is_placeholder(token):
    """Whether `token` is an entity placeholder such as `ENT_3` (not a predicate placeholder)."""
    return bool(_PLACEHOLDER_PATTERN.match(token))


def is_predicate_placeholder(token):
    """Whether `token` is a predicate placeholder such as `PRED_2`."""
    return bool(_PREDICATE_PLACEHOLDER_PATTERN.match(token))


def delexicalise(triples, text=None, predicate_placeholders=False, mentions=(), entity_roles=False,
                 entity_words=0):
    """Linearises `triples` with placeholders and, if given, delexicalises `text`.

    Distinct subjects/objects (compared after `normalise_entity`) get placeholders `ENT_1`,
    `ENT_2`, ... in order of first appearance. See the module docstring for how entities are
    found in the text. With `predicate_placeholders`, distinct predicates (compared by their
    `split_predicate` words) get `PRED_1`, `PRED_2`, ... too (module docstring), and the
    example's `predicate_map` holds their words.

    `mentions` are known mentions of entities in this `text`, `(entity, surface)` pairs (the
    entity as in the triples, e.g. from a gold alignment such as the enriched WebNLG's,
    `enriched.py`): an entity not found by its own forms is also looked for by these surfaces,
    with the fallbacks ("Carrol County, Maryland" for `Carroll_County,_Maryland`). Mentions of
    entities not in the input are ignored.

    With `entity_roles`, each entity placeholder of the source is followed by its role token
    (`entity_role_tokens`). With `entity_words` > 0, an entity's first placeholder in the source
    is followed by up to that many of the entity's own tokens (`tokenize(normalise_entity(...))`):
    `<S> ENT_1 Alan Bean <P> ... <O> ENT_2 Wheeler , Texas` (module docstring).

    Example:
    >>> example = delexicalise([Triple("Alan_Bean", "birthPlace", "Wheeler,_Texas")],
    ...                        "Alan Bean was born in Wheeler, Texas.")
    >>> example.source_tokens
    ['<S>', 'ENT_1', '<P>', 'birth', 'place', '<O>', 'ENT_2']
    >>> example.target_tokens
    ['ENT_1', 'was', 'born', 'in', 'ENT_2', '.']
    """
    entity_to_placeholder, predicate_to_placeholder = {}, {}
    roles = entity_role_tokens(triples) if entity_roles else {}
    source_tokens = []

    def first_words(entity):  # the entity's words after its first placeholder only
        if entity_words <= 0 or entity in entity_to_placeholder:
            return ()
        return tuple(tokenize(entity)[:entity_words])

    for triple in triples:
        subject_entity, object_entity = normalise_entity(triple.subject), normalise_entity(triple.object)
        subject_words = first_words(subject_entity)
        subject = _placeholder_for(subject_entity, entity_to_placeholder)
        object_words = first_words(object_entity)
        object_ = _placeholder_for(object_entity, entity_to_placeholder)
        predicate = split_predicate(triple.predicate)
        source_tokens.extend((SUBJECT_TOKEN, subject, *subject_words))
        source_tokens.extend(roles.get(subject_entity, ()))
        source_tokens.append(PREDICATE_TOKEN)
        if predicate_placeholders:
            source_tokens.append(
                _placeholder_for(predicate, predicate_to_placeholder, PREDICATE_PLACEHOLDER_PREFIX)
            )
        source_tokens.extend(predicate.split())
        source_tokens.extend((OBJECT_TOKEN, object_, *object_words))
        source_tokens.extend(roles.get(object_entity, ()))
    entity_map = {placeholder: entity for entity, placeholder in entity_to_placeholder.items()}
    predicate_map = {placeholder: words for words, placeholder in predicate_to_placeholder.items()}
    target_tokens = None
    if text is not None:
        known_forms = {}  # placeholder -> the mentions' surfaces (a blank one matches nothing)
        for entity, surface in mentions:
            placeholder = entity_to_placeholder.get(normalise_entity(entity))
            if placeholder is not None:
                known_forms.setdefault(placeholder, []).append(surface)
        target_tokens = _delexicalise_text(tokenize(text), entity_map, known_forms)
        if predicate_map:
            target_tokens = delexicalise_predicates(target_tokens, predicate_map)
    return DelexicalisedExample(source_tokens, target_tokens, entity_map, predicate_map)


def entity_role_tokens(triples):
    """`{normalised entity: (role token,)}`: `<AGENT>` for an entity that is a subject and never an
    object of `triples`, `<BRIDGE>` for one that is both, `<PATIENT>` for an object only."""
    subjects = {normalise_entity(triple.subject) for triple in triples}
    objects = {normalise_entity(triple.object) for triple in triples}
    return {
        entity: ((BRIDGE_TOKEN if entity in objects else AGENT_TOKEN) if entity in subjects else PATIENT_TOKEN,)
        for entity in subjects | objects
    }


_COMMA_SPACING = re.compile(r"\s*,\s*")


def relexicalise(tokens, entity_map, predicate_map=None):
    """Replaces each entity placeholder by its entity's tokens (`write_out` forms, with "a"/"an"
    before it fitted to its first sound) and each predicate placeholder by its predicate's words
    (`predicate_map`); placeholders not in the maps are dropped, and so is a ")" that closes
    nothing. A word doubled at a placeholder's edge is written once, the value's form kept: "the
    ENT_1" with "The Star-Spangled Banner" -> "The Star-Spangled Banner", "ENT_2 season" with "2011
    PDL season" -> "2011 PDL season" (`relexicalise_predicates` does the same for predicates), but a
    preposition, verb or conjunction stays ("starred in ENT_2" with "In Bruges"; `_echoes_name`); a
    sentence that ends with a value's period ("plays for Chelsea F.C.") gets no second one; a value
    whose tokens would detokenise with other spacing is written as given (`_value_tokens`)."""
    output = []
    entity_end = None  # the last word of the entity just written
    tokens = relexicalise_predicates(measure_clauses(tokens, entity_map, predicate_map), predicate_map)
    for token in tokens:
        if not is_placeholder(token):
            # A sentence that ends with "Chelsea F.C." ends with the value's own period: train
            # references end a text with "F.C.", "D.C.", "Jr." 271 times and with a second period 10
            # times; inside a text "D.C." starts the next word 28 times and "D.C.." once.
            value_period = token == "." == entity_end
            if not _echoes_name(token, entity_end) and not value_period:
                output.append(token)
            entity_end = None
        elif token in entity_map:
            words = _value_tokens(write_out(entity_map[token], output[-1] if output else None))
            if words and output and entity_end is None and _echoes_name(output[-1], words[0]):
                output.pop()  # the model's word, never another entity's
            _fit_article_before(output, words)
            if _is_written_date(words):
                _drop_day_words(output)
                _fit_preposition_before(output)
            output.extend(words)
            entity_end = words[-1] if words else None
    return _without_unopened_parentheses(output)


_HAVE = {"is": "has", "are": "have", "was": "had", "were": "had"}


def measure_clauses(tokens, entity_map, predicate_map=None):
    """Writes a measure stated with a copula as WebNLG references write it: for a predicate that
    names a measure as a noun (`_names_measure`) and a value that is a number (`value_shape`),

    - "ENT_1 PRED_2 is ENT_3" and "ENT_1 's PRED_2 is ENT_3" -> "ENT_1 has a PRED_2 of ENT_3";
    - "and it 's PRED_2 is ENT_3", "and its ..." -> "and has a PRED_2 of ENT_3" ("It 's", "Its" -> "It has");
    - "and the PRED_2 is ENT_3" right after such a "has a PRED of ENT" clause -> "and a PRED_2 of ENT_3";

    after "and" only in a sentence whose subject is an entity (`_and_after_entity`: "The builder of ENT_1
    is ENT_2 and its PRED_3 is ENT_4" keeps its words);

    "was" -> "had", "are" -> "have". WebNLG 2017 train references naming a number-valued measure
    verbatim write "ENT has a P of N" 98 times and "ENT's P is N" 14, "and has a P of N" 117 and
    "and its P is N" 17, "and a P of N" 44 and "and the P is N" 17 ("(410777) 2009 FD has an
    apoapsis of 259776702.47055 kilometres and a periapsis of ..."). Years, dates and codes ("OCLC
    number", "area code", "number of members") and plurals keep the model's words; the article is
    fitted to the predicate's first sound later (`relexicalise_predicates`)."""
    predicate_map = predicate_map or {}
    output, index = [], 0
    while index < len(tokens):
        token = tokens[index]
        lead, subject, rest = (), None, index
        if is_placeholder(token):
            subject, rest = token, index + 1 + (tokens[index + 1: index + 2] == ["'s"])
        elif (token in ("It", "it") and tokens[index + 1: index + 2] == ["'s"]
              and (token == "It" or _and_after_entity(output))):
            subject, rest = (token if token == "It" else None), index + 2
        elif token in ("Its", "its") and (token == "Its" or _and_after_entity(output)):
            subject, rest = ("It" if token == "Its" else None), index + 1
        elif (token == "the" and _and_after_entity(output)
              and _ends_measure_clause(output, entity_map, predicate_map)):
            lead, rest = ("a",), index + 1
        clause = tokens[rest: rest + 3]
        if (
            rest > index and len(clause) == 3 and clause[1].lower() in _HAVE
            and is_placeholder(clause[2]) and value_shape(entity_map.get(clause[2], "")) == "number"
            and _names_measure(predicate_map.get(clause[0]))
        ):
            if lead:
                output.extend((*lead, clause[0], "of", clause[2]))
            else:
                have = _HAVE[clause[1].lower()]
                if subject is not None:
                    output.append(subject)
                    have = have.capitalize() if clause[1][:1].isupper() else have
                output.extend((have, "a", clause[0], "of", clause[2]))
            index = rest + 3
        else:
            output.append(token)
            index += 1
    return output


def _and_after_entity(output):
    """Whether `output` ends with "and" in a sentence whose subject is an entity: "ENT_1 is located in
    ENT_2 and", "The ENT_1 , ... and"; not "The builder of ENT_1 is ENT_2 and" nor "ENT_1 's PRED_2 is
    ENT_3 and", where "has" after the "and" would give the builder or the relation a measure."""
    if not output or output[-1].lower() != "and":
        return False
    start = max((index + 1 for index, token in enumerate(output) if token in _SENTENCE_ENDS), default=0)
    sentence = output[start:]
    if sentence and sentence[0].lower() == "the":
        sentence = sentence[1:]
    return (
        len(sentence) > 1 and is_placeholder(sentence[0]) and sentence[1] != "'s"
        and not is_predicate_placeholder(sentence[1])
    )


def _ends_measure_clause(output, entity_map, predicate_map):
    """Whether `output` ends "... has a PRED of ENT and" with a measure and a number."""
    clause = output[-6:-1]
    return (
        len(clause) == 5 and clause[0].lower() in ("has", "have", "had") and clause[1].lower() in ("a", "an")
        and clause[3] == "of" and _names_measure(predicate_map.get(clause[2]))
        and value_shape(entity_map.get(clause[4], "")) == "number"
    )


def _names_measure(words):
    """Whether a predicate's `words` name one measure as a noun ("apoapsis", "runway length"), not a
    code or a count ("OCLC number", "area code", "number of members") nor a plural ("rocket stages":
    no "a" before it)."""
    if not words:
        return False
    lowered = words.lower().split()
    # The head noun: the words before a preposition ("elevation above the sea level in metres").
    head = next((lowered[:index] for index in range(1, len(lowered)) if lowered[index] in PREPOSITIONS), lowered)
    plural = head[-1].endswith("s") and not head[-1].endswith(("ss", "us", "is"))  # "a rocket stages"
    return (
        predicate_shape(lowered) == "noun" and lowered[0] != "number" and not plural
        and lowered[-1] not in ("number", "code", "id", "year", "date")
    )


def _value_tokens(text):
    """The tokens an output writes a value with: `tokenize(text)`, or `[text]` whole where those
    tokens would detokenise with other spacing ("Madrid–Barajas" -> "Madrid – Barajas", "T&TEC" ->
    "T & TEC", "18R/36L 'Polderbaan'" -> "18R/36L' Polderbaan'"). Around a comma the tokens' spacing
    is kept ("Joden , Godenzonen" -> "Joden, Godenzonen")."""
    tokens = tokenize(text)
    if detokenize(tokens) == _COMMA_SPACING.sub(", ", text).strip():
        return tokens
    return [text]


def _without_unopened_parentheses(tokens):
    """`tokens` without the ")" that close nothing (models trained before the matcher took an
    entity's ")" along learned "ENT_1 )")."""
    output, depth = [], 0
    for token in tokens:
        if token == ")":
            if not depth:
                continue
            depth -= 1
        elif token == "(":
            depth += 1
        output.append(token)
    return output


def _is_written_date(words):
    """Whether `words` are a full date as `write_out` writes one: "15 March 1932"."""
    return (
        len(words) == 3 and words[0].isdigit() and words[1] in _MONTHS and len(words[2]) == 4
        and words[2].isdigit()
    )


_ORDINAL = re.compile(r"\d{1,2}(st|nd|rd|th)")


def _drop_day_words(output):
    """Drops the model's day words ending `output` right before a full date: "the 15th of", "15th",
    a month name ("born on the 15th of 20 January 1930" -> "born on 20 January 1930"). Train references
    write "on the 15th of March 1932", whose date placeholder matched "March 1932" only, so the model
    learned to put a day of its own before a date; the date written out carries its day."""
    if output and output[-1] in _MONTHS:
        output.pop()
        return
    if len(output) >= 2 and output[-1] == "of" and _ORDINAL.fullmatch(output[-2]):
        del output[-2:]
    elif output and _ORDINAL.fullmatch(output[-1]):
        output.pop()
    else:
        return
    if output and output[-1] in ("the", "The"):
        output.pop()


def _fit_preposition_before(output):
    """"on" for the model's "in" right before a full date ("was born in 15 March 1932" -> "born on"):
    the model sees a placeholder, not whether it holds a year ("in 1932") or a date. Train references
    write "on D Month YYYY" 283 times, "in D Month YYYY" once."""
    if output and output[-1] in ("in", "In"):
        output[-1] = "on" if output[-1] == "in" else "On"


def _fit_article_before(output, words):
    """Fits an "a"/"an" ending `output` to the first of the `words` about to follow it."""
    if words and output and output[-1].lower() in ("a", "an"):
        output[-1] = _fit_article(output[-1], words[0])


def _fit_article(article, word):
    """`article` ("a", "an", any case) as the first sound of `word` asks: the model writes the
    article before a placeholder without seeing the value ("served as a Architect")."""
    lower = word.lower()
    if not lower[:1].isalpha():
        return article  # numbers, symbols: as the model wrote it
    if word.isupper() and 1 < len(word) <= 3:  # read letter by letter: "an MBA", "a US", "an F1"
        vowel_sound = lower[0] in "aefhilmnorsx"
    elif lower.startswith(_SILENT_H):
        vowel_sound = True
    elif lower.startswith(_CONSONANT_SOUND_VOWELS):
        vowel_sound = False
    else:
        vowel_sound = lower[0] in "aeiou"
    fitted = "an" if vowel_sound else "a"
    return fitted.capitalize() if article[:1].isupper() else fitted


_VERB_FIRST = frozenset("is are was were has have had".split())
PREPOSITIONS = frozenset("by in of to as for on at with from into".split())
_COPULAS = frozenset("is are was were".split())


def predicate_shape(words):
    """How a predicate's lowercased `words` read: "verb" (a verb phrase: "is part of", "has to its
    north", "served as ... in"), "participle" (and its preposition: "dedicated to", "located in"),
    "dated" (a participle alone: "established") or "noun" ("birth place", "leader", "escape
    velocity"). `templates.relation_shape` writes a template sentence by it."""
    if not words or words[0] in _VERB_FIRST:
        return "verb"
    if len(words) > 1 and words[-1] in PREPOSITIONS:
        return "participle" if len(words) == 2 and _is_participle(words[0]) else "verb"
    if len(words) == 1 and words[0].endswith("ed"):
        return "dated"
    return "noun"


def _is_participle(word):
    """"dedicated", "spoken", "served"; not "speed", "need"."""
    return (word.endswith("ed") and not word.endswith("eed")) or word.endswith(("en", "wn"))


def relexicalise_predicates(tokens, predicate_map=None):
    """Replaces each predicate placeholder by its words (`predicate_map`; dropped when not in
    it) and keeps everything else, entity placeholders included: the view of a candidate that
    the slot aligner and the reranker read, which know entity placeholders only. A predicate
    that starts the text or a sentence is capitalised ("Capital of ENT_1 is ENT_2."), and "a"
    or "an" before it fits its first sound ("an elevation above the sea level"). A word doubled at
    the predicate's edge is written once: "was PRED_1" with "was selected by NASA" -> "was selected
    by NASA", "PRED_2 of" with "is part of" -> "is part of" (verb-phrase predicates of categories
    the model has not seen, next to the model's own "was" or "of"). A noun predicate between an
    entity placeholder and a copula takes "'s": "ENT_1 PRED_2 is" with "escape velocity" ->
    "ENT_1 's escape velocity is" (`_wants_possessive`)."""
    predicate_map = predicate_map or {}
    output = []
    predicate_end = None  # the last word of the predicate just written
    for index, token in enumerate(tokens):
        if not is_predicate_placeholder(token):
            if not _same_word(token, predicate_end):
                output.append(token)
            predicate_end = None
        elif token in predicate_map:
            words = predicate_map[token].split()
            if words and output and _same_word(words[0], output[-1]):
                words = words[1:]
            if _wants_possessive(output, words, tokens[index + 1: index + 2]):
                output.append("'s")
            if words and (not output or output[-1] in _SENTENCE_ENDS):
                words[0] = words[0][:1].upper() + words[0][1:]
            _fit_article_before(output, words)
            output.extend(words)
            predicate_end = words[-1] if words else None
    return output


def _wants_possessive(output, words, following):
    """Whether a noun predicate's `words` about to follow `output` need "'s": right after an
    entity placeholder and right before a copula, "ENT_1 PRED_2 is ENT_3" reads "1000 Piazzia
    escape velocity is ..." (references: "1000 Piazzia's escape velocity is", "The escape velocity
    of 1000 Piazzia is")."""
    return (
        bool(words) and bool(output) and is_placeholder(output[-1])
        and bool(following) and following[0].lower() in _COPULAS
        and words[0].lower() not in PREPOSITIONS  # "in office while prime minister"
        and predicate_shape([word.lower() for word in words]) == "noun"
    )


# Words that are a name's own when it starts or ends with them ("In Bruges", "Love Is", "Of Mice and
# Men") and the model's own beside it: "starred in In Bruges", "Love Is is a song".
_FUNCTION_WORDS = frozenset("""
    about above across after against along among around as at before behind below beneath beside between beyond
    by down during for from in inside into near of off on onto out outside over since than through to toward towards
    under until up upon with within without
    am are be been being can could did do does had has have is may might must shall should was were will would
    and but because if nor or so that when where whether which while who whom whose yet
    he her his it its she their them they this those these we you
""".split())


def _echoes_name(word, name_word):
    """Whether the model's `word` beside an entity only repeats the name's edge word `name_word`,
    and is written once: an article ("the ENT_1" with "The Star-Spangled Banner") or a word of the
    name's kind ("ENT_2 season" with "2011 PDL season"); not a preposition, verb or conjunction,
    which the sentence needs beside the name ("starred in" In Bruges)."""
    return _same_word(word, name_word) and word.lower() not in _FUNCTION_WORDS


def _same_word(word, other):
    """Whether two tokens are the same word (letters only, ignoring case)."""
    return other is not None and word.isalpha() and word.lower() == other.lower()


def write_out(surface, previous_word=None):
    """The form an output gives a value: the form WebNLG 2017 train references use most often
    for values of its kind (counts over (reference, entity) pairs); anything else unchanged.

    - An ISO date, written out: "1950-03-12" -> "12 March 1950" ("D Month YYYY" 410 times,
      "Month D, YYYY" 326, ISO 126); one the calendar lacks ("1950-02-30") stays as given.
    - A measure with its unit in parentheses, as the number and the unit's words:
      '"13017.0"(minutes)' -> "13017.0 minutes", "0.0252 (kilometrePerSeconds)" -> "0.0252
      kilometres per second" (198 references write number and unit, 50 the number alone, none the
      parentheses and quotes; `_unit_words`); an amount in millions too: "110 million (dollars)" ->
      "110 million dollars".
    - A name's qualifier in parentheses, dropped: "Ardmore Airport (New Zealand)" -> "Ardmore
      Airport" (without it 1183 times, with it 555).
    - "X language" -> "X": "English language" -> "English" (982 times against 274), except after
      "the" (`previous_word`, the word the output puts before the value), where references
      keep "the English language" (about 250 of the 274).
    """
    date = _ISO_DATE_PATTERN.match(surface)
    if date and _is_calendar_date(*map(int, date.groups())):
        return f"{int(date.group(3))} {_MONTHS[int(date.group(2)) - 1]} {date.group(1)}"
    qualified = _QUALIFIED_PATTERN.match(surface)
    if qualified:
        head, inner = qualified.group(1), qualified.group(2)
        number = _QUOTED_NUMBER_PATTERN.match(head)
        if number:
            return f"{number.group(1)} {_unit_words(inner)}".strip()
        return head
    if (
        surface.endswith(" language") and len(surface) > len(" language")
        and (previous_word or "").lower() != "the"
    ):
        return surface[: -len(" language")]
    return surface


def _is_calendar_date(year, month, day):
    try:
        datetime.date(year, month, day)
    except ValueError:  # month 13, day 0, 30 February, 29 February 1900, year 0
        return False
    return True


_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_YEAR = re.compile(r"[12]\d{3}")
_NUMBER = re.compile(r"[-+]?\d[\d,]*(\.\d+)?(\s*\(.*\)|\s+\S+)?")


def value_shape(value):
    """The shape of a triple's object as WebNLG writes it: "date" (`"1986-10-12"`), "year" (`1872`),
    "number" (`94.8024 (kilograms)`, `"310"^^xsd:positiveInteger`, `4000.0`) or "other" (names,
    words, codes)."""
    text = str(value).split("^^")[0].strip().strip('"').replace("_", " ").strip()
    if _ISO_DATE.fullmatch(text):
        return "date"
    if _YEAR.fullmatch(text):
        return "year"
    if _NUMBER.fullmatch(text):
        return "number"
    return "other"


def _unit_words(unit):
    """A unit's words as references write them: camelCase split as `split_predicate` does, the
    head before "per" plural and the unit after it singular, as English writes a rate
    ("kilometrePerSeconds" -> "kilometres per second", not "kilometre per seconds";
    "gramPerCubicCentimetres" -> "grams per cubic centimetre"; but "litres per 100 kilometres"),
    "degreeCelsius" -> "degrees Celsius".
    Units already written as words ("inhabitants per square kilometre") are unchanged. (The camelCase
    units belong to categories train lacks, so no train reference shows their form.)"""
    # A word with other characters than letters and digits ("%", "m/s") is kept as written.
    words = " ".join(
        split_predicate(word) if word.isalnum() and not word.isupper() and not word.istitle() else word
        for word in unit.split()
    ).split()
    if "per" in words[1:-1]:
        at = words.index("per", 1)
        if not words[at - 1].endswith("s"):
            words[at - 1] += "s"
        counted = any(word.replace(".", "").isdigit() for word in words[at + 1:])  # "per 100 kilometres"
        if words[-1].endswith("s") and not words[-1].endswith("ss") and not counted:
            words[-1] = words[-1][:-1]
    elif len(words) == 2 and words[0] == "degree":
        words = ["degrees", words[1].capitalize()]
    return " ".join(words)


def _placeholder_for(value, value_to_placeholder, prefix=PLACEHOLDER_PREFIX):
    if value not in value_to_placeholder:
        value_to_placeholder[value] = f"{prefix}{len(value_to_placeholder) + 1}"
    return value_to_placeholder[value]


@functools.lru_cache(maxsize=262144)
def _match_keys(token):
    """Comparison keys of a token: lowercase, accents and (outside numbers) periods removed,
    split at dashes; none for punctuation, so "Madrid–Barajas", "Madrid - Barajas" and
    "Madrid Barajas" compare equal, as do "St." and "St", "Sc.D." and "Sc.D"."""
    decomposed = unicodedata.normalize("NFKD", token.lower())
    key = "".join(char for char in decomposed if not unicodedata.combining(char))
    key = key.rstrip(".") if _NUMBER_PATTERN.match(key) else key.replace(".", "")
    return tuple(
        part for part in _DASH_PATTERN.split(key)
        if part and not all(unicodedata.category(char)[0] in "PS" for char in part)
    )


@functools.lru_cache(maxsize=65536)
def _form_keys(form):
    # Cached: an entity is looked up once per reference text, and tokenising is the slow part.
    return tuple(key for token in tokenize(form) for key in _match_keys(token))


def _fallback_forms(entity):
    """Other ways a text may write `entity` (see the module docstring), most specific first."""
    forms = list(_ALIASES.get(entity, ()))
    without_parenthesis = re.sub(r"\s*\([^()]*\)\s*$", "", entity)
    if without_parenthesis and without_parenthesis != entity:
        forms.append(without_parenthesis)
    if "," in without_parenthesis:
        forms.append(without_parenthesis.split(",")[0].strip())
    if without_parenthesis.endswith(" language"):
        forms.append(without_parenthesis[: -len(" language")])
    number = re.match(r'^"?(\d+)\.0"?$', without_parenthesis)
    if number:
        forms.append(number.group(1))
    date = _ISO_DATE_PATTERN.match(entity)
    if date:
        year, month, day = date.group(1), int(date.group(2)), int(date.group(3))
        if 1 <= month <= 12:
            month_name = _MONTHS[month - 1]
            forms.extend(
                (f"{day} {month_name} {year}", f"{month_name} {day}, {year}",
                 f"{month_name} {year}", year)
            )
    return [form for form in forms if form.strip()]


def _delexicalise_text(tokens, entity_map, known_forms=None):
    """Replaces entity mentions in `tokens` by placeholders (two passes, longest forms first);
    `known_forms` (placeholder -> surfaces known to be in this text) join the second pass."""
    # Sub-token keys of the text, each with the index of its token.
    keys, key_token = [], []
    for index, token in enumerate(tokens):
        for key in _match_keys(token):
            keys.append(key)
            key_token.append(index)
    replacement = [None] * len(tokens)  # placeholder at a match's first token
    covered = [False] * len(tokens)  # inside a match (then dropped unless it is the first)
    exact = [(placeholder, list(_form_keys(entity))) for placeholder, entity in entity_map.items()]
    matched = set()
    for placeholder, form in sorted(exact, key=lambda pair: -len(pair[1])):
        if _replace_form(tokens, keys, key_token, form, placeholder, replacement, covered):
            matched.add(placeholder)
    fallbacks = [
        (placeholder, list(_form_keys(form)))
        for placeholder, entity in entity_map.items()
        if placeholder not in matched
        for form in (*(known_forms or {}).get(placeholder, ()), *_fallback_forms(entity))
    ]
    for placeholder, form in sorted(fallbacks, key=lambda pair: -len(pair[1])):
        if placeholder not in matched and _replace_form(
            tokens, keys, key_token, form, placeholder, replacement, covered
        ):
            matched.add(placeholder)
    return [
        replacement[index] if replacement[index] else token
        for index, token in enumerate(tokens)
        if replacement[index] or not covered[index]
    ]


def _replace_form(tokens, keys, key_token, form, placeholder, replacement, covered):
    """Marks every occurrence of the key sequence `form` that spans whole, not yet covered
    tokens; returns whether there was one. A match that opens a parenthesis it does not close
    (punctuation has no keys: "Airport ( New Zealand" matches "Airport (New Zealand)") takes the
    closing one along."""
    found = False
    if not form:
        return found
    first_key, length = form[0], len(form)
    for start in range(len(keys) - length + 1):
        if keys[start] != first_key:
            continue
        end = start + length - 1
        first, last = key_token[start], key_token[end]
        if (
            keys[start : end + 1] == form
            and (start == 0 or key_token[start - 1] != first)
            and (end == len(keys) - 1 or key_token[end + 1] != last)
            and not any(covered[first : last + 1])
        ):
            span = tokens[first : last + 1]
            unclosed = span.count("(") - span.count(")")
            while (unclosed > 0 and last + 1 < len(tokens) and tokens[last + 1] == ")"
                   and not covered[last + 1]):
                last, unclosed = last + 1, unclosed - 1
            for index in range(first, last + 1):
                covered[index] = True
            replacement[first] = placeholder
            found = True
    return found


def delexicalise_predicates(tokens, predicate_map):
    """Replaces verbatim mentions of the predicates' words in `tokens` (whole tokens, ignoring
    case, not over placeholders) by predicate placeholders, longest phrases first; phrases of
    stopwords only are left alone."""
    phrases = [
        (placeholder, [word.lower() for word in words.split()])
        for placeholder, words in predicate_map.items()
    ]
    phrases = [
        (placeholder, words) for placeholder, words in phrases
        if any(word not in _STOPWORDS for word in words)
    ]
    lowered = [token.lower() for token in tokens]
    replacement = [None] * len(tokens)  # placeholder at a match's first token
    covered = [False] * len(tokens)  # inside a match (then dropped unless it is the first)
    # Placeholders are never part of a match.
    taken = [is_placeholder(token) or is_predicate_placeholder(token) for token in tokens]
    for placeholder, words in sorted(phrases, key=lambda pair: -len(pair[1])):
        length = len(words)
        for start in range(len(tokens) - length + 1):
            if lowered[start : start + length] == words and not any(taken[start : start + length]):
                taken[start : start + length] = [True] * length
                covered[start : start + length] = [True] * length
                replacement[start] = placeholder
    return [
        replacement[index] if replacement[index] else token
        for index, token in enumerate(tokens)
        if replacement[index] or not covered[index]
    ]
