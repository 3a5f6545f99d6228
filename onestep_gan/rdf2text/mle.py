"""The main job: MLE training of the RDF-to-text generator, checkpoint selection, decoding, scoring.

`train_and_evaluate(config, data_dir, run_dir)` is the whole job:

1. load WebNLG train/dev/test, build the `TextPreprocessor` (vocabulary from train only), encode;
2. `model.compile` + `model.fit` on the bucketed `tf.data` pipeline with label-smoothed
   cross-entropy that ignores PAD, Adam with linear warmup then cosine decay, and the
   callbacks `AtomicModelCheckpoint(save_best_only=True)` on the dev loss, `TrainingBackup`
   (rerunning an interrupted run resumes at the epoch where it stopped; checkpoints.py),
   `EpochWeights` when checkpoints are averaged (averaging.py), `TensorBoard`, `EarlyStopping`
   and `SampleGenerationLogger` (a few dev generations per epoch);
3. reload the best checkpoint (or average the epochs ending at it), mine a `SlotAligner` from the train references, decode dev and
   test (beam search whose candidates are reranked by slot errors, by default), relexicalise,
   detokenise and score with `evaluation.write_report` (BLEU, chrF++, coverage, slot errors).

Files written to `run_dir`: see `runs.py`; `tensorboard/` too, and `backup/` only while
training is unfinished.

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
import shutil
import time

import keras
import numpy as np
from keras import ops

from onestep_gan.rdf2text import averaging, checkpoints, datasets, enriched, evaluation, inference, runs, triple_orders
from onestep_gan.rdf2text.faithfulness import SlotAligner
from onestep_gan.rdf2text.preprocessor import TextPreprocessor
from onestep_gan.rdf2text.reranking import SlotErrorReranker, mbr_preference
from onestep_gan.rdf2text.transformer import TransformerGenerator
from onestep_gan.rdf2text.vocabulary import Vocabulary

logger = logging.getLogger(__name__)


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
        # The label's log-probability as a sum against its one-hot (exact: one non-zero term):
        # on a CPU a gather's gradient, a segment sum over the vocabulary axis, costs several
        # times more. An ignored label may be any id; clip it into range.
        safe_labels = ops.clip(labels, 0, ops.shape(log_probs)[-1] - 1)
        one_hot_labels = ops.one_hot(safe_labels, ops.shape(log_probs)[-1], dtype=log_probs.dtype)
        negative_log_likelihood = -ops.sum(log_probs * one_hot_labels, axis=-1)  # (batch, length)
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


def decoder_for(model, preprocessor, config, aligner=None, progress=True, discriminator=None):
    """`fn(examples) -> texts`: the decoding `config` asks for (method, beam, length penalty,
    placeholder constraints, and reranking of the beam candidates by slot errors when
    `config.rerank` and an aligner, its ties broken with the `discriminator` when
    `config.rerank_discriminator_weight` > 0, or with the beam's consensus when `config.rerank_mbr`).
    `discriminator`: `(TextDiscriminator, real_sign)`, the sign of its loss's orientation
    (`runs.load_discriminator` gives both)."""
    reranker = preference = None
    if config.rerank and config.decode_method == "beam" and aligner is not None:
        reranker = SlotErrorReranker.from_config(aligner, config)
        if config.rerank_discriminator_weight > 0:
            if discriminator is None:
                raise ValueError(
                    f"rerank_discriminator_weight={config.rerank_discriminator_weight} needs a discriminator: "
                    "decode an adversarial run (it has discriminator.keras), or set the weight to 0."
                )
            preference = inference.discriminator_preference(
                discriminator[0], config.rerank_discriminator_weight, real_sign=discriminator[1]
            )
        elif config.rerank_mbr:
            preference = mbr_preference(preprocessor.eos_id, preprocessor.pad_id)
    generate_function = inference.make_generate_function(
        model,
        method=config.decode_method,
        beam_width=config.beam_width,
        length_penalty=config.length_penalty,
        return_candidates=reranker is not None,
        placeholder_constraints=(
            inference.placeholder_constraints_for(preprocessor) if config.constrain_placeholders else None
        ),
        no_repeat_ngram_size=config.no_repeat_ngram_size,
    )

    def decode(examples):
        return inference.decode_examples(
            generate_function, examples, preprocessor, config.decode_batch_size, progress=progress,
            reranker=reranker, preference=preference,
        )

    return decode


def build_model(config, preprocessor):
    """A `TransformerGenerator` with the sizes of `config` and the preprocessor's vocabulary."""
    return TransformerGenerator(
        vocabulary_size=preprocessor.vocabulary_size,
        max_source_length=config.max_source_length,
        max_target_length=config.max_target_length,
        model_dim=config.model_dim,
        num_heads=config.num_heads,
        feedforward_dim=config.feedforward_dim,
        num_encoder_layers=config.num_encoder_layers,
        num_decoder_layers=config.num_decoder_layers,
        dropout=config.dropout,
        **preprocessor.special_ids,
        placeholder_ids=preprocessor.copy_ids if config.copy_placeholders else (),
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
            label_smoothing=config.label_smoothing, ignore_class=model.pad_id
        ),
        jit_compile=config.keras_jit_compile,
    )


class SampleGenerationLogger(keras.callbacks.Callback):
    """Logs greedy generations for a few fixed examples at the end of each epoch.

    Args:
        examples: `EncodedExample`s to decode (keep it to a handful).
        entries: the matching WebNLG entries, whose first reference is logged alongside.
        preprocessor: the `TextPreprocessor` that encoded them.
    """

    def __init__(self, examples, entries, preprocessor):
        super().__init__()
        self.examples = list(examples)
        self.entries = list(entries)
        self.preprocessor = preprocessor
        self._generate_function = None

    def on_epoch_end(self, epoch, logs=None):
        if not self.examples:
            return
        if self._generate_function is None:
            self._generate_function = inference.make_generate_function(self.model, method="greedy")
        texts = inference.decode_examples(
            self._generate_function, self.examples, self.preprocessor, len(self.examples), progress=False
        )
        for entry, text in zip(self.entries, texts):
            triples = " ; ".join(f"{t.subject} | {t.predicate} | {t.object}" for t in entry.triples)
            logger.info("Epoch %d sample\n  triples:   %s\n  output:    %s\n  reference: %s",
                        epoch + 1, triples, text, entry.texts[0])


def train_and_evaluate(config, data_dir=None, run_dir="runs/webnlg", enriched_dir=None):
    """Trains on WebNLG train, selects the checkpoint by dev loss, decodes and scores dev and test.

    Args:
        config: an `MLEConfig`.
        data_dir: the WebNLG folder (holding train/dev/test); None: `$WEBNLG_DIR`, else the corpus
            `webnlg.download_webnlg()` fetches.
        run_dir: output folder, created if missing. Rerunning on the folder of an interrupted
            run resumes training at the epoch where it stopped.
        enriched_dir: the enriched WebNLG folder, read when `config.gold_mentions`; None:
            `$WEBNLG_ENRICHED_DIR`.

    Returns:
        `{"dev": scores, "test": scores, "timing": {...}, "run_dir": str}`, where scores are
        `evaluation.evaluate_outputs` results.
    """
    start_time = time.perf_counter()
    run_dir = pathlib.Path(run_dir)
    runs.check_output_dir(run_dir)
    if config.rerank_discriminator_weight > 0:
        raise ValueError(
            f"rerank_discriminator_weight={config.rerank_discriminator_weight}: an MLE run has no discriminator. "
            "Train with 0, then decode the adversarial run with the weight (`onestep-gan decode`)."
        )
    keras.utils.set_random_seed(config.seed)

    # 1. Data: vocabulary from train only; one training example per reference text. Read
    #    before anything is written, so that bad data leaves no half-made run folder.
    mentions = {"gold_mentions": config.gold_mentions, "enriched_dir": enriched_dir}
    holdout = {"holdout_categories": config.holdout_categories}
    train_entries = runs.load_split("train", data_dir, config.max_train_entries, config.seed, **mentions, **holdout)
    dev_entries = runs.load_split("dev", data_dir, config.max_eval_entries, config.seed, **mentions, **holdout)
    test_entries = runs.load_split("test", data_dir, config.max_eval_entries, config.seed, **holdout)
    preprocessor = TextPreprocessor.build(
        train_entries, config.max_source_length, config.max_target_length, min_count=config.min_token_count,
        predicate_placeholders=config.predicate_placeholders, entity_roles=config.entity_roles,
        entity_words=config.entity_words, canonical_order=config.canonical_triple_order,
    )
    training_entries = train_entries
    if config.sentence_examples:
        plans = enriched.load_sentence_plans("train", enriched_dir)
        training_entries = train_entries + enriched.sentence_entries(train_entries, plans)
    train_examples = preprocessor.encode_entries(training_entries, for_training=True)
    # Held-out categories (`config.holdout_categories`) stand in for unseen ones: they do not
    # choose the checkpoint, as the test set's unseen categories do not.
    dev_loss_examples = preprocessor.encode_entries(
        [entry for entry in dev_entries if entry.seen is not False], for_training=True
    )
    dev_examples = preprocessor.encode_entries(dev_entries, for_training=False)
    test_examples = preprocessor.encode_entries(test_entries, for_training=False)
    logger.info(
        "Vocabulary: %d tokens; %d train and %d dev (loss) examples",
        preprocessor.vocabulary_size, len(train_examples), len(dev_loss_examples),
    )
    _, steps_per_epoch = datasets.with_known_length(datasets.make_training_dataset(
        train_examples, config.batch_size, shuffle=False, bucket_boundaries=config.bucket_boundaries,
        **preprocessor.special_ids,
    ))
    data_seconds = time.perf_counter() - start_time

    # 2. MLE training with plain compile + fit, resumed from the backup of an interrupted run.
    model = build_model(config, preprocessor)
    model.build()
    compile_model(model, config, total_steps=steps_per_epoch * config.epochs)
    fixed_shapes = model.jit_compile is True  # as Keras resolved "auto"; see MLEConfig.jit_compile
    logger.info(
        "Model: %s parameters, %d steps per epoch, train step %s", f"{model.count_params():,}", steps_per_epoch,
        "compiled (batches of fixed widths)" if fixed_shapes else "not compiled by XLA",
    )
    dev_dataset, _ = datasets.with_known_length(datasets.make_training_dataset(
        dev_loss_examples, config.batch_size, shuffle=False, bucket_boundaries=config.bucket_boundaries,
        fixed_shapes=fixed_shapes, **preprocessor.special_ids,
    ))
    checkpoint = checkpoints.AtomicModelCheckpoint(
        str(run_dir / runs.MODEL_FILE), monitor="val_loss", save_best_only=True, verbose=1
    )
    early_stopping = keras.callbacks.EarlyStopping(monitor="val_loss", patience=config.early_stopping_patience)
    backup = checkpoints.TrainingBackup(
        run_dir / runs.BACKUP_DIR, [checkpoint, early_stopping], metadata=_resume_metadata(config, fixed_shapes)
    )
    if backup.exists():  # an interrupted run: its settings first (named if they differ), then its ids
        backup.check()
        _check_saved_vocabulary(run_dir, preprocessor.vocabulary)
    initial_epoch = backup.restore(model)  # 0 for a new run; raises on a damaged backup
    run_dir.mkdir(parents=True, exist_ok=True)
    checkpoints.remove_partial_files(run_dir)
    (run_dir / runs.SUMMARY_FILE).unlink(missing_ok=True)  # the folder holds no finished run until it is rewritten
    if not backup.exists():  # a new run: an earlier run's epoch files would be averaged by `decode`,
        shutil.rmtree(run_dir / averaging.EPOCH_WEIGHTS_DIR, ignore_errors=True)
        (run_dir / runs.MODEL_FILE).unlink(missing_ok=True)  # and its model read with this vocabulary
    checkpoints.atomic_save(run_dir / runs.CONFIG_FILE, config.save)
    checkpoints.atomic_save(run_dir / runs.VOCABULARY_FILE, preprocessor.vocabulary.save)
    callbacks = [
        checkpoint,
        early_stopping,
        SampleGenerationLogger(
            dev_examples[: config.num_logged_samples], dev_entries[: config.num_logged_samples], preprocessor
        ),
    ]
    if config.average_checkpoints > 1:  # the window ending at the best epoch stays on disk
        callbacks.append(averaging.EpochWeights(
            run_dir / averaging.EPOCH_WEIGHTS_DIR, keep=config.average_checkpoints + config.early_stopping_patience
        ))
    if importlib.util.find_spec("tensorboard") is not None:
        callbacks.append(
            keras.callbacks.TensorBoard(log_dir=str(run_dir / "tensorboard"), write_graph=False)
        )
    else:
        logger.warning("TensorBoard is not installed (pip install tensorboard): no TensorBoard logs.")
    callbacks.append(backup)  # last: saves after the others updated their state
    train_start = time.perf_counter()
    if not backup.finished:  # a finished training phase (killed while decoding) is not redone
        train_dataset = training_dataset(
            config, preprocessor, train_examples, initial_epoch, training_entries, fixed_shapes=fixed_shapes
        )
        epoch_steps = steps_per_epoch if config.epoch_seeded_shuffle else None
        model.fit(
            train_dataset,
            validation_data=dev_dataset,
            epochs=config.epochs,
            initial_epoch=initial_epoch,
            steps_per_epoch=epoch_steps,
            callbacks=callbacks,
            shuffle=False,  # the dataset shuffles itself (seeded)
            verbose=config.verbose,
        )
    process_train_seconds = time.perf_counter() - train_start
    epochs_trained = len(backup.epoch_logs)  # resumed epochs included
    epochs_this_process = epochs_trained - initial_epoch  # what process_train_seconds timed
    best_epoch, best_val_loss = best_epoch_of(backup.epoch_logs)
    best_epoch = best_epoch or epochs_trained

    # 3. Decode dev and test with the best checkpoint (or the average of the epochs ending at
    #    it); score.
    best_model = runs.load_model_file(run_dir / runs.MODEL_FILE)
    if config.average_checkpoints > 1:
        _average_checkpoints(best_model, run_dir, best_epoch, config.average_checkpoints)
    aligner = SlotAligner.from_entries(train_entries)  # mined from train references only
    checkpoints.atomic_save(run_dir / runs.ALIGNER_FILE, aligner.save)
    decode = decoder_for(best_model, preprocessor, config, aligner)
    results, decode_seconds = {}, {}
    for name, entries, examples in (("dev", dev_entries, dev_examples), ("test", test_entries, test_examples)):
        logger.info("Decoding %d %s entries (%s)", len(examples), name, config.decode_method)
        decode_start = time.perf_counter()
        hypotheses = decode(examples)
        decode_seconds[name] = time.perf_counter() - decode_start
        results[name] = evaluation.write_report(run_dir, hypotheses, entries, name=name, aligner=aligner)
        logger.info("%s scores:\n%s", name, evaluation.format_markdown_table(results[name]))

    decoded = len(dev_examples) + len(test_examples)
    timing = {
        "data_seconds": data_seconds,
        "train_seconds": backup.train_seconds,  # the whole run's, over its processes (resumes)
        "train_seconds_this_process": process_train_seconds,
        "epochs_trained": epochs_trained,
        "best_epoch": best_epoch,
        "steps_per_epoch": steps_per_epoch,
        "train_examples": len(train_examples),
        # Over the epochs this process trained; None for a rerun that only decoded.
        "train_examples_per_second": (
            len(train_examples) * epochs_this_process / process_train_seconds if epochs_this_process > 0 else None
        ),
        "decode_seconds": decode_seconds,
        "decode_sentences_per_second": decoded / max(sum(decode_seconds.values()), 1e-9),
        "total_seconds": time.perf_counter() - start_time,
        "best_val_loss": best_val_loss,
    }
    checkpoints.atomic_write(run_dir / runs.TIMING_FILE, json.dumps(timing, indent=2) + "\n")
    _write_summary(run_dir, config, results, timing)
    backup.delete()  # the run is complete: a rerun starts afresh
    logger.info("Done in %.1f min; outputs in %s", timing["total_seconds"] / 60, run_dir)
    return {**results, "timing": timing, "run_dir": str(run_dir)}


def best_epoch_of(epoch_logs):
    """`(epoch, val_loss)` of the lowest dev loss in `fit`'s epoch logs (epochs counted from 1), as
    `ModelCheckpoint(save_best_only=True)` chose it: a NaN loss (a diverged epoch) is never the best.
    `(None, None)` without a finite dev loss."""
    losses = np.array([logs.get("val_loss", np.nan) for logs in epoch_logs], dtype="float64")
    if not np.isfinite(losses).any():
        return None, None
    epoch = int(np.nanargmin(np.where(np.isfinite(losses), losses, np.nan)))
    return epoch + 1, float(losses[epoch])


def training_dataset(config, preprocessor, train_examples, initial_epoch=0, train_entries=None, fixed_shapes=False):
    """The batches `fit` trains on, from epoch `initial_epoch` on (`fixed_shapes`: one width per
    length bucket, for a train step compiled per shape).

    With `config.epoch_seeded_shuffle`, epoch `e` is shuffled by `(seed, e)` (a run resumed at epoch
    `e` sees the same batches; fit it with `steps_per_epoch`), with `config.predicate_word_dropout`
    or the order of each text's triples (`config.triple_orders`; from `train_entries`, the entries
    `train_examples` were encoded from) or the placeholders' numbers (`config.permute_placeholders`)
    drawn per epoch too. Without it (how the README's older runs were trained), one seeded shuffle
    stream over the epochs: a resumed run's later epochs see another order than the uninterrupted
    run's.
    """
    if not config.epoch_seeded_shuffle:
        dataset, _ = datasets.with_known_length(datasets.make_training_dataset(
            train_examples, config.batch_size, shuffle=True, seed=config.seed,
            bucket_boundaries=config.bucket_boundaries, fixed_shapes=fixed_shapes, **preprocessor.special_ids,
        ))
        return dataset
    word_dropout = None
    if config.predicate_word_dropout:
        word_dropout = datasets.WordDropout(
            config.predicate_word_dropout,
            tuple(preprocessor.predicate_word_mask(example.source_ids) for example in train_examples),
            preprocessor.unk_id,
        )
    orders = []
    if config.triple_orders > 1:
        if train_entries is None:
            raise ValueError(
                f"triple_orders={config.triple_orders} reorders the train entries. Received: train_entries=None"
            )
        orders = [
            preprocessor.encode_entries(triple_orders.reorder_triples(train_entries, config.seed, variant), True)
            for variant in range(1, config.triple_orders)
        ]
    return datasets.make_training_dataset(
        train_examples, config.batch_size, shuffle=True, seed=config.seed,
        bucket_boundaries=config.bucket_boundaries, **preprocessor.special_ids,
        epochs=config.epochs, initial_epoch=initial_epoch, word_dropout=word_dropout, orders=orders,
        renumbered_ids=preprocessor.placeholder_ids if config.permute_placeholders else (), fixed_shapes=fixed_shapes,
    )


def _check_saved_vocabulary(run_dir, vocabulary):
    """A run folder being resumed must get the vocabulary it was trained with: code or data whose
    preprocessing differs would build other ids, and the trained model's outputs would silently
    decode as other words. (A finished run rerun trains afresh, with its new vocabulary.)"""
    path = run_dir / runs.VOCABULARY_FILE
    if path.exists() and Vocabulary.load(path).tokens != vocabulary.tokens:
        raise ValueError(
            f"{path} differs from the vocabulary this code builds from the train data: the run was "
            "made by other code or data. Expected the same vocabulary to resume it; rerun it with the "
            "code that made it, or give a new --run-dir."
        )


def _average_checkpoints(model, run_dir, best_epoch, k):
    """Averages the epoch weights ending at `best_epoch` into `model` and saves it as the run's
    model file (atomically; idempotent, so a rerun after a kill gives the same file)."""
    epochs = averaging.average_epoch_weights(model, run_dir / averaging.EPOCH_WEIGHTS_DIR, best_epoch, k)
    logger.info("Decoding the average of epochs %s", epochs)
    checkpoints.atomic_save_model(model, run_dir / runs.MODEL_FILE)


# Settings that act only after training (decoding, reranking, logging): a run may be resumed with
# other values, for example by a newer release that added a decoding setting.
_NOT_TRAINING = frozenset({
    "verbose", "decode_method", "beam_width", "length_penalty", "rerank", "rerank_min_foreign",
    "rerank_stated_relations", "rerank_unstated_as_errors", "rerank_subjects", "rerank_attachments", "rerank_value_shapes",
    "rerank_foreign_known_only", "rerank_inversions", "rerank_of_phrases", "rerank_opposed", "constrain_placeholders",
    "rerank_discriminator_weight", "rerank_mbr", "no_repeat_ngram_size",
    "decode_batch_size", "num_logged_samples",
    "jit_compile",  # what it changes in training, the batches' widths, is named on its own
})


def _training_settings(config):
    """Every setting of `config` that shapes training."""
    return {key: value for key, value in config.to_dict().items() if key not in _NOT_TRAINING}


def _resume_metadata(config, fixed_shapes=False):
    """What a backup must match to be resumed: the training settings, whether the batches had
    fixed widths (Keras resolves `jit_compile="auto"` by the backend and devices) and the backend
    (each draws its own dropout masks)."""
    return {**_training_settings(config), **checkpoints.run_environment(), "fixed_batch_shapes": bool(fixed_shapes)}


def trained_run_identity(run_dir, config):
    """What tells one finished MLE run's model from another's: its training settings and, from
    `timing.json`, its best dev loss (None without the file); the same for a run decoded again."""
    timing_path = pathlib.Path(run_dir) / runs.TIMING_FILE
    timing = runs.read_json(timing_path, "the MLE run's timing") if timing_path.is_file() else {}
    return {**_training_settings(config), "best_val_loss": timing.get("best_val_loss")}


def format_training_time(timing):
    """`timing`'s training minutes and speed: "31.0 min (472 examples/s)"."""
    speed = timing["train_examples_per_second"]
    rate = f"{speed:.0f} examples/s" if speed is not None else "no epoch trained by this process"
    return f"{timing['train_seconds'] / 60:.1f} min ({rate})"


def _write_summary(run_dir, config, results, timing):
    lines = [
        "# WebNLG RDF-to-text (MLE)",
        "",
        f"Model {config.model_dim}d, {config.num_encoder_layers}+{config.num_decoder_layers} layers; "
        f"{timing['epochs_trained']} epochs; decoding: {config.decode_method}"
        + (f" (beam {config.beam_width}{', reranked by slot errors' if config.rerank else ''})"
           if config.decode_method == "beam" else ""),
        "",
    ]
    for name in ("dev", "test"):
        lines += [f"## {name}", "", evaluation.format_markdown_table(results[name])]
    decode_minutes = sum(timing["decode_seconds"].values()) / 60
    lines += [
        "## Timing",
        "",
        f"- data preparation: {timing['data_seconds'] / 60:.1f} min",
        f"- training: {format_training_time(timing)}",
        f"- decoding: {decode_minutes:.1f} min ({timing['decode_sentences_per_second']:.1f} sentences/s)",
        f"- total: {timing['total_seconds'] / 60:.1f} min",
        "",
    ]
    checkpoints.atomic_write(run_dir / runs.SUMMARY_FILE, "\n".join(lines))


def decode_run(run_dir, data_dir=None, **decoding):
    """Decodes and scores dev and test again with a finished MLE run's model, for example with
    other decoding settings (`beam_width=16`, `rerank=False`, ...; they are saved in the run's
    `config.json`). Training is deterministic, so a run trained with other decoding settings
    and re-decoded here gives what a run with the new settings would give.

    An adversarial run folder is decoded with its fine-tuned generator as it is (no averaging),
    and its reports keep the stage's names (`adversarial_dev_hypotheses.txt`, ...). The run's
    summary (`summary.md`; an adversarial run's `adversarial_summary.json` and `comparison.md`)
    is rewritten with the new scores, so no report in the folder is left stale.

    Returns `{"dev": scores, "test": scores}`.
    """
    run_dir = pathlib.Path(run_dir)
    adversarial = runs.check_run_dir(run_dir) == runs.GENERATOR_FILE
    model, preprocessor, config = runs.load_run(run_dir)
    config = dataclasses.replace(config, **decoding)
    discriminator = runs.load_discriminator(run_dir) if config.rerank_discriminator_weight > 0 else None
    if not adversarial and (config.average_checkpoints > 1 or (run_dir / averaging.EPOCH_WEIGHTS_DIR).is_dir()):
        _average_checkpoints(model, run_dir, averaging.run_best_epoch(run_dir), config.average_checkpoints)
    # Dev and test read (and checked) first: a decode that fails on them writes nothing, a mined aligner included.
    splits = {name: runs.load_split(name, data_dir, config.max_eval_entries, config.seed,
                                    holdout_categories=config.holdout_categories) for name in ("dev", "test")}
    aligner = runs.load_aligner(run_dir)
    mined = aligner is None or (config.rerank_value_shapes and not aligner.shapes)  # none, or saved before shapes
    if mined:  # written with the reports, below
        aligner = SlotAligner.from_entries(runs.load_split(
            "train", data_dir, config.max_train_entries, config.seed, holdout_categories=config.holdout_categories
        ))
    # The run's own reports that are rewritten below: read (and checked) before the minutes of decoding.
    summary_path, timing_path = run_dir / runs.ADVERSARIAL_SUMMARY_FILE, run_dir / runs.TIMING_FILE
    if adversarial and summary_path.is_file():  # none if the stage stopped early
        summary = runs.read_json(summary_path, "the adversarial stage's summary")
    elif not adversarial and timing_path.is_file():
        timing = runs.read_json(timing_path, "the MLE run's timing")  # the run's training
    decode = decoder_for(model, preprocessor, config, aligner, discriminator=discriminator)
    # Both splits are decoded and scored before any report is written: a decode stopped half way
    # leaves the folder's reports and config.json as they were, not dev's new beside test's old.
    outputs, results, decode_seconds = {}, {}, {}
    for name, entries in splits.items():
        t0 = time.perf_counter()
        hypotheses = decode(preprocessor.encode_entries(entries, for_training=False))
        decode_seconds[name] = time.perf_counter() - t0
        outputs[name] = hypotheses, entries
        results[name] = evaluation.evaluate_outputs(hypotheses, entries, aligner)
    if mined:
        checkpoints.atomic_save(run_dir / runs.ALIGNER_FILE, aligner.save)
    for name, (hypotheses, entries) in outputs.items():
        evaluation.write_report(run_dir, hypotheses, entries, scores=results[name],
                                name=f"adversarial_{name}" if adversarial else name)
    checkpoints.atomic_save(run_dir / runs.CONFIG_FILE, config.save)
    if adversarial and summary_path.is_file():
        runs.write_comparison(run_dir, {**summary, "adversarial": results["test"]})
    elif not adversarial and timing_path.is_file():
        decoded = sum(results[name]["all"]["count"] for name in results)
        timing.update(decode_seconds=decode_seconds,  # and this decoding's time
                      decode_sentences_per_second=decoded / max(sum(decode_seconds.values()), 1e-9))
        _write_summary(run_dir, config, results, timing)
    return results
