"""Token <-> id mapping shared by the source (linearised triples) and the target (text).

One vocabulary for both sides lets the generator tie its embeddings and copy placeholder
tokens such as `ENT_1` from input to output. Build it from the training split only.
"""

import collections
import json
import pathlib

SPECIAL_TOKENS = ("<pad>", "<unk>", "<bos>", "<eos>")
_FORMAT = "onestep_gan.Vocabulary"


class Vocabulary:
    """Maps tokens to ids; ids 0-3 are the special tokens `<pad>`, `<unk>`, `<bos>`, `<eos>`.

    Args:
        tokens: the ordinary tokens, which get ids 4, 5, ... in this order. Must be strings,
            without duplicates and without the special tokens.

    Example:
    >>> vocabulary = Vocabulary.build([["a", "b", "a"]])
    >>> vocabulary.encode(["a", "c"], add_eos=True)
    [4, 1, 3]
    >>> vocabulary.decode([2, 4, 5, 3, 4])
    ['a', 'b']
    """

    PAD, UNK, BOS, EOS = 0, 1, 2, 3

    def __init__(self, tokens):
        tokens = list(tokens)
        for token in tokens:
            if not isinstance(token, str) or not token:
                raise ValueError(f"Vocabulary tokens must be non-empty strings. Received: {token!r}")
            if token in SPECIAL_TOKENS:
                raise ValueError(
                    f"Vocabulary tokens must not include the special tokens {SPECIAL_TOKENS}, "
                    f"which are added automatically. Received: {token!r}"
                )
        duplicates = sorted(token for token, count in collections.Counter(tokens).items() if count > 1)
        if duplicates:
            raise ValueError(f"Vocabulary tokens must be unique. Received duplicates: {duplicates[:10]}")
        self._id_to_token = [*SPECIAL_TOKENS, *tokens]
        self._token_to_id = {token: index for index, token in enumerate(self._id_to_token)}

    @classmethod
    def build(cls, token_lists, min_count=1, max_size=None):
        """Builds a vocabulary from token sequences.

        Args:
            token_lists: iterable of token sequences (e.g. source and target of each train example).
            min_count: tokens seen fewer times are left out (they encode as `<unk>`).
            max_size: if given, the total size, special tokens included, is at most this.

        Tokens are ordered by count (descending), then alphabetically, so the result is
        deterministic.
        """
        if min_count < 1:
            raise ValueError(f"`min_count` must be >= 1. Received: min_count={min_count}")
        if max_size is not None and max_size < len(SPECIAL_TOKENS):
            raise ValueError(
                f"`max_size` must be at least {len(SPECIAL_TOKENS)} (the special tokens). "
                f"Received: max_size={max_size}"
            )
        counts = collections.Counter(
            token for tokens in token_lists for token in tokens if token not in SPECIAL_TOKENS
        )
        tokens = sorted(
            (token for token, count in counts.items() if count >= min_count),
            key=lambda token: (-counts[token], token),
        )
        if max_size is not None:
            tokens = tokens[: max_size - len(SPECIAL_TOKENS)]
        return cls(tokens)

    def __len__(self):
        return len(self._id_to_token)

    def __contains__(self, token):
        return token in self._token_to_id

    def __eq__(self, other):
        return isinstance(other, Vocabulary) and self._id_to_token == other._id_to_token

    def __repr__(self):
        return f"Vocabulary(size={len(self)})"

    @property
    def tokens(self):
        """All tokens in id order, the 4 special tokens first."""
        return list(self._id_to_token)

    def token_to_id(self, token):
        """Id of `token`, or `UNK` for an unknown token."""
        return self._token_to_id.get(token, self.UNK)

    def id_to_token(self, index):
        """Token of id `index`; raises `ValueError` for an id outside `[0, len(self))`."""
        index = int(index)
        if not 0 <= index < len(self._id_to_token):
            raise ValueError(
                f"Token id out of range: expected 0 <= id < {len(self)}. Received: {index}"
            )
        return self._id_to_token[index]

    def encode(self, tokens, add_bos=False, add_eos=False):
        """Tokens -> ids (unknown tokens -> `UNK`), optionally framed by `BOS` / `EOS`."""
        ids = [self.token_to_id(token) for token in tokens]
        if add_bos:
            ids.insert(0, self.BOS)
        if add_eos:
            ids.append(self.EOS)
        return ids

    def decode(self, ids, strip_special=True):
        """Ids -> tokens.

        With `strip_special`, decoding stops at the first `EOS` and drops `PAD` and `BOS`
        (`UNK` is kept as `<unk>`); without it every id maps to its token.
        """
        tokens = []
        for index in ids:
            index = int(index)
            if strip_special:
                if index == self.EOS:
                    break
                if index in (self.PAD, self.BOS):
                    continue
            tokens.append(self.id_to_token(index))
        return tokens

    def save(self, path):
        """Writes the vocabulary as JSON: `{"format": ..., "tokens": [...all tokens in id order]}`."""
        payload = {"format": _FORMAT, "tokens": self._id_to_token}
        pathlib.Path(path).write_text(json.dumps(payload, ensure_ascii=False, indent=0), encoding="utf-8")

    @classmethod
    def load(cls, path):
        """Reads a vocabulary written by `save`, validating its content."""
        path = pathlib.Path(path)
        try:
            payload = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ValueError(f"Vocabulary file not found. Received: path={str(path)!r}") from None
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise ValueError(f"Vocabulary file {path} is not valid JSON: {error}") from None
        except OSError as error:  # a folder, a path through a file, no permission
            raise ValueError(f"Vocabulary file {path} cannot be read ({error.strerror}).") from None
        if not isinstance(payload, dict) or payload.get("format") != _FORMAT:
            raise ValueError(
                f"Vocabulary file {path}: expected a JSON object with \"format\": \"{_FORMAT}\". "
                f"Received: {str(payload)[:100]}"
            )
        tokens = payload.get("tokens")
        if not isinstance(tokens, list) or tuple(tokens[: len(SPECIAL_TOKENS)]) != SPECIAL_TOKENS:
            raise ValueError(
                f"Vocabulary file {path}: expected \"tokens\" to be a list starting with "
                f"{list(SPECIAL_TOKENS)}. Received: {str(tokens)[:100]}"
            )
        try:
            return cls(tokens[len(SPECIAL_TOKENS) :])
        except ValueError as error:
            raise ValueError(f"Vocabulary file {path}: {error}") from None
