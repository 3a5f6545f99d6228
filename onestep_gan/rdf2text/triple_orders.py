"""The same training entries with their triples in other orders (`MLEConfig.triple_orders`), or
every input's triples in one canonical order (`MLEConfig.canonical_triple_order`).

A WebNLG input is a set of triples, but the linearised source lists them in the corpus's order
and numbers the entity placeholders by first appearance in it, so a model trained on one order
per text can learn that `ENT_1` is the subject the text starts with. Reordered, an entry's
placeholders are numbered anew and each reference is delexicalised with the new numbering;
`datasets.make_training_dataset(orders=...)` then shows each training text in one of its orders
per epoch.

`canonical_order(triples)` goes the other way: one order for every listing of the same set, walked
from the triple graph's root (train and decoding alike), so that `ENT_1` is always the root subject
and the placeholders are numbered by the graph, not by the corpus's listing.

Example:
>>> reordered = reorder_triples(train_entries, seed=1234, variant=1)
>>> [entry.texts for entry in reordered] == [entry.texts for entry in train_entries]
True
"""

import dataclasses

import numpy as np


def reorder_triples(entries, seed, variant):
    """`entries` (`WebNLGEntry`s) with the triples of each in a seeded random order.

    Entry `i`'s order is a permutation drawn by `(seed, variant, i)`: the same for every call,
    another for another `variant` (a one-triple entry, or a draw that happens to keep the order,
    stays as it is). Everything but `triples` is kept, texts and their mentions included.
    """
    if int(variant) < 0:
        raise ValueError(f"Expected a variant >= 0. Received: variant={variant}")
    key = int(seed) % 2**32  # SeedSequence takes non-negative integers only
    reordered = []
    for index, entry in enumerate(entries):
        order = np.random.default_rng([key, int(variant), index]).permutation(len(entry.triples))
        reordered.append(dataclasses.replace(entry, triples=tuple(entry.triples[k] for k in order)))
    return reordered


def canonical_order(triples):
    """`triples` in one order that does not depend on how they are listed: breadth first from a
    root of the triple graph, each entity's triples sorted by predicate, then object.

    A root is a subject that is no triple's object (if every subject is one, a cycle, any
    subject); of several, the one with the most triples first, then by name. Walking from it, each
    entity's triples (as subject) come in order, and their objects that are subjects too are
    walked next, in that order; a part of the graph the walk does not reach starts again from its
    own root. Repeated triples stay, next to each other.

    `B p C ; A q B ; A p D` -> `A p D ; A q B ; B p C` (A is the root; B, reached from it, next).
    """
    triples = tuple(triples)
    by_subject = {}
    for triple in sorted(triples, key=lambda t: (t.predicate, t.object)):
        by_subject.setdefault(triple.subject, []).append(triple)
    objects = {triple.object for triple in triples}
    walked, ordered = set(), []
    while len(walked) < len(by_subject):
        left = [subject for subject in by_subject if subject not in walked]
        roots = [subject for subject in left if subject not in objects] or left
        queue = [min(roots, key=lambda subject: (-len(by_subject[subject]), subject))]
        walked.add(queue[0])
        while queue:
            subject = queue.pop(0)
            for triple in by_subject[subject]:
                ordered.append(triple)
                if triple.object in by_subject and triple.object not in walked:
                    walked.add(triple.object)
                    queue.append(triple.object)
    return tuple(ordered)
