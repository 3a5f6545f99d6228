"""From WebNLG triples and texts to token sequences, and back.

Every function here is pure (no state, no I/O), so each is tested on exact strings.

- `normalise_entity`: DBpedia-style entity -> surface words ("Wheeler,_Texas" -> "Wheeler, Texas").
- `split_predicate`: camelCase / snake_case predicate -> words ("birthPlace" -> "birth place").
- `tokenize` / `detokenize`: NLTK Treebank tokeniser and detokeniser (no downloaded data needed).
- `linearise`: triples -> `<S> subject <P> predicate <O> object ...` with the entities as words.
- `delexicalise` / `relexicalise`: the same linearisation with entities replaced by placeholders
  `ENT_1`, `ENT_2`, ... in the source and in the reference text, and the way back. Delexicalisation
  is how entities of categories unseen in training reach the output: the model only learns to copy
  placeholders (the usual WebNLG 2017 baseline recipe, Gardent et al., 2017).

Entity matching in the text (for `delexicalise`), on token sequences compared case-, accent- and
dash-insensitively:
1. the normalised entity, longest entities first;
2. for entities not found, fallbacks, again longest first: the entity without a trailing
   parenthesis ("Airman (comicsCharacter)" -> "Airman"), the part before the first comma
   ("Abilene, Texas" -> "Abilene"), and ISO dates written out ("1983-10-03" -> "3 October 1983",
   "October 3, 1983", "October 1983", "1983").
Each placeholder replaces every occurrence of its matched form.
"""

import dataclasses
import re
import unicodedata

from nltk.tokenize import NLTKWordTokenizer
from nltk.tokenize.treebank import TreebankWordDetokenizer

SUBJECT_TOKEN, PREDICATE_TOKEN, OBJECT_TOKEN = "<S>", "<P>", "<O>"
SPECIAL_SOURCE_TOKENS = (SUBJECT_TOKEN, PREDICATE_TOKEN, OBJECT_TOKEN)
PLACEHOLDER_PREFIX = "ENT_"

_PLACEHOLDER_PATTERN = re.compile(rf"^{PLACEHOLDER_PREFIX}\d+$")
# `"1.5"^^xsd:double`, `"1.5"^^<http://...#double>`
_DATATYPE_PATTERN = re.compile(r'^"(.*)"\^\^\S+$', re.DOTALL)
# `"Madrid"@en`, `"Lisboa"@pt-PT`
_LANGUAGE_TAG_PATTERN = re.compile(r'^"(.*)"@[A-Za-z]+(?:-[A-Za-z0-9]+)*$', re.DOTALL)
# One word of a predicate: ordinals ("1st"), acronyms ("ISBN", "UTC" in "UTCOffset"),
# capitalised or lowercase words, any other run of letters.
_PREDICATE_WORD_PATTERN = re.compile(
    r"\d+(?:st|nd|rd|th)?|[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[^\W\d_]+"
)
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
_DASHES = str.maketrans({"\u2013": "-", "\u2014": "-", "\u2010": "-", "\u2011": "-"})

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
    """

    source_tokens: list
    target_tokens: list | None
    entity_map: dict


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
    """
    words = _PREDICATE_WORD_PATTERN.findall(predicate)
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
    """Whether `token` is an entity placeholder such as `ENT_3`."""
    return bool(_PLACEHOLDER_PATTERN.match(token))


def delexicalise(triples, text=None):
    """Linearises `triples` with placeholders and, if given, delexicalises `text`.

    Distinct subjects/objects (compared after `normalise_entity`) get placeholders `ENT_1`,
    `ENT_2`, ... in order of first appearance. See the module docstring for how entities are
    found in the text.

    Example:
    >>> example = delexicalise([Triple("Alan_Bean", "birthPlace", "Wheeler,_Texas")],
    ...                        "Alan Bean was born in Wheeler, Texas.")
    >>> example.source_tokens
    ['<S>', 'ENT_1', '<P>', 'birth', 'place', '<O>', 'ENT_2']
    >>> example.target_tokens
    ['ENT_1', 'was', 'born', 'in', 'ENT_2', '.']
    """
    entity_to_placeholder = {}
    source_tokens = []
    for triple in triples:
        subject = _placeholder_for(normalise_entity(triple.subject), entity_to_placeholder)
        object_ = _placeholder_for(normalise_entity(triple.object), entity_to_placeholder)
        source_tokens.extend((SUBJECT_TOKEN, subject, PREDICATE_TOKEN))
        source_tokens.extend(split_predicate(triple.predicate).split())
        source_tokens.extend((OBJECT_TOKEN, object_))
    entity_map = {placeholder: entity for entity, placeholder in entity_to_placeholder.items()}
    target_tokens = None if text is None else _delexicalise_text(tokenize(text), entity_map)
    return DelexicalisedExample(source_tokens, target_tokens, entity_map)


def relexicalise(tokens, entity_map):
    """Replaces each placeholder by its entity's tokens; placeholders not in `entity_map` are dropped."""
    output = []
    for token in tokens:
        if not is_placeholder(token):
            output.append(token)
        elif token in entity_map:
            output.extend(tokenize(entity_map[token]))
    return output


def _placeholder_for(entity, entity_to_placeholder):
    if entity not in entity_to_placeholder:
        entity_to_placeholder[entity] = f"{PLACEHOLDER_PREFIX}{len(entity_to_placeholder) + 1}"
    return entity_to_placeholder[entity]


def _match_key(token):
    """Comparison form of a token: lowercase, accents removed, dashes unified."""
    decomposed = unicodedata.normalize("NFKD", token.translate(_DASHES).lower())
    return "".join(char for char in decomposed if not unicodedata.combining(char))


def _fallback_forms(entity):
    """Other ways a text may write `entity` (see the module docstring), most specific first."""
    forms = []
    without_parenthesis = re.sub(r"\s*\([^()]*\)\s*$", "", entity)
    if without_parenthesis and without_parenthesis != entity:
        forms.append(without_parenthesis)
    if "," in without_parenthesis:
        forms.append(without_parenthesis.split(",")[0].strip())
    date = _ISO_DATE_PATTERN.match(entity)
    if date:
        year, month, day = date.group(1), int(date.group(2)), int(date.group(3))
        if 1 <= month <= 12:
            month_name = _MONTHS[month - 1]
            forms.extend(
                (f"{day} {month_name} {year}", f"{month_name} {day}, {year}",
                 f"{month_name} {day} {year}", f"{month_name} {year}", year)
            )
    return [form for form in forms if form]


def _delexicalise_text(tokens, entity_map):
    """Replaces entity mentions in `tokens` by placeholders (two passes, longest forms first)."""
    # Each item is (token, is_placeholder_already); placeholders are never matched again.
    items = [(token, False) for token in tokens]
    exact = [
        (placeholder, [_match_key(t) for t in tokenize(entity)])
        for placeholder, entity in entity_map.items()
    ]
    matched = set()
    for placeholder, form in sorted(exact, key=lambda pair: -len(pair[1])):
        items, found = _replace_form(items, form, placeholder)
        if found:
            matched.add(placeholder)
    fallbacks = [
        (placeholder, [_match_key(t) for t in tokenize(form)])
        for placeholder, entity in entity_map.items()
        if placeholder not in matched
        for form in _fallback_forms(entity)
    ]
    for placeholder, form in sorted(fallbacks, key=lambda pair: -len(pair[1])):
        if placeholder in matched:
            continue
        items, found = _replace_form(items, form, placeholder)
        if found:
            matched.add(placeholder)
    return [token for token, _ in items]


def _replace_form(items, form, placeholder):
    """Replaces every occurrence of the token sequence `form` in `items` by `placeholder`."""
    if not form:
        return items, False
    output, found, position = [], False, 0
    while position < len(items):
        window = items[position : position + len(form)]
        if len(window) == len(form) and all(
            not done and _match_key(token) == key for (token, done), key in zip(window, form)
        ):
            output.append((placeholder, True))
            position += len(form)
            found = True
        else:
            output.append(items[position])
            position += 1
    return output, found
