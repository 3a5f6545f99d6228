"""Plain template texts for a tripleset: one sentence a relation, stating each input fact and no other.

`template_text(triples)` writes "The birth place of Alan Bean is Wheeler, Texas. The occupation of
Alan Bean is Test pilot." for `Alan_Bean birthPlace Wheeler,_Texas ; Alan_Bean occupation
Test_pilot`. The texts are stiff, but they state what the input states, and so they are the fallback
of `onestep-gan generate --unfaithful template`: a caller who would rather print a stiff true text
than a fluent false one gets the template wherever the slot check (`evaluation.check_text`) flags
the model's text. They are also a floor for the tables: what writing the facts out, and nothing
else, scores.

A relation is written in one of four shapes, chosen by its words (`preprocessing.split_predicate`):
- a verb phrase ("is part of", "has to its north", "was selected by NASA", "served as Chief of the
  Astronaut Office in"): "S P O", with "in" before a year and "on" before a date where the phrase
  does not end in a preposition ("was selected by NASA in 1963");
- a participle and its preposition ("broadcasted by", "dedicated to", "spoken in"): "S is P O";
- a participle alone ("established", whose values are dates and years): "S was P in O" ("on" before
  a date), "S is P O" before a value that is neither ("is served Warm or cold");
- anything else, read as a noun ("birth place", "leader", "spouse"): "The P of S is O"; after a plural,
  "One of the P of S is O" for one value ("One of the awards of S is O"), else "are" ("The battles of S
  are O1 and O2", "The rocket stages of S are 2"; "The number of members of S is O" is singular); "by"
  after a noun and its participle ("The city served by S is O"; not before a date: "The ship ordered of
  S is O").
Objects of one subject under one relation are listed in one sentence ("The ingredient of Pizza
Margherita is Mozzarella and Tomato"). Values are written as the model's outputs write them
(`TextPreprocessor.relexicalise`: dates written out, units out of parentheses, "a"/"an" fitted).
"""

import re

from onestep_gan.rdf2text import evaluation, faithfulness, preprocessing
from onestep_gan.rdf2text.preprocessor import TextPreprocessor

_SINGULAR_S = frozenset({"series", "headquarters", "species", "news"})
_YEAR = re.compile(r"^\d{4}$")
# What `generate --unfaithful` does with a text the slot check flags: print it, or the template.
UNFAITHFUL = ("keep", "template")


def relation_shape(predicate):
    """"verb" ("S P O"), "participle" ("S is P O"), "dated" ("S was P in O") or "noun" ("The P
    of S is O") for `predicate` (module docstring; `preprocessing.predicate_shape`)."""
    return preprocessing.predicate_shape(preprocessing.split_predicate(predicate).lower().split())


def _time_preposition(value):
    """"on" before a date (ISO `1969-07-20`), "in" before a year, None before anything else; a typed
    literal (`"1950"^^xsd:gYear`) by its value."""
    value = preprocessing.normalise_entity(value)
    if preprocessing._ISO_DATE_PATTERN.match(value):  # the dates the relexicaliser writes out
        return "on"
    return "in" if _YEAR.match(value) else None


def _noun_relation(words):
    """For a predicate named by a noun: (the verb, "is" or "are", by the noun before any "of"/"in"/"to":
    "awards" are, "number of members" is; the preposition before the subject: "by" after a
    participle, "city served by", else "of")."""
    head = words
    for index, word in enumerate(words):
        if index and word in ("of", "in", "to"):
            head = words[:index]
            break
    preposition = "of"
    if "by" in faithfulness.relation_prepositions(head):  # the check reads "the city served by S" too
        head, preposition = head[:-1], "by"
    last = head[-1]
    plural = (last.endswith("s") and not last.endswith(("ss", "us", "is")) and last not in _SINGULAR_S)
    return ("are" if plural else "is"), preposition


def template_tokens(triples):
    """The template text of `triples` as delexicalised tokens, with the `preprocessing.delexicalise`
    example whose `entity_map` and `predicate_map` write them out: `(tokens, example)`."""
    example = preprocessing.delexicalise(triples, predicate_placeholders=True)
    entity = {value: placeholder for placeholder, value in example.entity_map.items()}  # normalised values
    predicate = {words: placeholder for placeholder, words in example.predicate_map.items()}
    # (subject, predicate) in input order -> objects in input order
    relations = {}
    for triple in triples:
        objects = relations.setdefault((triple.subject, triple.predicate), [])
        if triple.object not in objects:
            objects.append(triple.object)
    tokens = []
    for (subject, relation), objects in relations.items():
        subject_token = entity[preprocessing.normalise_entity(subject)]
        predicate_token = predicate[preprocessing.split_predicate(relation)]
        listed = []
        for index, value in enumerate(objects):
            if index:
                listed.append("and" if index == len(objects) - 1 else ",")
            listed.append(entity[preprocessing.normalise_entity(value)])
        shape = relation_shape(relation)
        words = preprocessing.split_predicate(relation).lower().split()
        # "in 1963", "on 1 March 2001": a time after a verb takes its preposition
        times = {_time_preposition(value) for value in objects}
        time = times.pop() if len(times) == 1 else None
        if shape == "verb":
            at = [time] if time and words[-1] not in preprocessing.PREPOSITIONS else []
            tokens += [subject_token, predicate_token, *at, *listed, "."]
        elif shape == "participle" or (shape == "dated" and time is None):
            tokens += [subject_token, "is", predicate_token, *listed, "."]
        elif shape == "dated":
            tokens += [subject_token, "was", predicate_token, time, *listed, "."]
        else:
            verb, preposition = _noun_relation(words)
            if preposition == "by" and time:  # "The ship ordered of A-Rosa Luna": a date, not a doer
                preposition = "of"
            value = preprocessing.normalise_entity(objects[0])
            if verb == "are" and len(objects) == 1 and not value[:1].isdigit() and "," not in value:
                # one of several: "One of the awards of Alan Shepard is Distinguished Service Medal"
                tokens += ["One", "of", "the", predicate_token, preposition, subject_token, "is", *listed, "."]
            else:
                tokens += ["The", predicate_token, preposition, subject_token, verb, *listed, "."]
    return tokens, example


def template_text(triples):
    """The template text of `triples` (module docstring), detokenised as the model's outputs are."""
    tokens, example = template_tokens(tuple(triples))
    return TextPreprocessor.relexicalise(tokens, example.entity_map, example.predicate_map)


def checked_text(checker, triples, text, unfaithful="keep"):
    """`evaluation.check_text(checker, triples, text)`, the record `generate --format jsonl` prints,
    with `fallback` added. With `unfaithful="template"`, a text the check does not call faithful
    is replaced by `template_text(triples)`: the record is then the template's, with `fallback`
    True and the model's text as `model_text`."""
    if unfaithful not in UNFAITHFUL:
        raise ValueError(f"unfaithful={unfaithful!r}: expected one of {', '.join(UNFAITHFUL)}.")
    record = evaluation.check_text(checker, triples, text)
    if record["faithful"] or unfaithful == "keep":
        return {**record, "fallback": False}
    return {**evaluation.check_text(checker, triples, template_text(triples)), "fallback": True, "model_text": text}
