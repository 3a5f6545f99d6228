"""Reranking of beam candidates by the facts they get wrong.

Beam search ranks texts by likelihood, and a likely text can still bind a value to the wrong
triple. `SlotErrorReranker` scores every final beam candidate (delexicalised tokens, before the
entities are put back) by

    slot errors (input triples the `SlotAligner` finds missing or bound to the wrong triple)
    + placeholders the input does not have (invented entities)
    + repeated placeholders (the same entity stated twice)

and keeps the candidate with the fewest, ties going to the more likely one (beam order). With
no errors among the candidates this is plain beam search.
"""

import collections

from onestep_gan.rdf2text import preprocessing


class SlotErrorReranker:
    """Picks, among beam candidates, the one with the fewest slot and placeholder errors.

    Args:
        aligner: a `faithfulness.SlotAligner` mined from the training references.
        min_foreign: None, or the aligner's `min_foreign` for reranking: a value stated under a
            relation the input does not have counts as a slot error too.

    Example:
    >>> reranker = SlotErrorReranker(SlotAligner.from_entries(train_entries))
    >>> best = reranker.choose(triples, [["ENT_1", "was", "born", "in", "ENT_2", "."], ...])
    """

    def __init__(self, aligner, min_foreign=None):
        if min_foreign is not None:
            aligner = aligner.with_settings(min_foreign=min_foreign)
        self.aligner = aligner

    def errors(self, triples, tokens, entity_map):
        """The error count of one candidate (delexicalised `tokens`, the input's `entity_map`)."""
        placeholders = [token for token in tokens if preprocessing.is_placeholder(token)]
        invented = sum(placeholder not in entity_map for placeholder in placeholders)
        repeated = sum(count - 1 for count in collections.Counter(placeholders).values() if count > 1)
        judgement = self.aligner.judge_delexicalised(triples, list(tokens))
        return judgement.num_errors + invented + repeated

    def choose(self, triples, candidates, entity_map):
        """Index of the candidate (token lists, most likely first) with the fewest errors."""
        if not candidates:
            raise ValueError("Expected at least one candidate. Received: none.")
        errors = [self.errors(triples, tokens, entity_map) for tokens in candidates]
        return min(range(len(candidates)), key=lambda index: (errors[index], index))
