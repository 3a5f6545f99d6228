"""Hard negatives on exact token strings."""

import numpy as np
from keras import ops

from onestep_gan.rdf2text.hard_negatives import build_negatives, drop_clause, move_value, swap_placeholders

TOKENS = ["<pad>", "<unk>", "<bos>", "<eos>", "ENT_1", "ENT_2", "ENT_3", "ENT_4",
          "was", "born", "in", "and", "worked", "as", "a", ".", ",", "<S>", "<P>", "<O>"]
ID = {token: index for index, token in enumerate(TOKENS)}
PLACEHOLDERS = [ID["ENT_1"], ID["ENT_2"], ID["ENT_3"], ID["ENT_4"]]
BOUNDARIES = [ID[","], ID["and"], ID["."]]


def encode(texts, length=14):
    rows = [[ID[token] for token in text.split()] + [ID["<eos>"]] for text in texts]
    return np.array([row + [0] * (length - len(row)) for row in rows], dtype="int32")


def decode(ids):
    return [" ".join(TOKENS[i] for i in row if i != 0).replace(" <eos>", "") for row in ops.convert_to_numpy(ids)]


TEXTS = encode([
    "ENT_1 was born in ENT_2 and worked as a ENT_3 .",
    "ENT_1 was born in ENT_2 .",
    "ENT_2 was born .",
])
SOURCES = encode([
    "<S> ENT_1 <P> born <O> ENT_2 <S> ENT_1 <P> worked <O> ENT_3",
    "<S> ENT_1 <P> born <O> ENT_2 <S> ENT_1 <P> worked <O> ENT_3",
    "<S> ENT_2 <P> born <O> ENT_4",
], length=14)


def test_swap_placeholders():
    negatives, valid = swap_placeholders(TEXTS, PLACEHOLDERS)
    assert decode(negatives) == [
        "ENT_2 was born in ENT_1 and worked as a ENT_3 .",
        "ENT_2 was born in ENT_1 .",
        "ENT_2 was born .",  # one placeholder: unchanged, not valid
    ]
    assert ops.convert_to_numpy(valid).tolist() == [True, True, False]


def test_move_value_prefers_a_placeholder_the_text_does_not_mention():
    negatives, valid = move_value(TEXTS, SOURCES, PLACEHOLDERS)
    assert decode(negatives) == [
        "ENT_1 was born in ENT_2 and worked as a ENT_1 .",  # all mentioned: the lowest other one
        "ENT_1 was born in ENT_3 .",  # ENT_3 is in the source, not in the text
        "ENT_4 was born .",
    ]
    assert ops.convert_to_numpy(valid).tolist() == [True, True, True]


def test_drop_clause_cuts_the_last_placeholders_clause():
    negatives, valid = drop_clause(TEXTS, PLACEHOLDERS, BOUNDARIES, pad_id=0)
    assert decode(negatives) == [
        "ENT_1 was born in ENT_2 .",
        "ENT_1 .",
        "ENT_2 was born .",
    ]
    assert ops.convert_to_numpy(valid).tolist() == [True, True, False]
    assert ops.convert_to_numpy(negatives).shape == TEXTS.shape


def test_build_negatives_gives_every_type_from_its_own_builder():
    """Each type is its builder's output on the same texts (the keys alone held for any wiring: the move
    builder's texts and sources swapped, or the placeholders passed as boundaries, went unnoticed)."""
    negatives = build_negatives(TEXTS, SOURCES, PLACEHOLDERS, BOUNDARIES, pad_id=0)
    assert list(negatives) == ["swap", "move", "drop"]
    expected = {
        "swap": swap_placeholders(TEXTS, PLACEHOLDERS),
        "move": move_value(TEXTS, SOURCES, PLACEHOLDERS),
        "drop": drop_clause(TEXTS, PLACEHOLDERS, BOUNDARIES, pad_id=0),
    }
    for name, (texts, valid) in negatives.items():
        assert decode(texts) == decode(expected[name][0]), name
        assert ops.convert_to_numpy(valid).tolist() == ops.convert_to_numpy(expected[name][1]).tolist(), name
    assert decode(negatives["move"][0])[1] == "ENT_1 was born in ENT_3 ."
    assert decode(negatives["drop"][0]) == ["ENT_1 was born in ENT_2 .", "ENT_1 .", "ENT_2 was born ."]


def test_move_value_without_another_placeholder_leaves_the_text_and_is_not_a_negative():
    """With no other placeholder in the source to move the value to, the text is kept and marked invalid (not a
    text naming a placeholder the source lacks)."""
    texts = encode(["ENT_2 was born ."])
    sources = encode(["<S> ENT_2 <P> born"])
    negatives, valid = move_value(texts, sources, PLACEHOLDERS)
    assert decode(negatives) == ["ENT_2 was born ."]
    assert ops.convert_to_numpy(valid).tolist() == [False]
