"""The same training entries with their triples in other orders (`MLEConfig.triple_orders`).

A WebNLG input is a set of triples, but the linearised source lists them in the corpus's order
and numbers the entity placeholders by first appearance in it, so a model trained on one order
per text can learn that `ENT_1` is the subject the text starts with. Reordered, an entry's
placeholders are numbered anew and each reference is delexicalised with the new numbering;
`datasets.make_training_dataset(orders=...)` then shows each training text in one of its orders
per epoch.

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
