"""Faithfulness of RDF-to-text outputs: a triple-level slot error rate with a data-mined aligner.

BLEU does not see an output that binds a value to the wrong triple ("Alan Bean was born in Test
pilot and served as a Wheeler, Texas" for `birthPlace Wheeler,_Texas ; occupation Test_pilot`).
This module judges, for each input triple of a text, whether it is realised with the right
binding, the triple-level analogue of the slot error rate of the E2E challenge (Dusek et al.,
2020) and of the WebNLG 2020 human "semantic adequacy" criteria:

- "missing": the triple's object is not mentioned in the text;
- "wrong": the object is mentioned, but every mention sits in a context that matches another
  input triple's predicate clearly better than its own (a value bound to the wrong predicate),
  or the subject and object are swapped (the subject sits where the object's cues are, the object
  nowhere near them);
- "correct": otherwise (including when there is no evidence either way: a mentioned object whose
  context matches no predicate's cues is given the benefit of the doubt; `no_evidence` counts
  these). The subject may be absent (pronouns, "it", descriptions): that is not an error.

Besides the per-triple labels, `extra_entities` counts entities the text mentions that are not in
the input: placeholders `ENT_k` beyond the input's, and known entities of the training corpus
(a gazetteer of train subjects/objects: capitalised, not numbers or dates; `mentions.py`) found
in the words that are not input entities.

How the aligner works (`SlotAligner`):
1. Entities are found as `preprocessing.delexicalise` finds them (exact form, then its fallbacks:
   aliases, "3 October 1983" for 1983-10-03, ...), then, in surface text only, looser forms of
   the entities still not found (`delexicalise_loosely`, with `mentions.py`): ordinal days
   ("30th March"), the name without its parenthesis, numbers with or without decimals /
   thousands separators, country demonyms ("American"), "Hardcover" = "hardback", the head
   before " of " / " in " ("Felipe VI"),
   plurals and singulars ("vegetables", "Asian American"), a surname alone, one-typo spellings
   ("Guadalaraja"), and 3/4 of the words of a long literal in order. An entity written only
   inside another mentioned entity ("Pakistan" in "Punjab, Pakistan") counts as mentioned.
2. Mining (`SlotAligner.from_entries`): in the delexicalised train references, for every mention
   of a placeholder that is the object of exactly one triple and the subject of none, the context
   features are counted for that triple's predicate: each word at offsets -2..+2 (offset and word)
   and each word in a window of 5 on each side, up to the sentence end (side and word); other
   placeholders appear as `<S>` (the triple's subject) or `<E>`. Words are lowercased and lightly
   lemmatised (plural -s). A feature's cue weight for a predicate is its positive pointwise mutual
   information against all object contexts, `log P(f | p) / P(f)`, kept when seen at least
   `min_count` times. Predicates are keyed by `split_predicate` words, lowercased, so "birthPlace"
   and "birth_place" share cues; each predicate also gets its own content words as side-free cues
   (that is all an unseen predicate has).
3. Judging (`judge_delexicalised`; `judge` first ends a sentence after a value that ends with its
   own period and comes before a capitalised word: "Washington, D.C. Americans live there"): for
   each mention of a triple's object, `own` is the cue score of the context for the triple's
   predicate and `rival` the best score for the predicates of the other input triples (those with
   another object and another predicate). A mention is "bound elsewhere" if `rival >= own +
   margin` and `rival >= min_rival`; the triple is "wrong" when all its object mentions are bound
   elsewhere. Precision of "wrong" is preferred over recall: a reference text should get very few
   errors.
4. Relations outside the input (`min_foreign`, off unless set): a mention is also bound elsewhere
   when its context matches a predicate that is *not in the input* far better than its own
   ("is located in the Straight-six engine" for `engine`, "born in 1 March 2001" for
   `discovered`): the same test as 3 with `min_foreign` for `min_rival`, against every mined
   predicate that is neither an input predicate nor similar to the triple's own, for objects of
   one triple that are no input triple's subject. Such a triple is "wrong" with `foreign` set.
   With `foreign_known_only`, only for a triple whose predicate mining met: an unseen predicate has
   no cues but its own words, so any mined predicate of like meaning outscores it ("the total
   population of Kyoto is 1474570" for `populationTotal` against the mined `population`).

5. Inverted relations (`inversions`, off unless set): "ENT_1 is the birth place of ENT_2" or "the
   birth place of ENT_2 is ENT_1" for `ENT_1 birthPlace ENT_2` states the relation the wrong way
   round (English "X is the P of Y" says P(Y) = X). When every mention of the object sits in such a
   phrase with the predicate's own words (a predicate named by a noun: not "isPartOf", "has..."),
   the triple is "wrong" with `swapped` set. No cue is needed, so it holds for unseen predicates too.
   The right-way form "the P of ENT_1 is ENT_2" is read as such: the swap test of 3 (the subject
   next to the predicate's cues, the object after the copula with none) does not fire on it.
   With `of_phrases` alone, only that: the swap test reads the right-way form as right, and no
   inversion is looked for. On the WebNLG references it calls fewer triples wrong (dev 1.40% ->
   1.32%, test 2.40% -> 2.34%) and catches every gold swap it caught before.

6. Relations stated of the wrong subject (`subjects`, off unless set): "The capital of Alfa Romeo 164
   is Rome" for `Italy capital Rome ; Alfa_Romeo_164 assembly Italy` states the capital of the car.
   A triple whose predicate is named by a noun (as in 5) is "wrong" with `wrong_subject` set when the
   text states that relation in its own words ("the P of [the] ENT_x", "ENT_x 's P", "ENT_x, whose
   P") of input entities only that hold no such relation in the input, none of them the triple's own
   subject. Left alone, for precision (on the dev references it adds no triple): values of the
   entities that hold the relation ("the region of Guadalajara" names the value's kind; "Guadalajara
   is the region of Bionico" is 5's case), entities an input triple links to the object ("English,
   the language of Great Britain"), and compounds ("the Catalonia region of Spain"). No cue is
   needed, so it holds for unseen predicates too; the subject may still be unnamed or a pronoun.

7. Values attached to another relation's own words (`attachments`, off unless set): "The diameter
   of Ariane 5 is Guiana Space Centre" for `Ariane_5 launchSite Guiana_Space_Centre ; Ariane_5
   diameter 5.4`. The predicates' own words in the text are found as `preprocessing` finds them
   for predicate placeholders, and each such phrase is attached to the entities it names
   (`attached_entities`: "the P of ENT_x is ENT_y", "ENT_x 's P", "ENT_x, whose P is ENT_y", "has a P
   of ENT_y"; not an entity that modifies the noun after it, "the ENT_1 dish", nor words that name a
   kind or a place, "that country"). An entity attached to a predicate that no input triple of that
   predicate (or of one that shares a word with it or has like cues) holds is misattached. A triple is "wrong" with `attached` set when every mention
   of its object is misattached, or when its relation is stated, in its own words, of its object
   only together with a misattached entity ("The manager of Abel Hernandez is Jorge da Silva" for
   `Penarol manager Jorge_da_Silva`). No mined cue is needed, so it holds for unseen predicates,
   where the cues of 3 are only the predicate's words and too weak to call a binding wrong.

8. Relations of opposed meaning (`opposed`, off unless set; part of 4's check, so only with
   `min_foreign`): "Marie Curie was born on 4 July 1934" for `deathDate`. The date's own cue, "on", is
   birth date's as much, so 4's own-share test lets the mention pass (own 3.8 against birth date's 9.3).
   For the relation whose key differs from the triple's by one word of `_OPPOSED_WORDS` ("birth date"
   for "death date"), the own-share test reads the own score without the features that relation weighs
   as much (`_distinct`): the words both share are no evidence for either. The margin and `min_foreign`
   tests read whole scores. Relations of like meaning ("country", "district") share words too, so the
   reading is kept to opposed pairs; with it in the input, 3 decides (a rival there competes whole).

Everything is pure Python with dictionaries; judging a delexicalised beam candidate takes tens of
microseconds, so `judge_delexicalised` can rerank beams.
"""

import collections
import dataclasses
import functools
import json
import math
import pathlib
import re

from onestep_gan.rdf2text import mentions, preprocessing
from onestep_gan.rdf2text.preprocessing import value_shape  # judged here, defined with the values' forms

LABELS = ("correct", "missing", "wrong")
SUBJECT_MARK, ENTITY_MARK, BOUNDARY_MARK = "<S>", "<E>", "<B>"
_SENTENCE_END = frozenset({".", "!", "?", ";"})
# Words whose swap names the opposed relation (`SlotAligner(opposed=True)`): "birth date" / "death date".
# Not "followed" / "preceded", nor "successor" / "predecessor": English "X followed Y" states `X precededBy Y`
# with the words of `followedBy`.
_OPPOSED_WORDS = (("birth", "death"), ("start", "end"))


_MONTH_WORDS = frozenset(
    name.lower() for month in preprocessing._MONTHS for name in (month, month[:3], month[:3] + ".")
)


@functools.lru_cache(maxsize=262144)
def _lemma(word):
    """Lowercase, light plural stripping ("awards" -> "award", "class" stays); numbers -> "<NUM>",
    month names -> "<MONTH>"."""
    word = word.lower()
    if any(char.isdigit() for char in word) and mentions.NUMBER.match(word.rstrip("stndrh")):
        return "<NUM>"
    if word in _MONTH_WORDS:
        return "<MONTH>"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        if word.endswith("ies") and len(word) > 4:
            return word[:-3] + "y"
        return word[:-1]
    return word


@functools.lru_cache(maxsize=65536)
def predicate_key(predicate):
    """The key of a predicate's cues: its `split_predicate` words, lowercased."""
    return preprocessing.split_predicate(predicate).lower()


@functools.lru_cache(maxsize=65536)
def predicate_words(predicate):
    """Content words of a predicate, lemmatised: "birthPlace" -> ("birth", "place")."""
    return tuple(
        _lemma(word) for word in predicate_key(predicate).split()
        if word not in mentions.STOPWORDS and not word.isdigit()
    )


@dataclasses.dataclass(frozen=True)
class TripleJudgement:
    """How one input triple is realised in a text.

    Attributes:
        triple: the input triple.
        label: "correct", "missing" or "wrong".
        own: best cue score of an object mention for the triple's own predicate (0 if missing).
        rival: at that mention, the best cue score for another input triple's predicate.
        rival_predicate: the predicate of that rival triple (None if none scored above 0).
        no_evidence: the label is "correct" only because no cue matched either way.
        swapped: "wrong" because subject and object are swapped.
        foreign: "wrong" because the object is stated under a relation that no input triple
            has (`rival_predicate` names it).
        wrong_subject: "wrong" because the text states the triple's relation of another input
            entity ("the capital of Alfa Romeo 164" for `Italy | capital | Rome`; `subjects`).
        attached: "wrong" because the object is attached to another relation's own words, or the
            relation to an entity that does not hold it (`attachments`; `rival_predicate` names the
            other relation).
    """

    triple: object
    label: str
    own: float = 0.0
    rival: float = 0.0
    rival_predicate: str | None = None
    no_evidence: bool = False
    swapped: bool = False
    foreign: bool = False
    wrong_subject: bool = False
    attached: bool = False


@dataclasses.dataclass(frozen=True)
class TextJudgement:
    """Judgement of one text against its input triples.

    Attributes:
        triples: the per-triple `TripleJudgement`s, in input order.
        extra_entities: the entities mentioned that are not in the input (placeholders
            beyond the input's, gazetteer entities), distinct, in order of appearance.
    """

    triples: tuple
    extra_entities: tuple = ()

    @property
    def labels(self):
        return tuple(judgement.label for judgement in self.triples)

    @property
    def num_triples(self):
        return len(self.triples)

    @property
    def num_correct(self):
        return self.labels.count("correct")

    @property
    def num_missing(self):
        return self.labels.count("missing")

    @property
    def num_wrong(self):
        return self.labels.count("wrong")

    @property
    def num_errors(self):
        """Missing plus wrong triples (extra entities not included)."""
        return self.num_missing + self.num_wrong

    @property
    def num_extra_entities(self):
        return len(self.extra_entities)

    @property
    def num_no_evidence(self):
        return sum(judgement.no_evidence for judgement in self.triples)

    @property
    def is_faithful(self):
        """No missing or wrong triple and no extra entity."""
        return self.num_errors == 0 and not self.extra_entities

    def to_dict(self):
        return {
            "labels": list(self.labels),
            "extra_entities": list(self.extra_entities),
            "details": [
                {"triple": " | ".join((t.triple.subject, t.triple.predicate, t.triple.object)),
                 "label": t.label, "own": round(t.own, 3), "rival": round(t.rival, 3),
                 "rival_predicate": t.rival_predicate, "no_evidence": t.no_evidence,
                 "swapped": t.swapped, "foreign": t.foreign, "wrong_subject": t.wrong_subject,
                 "attached": t.attached}
                for t in self.triples
            ],
        }


@dataclasses.dataclass(frozen=True)
class _Input:
    """The placeholder view of a tripleset (cached per tripleset)."""

    entity_map: dict  # placeholder -> normalised entity
    slots: tuple  # per triple: (subject placeholder, object placeholder, predicate)
    nested_in: dict  # placeholder -> placeholders whose entity's words contain its entity's
    predicate_keys: frozenset  # `predicate_key` of every input predicate
    predicate_map: dict  # predicate placeholder -> its words (`preprocessing.delexicalise`)
    predicates_of: dict  # predicate placeholder -> the input predicates it stands for


@functools.lru_cache(maxsize=4096)
def _input_view(triples):
    example = preprocessing.delexicalise(list(triples), predicate_placeholders=True)
    tokens = example.source_tokens
    slots, position = [], 0
    for triple in triples:
        # <S> subject <P> predicate words <O> object
        subject = tokens[position + 1]
        position += 3
        while tokens[position] != preprocessing.OBJECT_TOKEN:
            position += 1
        object_ = tokens[position + 1]
        position += 2
        slots.append((subject, object_, triple.predicate))
    keys = {placeholder: preprocessing._form_keys(entity)
            for placeholder, entity in example.entity_map.items()}
    nested_in = {
        inner: tuple(outer for outer, outer_keys in keys.items()
                     if outer != inner and len(outer_keys) > len(inner_keys)
                     and mentions.contains(outer_keys, inner_keys))
        for inner, inner_keys in keys.items() if inner_keys
    }
    predicate_keys = frozenset(predicate_key(triple.predicate) for triple in triples)
    placeholder_of = {words: placeholder for placeholder, words in example.predicate_map.items()}
    predicates_of = collections.defaultdict(list)
    for triple in triples:
        placeholder = placeholder_of[preprocessing.split_predicate(triple.predicate)]
        if triple.predicate not in predicates_of[placeholder]:
            predicates_of[placeholder].append(triple.predicate)
    return _Input(dict(example.entity_map), tuple(slots), nested_in, predicate_keys,
                  dict(example.predicate_map), {key: tuple(value) for key, value in predicates_of.items()})


def delexicalise_loosely(triples, text):
    """`preprocessing.delexicalise(triples, text).target_tokens`, then the looser forms of the
    entities still not found (ordinal days "30th" read as "30" first)."""
    triples = tuple(triples)
    text = mentions.normalise_ordinal_days(text)
    tokens = preprocessing.delexicalise(list(triples), text).target_tokens
    return mentions.replace_loose_forms(tokens, _input_view(triples).entity_map)


def _sentence_ends_after_values(tokens, entity_map):
    """`tokens` with a "." after each placeholder of a value that ends with its own period ("Washington,
    D.C.", "Edwin E. Aldrin, Jr.") and is followed by a capitalised word or another placeholder:
    "... is Washington, D.C. Americans live there" ends a sentence at "D.C.", as "D.C. ." did before
    `preprocessing.relexicalise` wrote one period there; a mention's context stops at it. Judging
    only: the cues stay mined from the references as they are (with it, the changed background counts
    move every cue weight a little and turn one correct dev output into a wrong binding)."""
    output = []
    for index, token in enumerate(tokens):
        output.append(token)
        following = tokens[index + 1] if index + 1 < len(tokens) else ""
        if (preprocessing.is_placeholder(token) and entity_map.get(token, "").endswith(".")
                and following[:1].isupper()):
            output.append(".")
    return output


def context_features(tokens, position, subject, window=5, near=2):
    """Context features of the mention at `tokens[position]` (see the module docstring).

    `subject` is the placeholder shown as `<S>`; other placeholders become `<E>`.
    """
    features = []
    for side, step in (("L", -1), ("R", 1)):
        index = position + step
        for offset in range(1, window + 1):
            if index < 0 or index >= len(tokens):
                if offset <= near:
                    features.append(f"{side}{offset}:{BOUNDARY_MARK}")
                break
            token = tokens[index]
            if token in _SENTENCE_END:
                if offset <= near:
                    features.append(f"{side}{offset}:{BOUNDARY_MARK}")
                break
            if preprocessing.is_placeholder(token):
                # Another mention ends the context: words beyond it belong to that mention.
                if offset <= near:
                    features.append(f"{side}{offset}:{SUBJECT_MARK if token == subject else ENTITY_MARK}")
                break
            word = _lemma(token)
            if offset <= near:
                features.append(f"{side}{offset}:{word}")
            if word not in mentions.STOPWORDS:
                features.append(f"{side}:{word}")
            index += step
    return features


class SlotAligner:
    """Data-mined cue phrases per predicate; judges each input triple of a text.

    Build with `SlotAligner.from_entries(train_entries)`; judge surface texts with `judge`
    and delexicalised token lists with `judge_delexicalised`.

    Args:
        cues: predicate key -> {feature: weight}.
        gazetteer: known entity surface forms (for `extra_entities` in surface text).
        margin: how much better a rival predicate's cues must match for "wrong".
        min_rival: the least cue score of a rival predicate for "wrong".
        swap_score: the least own-predicate score of the subject's context (with the object
            absent from the cues) for a subject/object swap.
        predicate_word_weight: cue weight of a predicate's own words (side-free).
        window, near: context window sizes (bag of words; exact offsets).
        min_foreign: None (off), or the least cue score of a predicate outside the input for
            "wrong" (a value stated under a relation the input does not have).
        foreign_known_only: with `min_foreign`, look for relations outside the input only for a
            triple whose predicate mining met (`knows_predicate`; module docstring, 4).
        inversions: also call "wrong" a relation stated the wrong way round in its own words
            ("ENT_1 is the birth place of ENT_2" for `ENT_1 birthPlace ENT_2`; module docstring, 5).
        of_phrases: the swap test reads "the P of ENT_1 is ENT_2" (P the predicate's own words) as
            the right way round, as `inversions` does, without looking for inversions (module
            docstring, 5). Off in an aligner saved before it.
        opposed: with `min_foreign`, also call "wrong" a value stated in the words of the relation of
            opposed meaning ("born on" for a death date) though the words both share match its own
            (module docstring, 8). Off in an aligner saved before it.
        subjects: also call "wrong" a relation stated, in its own words, of an input entity that
            is not its subject ("the capital of ENT_3" for `ENT_1 capital ENT_2`; module docstring, 6).
        attachments: also call "wrong" a value attached to another input relation's own words
            ("the diameter of ENT_1 is ENT_3" for `ENT_1 launchSite ENT_3`; module docstring, 7).
        shapes: predicate key -> {value shape: count} of its train objects (`value_shape`; mined by
            `from_entries`).
        value_shapes: for a triple whose predicate mining never met (no cues of its own, as on
            unseen categories), a rival input predicate makes a mention "wrong" only if the value's
            shape is one the rival's train objects take (at least `min_shape_share` of them; a
            predicate without mined shapes takes any): "born in 1872" for `birthYear` is not bound
            to `birthPlace`, whose objects are never years. A triple of a known predicate keeps
            every rival: its own cues compete, and "born on Wheeler, Texas" is a wrong binding.
    """

    def __init__(self, cues, gazetteer=(), margin=3.0, min_rival=4.0, max_own_share=0.35,
                 max_similarity=0.5, swap_score=6.0, predicate_word_weight=2.0, window=5, near=2,
                 min_foreign=None, inversions=False, subjects=False, attachments=False, shapes=None,
                 value_shapes=False, min_shape_share=0.02, foreign_known_only=False, of_phrases=False,
                 opposed=False):
        self.cues = {key: dict(weights) for key, weights in cues.items()}
        self.gazetteer = tuple(sorted(set(gazetteer)))
        self.margin = float(margin)
        self.min_rival = float(min_rival)
        self.max_own_share = float(max_own_share)
        self.max_similarity = float(max_similarity)
        self.swap_score = float(swap_score)
        self.predicate_word_weight = float(predicate_word_weight)
        self.window = int(window)
        self.near = int(near)
        self.min_foreign = None if min_foreign is None else float(min_foreign)
        self.inversions = bool(inversions)
        self.subjects = bool(subjects)
        self.attachments = bool(attachments)
        self.shapes = {key: dict(counts) for key, counts in (shapes or {}).items()}
        self.value_shapes = bool(value_shapes)
        self.min_shape_share = float(min_shape_share)
        self.foreign_known_only = bool(foreign_known_only)
        self.of_phrases = bool(of_phrases)
        self.opposed = bool(opposed)
        for name in ("margin", "min_rival", "max_own_share", "max_similarity", "swap_score",
                     "predicate_word_weight", "min_shape_share", "min_foreign"):
            value = getattr(self, name)
            # A nan threshold compares false with every score: the check would pass everything.
            if value is not None and not 0 <= value < math.inf:
                raise ValueError(f"`{name}` must be a finite number >= 0. Received: {name}={value}")
        if self.value_shapes and not self.shapes:
            raise ValueError(
                "`value_shapes` needs the shapes of each predicate's train objects, which this aligner lacks "
                "(saved before they were mined): mine it again with `SlotAligner.from_entries` (for a run folder, "
                "`onestep-gan decode --run-dir RUN --rerank-value-shapes` does)."
            )
        self._postings = None  # feature -> [(predicate key, weight)], built when first needed
        self._gazetteer_index = mentions.gazetteer_index(self.gazetteer)
        self._weights_cache = {}
        self._similarity_cache = {}

    # ----------------------------------------------------------------------------- building

    @classmethod
    def from_entries(cls, entries, min_count=2, smoothing=5.0, gazetteer_entities=True, **kwargs):
        """Mines cue weights from the delexicalised references of `entries` (train).

        Args:
            entries: `WebNLGEntry`s (anything with `triples` and `texts`).
            min_count: least count of a (predicate, feature) pair to keep it as a cue.
            smoothing: added to a predicate's mention count when estimating P(f | p), which
                damps the weights of rare predicates.
            gazetteer_entities: collect the entities of `entries` as the gazetteer.
            **kwargs: passed to the constructor (margin, window, ...).
        """
        window, near = kwargs.get("window", 5), kwargs.get("near", 2)
        counts = collections.defaultdict(collections.Counter)
        mention_counts = collections.Counter()
        background = collections.Counter()
        total = 0
        gazetteer = set()
        shapes = collections.defaultdict(collections.Counter)
        for entry in entries:
            triples = tuple(entry.triples)
            for triple in triples:
                shapes[predicate_key(triple.predicate)][value_shape(triple.object)] += 1
            view = _input_view(triples)
            if gazetteer_entities:
                gazetteer.update(view.entity_map.values())
            object_of = collections.defaultdict(list)
            subjects = set()
            for subject, object_, predicate in view.slots:
                object_of[object_].append((subject, predicate))
                subjects.add(subject)
            usable = {
                placeholder: slots[0] for placeholder, slots in object_of.items()
                if len(slots) == 1 and placeholder not in subjects
            }
            if not usable:
                continue
            for text in entry.texts:
                tokens = delexicalise_loosely(triples, text)
                for position, token in enumerate(tokens):
                    if token not in usable:
                        continue
                    subject, predicate = usable[token]
                    key = predicate_key(predicate)
                    features = set(context_features(tokens, position, subject, window, near))
                    counts[key].update(features)
                    mention_counts[key] += 1
                    background.update(features)
                    total += 1
        cues = {}
        for key, feature_counts in counts.items():
            denominator = mention_counts[key] + smoothing
            weights = {}
            for feature, count in feature_counts.items():
                if count < min_count:
                    continue
                weight = math.log((count / denominator) / (background[feature] / total))
                if weight > 0:
                    weights[feature] = round(weight, 3)
            cues[key] = weights
        return cls(cues, sorted(mentions.usable_gazetteer(gazetteer)), shapes=shapes, **kwargs)

    # ---------------------------------------------------------------------------- judging

    def judge(self, triples, text):
        """Judges a surface text (a relexicalised output or a reference) against `triples`."""
        triples = tuple(triples)
        view = _input_view(triples)
        tokens = _sentence_ends_after_values(delexicalise_loosely(triples, text), view.entity_map)
        return self._judge(triples, view, tokens)

    def judge_delexicalised(self, triples, tokens):
        """Judges tokens with `ENT_k` placeholders, numbered as `preprocessing.delexicalise`
        numbers them for `triples` (e.g. a beam candidate before relexicalisation)."""
        triples = tuple(triples)
        return self._judge(triples, _input_view(triples), list(tokens))

    def _judge(self, triples, view, tokens):
        positions = collections.defaultdict(list)
        extra = []
        for index, token in enumerate(tokens):
            if preprocessing.is_placeholder(token):
                if token in view.entity_map:
                    positions[token].append(index)
                elif token not in extra:
                    extra.append(token)
        for name in mentions.gazetteer_mentions(tokens, self._gazetteer_index, view.entity_map.values()):
            if name not in extra:
                extra.append(name)
        judgements = [
            self._judge_triple(triple, slot, view, tokens, positions)
            for triple, slot in zip(triples, view.slots)
        ]
        if self.attachments:
            judgements = self._check_attachments(judgements, view, tokens)
        if self.subjects:
            lemmas, entities = [_lemma(token) for token in tokens], frozenset(view.entity_map)
            judgements = [
                self._check_subject(judgement, slot, view, tokens, lemmas, entities)
                if judgement.label == "correct" else judgement
                for judgement, slot in zip(judgements, view.slots)
            ]
        return TextJudgement(tuple(judgements), tuple(extra))

    def _check_subject(self, judgement, slot, view, tokens, lemmas, entities):
        """`judgement` made "wrong" (`wrong_subject`) when the text states the triple's relation,
        in its own words, only of input entities that hold no such relation in the input
        (module docstring, 6)."""
        subject, object_, predicate = slot
        words = _noun_words(predicate)
        if words is None:
            return judgement
        # Entities that may hold the relation: subjects of input triples whose predicate shares
        # a word with it or is like it ("leader" and "leader title"), and entities named with
        # one of them ("Prime Minister of Azerbaijan" for Azerbaijan).
        holders = {
            other_subject for other_subject, _, other_predicate in view.slots
            if set(_noun_words(other_predicate) or ()) & set(words)
            or self.similar_predicates(predicate, other_predicate)
        }
        holders |= {outer for holder in tuple(holders) for outer in view.nested_in.get(holder, ())}
        # Not judged here: the holders' values ("the region of Guadalajara" names the value's kind;
        # "Guadalajara is the region of Bionico" is the inversion test's; "the OCLC number of the
        # hardback book" names the subject by its media type), and entities an input triple links
        # to this object ("English, the language of Great Britain" for `English_language spokenIn
        # Great_Britain`). Precision first: on the references this check adds no dev triple.
        ignored = {other_object for other_subject, other_object, _ in view.slots if other_subject in holders}
        ignored |= {other for first, second, _ in view.slots if object_ in (first, second)
                    for other in (first, second)}
        stated_of = _stated_subjects(tokens, lemmas, words, entities)
        if stated_of & holders or not stated_of - ignored:
            return judgement
        return dataclasses.replace(judgement, label="wrong", no_evidence=False, wrong_subject=True)

    def _check_attachments(self, judgements, view, tokens):
        """`judgements` with the triples whose values the text attaches to another relation's own
        words made "wrong" (`attached`; module docstring, 7)."""
        phrases = preprocessing.delexicalise_predicates(tokens, view.predicate_map)
        # Which input entities may stand next to each predicate's words: those of its triples and
        # of triples with a predicate too like it to tell apart ("ingredient", "main ingredients").
        holders = {
            placeholder: {entity for subject, object_, predicate in view.slots
                          if any(self.similar_predicates(own, predicate) or _share_a_word(own, predicate)
                                 for own in predicates)
                          for entity in (subject, object_)}
            for placeholder, predicates in view.predicates_of.items()
        }
        misattached = collections.defaultdict(list)  # entity -> one flag per mention, in order
        flags = {}  # position in `phrases` -> misattached there (first predicate that misattaches it)
        statements = []  # (predicate placeholder, attached entities, misattached entities)
        for position, token in enumerate(phrases):
            if token not in holders or (position and phrases[position - 1] in holders[token]):
                continue  # not a predicate's words, or a compound ("the ENT_3 region of ENT_2")
            attached = attached_entities(phrases, position)
            wrong = [phrases[index] for index in attached
                     if phrases[index] in view.entity_map and phrases[index] not in holders[token]]
            statements.append((token, attached, wrong))
            for index in attached:
                if phrases[index] in wrong:
                    flags.setdefault(index, token)
        for position, token in enumerate(phrases):
            if token in view.entity_map:
                misattached[token].append(flags.get(position))
        output = []
        for judgement, (subject, object_, predicate) in zip(judgements, view.slots):
            if judgement.label != "correct":
                output.append(judgement)
                continue
            rival = None
            object_flags = misattached.get(object_, ())
            if object_flags and all(object_flags):
                rival = object_flags[0]
            else:  # the relation stated of its value only next to an entity that does not hold it
                own = [(attached, wrong) for placeholder, attached, wrong in statements
                       if predicate in view.predicates_of[placeholder]
                       and any(phrases[index] == object_ for index in attached)]
                if own and all(wrong for _, wrong in own):
                    rival = next(placeholder for placeholder, predicates in view.predicates_of.items()
                                 if predicate in predicates)
            if rival is None:
                output.append(judgement)
            else:
                output.append(dataclasses.replace(
                    judgement, label="wrong", no_evidence=False, attached=True,
                    rival_predicate=view.predicates_of[rival][0]))
        return output

    def _judge_triple(self, triple, slot, view, tokens, positions):
        subject, object_, predicate = slot
        if not positions.get(object_):
            # Written inside a mentioned entity ("Punjab, Pakistan" holds Pakistan): mentioned,
            # bound by the name itself.
            if any(positions.get(outer) for outer in view.nested_in.get(object_, ())):
                return TripleJudgement(triple, "correct", no_evidence=True)
            return TripleJudgement(triple, "missing")
        own_weights = self._weights(predicate)
        # Rivals: the other input triples this mention could wrongly express. Not those with
        # the same object (shared entity), nor those whose subject it is (a subject sits next
        # to its own predicate's words), nor predicates whose cues resemble this one's.
        # With `value_shapes` and a predicate without cues of its own, nor predicates whose objects
        # never take this value's shape.
        shape = value_shape(triple.object) if self.value_shapes and not self.knows_predicate(predicate) else None
        rivals = [
            (other_predicate, self._weights(other_predicate), other_subject)
            for other_subject, other_object, other_predicate in view.slots
            if other_object != object_ and other_subject != object_
            and not self.similar_predicates(predicate, other_predicate)
            and (shape is None or self.takes_shape(other_predicate, shape))
        ]
        # Relations outside the input are looked for only for an entity that is this triple's
        # object alone (as in mining): the subject or object of another input triple may sit in
        # that triple's context, whose predicate has other words ("the language spoken in X").
        # With `foreign_known_only`, only for a predicate mining met.
        single_role = self.min_foreign is not None and not any(
            (other_subject == object_ or other_object == object_) and (other_subject, other_object) != (subject, object_)
            for other_subject, other_object, _ in view.slots
        ) and (not self.foreign_known_only or self.knows_predicate(predicate))
        best = None  # (not bound elsewhere, own - rival, own, rival, rival predicate, foreign)
        for position in positions[object_]:
            features = context_features(tokens, position, subject, self.window, self.near)
            own = _score(own_weights, features)
            rival, rival_predicate = 0.0, None
            for other_predicate, weights, other_subject in rivals:
                if other_subject != subject:
                    other_features = context_features(
                        tokens, position, other_subject, self.window, self.near)
                else:
                    other_features = features
                score = _score(weights, other_features)
                if score > rival:
                    rival, rival_predicate = score, other_predicate
            elsewhere = self._bound_elsewhere(own, rival, self.min_rival)
            foreign = False
            if not elsewhere and single_role:
                outside, outside_predicate = self._best_foreign(features, predicate, view.predicate_keys)
                if self._bound_elsewhere(own, outside, self.min_foreign):
                    elsewhere, foreign, rival, rival_predicate = True, True, outside, outside_predicate
                elif self.opposed:  # the relation of opposed meaning, judged on the words that tell them apart
                    for key in self._opposed_keys(predicate, view.predicate_keys):
                        weights = self._weights(key)
                        outside = _score(weights, features)
                        if self._bound_elsewhere(own, outside, self.min_foreign,
                                                 _distinct(own_weights, features, weights)):
                            elsewhere, foreign, rival, rival_predicate = True, True, outside, key
                            break
            # The mention most in favour of the triple decides.
            candidate = (not elsewhere, own - rival, own, rival, rival_predicate, foreign)
            if best is None or candidate[:2] > best[:2]:
                best = candidate
        not_elsewhere, _, own, rival, rival_predicate, foreign = best
        if not not_elsewhere:
            return TripleJudgement(triple, "wrong", own, rival, rival_predicate, foreign=foreign)
        if self.inversions and subject != object_ and all(
            _inverted_mention(tokens, position, subject, predicate) for position in positions[object_]
        ):
            return TripleJudgement(triple, "wrong", own, own, predicate, swapped=True)
        if own <= 0 and subject != object_ and positions.get(subject) and not (
            (self.inversions or self.of_phrases)
            and all(_of_phrase_mention(tokens, position, subject, predicate) for position in positions[object_])
        ):
            # Subject/object swap: the subject sits where the object's cues are. (Not in "the P of
            # SUBJECT is OBJECT", read with `inversions` or `of_phrases`: the subject sits after the
            # predicate's words there, and the object after the copula, where no cue reaches it.)
            subject_score = max(
                _score(own_weights, context_features(tokens, position, object_, self.window, self.near))
                for position in positions[subject]
            )
            if subject_score >= self.swap_score:
                return TripleJudgement(triple, "wrong", own, subject_score, predicate, swapped=True)
        return TripleJudgement(
            triple, "correct", own, rival, rival_predicate, no_evidence=(own <= 0 and rival <= 0))

    def _bound_elsewhere(self, own, rival, least, distinct=None):
        """The margin, least-score and own-share tests; the own-share test on `distinct` when given (the
        own score without the words the rival shares, `_distinct`: a relation of opposed meaning)."""
        share = own if distinct is None else distinct
        return rival >= own + self.margin and rival >= least and share <= self.max_own_share * rival

    def _opposed_keys(self, predicate, input_keys):
        """Mined predicate keys that name the relation opposed to `predicate`'s (one word of `_OPPOSED_WORDS`
        swapped: "birth date" for "death date") and are not in the input."""
        words = predicate_key(predicate).split()
        for first, second in _OPPOSED_WORDS + tuple((b, a) for a, b in _OPPOSED_WORDS):
            if first in words:
                key = " ".join(second if word == first else word for word in words)
                if key in self.cues and key not in input_keys:
                    yield key

    def _best_foreign(self, features, predicate, input_keys):
        """The best-matching mined predicate outside the input and unlike `predicate`:
        `(score, predicate key)`, `(0.0, None)` if none matches."""
        if self._postings is None:
            postings = collections.defaultdict(list)
            for key, weights in self.cues.items():
                for feature, weight in weights.items():
                    postings[feature].append((key, weight))
            self._postings = dict(postings)
        weights_of = collections.defaultdict(list)
        for feature in set(features):
            for key, weight in self._postings.get(feature, ()):
                weights_of[key].append(weight)
        # Exact sums and ties broken by key: the same answer whatever the order of the set.
        scores = sorted(((math.fsum(weights), key) for key, weights in weights_of.items()),
                        key=lambda pair: (-pair[0], pair[1]))
        for score, key in scores:
            if key not in input_keys and not self.similar_predicates(predicate, key):
                return score, key
        return 0.0, None

    def takes_shape(self, predicate, shape):
        """Whether at least `min_shape_share` of `predicate`'s train objects have `shape`
        (`value_shape`); True for a predicate whose objects mining never met."""
        counts = self.shapes.get(predicate_key(predicate))
        if not counts:
            return True
        return counts.get(shape, 0) >= self.min_shape_share * sum(counts.values())

    def knows_predicate(self, predicate):
        """Whether mining met `predicate` in the training references (its key is in the cue
        table; a rare one may hold no cue that passed `min_count`). Of a predicate it never met
        (unseen in training) the aligner knows only the predicate's own words."""
        return predicate_key(predicate) in self.cues

    def similar_predicates(self, first, second):
        """Whether two predicates are too alike to tell apart by context: the same key, or
        cue vectors with a cosine of at least `max_similarity` ("ingredient" and "main
        ingredients", "commander" and "crew member")."""
        first, second = predicate_key(first), predicate_key(second)
        if first == second:
            return True
        pair = (first, second) if first < second else (second, first)
        similar = self._similarity_cache.get(pair)
        if similar is None:
            a, b = self._weights(first), self._weights(second)
            # Exact sums: the cue tables' order follows the order in which mining met the features.
            dot = math.fsum(weight * b[feature] for feature, weight in a.items() if feature in b)
            norm = math.sqrt(math.fsum(w * w for w in a.values()) * math.fsum(w * w for w in b.values()))
            similar = bool(norm) and dot / norm >= self.max_similarity
            self._similarity_cache[pair] = similar
        return similar

    def _weights(self, predicate):
        weights = self._weights_cache.get(predicate)
        if weights is None:
            weights = dict(self.cues.get(predicate_key(predicate), {}))
            for word in predicate_words(predicate):
                for side in ("L", "R"):
                    feature = f"{side}:{word}"
                    weights[feature] = max(weights.get(feature, 0.0), self.predicate_word_weight)
            self._weights_cache[predicate] = weights
        return weights

    # ------------------------------------------------------------------------ persistence

    def with_settings(self, **settings):
        """A copy with other judging settings (`min_foreign=6.0`, `margin=...`), the same cues."""
        return type(self).from_config({**self.get_config(), **settings})

    def get_config(self):
        return {
            "cues": self.cues,
            "gazetteer": list(self.gazetteer),
            "margin": self.margin,
            "min_rival": self.min_rival,
            "max_own_share": self.max_own_share,
            "max_similarity": self.max_similarity,
            "swap_score": self.swap_score,
            "predicate_word_weight": self.predicate_word_weight,
            "window": self.window,
            "near": self.near,
            "min_foreign": self.min_foreign,
            "inversions": self.inversions,
            "subjects": self.subjects,
            "attachments": self.attachments,
            "shapes": self.shapes,
            "value_shapes": self.value_shapes,
            "min_shape_share": self.min_shape_share,
            "foreign_known_only": self.foreign_known_only,
            "of_phrases": self.of_phrases,
            "opposed": self.opposed,
        }

    @classmethod
    def from_config(cls, config):
        return cls(**{"attachments": False, **config})  # an aligner.json saved before the options

    def save(self, path):
        path = pathlib.Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.get_config(), ensure_ascii=False, sort_keys=True), encoding="utf-8")
        return path

    @classmethod
    def load(cls, path):
        """Reads `save`'s file; a missing, unreadable, broken or mistyped file raises ValueError naming it."""
        path = pathlib.Path(path)
        try:
            config = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(config, dict):
                raise TypeError(f"a JSON {type(config).__name__}, not an object")
            return cls.from_config(config)
        except OSError as error:
            raise ValueError(f"Aligner file {path} cannot be read ({error.strerror}).") from None
        except (ValueError, TypeError, KeyError, AttributeError) as error:  # JSON and Unicode errors included
            raise ValueError(
                f"Aligner file {path} is damaged or not an aligner ({type(error).__name__}: {error}); expected "
                "the SlotAligner a run saves. Rerun the job that writes it, or delete it (`decode` mines it again)."
            ) from None


_COPULAS = frozenset("is are was were".split())
_ARTICLES = frozenset("the a an".split())
_VERB_FIRST = frozenset("is are was were has have had".split())
# Relations that hold both ways: "A is the spouse of B" is true for `A spouse B` too.
_SYMMETRIC = frozenset({
    "spouse", "partner", "sister station", "neighboring municipality", "neighbouring municipality",
    "comparable", "related mean of transportation", "associated band associated musical artist",
})


@functools.lru_cache(maxsize=65536)
def _noun_words(predicate):
    """A predicate's words, lemmatised, when they name it as a noun ("birth place", "number of
    member"); None for a verb phrase ("is part of", "has to its north") or a relation that holds
    both ways ("spouse")."""
    key = predicate_key(predicate)
    words = tuple(_lemma(word) for word in key.split())
    return None if not words or words[0] in _VERB_FIRST or key in _SYMMETRIC else words


def relation_prepositions(words):
    """The words between a relation named by a noun (`words`, lowercased) and its holder that the
    check reads: "of" ("the birth place of X"), and "by" after a noun and its participle ("the city
    served by X"). `templates.py` writes its "The P of S is O" texts with these."""
    last = words[-1]
    return ("of", "by") if len(words) > 1 and last.endswith("ed") and not last.endswith("eed") else ("of",)


def _inverted_mention(tokens, position, subject, predicate):
    """Whether the object at `tokens[position]` sits in "SUBJECT is the P of OBJECT" or "the P
    of OBJECT is SUBJECT" (P the predicate's own words; "by" after a participle, "the city served
    by OBJECT"), which state P(object) = subject."""
    words = _noun_words(predicate)
    if words is None:
        return False
    before = position - 1
    if before >= 0 and tokens[before].lower() in _ARTICLES:
        before -= 1
    if before < 0 or tokens[before].lower() not in relation_prepositions(words):
        return False
    start = before - len(words)
    if start < 0 or tuple(_lemma(token) for token in tokens[start:before]) != words:
        return False
    # "SUBJECT is/was [the] P of OBJECT"
    left = start - 1
    if left >= 0 and tokens[left].lower() in _ARTICLES:
        left -= 1
    if left >= 1 and tokens[left].lower() in _COPULAS and tokens[left - 1] == subject:
        return True
    # "the P of OBJECT is/was [the] SUBJECT"
    right = position + 1
    if right < len(tokens) and tokens[right].lower() in _COPULAS:
        right += 1
        if right < len(tokens) and tokens[right].lower() in _ARTICLES:
            right += 1
        return right < len(tokens) and tokens[right] == subject
    return False


def _of_phrase_mention(tokens, position, subject, predicate):
    """Whether the object at `tokens[position]` sits in "[the] P of SUBJECT is/was [the] OBJECT"
    (P the predicate's own words, named by a noun), which states P(subject) = object: the right
    way round (the mirror of `_inverted_mention`'s second form; a relation that holds both ways
    too). A noun and its participle take "by": "the city served by SUBJECT is OBJECT"."""
    words = tuple(_lemma(word) for word in predicate_key(predicate).split())
    if not words or words[0] in _VERB_FIRST:
        return False
    before = position - 1
    if before >= 0 and tokens[before].lower() in _ARTICLES:
        before -= 1
    # tokens: ... P of SUBJECT is [the] OBJECT
    if before < 2 or tokens[before].lower() not in _COPULAS or tokens[before - 1] != subject:
        return False
    of = before - 2
    start = of - len(words)
    return (tokens[of].lower() in relation_prepositions(words) and start >= 0
            and tuple(_lemma(token) for token in tokens[start:of]) == words)


_ATTACHING = frozenset("of is are was were the a an :".split())
_ANAPHORIC = frozenset("this that these those".split())
_PLACE_PREPOSITIONS = frozenset("in within at from across throughout".split())
# Words after an entity that do not make it a modifier of a noun ("the Java dish of").
_AFTER_HEAD = mentions.STOPWORDS | frozenset("where whose while but he she they there".split())


def _share_a_word(first, second):
    """Whether two predicates share a content word, or its first five letters ("ingredient" and
    "main ingredients", "awards" and "was awarded", "leader" and "leader name")."""
    return any(a == b or (len(a) >= 5 and len(b) >= 5 and a[:5] == b[:5])
               for a in predicate_words(first) for b in predicate_words(second))


def _modifier(tokens, index):
    """Whether the placeholder at `tokens[index]` modifies the noun after it ("the ENT_1 dish",
    "the ENT_2 operated ENT_3 mission", "ENT_2 's ENT_3") rather than heading its phrase."""
    following = tokens[index + 1] if index + 1 < len(tokens) else ""
    return following == "'s" or (following.isalpha() and following.islower() and following not in _AFTER_HEAD)


def attached_entities(tokens, position):
    """Positions of the entity placeholders that the predicate placeholder at `tokens[position]`
    is stated of (`tokens` as `preprocessing.delexicalise_predicates` writes them):

    - the first placeholder after it over "of", "is", "the", "a", ":" ... ("the PRED of ENT_1",
      "PRED is ENT_2", "has a PRED of ENT_2"), and after that one the placeholder behind a copula
      ("the PRED of ENT_1 is [the] ENT_2");
    - the placeholder before "'s" or ", whose" ("ENT_1 's PRED", "ENT_1, whose PRED").

    Left alone, where the words name a kind or a place rather than state the relation: after
    "this"/"that" ("the leaders of that country are ..."), after another predicate's words ("the
    capital PRED is", PRED "city"), and a copula after "in the PRED" ("the language used in the
    country is Tamil"). (`SlotAligner` also skips a phrase right after an entity that holds the
    relation, a compound: "the Karnataka region of India".) A placeholder that modifies the noun
    after it is not attached ("the main ingredients of the ENT_1 dish", "ENT_4 's ENT_2"), and "the
    PRED_a of the PRED_b is X" states PRED_a of X, not PRED_b.
    """
    previous = tokens[position - 1].lower() if position else ""
    if previous in _ANAPHORIC or preprocessing.is_predicate_placeholder(tokens[position - 1] if position else ""):
        return []
    found = []
    inner = previous == "of" or (
        position >= 2 and previous == "the" and tokens[position - 2].lower() == "of")
    placed = position >= 2 and previous == "the" and tokens[position - 2].lower() in _PLACE_PREPOSITIONS
    index = position + 1
    while index < len(tokens) and index - position <= 4:
        token = tokens[index]
        if preprocessing.is_placeholder(token):
            if _modifier(tokens, index):
                break
            found.append(index)
            after = index + 1
            if after < len(tokens) and tokens[after].lower() in _COPULAS:
                after += 1
                if after < len(tokens) and tokens[after].lower() in _ARTICLES:
                    after += 1
                if after < len(tokens) and preprocessing.is_placeholder(tokens[after]):
                    found.append(after)
            break
        if token.lower() not in _ATTACHING or ((inner or placed) and token.lower() in _COPULAS):
            break
        index += 1
    if position >= 2 and previous in ("'s", "whose") and preprocessing.is_placeholder(tokens[position - 2]):
        found.append(position - 2)
    if (position >= 3 and previous == "whose" and tokens[position - 2] == ","
            and preprocessing.is_placeholder(tokens[position - 3])):
        found.append(position - 3)
    return found


def _stated_subjects(tokens, lemmas, words, entities):
    """The entity placeholders of `entities` that `tokens` (`lemmas`: their `_lemma`s) state a
    relation named by `words` (lemmatised noun words) of: "the P of [the] ENT_x", "ENT_x 's P",
    "ENT_x, whose P". "ENT_y P of ENT_x" is left out: a compound ("the Catalonia region of Spain")."""
    size, found = len(words), set()
    for start in range(len(tokens) - size + 1):
        if tuple(lemmas[start:start + size]) != words:
            continue
        after = start + size
        if after < len(tokens) and tokens[after].lower() == "of" and not (start and tokens[start - 1] in entities):
            after += 1
            if after < len(tokens) and tokens[after].lower() in _ARTICLES:
                after += 1
            if after < len(tokens) and tokens[after] in entities:
                found.add(tokens[after])
        before = start - 1
        if before >= 0 and tokens[before].lower() in _ARTICLES:
            before -= 1
        if before >= 1 and tokens[before] in ("'s", "'") and tokens[before - 1] in entities:
            found.add(tokens[before - 1])
        whose = before >= 2 and tokens[before].lower() == "whose" and tokens[before - 1] == ","
        if whose and tokens[before - 2] in entities:
            found.add(tokens[before - 2])
    return frozenset(found)


def _distinct(own_weights, features, rival_weights):
    """The own cue score of `features`, each feature counted by how much more it weighs for the own
    predicate than for the rival: words both relations share ("on" before a date, a month name) are
    no evidence for the own relation against the rival (module docstring, 8)."""
    return math.fsum(max(0.0, own_weights.get(feature, 0.0) - rival_weights.get(feature, 0.0))
                     for feature in set(features))


def _score(weights, features):
    # `math.fsum` is exact, so the sum does not depend on the set's order (which follows the
    # process's string hashes, PYTHONHASHSEED): the same text gets the same verdict in every run.
    return math.fsum(weights.get(feature, 0.0) for feature in set(features))


# ----------------------------------------------------------------------------- scoring


def slot_error_scores(aligner, hypotheses, entries):
    """Corpus slot error counts and rates of `hypotheses` (one per entry, in order).

    A hypothesis is a surface string (judged with `judge`) or a token list with placeholders
    (judged with `judge_delexicalised`). Pass a subset of entries (and their hypotheses) for
    per-subset scores; `slot_error_report` does the WebNLG seen/unseen split.

    Returns:
        {"count", "triples", "correct", "missing", "wrong", "slot_error_rate" ((missing +
        wrong) / triples), "missing_rate", "wrong_binding_rate" (wrong / triples),
        "outputs_with_errors" (share of outputs with a missing or wrong triple),
        "outputs_with_extra_entities" (share), "extra_entities" (total count),
        "no_evidence_rate" (share of triples called correct without any cue evidence)}.
    """
    hypotheses, entries = list(hypotheses), list(entries)
    if len(hypotheses) != len(entries):
        raise ValueError(
            f"Expected one hypothesis per entry. Received: {len(hypotheses)} hypotheses and "
            f"{len(entries)} entries.")
    totals = collections.Counter()
    for hypothesis, entry in zip(hypotheses, entries):
        if isinstance(hypothesis, str):
            judgement = aligner.judge(entry.triples, hypothesis)
        else:
            judgement = aligner.judge_delexicalised(entry.triples, hypothesis)
        totals["triples"] += judgement.num_triples
        totals["correct"] += judgement.num_correct
        totals["missing"] += judgement.num_missing
        totals["wrong"] += judgement.num_wrong
        totals["no_evidence"] += judgement.num_no_evidence
        totals["extra_entities"] += judgement.num_extra_entities
        totals["outputs_with_errors"] += judgement.num_errors > 0
        totals["outputs_with_extra_entities"] += judgement.num_extra_entities > 0
    count, triples = len(entries), totals["triples"]

    def rate(value, denominator):
        return value / denominator if denominator else 0.0

    return {
        "count": count,
        "triples": triples,
        "correct": totals["correct"],
        "missing": totals["missing"],
        "wrong": totals["wrong"],
        "slot_error_rate": rate(totals["missing"] + totals["wrong"], triples),
        "missing_rate": rate(totals["missing"], triples),
        "wrong_binding_rate": rate(totals["wrong"], triples),
        "outputs_with_errors": rate(totals["outputs_with_errors"], count),
        "outputs_with_extra_entities": rate(totals["outputs_with_extra_entities"], count),
        "extra_entities": totals["extra_entities"],
        "no_evidence_rate": rate(totals["no_evidence"], triples),
    }


def slot_error_report(aligner, hypotheses, entries):
    """`slot_error_scores` on all entries and on the seen / unseen categories (`entry.seen`),
    like `evaluation.SUBSETS`; subsets without entries are left out."""
    hypotheses, entries = list(hypotheses), list(entries)
    report = {"all": slot_error_scores(aligner, hypotheses, entries)}
    for name, flag in (("seen", True), ("unseen", False)):
        chosen = [index for index, entry in enumerate(entries) if getattr(entry, "seen", None) is flag]
        if chosen:
            report[name] = slot_error_scores(
                aligner, [hypotheses[i] for i in chosen], [entries[i] for i in chosen])
    return report
