"""Where a text mentions an entity, beyond `preprocessing.delexicalise`'s forms, and which
known entities it names.

The slot aligner (`faithfulness.py`) judges outputs and references written by people, who write
"American" for United_States, "30th March" for 2001-03-30, "Shepard" for Alan_Shepard and
"Guadalaraja" for Guadalajara. `delexicalise` finds an entity's exact form and a few
fallbacks; this module supplies the looser forms tried after those:

- `normalise_ordinal_days`: "30th March" -> "30 March", "March 30th" -> "March 30".
- `loose_forms(entity)`: the name without its parenthesis, numbers with or without decimals /
  thousands separators, country demonyms, "Hardcover" = "hardback", the head before " of " /
  " in ", plurals and singulars; `name_forms(entity)`: a surname alone, matched only where the
  text writes it capitalised.
- `replace_loose_forms(tokens, entity_map)`: those forms of the entities not yet found become
  their placeholders; last, one-typo spellings and 3/4 of the words of a long literal in order.
- The gazetteer (`usable_gazetteer`, `gazetteer_index`, `gazetteer_mentions`): known entities of
  the training corpus written in a text that are not part of an input entity.

Everything is pure Python over token lists, tested on exact strings in `tests/test_mentions.py`
and through the aligner in `tests/test_faithfulness.py`.
"""

import collections
import re

from onestep_gan.rdf2text import preprocessing

# Words that carry no content: not counted as cues of a predicate (`faithfulness`), nor among the
# content words of a long name (`replace_loose_forms`).
STOPWORDS = frozenset(
    "a an the of in on at to for by with from and or is are was were be been has have had "
    "its it this that which who as also".split()
)
NUMBER = re.compile(r"^-?\d+(?:[.,]\d+)*$")
_DATE_LIKE = re.compile(r"^\d{4}(?:-\d{2}){0,2}$")


# Adjectives / nouns of frequent WebNLG countries, tried as looser forms of the country.
_DEMONYMS = {
    "United States": ("American", "Americans", "United States of America"),
    "United Kingdom": ("British", "Great Britain"),
    "India": ("Indian",), "Italy": ("Italian",), "Spain": ("Spanish",), "France": ("French",),
    "Mexico": ("Mexican",), "Japan": ("Japanese",), "Germany": ("German",),
    "Indonesia": ("Indonesian",), "Malaysia": ("Malaysian",), "Philippines": ("Filipino", "Philippine"),
    "Brazil": ("Brazilian",), "Denmark": ("Danish",), "Netherlands": ("Dutch",),
    "Turkey": ("Turkish",), "Azerbaijan": ("Azerbaijani",), "Belgium": ("Belgian",),
    "Pakistan": ("Pakistani",), "Singapore": ("Singaporean",), "Iran": ("Iranian",),
    "Greece": ("Greek",), "Poland": ("Polish",), "Romania": ("Romanian",), "Sweden": ("Swedish",),
    "Norway": ("Norwegian",), "Russia": ("Russian",), "China": ("Chinese",), "Canada": ("Canadian",),
    "Australia": ("Australian",), "Ireland": ("Irish",), "Argentina": ("Argentine", "Argentinian"),
    "Colombia": ("Colombian",), "Thailand": ("Thai",), "Portugal": ("Portuguese",),
    "Switzerland": ("Swiss",), "Austria": ("Austrian",), "Hungary": ("Hungarian",),
    "Finland": ("Finnish",), "Venezuela": ("Venezuelan",), "Chile": ("Chilean",), "Cuba": ("Cuban",),
    "Egypt": ("Egyptian",), "Ethiopia": ("Ethiopian",), "Nigeria": ("Nigerian",),
    "England": ("English",), "Scotland": ("Scottish",), "Wales": ("Welsh",), "Sri Lanka": ("Sri Lankan",),
    "Hardcover": ("hardback", "hard cover"), "Paperback": ("soft cover",),
}
# A month's name or its abbreviation ("March", "Mar", "Mar.", "Sept"); not "Mayor", "Marine", "Junior".
_MONTH_PATTERN = "(?:" + "|".join(
    f"{month}|{month[:3]}\\.?" for month in preprocessing._MONTHS) + "|Sept\\.?)"
# A day written as an ordinal next to a month ("30th March", "30th of March" -> "30 March",
# "March 30th" -> "March 30"), not other ordinals ("23rd Street").
_ORDINAL_DAY = re.compile(
    rf"\b(\d{{1,2}})(?:st|nd|rd|th)\b(?:\s+of)?(?=\s+{_MONTH_PATTERN}\b)"
    rf"|\b({_MONTH_PATTERN}\s+\d{{1,2}})(?:st|nd|rd|th)\b"
)


def normalise_ordinal_days(text):
    """Ordinal days next to a month as cardinals: "30th of March" -> "30 March", "March 30th" ->
    "March 30"; other ordinals ("23rd Street") stay."""
    return _ORDINAL_DAY.sub(lambda match: match.group(1) or match.group(2), text)


def loose_forms(entity):
    """Extra forms for "is the entity mentioned", tried after `delexicalise`'s own."""
    forms = []
    base = _without_parenthesis(entity)
    if base and base != entity:
        forms.append(base)
    number = base.replace(",", "")
    if NUMBER.match(number):
        try:
            value = float(number)
        except ValueError:
            value = None
        if value is not None:
            if value == int(value):
                forms.extend((str(int(value)), f"{int(value):,}"))
            else:
                forms.extend((f"{value:,}", f"{value:.1f}", f"{value:,.2f}"))
    demonyms = _DEMONYMS.get(base)
    if demonyms:
        forms.extend(demonyms)
    words = base.split()
    if words and words[0].isdigit() and len(words) > 2:  # "2015 Campeonato Brasileiro Série C"
        forms.append(" ".join(words[1:]))
    for joint in (" of ", " in "):  # "Felipe VI of Spain" -> "Felipe VI"; any case: "the prime minister"
        head = base.split(joint)[0]
        if head != base and len(head) >= 4 and head[:1].isupper():
            forms.append(head)
    if words and words[-1].isalpha() and words[-1].islower() or len(words) == 1 and base.isalpha():
        last = words[-1]
        plural = last + ("es" if last.endswith(("o", "s", "sh", "ch", "x")) else "s")
        if last.endswith("y") and last[-2:-1] not in "aeiou":
            plural = last[:-1] + "ies"
        forms.append(" ".join(words[:-1] + [plural]))
    if words and words[-1].endswith("s") and len(words[-1]) > 4 and words[-1][0].isupper():
        forms.append(" ".join(words[:-1] + [words[-1][:-1]]))  # "Asian Americans" -> "... American"
    return [form for form in dict.fromkeys(forms) if form and form != entity]


def name_forms(entity):
    """A person-like name's last word ("Alan Shepard" -> "Shepard"; 2-3 capitalised words), which
    counts only where the text writes it capitalised (`replace_loose_forms`): uncased, "New York
    City" would be mentioned by "the city", "Premier League" by "a league" and "Democratic Party" by
    "a party"."""
    words = _without_parenthesis(entity).split()
    if 2 <= len(words) <= 3 and all(word[:1].isupper() and word.isalpha() for word in words):
        return [words[-1]]
    return []


def _without_parenthesis(entity):
    """"Airman (comicsCharacter)" -> "Airman", without surrounding quotes."""
    return re.sub(r"\s*\([^()]*\)\s*$", "", entity).strip().strip('"').strip()


def replace_loose_forms(tokens, entity_map):
    """Replaces looser forms of the entities not yet found in `tokens` by their placeholders."""
    found = {token for token in tokens if preprocessing.is_placeholder(token)}
    missing = {placeholder: entity for placeholder, entity in entity_map.items()
               if placeholder not in found}
    if not missing:
        return tokens
    forms = sorted(
        [(placeholder, list(preprocessing._form_keys(form)), False)
         for placeholder, entity in missing.items() for form in loose_forms(entity)]
        + [(placeholder, list(preprocessing._form_keys(form)), True)
           for placeholder, entity in missing.items() for form in name_forms(entity)],
        key=lambda triple: -len(triple[1]),
    )
    if not forms:
        return tokens
    keys, key_token, cased_keys = [], [], []
    for index, token in enumerate(tokens):
        if preprocessing.is_placeholder(token):
            continue
        for key in preprocessing._match_keys(token):
            keys.append(key)
            key_token.append(index)
            cased_keys.append(key if token[:1].isupper() else None)  # no name form matches "the city"
    covered = [preprocessing.is_placeholder(token) for token in tokens]
    replacement = [token if covered[i] else None for i, token in enumerate(tokens)]
    done = set()
    for placeholder, form, cased in forms:
        if placeholder not in done and preprocessing._replace_form(
                tokens, cased_keys if cased else keys, key_token, form, placeholder, replacement, covered):
            done.add(placeholder)
    # Last, misspellings ("Guadalaraja"; not "Klaus Lohannis": the first letter must match) and
    # partial long names ("Ottoman army soldiers killed in the Battle of Baku" without "killed").
    for placeholder, entity in missing.items():
        if placeholder not in done:
            span = _fuzzy_span(keys, key_token, covered, preprocessing._form_keys(entity))
            if span:
                first, last = span
                for index in range(first, last + 1):
                    covered[index] = True
                replacement[first] = placeholder
                done.add(placeholder)
    return [
        replacement[index] if replacement[index] else token
        for index, token in enumerate(tokens)
        if replacement[index] or not covered[index]
    ]


def _close(key, text_key):
    """Same word up to a typo: equal, or (5+ letters, same first letter) one edit away (two
    for 9+ letters). A key with a digit is equal (a unit glued on allowed) or not close: 1778.0 is
    another runway length than 1773.0, not a misspelling of it."""
    if key == text_key:
        return True
    if any(char.isdigit() for char in key + (text_key or "")):  # a unit may be glued on: "-3.3528m"
        return bool(text_key) and text_key.startswith(key) and text_key[len(key):].isalpha()
    if len(key) < 5 or not text_key or key[0] != text_key[0] or abs(len(key) - len(text_key)) > 2:
        return False
    limit = 2 if len(key) >= 9 else 1
    previous = list(range(len(text_key) + 1))
    for i, char in enumerate(key, 1):
        current = [i]
        for j, other in enumerate(text_key, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char != other)))
        if min(current) > limit:
            return False
        previous = current
    return previous[-1] <= limit


def _fuzzy_span(keys, key_token, covered, form):
    """(first token, last token) of a loose occurrence of `form` in the text keys: every word
    close (`_close`) to the form's, in order; or, for forms of 4+ content words, at least 3/4 of
    them exactly, in order, in a window one word longer than the form. None if not found."""
    if not form:
        return None
    length = len(form)
    content = [key for key in form if key not in STOPWORDS]
    for start in range(len(keys) - length + 1):
        window = keys[start:start + length]
        if any(covered[key_token[i]] for i in range(start, start + length)):
            continue
        if all(_close(key, other) for key, other in zip(form, window)) and any(
                len(key) >= 5 for key in form):
            return key_token[start], key_token[start + length - 1]
    if len(content) >= 4:
        size = length + 1
        for start in range(len(keys)):
            if keys[start] != form[0] and keys[start] not in content[:2]:
                continue
            window = keys[start:start + size]
            found, position = [], 0
            for index, key in enumerate(window):
                if key in content[position:]:
                    position = content.index(key, position) + 1
                    found.append(start + index)
            if len(found) * 4 >= len(content) * 3 and not any(
                    covered[key_token[i]] for i in range(found[0], found[-1] + 1)):
                return key_token[found[0]], key_token[found[-1]]
    return None


# -------------------------------------------------------------------------- gazetteer


def usable_gazetteer(entities):
    """Entities reliable enough to count as "mentioned but not in the input": capitalised,
    not a number or date, at least 3 letters."""
    usable = set()
    for entity in entities:
        entity = re.sub(r"\s*\([^()]*\)\s*$", "", entity).strip()
        if len(entity) < 3 or not entity[:1].isupper():
            continue
        if NUMBER.match(entity.replace(" ", "")) or _DATE_LIKE.match(entity):
            continue
        if not any(char.isalpha() for char in entity):
            continue
        usable.add(entity)
    return usable


def gazetteer_index(gazetteer):
    """The gazetteer for `gazetteer_mentions`: first key -> list of (key tuple, name), longest first."""
    index = collections.defaultdict(list)
    for name in gazetteer:
        keys = preprocessing._form_keys(name)
        if keys:
            index[keys[0]].append((keys, name))
    for entries in index.values():
        entries.sort(key=lambda pair: -len(pair[0]))
    return dict(index)


def gazetteer_mentions(tokens, index, input_entities):
    """Gazetteer entities written (capitalised) in the non-placeholder tokens of `tokens` and not
    part of an input entity."""
    if not index:
        return []
    keys, key_token = [], []
    for position, token in enumerate(tokens):
        if preprocessing.is_placeholder(token):
            keys.append(None)
            key_token.append(position)
            continue
        for key in preprocessing._match_keys(token):
            keys.append(key)
            key_token.append(position)
    input_keys = [preprocessing._form_keys(entity) for entity in input_entities]
    names, start = [], 0
    while start < len(keys):
        matched = None
        for candidate, name in index.get(keys[start], ()):
            end = start + len(candidate)
            if (tuple(keys[start:end]) == candidate
                    and (start == 0 or key_token[start - 1] != key_token[start])
                    and (end == len(keys) or key_token[end] != key_token[end - 1])
                    and tokens[key_token[start]][:1].isupper()):
                matched = (candidate, name)
                break
        if matched is None:
            start += 1
            continue
        candidate, name = matched
        if not any(contains(entity_keys, candidate) for entity_keys in input_keys):
            names.append(name)
        start += len(candidate)
    return names


def contains(sequence, part):
    """Whether the tuple `part` occurs in `sequence` as a contiguous run."""
    length = len(part)
    return any(tuple(sequence[i:i + length]) == part for i in range(len(sequence) - length + 1))
