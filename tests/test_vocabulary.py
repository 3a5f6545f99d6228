import json

import pytest

from onestep_gan.rdf2text.vocabulary import Vocabulary


def test_specials_and_ids():
    vocabulary = Vocabulary(["a", "b"])
    assert (Vocabulary.PAD, Vocabulary.UNK, Vocabulary.BOS, Vocabulary.EOS) == (0, 1, 2, 3)
    assert vocabulary.tokens == ["<pad>", "<unk>", "<bos>", "<eos>", "a", "b"]
    assert len(vocabulary) == 6 and "a" in vocabulary and "c" not in vocabulary
    assert vocabulary.token_to_id("b") == 5 and vocabulary.token_to_id("c") == Vocabulary.UNK
    assert vocabulary.id_to_token(3) == "<eos>"
    with pytest.raises(ValueError, match="0 <= id < 6. Received: 6"):
        vocabulary.id_to_token(6)


@pytest.mark.parametrize("tokens, message", [
    (["a", "b", "a"], "unique.*'a'"),
    (["<unk>"], "special tokens"),
    (["a", ""], "non-empty strings"),
])
def test_invalid_tokens(tokens, message):
    with pytest.raises(ValueError, match=message):
        Vocabulary(tokens)


def test_build_orders_by_count_then_token():
    token_lists = [["b", "a", "c"], ["c", "a", "d"], ["c", "<pad>"]]
    assert Vocabulary.build(token_lists).tokens[4:] == ["c", "a", "b", "d"]
    assert Vocabulary.build(token_lists, min_count=2).tokens[4:] == ["c", "a"]
    assert Vocabulary.build(token_lists, max_size=5).tokens[4:] == ["c"]
    with pytest.raises(ValueError, match="max_size=3"):
        Vocabulary.build(token_lists, max_size=3)


def test_encode_decode():
    vocabulary = Vocabulary(["a", "b"])
    assert vocabulary.encode(["a", "z", "b"], add_bos=True, add_eos=True) == [2, 4, 1, 5, 3]
    assert vocabulary.decode([2, 4, 0, 1, 5, 3, 4]) == ["a", "<unk>", "b"]
    assert vocabulary.decode([2, 4, 3, 0], strip_special=False) == ["<bos>", "a", "<eos>", "<pad>"]


def test_save_load_round_trip(tmp_path):
    vocabulary = Vocabulary(["ENT_1", "Zürich", "<S>"])
    vocabulary.save(tmp_path / "vocab.json")
    assert Vocabulary.load(tmp_path / "vocab.json") == vocabulary


@pytest.mark.parametrize("content, message", [
    ("{not json", "not valid JSON"),
    ('["a"]', "expected a JSON object"),
    (json.dumps({"format": "onestep_gan.Vocabulary", "tokens": ["a"]}), "starting with"),
    (json.dumps({"format": "onestep_gan.Vocabulary",
                 "tokens": ["<pad>", "<unk>", "<bos>", "<eos>", "a", "a"]}), "unique"),
])
def test_load_rejects_bad_files(tmp_path, content, message):
    path = tmp_path / "vocab.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=message):
        Vocabulary.load(path)
    with pytest.raises(ValueError, match="not found"):
        Vocabulary.load(tmp_path / "missing.json")
