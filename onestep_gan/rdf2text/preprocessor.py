"""`TextPreprocessor`: WebNLG entries to model ids and model ids back to text.

The one place where text meets ids, both ways:

    entries --delexicalise--> tokens --vocabulary--> EncodedExample (ids, entity map)
    output ids --vocabulary--> tokens --relexicalise, detokenise--> text

It owns the vocabulary, the length limits and the special token ids (from `Vocabulary`:
PAD=0, UNK=1, BOS=2, EOS=3); the models, datasets and decoders take their ids from it
(`preprocessor.special_ids`) rather than from defaults of their own. It also owns whether
predicates are delexicalised (`predicate_placeholders`, `preprocessing` module docstring), so a
run's preprocessor (`runs.preprocessor_for`) encodes new inputs the way its model was trained.
"""

import collections
import dataclasses
import functools
import logging

from onestep_gan.rdf2text import preprocessing, triple_orders
from onestep_gan.rdf2text.vocabulary import SPECIAL_TOKENS, Vocabulary
from onestep_gan.rdf2text.webnlg import Triple, WebNLGEntry

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class EncodedExample:
    """One encoded example.

    Attributes:
        entry_id: id of the WebNLG entry it comes from.
        source_ids: delexicalised linearised triples, as ids (no BOS/EOS).
        target_ids: delexicalised reference text, as ids without BOS/EOS; `None` when
            encoded for decoding.
        entity_map: placeholder -> entity, for `preprocessing.relexicalise`.
        triples: the entry's triples (for judging outputs, e.g. reranking beam candidates).
        predicate_map: predicate placeholder -> predicate words, for `preprocessing.relexicalise`;
            empty without predicate placeholders.
    """

    entry_id: str
    source_ids: tuple
    target_ids: tuple | None
    entity_map: dict
    triples: tuple = ()
    predicate_map: dict = dataclasses.field(default_factory=dict)


class TextPreprocessor:
    """Encodes WebNLG entries for the models and decodes their outputs to text.

    Args:
        vocabulary: the `Vocabulary` shared by source and target.
        max_source_length: longer sources are truncated (the count is logged).
        max_target_length: decoder length, BOS/EOS included: texts longer than
            `max_target_length - 1` tokens are truncated.
        predicate_placeholders: delexicalise predicates too (`PRED_1`, ...), as the run was
            trained (`MLEConfig.predicate_placeholders`); on if and only if the vocabulary
            holds predicate placeholders.
        entity_roles: each entity placeholder of the source followed by its role in the triple
            graph (`<AGENT>`, `<BRIDGE>`, `<PATIENT>`; `MLEConfig.entity_roles`); on if and only
            if the vocabulary holds the role tokens.
        entity_words: an entity's first placeholder in the source followed by up to this many of
            its own tokens (`MLEConfig.entity_words`; 0: none), as the run was trained.

    Example:
    >>> preprocessor = TextPreprocessor.build(train_entries, 64, 72, min_count=2)
    >>> examples = preprocessor.encode_entries(dev_entries, for_training=False)
    >>> text = preprocessor.decode(output_ids, examples[0].entity_map)
    """

    def __init__(self, vocabulary, max_source_length, max_target_length, predicate_placeholders=False,
                 entity_roles=False, entity_words=0, canonical_order=False):
        if int(max_source_length) < 1 or int(max_target_length) < 2:
            raise ValueError(
                "Expected max_source_length >= 1 and max_target_length >= 2. Received: "
                f"max_source_length={max_source_length}, max_target_length={max_target_length}"
            )
        self.vocabulary = vocabulary
        self.max_source_length = int(max_source_length)
        self.max_target_length = int(max_target_length)
        self.predicate_placeholders = bool(predicate_placeholders)
        self.entity_roles = bool(entity_roles)
        if int(entity_words) < 0:
            raise ValueError(f"Expected entity_words >= 0. Received: entity_words={entity_words}")
        self.entity_words = int(entity_words)
        # Each input's triples in `triple_orders.canonical_order` before delexicalisation (source and
        # references alike), so the placeholders are numbered by the triple graph.
        self.canonical_order = bool(canonical_order)
        # Sources with roles hold <AGENT> or <PATIENT> (every triple set has a subject and an object).
        if self.entity_roles != (preprocessing.PATIENT_TOKEN in vocabulary):
            holds = "holds" if preprocessing.PATIENT_TOKEN in vocabulary else "has no"
            raise ValueError(
                f"The vocabulary {holds} entity role tokens (<AGENT>, ...): its run was trained with "
                f"entity_roles={not self.entity_roles}. Received: entity_roles={self.entity_roles}"
            )
        # Every source of a run with predicate placeholders holds PRED_1, so its vocabulary does.
        if self.predicate_placeholders != bool(self.predicate_placeholder_ids):
            holds = "holds" if self.predicate_placeholder_ids else "has no"
            raise ValueError(
                f"The vocabulary {holds} predicate placeholders (PRED_1, ...): its run was trained with "
                f"predicate_placeholders={not self.predicate_placeholders}. "
                f"Received: predicate_placeholders={self.predicate_placeholders}"
            )

    @classmethod
    def build(
        cls, train_entries, max_source_length, max_target_length, min_count=1, max_size=None,
        predicate_placeholders=False, entity_roles=False, entity_words=0, canonical_order=False,
    ):
        """A preprocessor whose vocabulary holds the source and target tokens of `train_entries`
        (one text per reference). Build it from train only: dev/test words then encode as UNK,
        as they would for any new input. Placeholders get in like other tokens, by their
        counts, which are high: every source holds `ENT_1`, `ENT_2` and, with
        `predicate_placeholders`, `PRED_1`.

        With `entity_words`, an entity's words count apart: a word gets in if it is a word of at
        least `ENTITY_WORD_MIN_ENTITIES` distinct train entities ("Texas", "FC", "language"), after
        the other tokens (within `max_size`); a word of one entity alone ("Abilene") says nothing of the kind of value
        and would only grow the output layer: it reads as UNK."""
        token_lists = []
        for _, example in _delexicalise(
                train_entries, True, predicate_placeholders, entity_roles, canonical_order=canonical_order):
            token_lists.append(example.source_tokens)
            token_lists.append(example.target_tokens)
        vocabulary = Vocabulary.build(token_lists, min_count=min_count, max_size=max_size)
        if entity_words:
            words = [word for word in _entity_words(train_entries, entity_words) if word not in vocabulary]
            if max_size is not None:
                words = words[: max(0, max_size - len(vocabulary))]
            vocabulary = Vocabulary(vocabulary.tokens[len(SPECIAL_TOKENS):] + words)
        return cls(vocabulary, max_source_length, max_target_length, predicate_placeholders=predicate_placeholders,
                   entity_roles=entity_roles, entity_words=entity_words, canonical_order=canonical_order)

    pad_id, unk_id, bos_id, eos_id = Vocabulary.PAD, Vocabulary.UNK, Vocabulary.BOS, Vocabulary.EOS

    @property
    def special_ids(self):
        """`{"pad_id", "bos_id", "eos_id"}`, the keyword arguments of the models and decoders."""
        return {"pad_id": self.pad_id, "bos_id": self.bos_id, "eos_id": self.eos_id}

    @property
    def vocabulary_size(self):
        return len(self.vocabulary)

    @property
    def placeholder_ids(self):
        """Ids of the entity placeholders (`ENT_1`, ...) in the vocabulary, in id order (what
        hard negatives swap and move)."""
        return tuple(
            index for index, token in enumerate(self.vocabulary.tokens) if preprocessing.is_placeholder(token)
        )

    @property
    def predicate_placeholder_ids(self):
        """Ids of the predicate placeholders (`PRED_1`, ...) in the vocabulary, in id order;
        empty without predicate placeholders."""
        return tuple(
            index for index, token in enumerate(self.vocabulary.tokens)
            if preprocessing.is_predicate_placeholder(token)
        )

    @property
    def copy_ids(self):
        """The ids a copying `TransformerGenerator` points to in the source (its
        `placeholder_ids`), in id order: the entity placeholders and, with predicate
        placeholders, the predicate ones."""
        return tuple(sorted(self.placeholder_ids + self.predicate_placeholder_ids))

    def predicate_word_mask(self, source_ids):
        """One flag per source position: True for a word of a predicate (after `<P>` and its
        `PRED_k`, before `<O>`), what `MLEConfig.predicate_word_dropout` may replace by UNK.
        Words of unseen categories' predicates are often UNK; training with such dropout shows
        the model that case."""
        predicate_token, object_token, keep = self._predicate_span_ids
        flags, inside = [], False
        for token in source_ids:
            if token in (predicate_token, object_token):
                inside = token == predicate_token
                flags.append(False)
            else:
                flags.append(inside and token not in keep)
        return tuple(flags)

    @functools.cached_property
    def _predicate_span_ids(self):
        """`(<P> id, <O> id, predicate placeholder ids)` for `predicate_word_mask`, looked up once
        (the placeholder ids take a pass over the vocabulary)."""
        predicate_token, object_token = (
            self.vocabulary.token_to_id(token) if token in self.vocabulary else None
            for token in (preprocessing.PREDICATE_TOKEN, preprocessing.OBJECT_TOKEN)
        )
        return predicate_token, object_token, frozenset(self.predicate_placeholder_ids)

    def encode_entries(self, entries, for_training):
        """Entries -> `EncodedExample`s: one per reference text if `for_training`, else one per
        entry without target."""
        return self._encode(_delexicalise(
            entries, for_training, self.predicate_placeholders, self.entity_roles, self.entity_words,
            self.canonical_order))

    def encode_triples(self, triple_sets, names=None):
        """Sets of triples (`Triple`s or `(subject, predicate, object)` tuples, WebNLG spelling)
        -> one `EncodedExample` per set, for decoding. `names` (one per set; default "input/INDEX")
        are the examples' ids, which warnings name ("triples.txt, line 8")."""
        if names is not None and len(names) != len(triple_sets):
            raise ValueError(f"Expected one name per set of triples ({len(triple_sets)}). Received: {len(names)}")
        entries = []
        for index, triples in enumerate(triple_sets):
            triples = tuple(triple if isinstance(triple, Triple) else Triple(*triple) for triple in triples)
            if not triples:
                raise ValueError(
                    f"Expected at least one triple per set. Received: an empty set at index {index}."
                )
            name = f"input/{index}" if names is None else names[index]
            entries.append(WebNLGEntry(name, "", len(triples), triples, ()))
        return self.encode_entries(entries, for_training=False)

    def decode(self, ids, entity_map, predicate_map=None):
        """Output ids (after BOS; stops at EOS) -> relexicalised, detokenised text."""
        return self.relexicalise(self.vocabulary.decode(ids), entity_map, predicate_map)

    @staticmethod
    def relexicalise(tokens, entity_map, predicate_map=None):
        """Delexicalised output tokens -> text with the entities (and predicates) put back,
        detokenised."""
        return preprocessing.detokenize(preprocessing.relexicalise(tokens, entity_map, predicate_map))

    def _encode(self, delexicalised_pairs):
        examples, truncated, unknown = [], 0, {}
        for entry, delexicalised in delexicalised_pairs:
            source_ids = self.vocabulary.encode(delexicalised.source_tokens)
            for token in delexicalised.source_tokens:  # ENT_9 of a model trained on at most 8 entities
                placeholder = preprocessing.is_placeholder(token) or preprocessing.is_predicate_placeholder(token)
                if placeholder and token not in self.vocabulary:
                    unknown.setdefault(token, entry.entry_id)
            target_ids = None
            if delexicalised.target_tokens is not None:
                target_ids = self.vocabulary.encode(delexicalised.target_tokens)
                if len(target_ids) > self.max_target_length - 1:  # room for BOS / EOS
                    target_ids = target_ids[: self.max_target_length - 1]
                    truncated += 1
                target_ids = tuple(target_ids)
            if len(source_ids) > self.max_source_length:
                source_ids = source_ids[: self.max_source_length]
                truncated += 1
            examples.append(
                EncodedExample(
                    entry.entry_id, tuple(source_ids), target_ids, dict(delexicalised.entity_map),
                    tuple(entry.triples), dict(delexicalised.predicate_map),
                )
            )
        if truncated:
            logger.warning("Truncated %d of %d sequences to the maximum lengths.", truncated, len(examples))
        if unknown:
            by_number = sorted(unknown, key=lambda token: (token.rstrip("0123456789"), int(token.rsplit("_", 1)[1])))
            logger.warning(
                "Placeholders the model never saw in training: %s (first in %s). It cannot write the "
                "entities or relations they stand for: the text leaves them out.",
                ", ".join(by_number), next(iter(unknown.values())),
            )
        return examples


ENTITY_WORD_MIN_ENTITIES = 2


def _entity_words(entries, entity_words):
    """The words (the first `entity_words` tokens) of at least `ENTITY_WORD_MIN_ENTITIES` distinct
    entities of `entries`, most frequent first, then alphabetically."""
    entities = {
        preprocessing.normalise_entity(value)
        for entry in entries for triple in entry.triples for value in (triple.subject, triple.object)
    }
    counts = collections.Counter(
        word for entity in entities for word in set(preprocessing.tokenize(entity)[:entity_words])
    )
    return sorted(
        (word for word, count in counts.items() if count >= ENTITY_WORD_MIN_ENTITIES),
        key=lambda word: (-counts[word], word),
    )


def _delexicalise(entries, for_training, predicate_placeholders=False, entity_roles=False, entity_words=0,
                  canonical_order=False):
    """Entries -> `(entry, DelexicalisedExample)` pairs: one per reference text for training,
    else one per entry without target tokens. With `canonical_order` each entry's triples are put
    in `triple_orders.canonical_order` first, and the pair's entry holds them in that order: the
    reranker numbers the placeholders of `EncodedExample.triples` as the source does."""
    pairs = []
    for entry in entries:
        if canonical_order:
            entry = dataclasses.replace(entry, triples=triple_orders.canonical_order(entry.triples))
        triples = entry.triples
        if for_training:
            mentions = entry.mentions or ((),) * len(entry.texts)
            pairs.extend(
                (entry, preprocessing.delexicalise(
                    triples, text, predicate_placeholders, text_mentions, entity_roles=entity_roles,
                    entity_words=entity_words))
                for text, text_mentions in zip(entry.texts, mentions, strict=True)
            )
        else:
            pairs.append((entry, preprocessing.delexicalise(
                triples, None, predicate_placeholders, entity_roles=entity_roles, entity_words=entity_words)))
    return pairs
