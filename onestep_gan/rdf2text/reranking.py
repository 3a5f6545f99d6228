"""Reranking of beam candidates by the facts they get wrong.

Beam search ranks texts by likelihood, and a likely text can still bind a value to the wrong
triple. `SlotErrorReranker` scores every final beam candidate (delexicalised tokens, before the
entities are put back) by

    slot errors (input triples the `SlotAligner` finds missing or bound to the wrong triple)
    + placeholders the input does not have (invented entities)
    + repeated placeholders (the same entity stated twice)

and keeps the candidate with the fewest, ties going to the more likely one (beam order). With
no errors among the candidates this is plain beam search. Given a `preference` per candidate, ties
go to the one it prefers instead: `inference.discriminator_preference` gives the beam score plus a
weight times an adversarial run's discriminator score (`MLEConfig.rerank_discriminator_weight`).

With `subjects="ties"`, ties on that count go first to the candidate that states fewer relations of
an input entity that is not their subject ("The capital of Alfa Romeo 164 is Rome" for `Italy
capital Rome`; `SlotAligner(subjects=True)`); with `subjects="errors"` each counts as a slot error.

With `value_shapes`, the aligner lets a rival relation bind a value of a triple without mined cues
only if the rival's train objects take the value's shape (`SlotAligner(value_shapes=True)`).

With `attachments`, a value attached to another input relation's own words ("The diameter of
Ariane 5 is Guiana Space Centre" for `launchSite`; `SlotAligner(attachments=True)`) is a slot error.

With `mbr_preference` as the `preference`, ties go to the **consensus** candidate: the one whose
n-grams the rest of the beam shares most, weighted by the beam's own probabilities (minimum Bayes
risk decoding over the beam, with an n-gram F1 as the utility; `MLEConfig.rerank_mbr`).

With `stated_relations`, ties on that count go on to the candidate that leaves fewer
**unstated relations**: triples whose predicate the training references never showed
(`SlotAligner.knows_predicate` is false, as for most predicates of WebNLG's unseen categories) and
whose value the text mentions without any word of the predicate near it. For such a triple
the aligner can only say "correct, no evidence", and the model, not knowing the relation,
falls back on a frequent one: "The Alvis Speed 25 is in the Straight-six engine" for
`engine`, where another candidate says "has the engine Straight-six engine".
With `unstated_as_errors` as well, each unstated relation counts as a slot error (the ties then
go to the fewer unstated relations among texts of equal count): a text that states one relation
unseen in training by a guess no longer beats, on slot errors alone, one that leaves a value out
and states the relations it writes in their own words. Off by default: on held-out categories it
made the reranker leave values out rather than state their relations (docs/webnlg_levers.md, h3).
"""

import collections

import numpy as np

from onestep_gan.rdf2text import preprocessing
from onestep_gan.rdf2text.config import RERANK_SUBJECTS


class SlotErrorReranker:
    """Picks, among beam candidates, the one with the fewest slot and placeholder errors.

    Args:
        aligner: a `faithfulness.SlotAligner` mined from the training references.
        min_foreign: None, or the aligner's `min_foreign` for reranking: a value stated under a
            relation the input does not have counts as a slot error too.
        stated_relations: break ties on errors by the fewest unstated relations (above).
        unstated_as_errors: count each unstated relation as an error too (needs
            `stated_relations`).
        subjects: relations stated of an input entity that is not their subject
            (`SlotAligner(subjects=True)`: "The capital of Alfa Romeo 164 is Rome"): "errors" counts
            each as a slot error; "ties" breaks ties on slot errors by the fewest of them (before
            `stated_relations`); "off" (or False) ignores them.
        attachments: count values attached to another input relation's own words as slot errors
            (`SlotAligner(attachments=True)`).
        value_shapes: judge with `SlotAligner(value_shapes=True)` (the aligner needs mined shapes).
        foreign_known_only: with `min_foreign`, look for relations outside the input only for triples
            whose predicate mining met (`SlotAligner(foreign_known_only=True)`).
        inversions: count relations stated the wrong way round in their own words as slot errors
            (`SlotAligner(inversions=True)`: "ENT_1 is the birth place of ENT_2" for `ENT_1 birthPlace ENT_2`).
        of_phrases: read a right-way "the P of ENT_1 is ENT_2" as right, not as a swap
            (`SlotAligner(of_phrases=True)`).
        opposed: with `min_foreign`, count a value stated in the words of the relation of opposed meaning
            as a slot error ("born on" for a death date; `SlotAligner(opposed=True)`).

    Example:
    >>> reranker = SlotErrorReranker(SlotAligner.from_entries(train_entries))
    >>> best = reranker.choose(triples, [["ENT_1", "was", "born", "in", "ENT_2", "."], ...], entity_map)
    """

    def __init__(self, aligner, min_foreign=None, stated_relations=False, unstated_as_errors=False, subjects="off",
                 attachments=False, value_shapes=False, foreign_known_only=False, inversions=False,
                 of_phrases=False, opposed=False):
        if unstated_as_errors and not stated_relations:
            raise ValueError(
                "`unstated_as_errors` counts unstated relations, which needs `stated_relations=True`. "
                f"Received: stated_relations={stated_relations!r}, unstated_as_errors={unstated_as_errors!r}"
            )
        subjects = {False: "off", True: "errors"}.get(subjects, subjects)
        if subjects not in RERANK_SUBJECTS:
            raise ValueError(f"`subjects` must be one of {list(RERANK_SUBJECTS)}. Received: subjects={subjects!r}")
        settings = {"min_foreign": min_foreign} if min_foreign is not None else {}
        settings.update((name, True) for name, on in (
            ("subjects", subjects != "off"), ("attachments", attachments), ("value_shapes", value_shapes),
            ("foreign_known_only", foreign_known_only), ("inversions", inversions), ("of_phrases", of_phrases),
            ("opposed", opposed))
            if on)
        if settings:  # one copy of the aligner, whatever the number of settings
            aligner = aligner.with_settings(**settings)
        self.aligner = aligner
        self.subjects = subjects
        self.stated_relations = bool(stated_relations)
        self.unstated_as_errors = bool(unstated_as_errors)
        self.attachments = bool(attachments)

    @classmethod
    def from_config(cls, aligner, config):
        """The reranker an `MLEConfig` asks for (`rerank_min_foreign`, `rerank_stated_relations`,
        `rerank_unstated_as_errors`, `rerank_subjects`, `rerank_attachments`, `rerank_value_shapes`,
        `rerank_foreign_known_only`, `rerank_inversions`, `rerank_of_phrases`, `rerank_opposed`)."""
        return cls(aligner, min_foreign=config.rerank_min_foreign, stated_relations=config.rerank_stated_relations,
                   unstated_as_errors=config.rerank_unstated_as_errors, subjects=config.rerank_subjects,
                   attachments=config.rerank_attachments, value_shapes=config.rerank_value_shapes,
                   foreign_known_only=config.rerank_foreign_known_only, inversions=config.rerank_inversions,
                   of_phrases=config.rerank_of_phrases, opposed=config.rerank_opposed)

    def errors(self, triples, tokens, entity_map):
        """The error count of one candidate (delexicalised `tokens`, the input's `entity_map`)."""
        return self._rank(triples, tokens, entity_map)[0]

    def unstated_relations(self, triples, tokens):
        """Triples of a predicate without mined cues whose value `tokens` mention without any
        word of the predicate near it (module docstring)."""
        judgement = self.aligner.judge_delexicalised(triples, list(tokens))
        return self._unstated(judgement)

    def _unstated(self, judgement):
        return sum(
            triple.label == "correct" and triple.own <= 0
            and not self.aligner.knows_predicate(triple.triple.predicate)
            for triple in judgement.triples
        )

    def _rank(self, triples, tokens, entity_map):
        placeholders = [token for token in tokens if preprocessing.is_placeholder(token)]
        invented = sum(placeholder not in entity_map for placeholder in placeholders)
        repeated = sum(count - 1 for count in collections.Counter(placeholders).values() if count > 1)
        judgement = self.aligner.judge_delexicalised(triples, list(tokens))
        unstated = self._unstated(judgement) if self.stated_relations else 0
        errors = judgement.num_errors + invented + repeated + (unstated if self.unstated_as_errors else 0)
        wrong_subjects = 0
        if self.subjects == "ties":  # a tie-breaker only: not among the errors
            wrong_subjects = sum(triple.wrong_subject for triple in judgement.triples)
            errors -= wrong_subjects
        return errors, wrong_subjects, unstated

    def choose(self, triples, candidates, entity_map, preference=None):
        """Index of the candidate (token lists, most likely first) with the fewest errors (with
        `unstated_as_errors`, unstated relations included; then, with `subjects="ties"`, the fewest
        relations of the wrong subject; then, with `stated_relations`, the fewest unstated relations). Ties go to the highest
        `preference` (one number per candidate), else to the more likely (the first)."""
        if not candidates:
            raise ValueError("Expected at least one candidate. Received: none.")
        if preference is not None and len(preference) != len(candidates):
            raise ValueError(
                f"Expected one preference per candidate ({len(candidates)}). Received: {len(preference)}"
            )
        ranks = [self._rank(triples, tokens, entity_map) for tokens in candidates]
        if preference is None:
            return min(range(len(candidates)), key=lambda index: (ranks[index], index))
        return min(range(len(candidates)), key=lambda index: (ranks[index], -preference[index], index))


def ngram_counts(tokens, max_order=4):
    """`[Counter of 1-grams, ..., Counter of max_order-grams]` of a token sequence."""
    tokens = tuple(tokens)
    return [
        collections.Counter(tokens[start:start + order] for start in range(len(tokens) - order + 1))
        for order in range(1, max_order + 1)
    ]


def ngram_f1(counts, other_counts):
    """The mean over n-gram orders of the F1 of two `ngram_counts` (clipped matches: the n-grams
    both hold, each as often as the rarer holds it). Orders neither sequence is long enough for are
    left out of the mean; two empty sequences score 1."""
    scores = []
    for grams, other in zip(counts, other_counts):
        total = sum(grams.values()) + sum(other.values())
        if total:
            matches = sum(min(count, other[gram]) for gram, count in grams.items() if gram in other)
            scores.append(2.0 * matches / total)
    return sum(scores) / len(scores) if scores else 1.0


def mbr_preference(eos_id, pad_id, max_order=4):
    """`fn(source_ids, candidate_ids, beam_scores) -> (batch, beam)` preferences for
    `SlotErrorReranker.choose`: each candidate's expected `ngram_f1` against the beam, the
    expectation weighted by the softmax of the beam's length-normalised scores (every candidate,
    itself included). The consensus candidate, not the most likely one, wins a tie on errors.

    Candidates are compared as token ids up to their first EOS (or PAD): delexicalised, so two
    texts that differ only in which value sits in a slot differ in their placeholders' ids.
    """

    def tokens(ids):
        ids = list(ids)
        for stop in (eos_id, pad_id):
            if stop in ids:
                ids = ids[: ids.index(stop)]
        return ids

    def preference(source_ids, candidate_ids, beam_scores):
        candidate_ids = np.asarray(candidate_ids)
        beam_scores = np.asarray(beam_scores, dtype="float64")
        preferences = np.zeros(beam_scores.shape, dtype="float64")
        for row in range(candidate_ids.shape[0]):
            scores = beam_scores[row]
            finite = np.isfinite(scores)
            if not finite.any():
                continue
            weights = np.where(finite, np.exp(scores - scores[finite].max()), 0.0)
            weights /= weights.sum()
            counts = [ngram_counts(tokens(ids), max_order) for ids in candidate_ids[row]]
            similarity = np.ones((len(counts), len(counts)))  # symmetric: each pair scored once
            for index, other_index in zip(*np.triu_indices(len(counts), k=1)):
                similarity[index, other_index] = similarity[other_index, index] = ngram_f1(
                    counts[index], counts[other_index])
            for index in range(len(counts)):
                preferences[row, index] = sum(
                    weight * similarity[index, other] for other, weight in enumerate(weights) if weight > 0
                )
        return preferences

    return preference
