"""MLE training of the RDF-to-text generator on WebNLG, checkpoint selection, decoding, scoring.

`train_and_evaluate(config, data_dir, run_dir)` is the whole job:

1. load WebNLG train/dev/test, delexicalise, build the vocabulary from train only, encode;
2. `model.compile` + `model.fit` on the bucketed `tf.data` pipeline with label-smoothed
   cross-entropy that ignores PAD, Adam with linear warmup then cosine decay, and the
   Keras callbacks `ModelCheckpoint(save_best_only=True)` on the dev loss, `BackupAndRestore`
   (rerunning an interrupted run resumes at the epoch where it stopped), `TensorBoard`,
   `EarlyStopping` and `SampleGenerationLogger` (a few dev generations per epoch);
3. reload the best checkpoint, decode dev and test (beam search by default), relexicalise,
   detokenise and score with `evaluation.write_report`.

Files written to `run_dir`: `config.json`, `vocabulary.json`, `model.keras` (best dev loss),
`{dev,test}_hypotheses.txt`, `{dev,test}_scores.{json,md}`, `timing.json`, `summary.md`,
`tensorboard/`; `backup/` exists only while training is unfinished.

References:
- Szegedy et al., 2016. Rethinking the Inception Architecture (label smoothing).
- Vaswani et al., 2017. Attention Is All You Need (warmup; label smoothing 0.1).
- Loshchilov & Hutter, 2017. SGDR (cosine decay).
"""

import dataclasses
import importlib.util
import json
import logging
import pathlib
import random
import time

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from onestep_gan.rdf2text import decoding, evaluation, pipeline, preprocessing, webnlg
from onestep_gan.rdf2text.transformer import TransformerGenerator
from onestep_gan.rdf2text.vocabulary import Vocabulary

logger = logging.getLogger(__name__)

CONFIG_FILE = "config.json"
VOCABULARY_FILE = "vocabulary.json"
MODEL_FILE = "model.keras"
TIMING_FILE = "timing.json"
SUMMARY_FILE = "summary.md"


@keras.saving.register_keras_serializable(package="onestep_gan")
class LabelSmoothedSparseCrossEntropy(keras.losses.Loss):
    """Sparse categorical cross-entropy from logits, with label smoothing, ignoring one class.

    Per token, with `p = softmax(logits)` over `K` classes and smoothing `eps`, the target
    distribution is `(1 - eps) * onehot(y) + eps / K` (Keras' convention), so

        loss = (1 - eps) * (-log p_y) + eps * mean_k(-log p_k).

    Tokens whose label is `ignore_class` (PAD) contribute 0; with the default
    `"sum_over_batch_size"` reduction the loss is the mean over the other tokens, with `"sum"`
    their sum, with `"none"` the per-token losses (0 at ignored tokens).
    `keras.losses.SparseCategoricalCrossentropy(ignore_class=...)` has no label smoothing.

    Args:
        label_smoothing: `eps` in [0, 1).
        ignore_class: label id left out of the loss (PAD = 0), or None.
        reduction, name, dtype: as `keras.losses.Loss`.

    Call arguments:
        y_true: int labels `(batch, length)`.
        y_pred: logits `(batch, length, classes)`.
    """

    def __init__(
        self,
        label_smoothing=0.1,
        ignore_class=0,
        reduction="sum_over_batch_size",
        name="label_smoothed_sparse_cross_entropy",
        dtype=None,
    ):
        super().__init__(name=name, reduction=reduction, dtype=dtype)
        if not 0.0 <= float(label_smoothing) < 1.0:
            raise ValueError(
                f"`label_smoothing` must be in [0, 1). Received: label_smoothing={label_smoothing}"
            )
        self.label_smoothing = float(label_smoothing)
        self.ignore_class = None if ignore_class is None else int(ignore_class)

    def call(self, y_true, y_pred):
        labels = ops.cast(y_true, "int32")
        log_probs = ops.log_softmax(ops.cast(y_pred, "float32"), axis=-1)  # (batch, length, classes)
        # An ignored label may be any id; clip so that the gather stays in range.
        safe_labels = ops.clip(labels, 0, ops.shape(log_probs)[-1] - 1)
        negative_log_likelihood = -ops.squeeze(
            ops.take_along_axis(log_probs, safe_labels[..., None], axis=-1), axis=-1
        )  # (batch, length)
        uniform_cross_entropy = -ops.mean(log_probs, axis=-1)  # (batch, length)
        losses = (
            (1.0 - self.label_smoothing) * negative_log_likelihood
            + self.label_smoothing * uniform_cross_entropy
        )
        if self.ignore_class is None:
            return losses
        valid = ops.not_equal(labels, self.ignore_class)
        losses = ops.where(valid, losses, 0.0)
        if self.reduction == "sum_over_batch_size":
            # That reduction divides by all `batch * length` tokens; rescale so that it divides
            # by the non-ignored ones instead (what Keras' own `ignore_class` masking does).
            num_tokens = ops.cast(ops.size(valid), losses.dtype)
            num_valid = ops.maximum(ops.sum(ops.cast(valid, losses.dtype)), 1.0)
            losses = losses * (num_tokens / num_valid)
        return losses

    def get_config(self):
        config = super().get_config()
        config.update({"label_smoothing": self.label_smoothing, "ignore_class": self.ignore_class})
        return config


@dataclasses.dataclass
class RDF2TextConfig:
    """Every setting of `train_and_evaluate`. `quick()` is a tiny variant for smoke runs.

    Defaults are sized to finish (training + decoding 872 dev and 1862 test entries) in about
    60 minutes on 2 CPU cores; see examples/webnlg.py for the measured speeds.
    """

    seed: int = 1234
    # Data
    max_train_entries: int | None = None  # a seeded random sample of train entries; None = all
    max_eval_entries: int | None = None  # same, for each of dev and test
    min_token_count: int = 2  # rarer train tokens become UNK, so the model sees UNK in training
    max_source_length: int = 64  # longest WebNLG 2017 delexicalised source: 57 tokens
    max_target_length: int = 72  # longest train text: 68 tokens, + BOS/EOS
    bucket_boundaries: tuple = pipeline.DEFAULT_BUCKET_BOUNDARIES
    # Model
    # Sized by measurement on 2 shared CPU cores (benchmarks/text_speed.py, and `fit` on the full
    # train set): 128d/2+2 layers trains at ~107 examples/s (~3 min per epoch); 256d/3+3 is ~3.3x
    # slower (~8.5 min per epoch). Within ~60 minutes, 12 epochs of the small model reached a lower
    # dev loss than 5 epochs of the large one could (dev loss 2.74 after 2 epochs vs 3.05 after 1).
    model_dim: int = 128
    num_heads: int = 4
    feedforward_dim: int = 512
    num_encoder_layers: int = 2
    num_decoder_layers: int = 2
    dropout: float = 0.1
    # Optimisation
    batch_size: int = 64
    epochs: int = 12
    peak_learning_rate: float = 1e-3
    warmup_steps: int = 300
    final_learning_rate_fraction: float = 0.05
    gradient_clip_norm: float = 1.0
    label_smoothing: float = 0.1
    early_stopping_patience: int = 3
    # Decoding
    decode_method: str = "beam"
    beam_width: int = 4
    length_penalty: float = 0.6
    decode_batch_size: int = 32
    num_logged_samples: int = 3
    verbose: int | str = "auto"

    def __post_init__(self):
        if self.decode_method not in ("greedy", "beam"):
            raise ValueError(
                f"`decode_method` must be 'greedy' or 'beam'. Received: decode_method={self.decode_method!r}"
            )
        for name in ("batch_size", "epochs", "decode_batch_size", "beam_width", "model_dim"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"`{name}` must be positive. Received: {name}={getattr(self, name)}")
        self.bucket_boundaries = tuple(int(boundary) for boundary in self.bucket_boundaries)

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

    def to_dict(self):
        config = dataclasses.asdict(self)
        config["bucket_boundaries"] = list(self.bucket_boundaries)
        return config

    @classmethod
    def from_dict(cls, config):
        known = {field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(config) - known)
        if unknown:
            raise ValueError(f"Unknown RDF2TextConfig fields: {unknown}. Expected a subset of {sorted(known)}.")
        return cls(**config)

    def save(self, path):
        pathlib.Path(path).write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path):
        return cls.from_dict(json.loads(pathlib.Path(path).read_text(encoding="utf-8")))


def build_model(config, vocabulary_size):
    """A `TransformerGenerator` with the sizes of `config`."""
    return TransformerGenerator(
        vocabulary_size=vocabulary_size,
        max_source_length=config.max_source_length,
        max_target_length=config.max_target_length,
        model_dim=config.model_dim,
        num_heads=config.num_heads,
        feedforward_dim=config.feedforward_dim,
        num_encoder_layers=config.num_encoder_layers,
        num_decoder_layers=config.num_decoder_layers,
        dropout=config.dropout,
        pad_id=Vocabulary.PAD,
        bos_id=Vocabulary.BOS,
        eos_id=Vocabulary.EOS,
    )


def make_optimizer(config, total_steps):
    """Adam, linear warmup to `peak_learning_rate`, then cosine decay over the remaining steps."""
    warmup_steps = min(config.warmup_steps, max(total_steps - 1, 0))
    schedule = keras.optimizers.schedules.CosineDecay(
        initial_learning_rate=0.0,
        decay_steps=max(total_steps - warmup_steps, 1),
        alpha=config.final_learning_rate_fraction,
        warmup_target=config.peak_learning_rate,
        warmup_steps=warmup_steps,
    )
    return keras.optimizers.Adam(learning_rate=schedule, clipnorm=config.gradient_clip_norm)


def compile_model(model, config, total_steps):
    model.compile(
        optimizer=make_optimizer(config, total_steps),
        loss=LabelSmoothedSparseCrossEntropy(
            label_smoothing=config.label_smoothing, ignore_class=Vocabulary.PAD
        ),
    )


def make_generate_function(
    model, method="beam", beam_width=4, length_penalty=0.6, max_length=None, use_cache=True
):
    """`decoding.generate` compiled with `tf.function`: `(batch, source_len)` ids -> output ids.

    It traces once per input shape; `pipeline.source_batches` keeps the shapes few. (Eager
    decoding runs the `while_loop` body op by op and is several times slower on CPU.)
    """

    @tf.function
    def generate_function(source_ids):
        return decoding.generate(
            model,
            source_ids,
            method=method,
            beam_width=beam_width,
            length_penalty=length_penalty,
            max_length=max_length,
            use_cache=use_cache,
        )

    return generate_function


def ids_to_text(ids, vocabulary, entity_map):
    """Output ids -> relexicalised, detokenised text."""
    tokens = vocabulary.decode(ids)
    return preprocessing.detokenize(preprocessing.relexicalise(tokens, entity_map))


def decode_examples(generate_function, examples, vocabulary, batch_size, progress=True):
    """Decodes `EncodedExample`s with `generate_function`; returns texts in example order."""
    texts = [None] * len(examples)
    batches = list(pipeline.source_batches(examples, batch_size))
    progress_bar = keras.utils.Progbar(len(examples), unit_name="sentence") if progress else None
    for source_ids, indices in batches:
        output_ids = keras.ops.convert_to_numpy(generate_function(source_ids))
        for row, index in enumerate(indices):
            texts[index] = ids_to_text(output_ids[row], vocabulary, examples[index].entity_map)
        if progress_bar is not None:
            progress_bar.add(len(indices))
    return texts


def generate_texts(
    model,
    vocabulary,
    triple_lists,
    method="beam",
    beam_width=4,
    length_penalty=0.6,
    batch_size=32,
    max_length=None,
    progress=False,
):
    """Texts for sets of triples.

    Args:
        model: a trained `TransformerGenerator`.
        vocabulary: its `Vocabulary`.
        triple_lists: list of triple sets; each triple a `webnlg.Triple` or a
            `(subject, predicate, object)` tuple, in WebNLG spelling (`Alan_Bean`).
        method, beam_width, length_penalty, max_length: see `decoding.generate`.
        batch_size: sentences decoded at once.

    Returns:
        One string per triple set.
    """
    entries = []
    for index, triples in enumerate(triple_lists):
        triples = tuple(
            triple if isinstance(triple, webnlg.Triple) else webnlg.Triple(*triple) for triple in triples
        )
        if not triples:
            raise ValueError(f"Expected at least one triple per set. Received: an empty set at index {index}.")
        entries.append(webnlg.WebNLGEntry(f"input/{index}", "", len(triples), triples, ()))
    examples = pipeline.encode_entries(
        entries, vocabulary, model.max_source_length, model.max_target_length, for_training=False
    )
    generate_function = make_generate_function(
        model, method=method, beam_width=beam_width, length_penalty=length_penalty, max_length=max_length
    )
    return decode_examples(generate_function, examples, vocabulary, batch_size, progress=progress)


def load_run(run_dir):
    """`(model, vocabulary, config)` of a finished run directory."""
    run_dir = pathlib.Path(run_dir)
    missing = [name for name in (CONFIG_FILE, VOCABULARY_FILE, MODEL_FILE) if not (run_dir / name).is_file()]
    if missing:
        raise ValueError(f"Run directory {run_dir} lacks {missing}: expected the outputs of train_and_evaluate.")
    config = RDF2TextConfig.load(run_dir / CONFIG_FILE)
    vocabulary = Vocabulary.load(run_dir / VOCABULARY_FILE)
    model = keras.saving.load_model(run_dir / MODEL_FILE, compile=False)
    return model, vocabulary, config


class SampleGenerationLogger(keras.callbacks.Callback):
    """Logs greedy generations for a few fixed examples at the end of each epoch.

    Args:
        examples: `EncodedExample`s to decode (keep it to a handful).
        entries: the matching WebNLG entries, whose first reference is logged alongside.
        vocabulary: the `Vocabulary`.
    """

    def __init__(self, examples, entries, vocabulary):
        super().__init__()
        self.examples = list(examples)
        self.entries = list(entries)
        self.vocabulary = vocabulary
        self._generate_function = None

    def on_epoch_end(self, epoch, logs=None):
        if not self.examples:
            return
        if self._generate_function is None:
            self._generate_function = make_generate_function(self.model, method="greedy")
        texts = decode_examples(
            self._generate_function, self.examples, self.vocabulary, len(self.examples), progress=False
        )
        for entry, text in zip(self.entries, texts):
            triples = " ; ".join(f"{t.subject} | {t.predicate} | {t.object}" for t in entry.triples)
            logger.info("Epoch %d sample\n  triples:   %s\n  output:    %s\n  reference: %s",
                        epoch + 1, triples, text, entry.texts[0])


def _sample_entries(entries, limit, seed):
    """A seeded random sample of `limit` entries, in their original order (all if None)."""
    if limit is None or limit >= len(entries):
        return list(entries)
    chosen = sorted(random.Random(seed).sample(range(len(entries)), limit))
    return [entries[index] for index in chosen]


def _load_split(split, data_dir, limit, seed):
    entries = _sample_entries(webnlg.load_webnlg(split, data_dir), limit, seed)
    logger.info("Loaded %d %s entries", len(entries), split)
    return entries


def train_and_evaluate(config, data_dir=None, run_dir="runs/webnlg"):
    """Trains on WebNLG train, selects the checkpoint by dev loss, decodes and scores dev and test.

    Args:
        config: an `RDF2TextConfig`.
        data_dir: the WebNLG folder (holding train/dev/test); None reads `$WEBNLG_DIR`.
        run_dir: output folder, created if missing. Rerunning on the folder of an interrupted
            run resumes training at the epoch where it stopped.

    Returns:
        `{"dev": scores, "test": scores, "timing": {...}, "run_dir": str}`, where scores are
        `evaluation.evaluate_outputs` results.
    """
    start_time = time.perf_counter()
    run_dir = pathlib.Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    keras.utils.set_random_seed(config.seed)
    config.save(run_dir / CONFIG_FILE)

    # 1. Data: vocabulary from train only; one training example per reference text.
    train_entries = _load_split("train", data_dir, config.max_train_entries, config.seed)
    dev_entries = _load_split("dev", data_dir, config.max_eval_entries, config.seed)
    test_entries = _load_split("test", data_dir, config.max_eval_entries, config.seed)
    train_pairs = pipeline.delexicalise_entries(train_entries, one_per_reference=True)
    vocabulary = pipeline.build_vocabulary(train_pairs, min_count=config.min_token_count)
    vocabulary.save(run_dir / VOCABULARY_FILE)
    lengths = (config.max_source_length, config.max_target_length)
    train_examples = pipeline.encode_pairs(train_pairs, vocabulary, *lengths)
    dev_loss_examples = pipeline.encode_entries(dev_entries, vocabulary, *lengths, for_training=True)
    dev_examples = pipeline.encode_entries(dev_entries, vocabulary, *lengths, for_training=False)
    test_examples = pipeline.encode_entries(test_entries, vocabulary, *lengths, for_training=False)
    logger.info(
        "Vocabulary: %d tokens; %d train and %d dev (loss) examples",
        len(vocabulary), len(train_examples), len(dev_loss_examples),
    )
    train_dataset = pipeline.make_training_dataset(
        train_examples, config.batch_size, shuffle=True, seed=config.seed,
        bucket_boundaries=config.bucket_boundaries,
    )
    dev_dataset = pipeline.make_training_dataset(
        dev_loss_examples, config.batch_size, shuffle=False, bucket_boundaries=config.bucket_boundaries
    )
    train_dataset, steps_per_epoch = pipeline.with_known_length(train_dataset)
    dev_dataset, _ = pipeline.with_known_length(dev_dataset)
    data_seconds = time.perf_counter() - start_time

    # 2. MLE training with plain compile + fit.
    model = build_model(config, len(vocabulary))
    model.build()
    compile_model(model, config, total_steps=steps_per_epoch * config.epochs)
    logger.info("Model: %s parameters, %d steps per epoch", f"{model.count_params():,}", steps_per_epoch)
    callbacks = [
        keras.callbacks.BackupAndRestore(backup_dir=str(run_dir / "backup")),
        keras.callbacks.ModelCheckpoint(
            str(run_dir / MODEL_FILE), monitor="val_loss", save_best_only=True, verbose=1
        ),
        keras.callbacks.EarlyStopping(monitor="val_loss", patience=config.early_stopping_patience),
        SampleGenerationLogger(
            dev_examples[: config.num_logged_samples], dev_entries[: config.num_logged_samples], vocabulary
        ),
    ]
    if importlib.util.find_spec("tensorboard") is not None:
        callbacks.append(
            keras.callbacks.TensorBoard(log_dir=str(run_dir / "tensorboard"), write_graph=False)
        )
    else:
        logger.warning("TensorBoard is not installed (pip install tensorboard): no TensorBoard logs.")
    train_start = time.perf_counter()
    history = model.fit(
        train_dataset,
        validation_data=dev_dataset,
        epochs=config.epochs,
        callbacks=callbacks,
        shuffle=False,  # the dataset shuffles itself (seeded)
        verbose=config.verbose,
    )
    train_seconds = time.perf_counter() - train_start
    epochs_trained = len(history.history.get("loss", []))

    # 3. Decode dev and test with the best checkpoint; score.
    best_model = keras.saving.load_model(run_dir / MODEL_FILE, compile=False)
    generate_function = make_generate_function(
        best_model,
        method=config.decode_method,
        beam_width=config.beam_width,
        length_penalty=config.length_penalty,
    )
    results, decode_seconds = {}, {}
    for name, entries, examples in (("dev", dev_entries, dev_examples), ("test", test_entries, test_examples)):
        logger.info("Decoding %d %s entries (%s)", len(examples), name, config.decode_method)
        decode_start = time.perf_counter()
        hypotheses = decode_examples(generate_function, examples, vocabulary, config.decode_batch_size)
        decode_seconds[name] = time.perf_counter() - decode_start
        results[name] = evaluation.write_report(run_dir, hypotheses, entries, name=name)
        logger.info("%s scores:\n%s", name, evaluation.format_markdown_table(results[name]))

    decoded = len(dev_examples) + len(test_examples)
    timing = {
        "data_seconds": data_seconds,
        "train_seconds": train_seconds,
        "epochs_trained": epochs_trained,
        "steps_per_epoch": steps_per_epoch,
        "train_examples": len(train_examples),
        "train_examples_per_second": len(train_examples) * epochs_trained / max(train_seconds, 1e-9),
        "decode_seconds": decode_seconds,
        "decode_sentences_per_second": decoded / max(sum(decode_seconds.values()), 1e-9),
        "total_seconds": time.perf_counter() - start_time,
        "best_val_loss": float(np.min(history.history["val_loss"])) if history.history.get("val_loss") else None,
    }
    (run_dir / TIMING_FILE).write_text(json.dumps(timing, indent=2) + "\n", encoding="utf-8")
    _write_summary(run_dir, config, results, timing)
    logger.info("Done in %.1f min; outputs in %s", timing["total_seconds"] / 60, run_dir)
    return {**results, "timing": timing, "run_dir": str(run_dir)}


def _write_summary(run_dir, config, results, timing):
    lines = [
        "# WebNLG RDF-to-text (MLE)",
        "",
        f"Model {config.model_dim}d, {config.num_encoder_layers}+{config.num_decoder_layers} layers; "
        f"{timing['epochs_trained']} epochs; decoding: {config.decode_method}"
        + (f" (beam {config.beam_width})" if config.decode_method == "beam" else ""),
        "",
    ]
    for name in ("dev", "test"):
        lines += [f"## {name}", "", evaluation.format_markdown_table(results[name])]
    decode_minutes = sum(timing["decode_seconds"].values()) / 60
    lines += [
        "## Timing",
        "",
        f"- data preparation: {timing['data_seconds'] / 60:.1f} min",
        f"- training: {timing['train_seconds'] / 60:.1f} min "
        f"({timing['train_examples_per_second']:.0f} examples/s)",
        f"- decoding: {decode_minutes:.1f} min ({timing['decode_sentences_per_second']:.1f} sentences/s)",
        f"- total: {timing['total_seconds'] / 60:.1f} min",
        "",
    ]
    (run_dir / SUMMARY_FILE).write_text("\n".join(lines), encoding="utf-8")
