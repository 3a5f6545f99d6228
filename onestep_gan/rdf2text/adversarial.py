"""Adversarial fine-tuning of an MLE RDF-to-text generator with `OneStepGAN.fit`.

The stage, after MLE training (`mle.train_and_evaluate`):

1. Discriminator pretraining: `DiscriminatorPretrainer.fit` teaches a `TextDiscriminator`
   to tell real (triples, text) pairs from generator samples *and* from mismatched real
   texts (the text of another tripleset in the batch), so that D judges faithfulness to
   the triples, not only fluency. Its held-out accuracy is reported.
2. Adversarial fine-tuning: `OneStepGAN(TextSampler(transformer), discriminator)` trained by
   plain `fit` with the single loss, plus an MLE term on G inside the same loss
   (`mle_term`, which touches only G), TTUR via `GANOptimizer`, a temperature schedule,
   `TerminateOnDivergence`, and `checkpoints.TrainingBackup`: rerunning an interrupted run
   (even one stopped by `kill -9`) finishes the same run, with the weights and scores of an
   uninterrupted one. Epoch `e` draws its batches from `(seed, e)` alone
   (`datasets.make_adversarial_dataset(epochs=...)`), the backup holds G, D, the optimizer, every
   seed-generator state (noise, Gumbel draws, Dropout) and the pretraining scores, and the
   generator and discriminator files are written atomically. A finished fine-tuning phase (a run
   killed while decoding) is not redone; a kill before the first epoch's backup redoes D's
   pretraining, which is seeded too.
3. Scoring: the adversarial generator decodes dev/test like the MLE one; both are reported
   side by side.

Text is discrete: the sampler hands D straight-through Gumbel-softmax one-hots (exact
one-hots forward, soft gradient backward), embedded by `probs @ embedding_matrix`; real
text enters D as exact one-hots of its ids. See `sampling.py` and `discriminator.py`.
"""

import contextlib
import logging
import pathlib
import shutil
import time

import keras
from keras import ops

import onestep_gan
from onestep_gan import distribute
from onestep_gan.callbacks import TerminateOnDivergence, TrainingDivergedError
from onestep_gan.rdf2text import checkpoints, datasets, evaluation, runs
from onestep_gan.rdf2text.discriminator import TextDiscriminator, check_compatible
from onestep_gan.rdf2text.faithfulness import SlotAligner
from onestep_gan.rdf2text.hard_negatives import NEGATIVE_TYPES, build_negatives
from onestep_gan.rdf2text.mle import LabelSmoothedSparseCrossEntropy, decoder_for, trained_run_identity
from onestep_gan.rdf2text.sampling import LinearSchedule, TextSampler

logger = logging.getLogger(__name__)

ADVERSARIAL_LOG_FILE = "adversarial_log.csv"


@contextlib.contextmanager
def repeatable_training():
    """Within it, a step traced by TensorFlow runs as traced, so a second run with the same seed
    repeats bit for bit (restores the setting on exit; other backends: nothing to do).

    With TensorFlow's graph optimizer (Grappler) on, the stage's D steps gave other weights
    from run to run with one seed, in the last bits from the first steps on (measured on 2
    CPU cores, TensorFlow 2.21: D's `score` kernel after one step; no single Grappler pass
    turned off fixed it). Without Grappler, graph steps give exactly the eager steps' values;
    D's sample-free step took 0.38 s against 0.28 s there (the stage: 13.5 min against 10.0;
    one run each, not a benchmark).
    XLA (`jit_compile=True`) also repeats, but took that step to 3 s on CPU.
    """
    if keras.backend.backend() != "tensorflow":
        yield
        return
    import tensorflow as tf

    before = tf.config.optimizer.get_experimental_options().get("disable_meta_optimizer", False)
    tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": True})
    try:
        yield
    finally:
        tf.config.optimizer.set_experimental_options({"disable_meta_optimizer": before})


# ---------------------------------------------------------------------------- MLE term
def mle_term(transformer, weight=1.0, label_smoothing=0.1):
    """`fn(conditions, real, fake)`: the teacher-forced MLE loss of `transformer` on the real text.

    Passed as `OneStepGAN(generator_extra_loss=...)`; it never calls D, so its gradient
    reaches G only. PAD and BOS are the transformer's own.
    """
    loss_fn = LabelSmoothedSparseCrossEntropy(
        label_smoothing=label_smoothing, ignore_class=transformer.pad_id
    )

    def term(conditions, real, fake):
        del fake
        batch_size = ops.shape(real)[0]
        bos = ops.full((batch_size, 1), transformer.bos_id, dtype=real.dtype)
        decoder_input = ops.concatenate([bos, real[:, :-1]], axis=1)  # (batch, max_length)
        logits = transformer({"source": conditions, "target": decoder_input}, training=True)
        # A per-replica mean, as the engine's extra losses are: a keras.losses.Loss divides by the
        # replicas itself under tf.distribute, and the engine divides the whole loss once more.
        loss = weight * loss_fn(real, logits)
        replicas = distribute.num_replicas_in_sync()
        return loss * replicas if replicas > 1 else loss

    return term


# ------------------------------------------------------------------ hard negatives
class HardNegatives:
    """`fn(source_ids, real) -> {type: (texts, valid)}`: the `hard_negatives.py` corruptions
    of a batch of real texts. A row the builder cannot corrupt (`valid` False) gets the real
    text of the next tripleset instead (still a negative, never the real text itself).

    Args:
        placeholder_ids: the placeholder ids (`TextPreprocessor.placeholder_ids`).
        boundary_ids: ids of clause boundaries ("," "and" ".") for `drop_clause`.
        pad_id: the PAD id.
    """

    def __init__(self, placeholder_ids, boundary_ids, pad_id):
        if len(placeholder_ids) < 2:
            raise ValueError(
                f"Hard negatives need at least 2 placeholder ids. Received: {list(placeholder_ids)}"
            )
        self.placeholder_ids = list(placeholder_ids)
        self.boundary_ids = list(boundary_ids)
        self.pad_id = int(pad_id)

    @classmethod
    def for_preprocessor(cls, preprocessor):
        boundaries = [token for token in (",", "and", ".") if token in preprocessor.vocabulary]
        return cls(
            preprocessor.placeholder_ids, preprocessor.vocabulary.encode(boundaries), preprocessor.pad_id
        )

    def __call__(self, source_ids, real):
        mismatched = ops.roll(real, shift=1, axis=0)
        negatives = build_negatives(real, source_ids, self.placeholder_ids, self.boundary_ids, self.pad_id)
        return {
            kind: (ops.where(valid[:, None], ops.cast(texts, real.dtype), mismatched), valid)
            for kind, (texts, valid) in negatives.items()
        }


def hard_negative_term(discriminator, hard_negatives, loss="hinge", weight=1.0, shared_source=False):
    """`fn(conditions, real, fake)`: D's GAN loss on real texts against their hard negatives.

    Passed as `OneStepGAN(discriminator_extra_loss=...)`, so D keeps seeing the hard negatives
    during fine-tuning; it never uses the sample, and the engine hands it a stopped one, so its
    gradient reaches D only. `shared_source` scores the real text and its negatives against one
    encoding of the triplesets (`TextDiscriminator.score_texts`).
    """
    gan_loss = onestep_gan.losses.get(loss)

    def term(conditions, real, fake):
        del fake
        texts = [texts for texts, _ in hard_negatives(conditions, real).values()]
        if shared_source:
            real_scores, *negative_scores = discriminator.score_texts(conditions, [real] + texts, training=True)
            return weight * gan_loss.discriminator_loss(
                real_scores[:, 0], ops.concatenate(negative_scores, axis=0)[:, 0]
            )
        repeated_conditions = ops.concatenate([conditions] * len(texts), axis=0)
        real_scores = discriminator([conditions, real], training=True)[:, 0]
        negative_scores = discriminator([repeated_conditions, ops.concatenate(texts, axis=0)], training=True)[:, 0]
        return weight * gan_loss.discriminator_loss(real_scores, negative_scores)

    return term


# ------------------------------------------------------------------ D pretraining
@keras.saving.register_keras_serializable(package="onestep_gan")
class DiscriminatorPretrainer(keras.Model):
    """Trains a text discriminator alone, against samples and mismatched real texts.

    The loss is the GAN loss's discriminator term with real pairs on the real side and,
    on the fake side, the sampler's texts, the real texts of another tripleset in the
    batch (rolled by one) and, with `hard_negatives` (a `HardNegatives`), the real text
    corrupted: placeholders swapped, a value moved, a clause dropped (accuracies per type
    logged as `swap_accuracy`, `move_accuracy`, `drop_accuracy`). Accuracies (logged as `real_accuracy`, `fake_accuracy`,
    `mismatch_accuracy` and their mean `accuracy`) count a score as correct when its sign
    is the loss's real orientation (`GANLoss.real_sign`) for real pairs and the opposite for
    the others. The sampler is not trained.

    Args:
        sampler: a `TextSampler` (its weights stay fixed).
        discriminator: a `TextDiscriminator`.
        loss: a GAN loss name or `GANLoss` (pointwise losses: not `relativistic`).
        hard_negatives: a `HardNegatives`, or None.
        samples: False leaves the sampler's texts out (D sees real texts against mismatched
            and corrupted real texts only): no free-running sampling, so a step costs a
            fraction of one with samples, and `fake_accuracy` is not tracked.
        shared_source: True scores all of a batch's texts against one encoding of its
            triplesets (`TextDiscriminator.score_texts`: one dropout draw for the encoder, which
            then gets one gradient a step); False calls D once a text, as the stage always did.
    """

    def __init__(self, sampler, discriminator, loss="hinge", hard_negatives=None, samples=True,
                 shared_source=False, **kwargs):
        super().__init__(**kwargs)
        self.gan_loss = onestep_gan.losses.get(loss)
        if self.gan_loss.generator_uses_real or self.gan_loss.gradient_penalty:
            raise ValueError(
                "DiscriminatorPretrainer needs a pointwise loss (hinge, non_saturating, "
                f"least_squares). Received: loss={self.gan_loss.name!r}"
            )
        check_compatible(sampler, discriminator)
        self.sampler = sampler
        self.sampler.trainable = False
        self.discriminator = discriminator
        self.hard_negatives = hard_negatives
        self.samples = bool(samples)
        self.shared_source = bool(shared_source)
        names = ["accuracy", "real_accuracy"] + (["fake_accuracy"] if self.samples else []) + ["mismatch_accuracy"]
        if hard_negatives is not None:
            names += [f"{kind}_accuracy" for kind in NEGATIVE_TYPES]
        self.trackers = {name: keras.metrics.Mean(name=name) for name in names}

    def build(self, input_shape=None):
        # D is first called in `compute_loss`, which Keras' symbolic build does not run: D
        # would create its variables inside the first (traced) test or train step, which JAX's
        # stateless step cannot hold (D's dropout seeds came back as None). Every size comes
        # from D's config, so it is built here.
        self.discriminator._ensure_built()
        # A fresh generator creates its blocks when built, after `sampler.trainable = False`
        # reached only the sublayers that existed then: freeze it again once built, or their
        # variables would be in this model's trainable variables (and the optimizer's). On
        # TensorFlow, setting the flag to the value it has does not reach new sublayers (Keras
        # 3.15), so it is switched on and off.
        self.sampler.generator._ensure_built()
        self.sampler.trainable = True
        self.sampler.trainable = False
        self.built = True

    def compile(self, *args, **kwargs):
        super().compile(*args, **kwargs)
        # The optimizer's variables are created now, eagerly: Keras' TensorFlow trainer would
        # create them while tracing the first train step, which TensorFlow then traces twice.
        self.build()
        self.optimizer.build(self.trainable_variables)

    def call(self, source_ids, training=None):
        if not self.samples:
            return ops.zeros((ops.shape(source_ids)[0], 1))  # no text: `compute_loss` ignores it
        return ops.stop_gradient(self.sampler(source_ids, training=False))

    def _scores(self, source_ids, texts, training):
        """D's scores `(batch,)` of each of `texts` against `source_ids`, in order."""
        if self.shared_source:
            scores = self.discriminator.score_texts(source_ids, texts, training=training)
        else:
            scores = [self.discriminator([source_ids, text], training=training) for text in texts]
        return [ops.squeeze(score, axis=1) for score in scores]

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        source_ids, real = x, y
        texts = {"real": real, "mismatch": ops.roll(real, shift=1, axis=0)}
        if self.samples:
            texts["fake"] = y_pred if y_pred is not None else self(source_ids)
        hard = self.hard_negatives(source_ids, real) if self.hard_negatives is not None else {}
        texts.update({kind: negatives for kind, (negatives, _) in hard.items()})
        scores = dict(zip(texts, self._scores(source_ids, list(texts.values()), training)))
        sign, threshold = self.gan_loss.real_sign, self.gan_loss.decision_threshold

        def realness(name):  # by the loss's orientation and threshold (0.5 for least squares)
            return sign * (scores[name] - threshold)

        correct = {
            "real_accuracy": ops.cast(realness("real") > 0, "float32"),
            "mismatch_accuracy": ops.cast(realness("mismatch") < 0, "float32"),
        }
        if self.samples:
            correct["fake_accuracy"] = ops.cast(realness("fake") < 0, "float32")
        for kind, (_, valid) in hard.items():
            # Accuracy per type on the rows the builder could corrupt.
            self.trackers[f"{kind}_accuracy"].update_state(
                ops.cast(realness(kind) < 0, "float32"), sample_weight=ops.cast(valid, "float32")
            )
        # Negatives in the order they always had: samples, mismatched, hard negatives.
        negative_order = (["fake"] if self.samples else []) + ["mismatch"] + list(hard)
        loss = self.gan_loss.discriminator_loss(
            scores["real"], ops.concatenate([scores[name] for name in negative_order], axis=0)
        )
        for name, values in correct.items():
            self.trackers[name].update_state(values)
        self.trackers["accuracy"].update_state(ops.concatenate(list(correct.values()), axis=0))
        return onestep_gan.distribute.scale_loss_for_distribution(loss)


# ------------------------------------------------------------------------- stage
def build_gan_parts(config, transformer, preprocessor):
    """`(sampler, discriminator)` of the stage: a `TextSampler` over `transformer` and a fresh
    `TextDiscriminator`, sized by `config` (an `AdversarialConfig`)."""
    schedule = LinearSchedule(
        config.inverse_temperature_start, config.inverse_temperature_end, num_steps=config.adversarial_steps
    )
    sampler = TextSampler(
        transformer,
        max_length=config.max_length,
        schedule=schedule,
        seed=config.seed,
        feedback_gradient=config.feedback_gradient,
    )
    discriminator = TextDiscriminator(
        vocabulary_size=preprocessor.vocabulary_size,
        max_source_length=preprocessor.max_source_length,
        max_target_length=config.max_length,  # D reads the sampler's texts: max_length tokens
        model_dim=config.discriminator_dim,
        num_heads=config.discriminator_heads,
        feedforward_dim=config.discriminator_feedforward_dim,
        num_layers=config.discriminator_layers,
        dropout=config.discriminator_dropout,
        pad_id=preprocessor.pad_id,
    )
    return sampler, discriminator


def build_pretrainer(config, sampler, discriminator, hard_negatives=None, samples=True):
    """A compiled `DiscriminatorPretrainer` for D's pretraining, as `config` (an
    `AdversarialConfig`) says; `samples=False` for the sample-free steps."""
    pretrainer = DiscriminatorPretrainer(
        sampler, discriminator, loss=config.loss, hard_negatives=hard_negatives, samples=samples,
        shared_source=config.shared_source_encoding,
    )
    pretrainer.compile(optimizer=keras.optimizers.Adam(config.pretrain_learning_rate))
    return pretrainer


def build_one_step_gan(config, sampler, discriminator, hard_negatives=None):
    """The stage's compiled `OneStepGAN`: GAN loss, MLE term on G, hard-negative term on D
    (with `hard_negatives`, a `HardNegatives`), TTUR and clipping, all as `config` says."""
    transformer = sampler.generator
    gan = onestep_gan.OneStepGAN(
        sampler,
        discriminator,
        loss=config.loss,
        lam=config.adversarial_weight,
        seed=config.seed,
        generator_extra_loss=mle_term(transformer, config.mle_weight, config.label_smoothing)
        if config.mle_weight > 0 else None,
        discriminator_extra_loss=hard_negative_term(
            discriminator, hard_negatives, config.loss, config.hard_negative_weight, config.shared_source_encoding
        ) if hard_negatives is not None else None,
    )
    gan.compile(
        optimizer=onestep_gan.GANOptimizer(
            keras.optimizers.Adam(
                config.discriminator_learning_rate, beta_1=0.5, beta_2=0.999, clipnorm=config.gradient_clip_norm
            ),
            generator_learning_rate_ratio=config.generator_learning_rate_ratio,
        )
    )
    return gan


class SaveGANParts(keras.callbacks.Callback):
    """Saves the generator and discriminator as `.keras` files at every epoch end (atomically).

    A `TerminateOnDivergence` that raises stops `fit` before the epoch ends; one that only stops
    training (`raise_error=False`) lets Keras end the epoch, and then, if `divergence` has fired,
    nothing is saved: either way the files keep the last good epoch.
    """

    def __init__(self, run_dir, transformer, discriminator, divergence=None):
        super().__init__()
        self.run_dir = pathlib.Path(run_dir)
        self.transformer = transformer
        self.discriminator = discriminator
        self.divergence = divergence

    def on_epoch_end(self, epoch, logs=None):
        if self.divergence is not None and self.divergence.diverged is not None:
            return
        checkpoints.atomic_save_model(self.transformer, self.run_dir / runs.GENERATOR_FILE)
        checkpoints.atomic_save_model(self.discriminator, self.run_dir / runs.DISCRIMINATOR_FILE)


def keep_log_rows(path, rows):
    """Keeps the header and the first `rows` rows of a `CSVLogger` file (none: deletes it)."""
    path = pathlib.Path(path)
    if not path.is_file():
        return
    if rows == 0:
        path.unlink()
        return
    lines = path.read_bytes().decode("utf-8").splitlines(keepends=True)  # bytes: CSVLogger's CRLF kept
    checkpoints.atomic_write(path, "".join(lines[: 1 + rows]))


def load_gan_parts(run_dir):
    """`(transformer, discriminator)` saved by an adversarial run; refuses mismatched vocabularies."""
    run_dir = pathlib.Path(run_dir)
    transformer = runs.load_model_file(run_dir / runs.GENERATOR_FILE)
    discriminator = runs.load_model_file(run_dir / runs.DISCRIMINATOR_FILE)
    check_compatible(transformer, discriminator)
    return transformer, discriminator


def whole_texts(examples, max_target_length):
    """`examples` without those whose text may have been cut by the preprocessor (it keeps at most
    `max_target_length - 1` tokens): a cut text is no real text for D, nor a target for G."""
    return [example for example in examples if len(example.target_ids) < max_target_length - 1]


def train_adversarial(config, mle_run_dir, run_dir, data_dir=None, enriched_dir=None):
    """Runs D pretraining and adversarial fine-tuning from an MLE run, then scores both.

    Args:
        config: an `AdversarialConfig`.
        mle_run_dir: a finished MLE run folder (`mle.train_and_evaluate`).
        run_dir: output folder; rerunning on an interrupted run finishes the same run. It gets
            the MLE run's `config.json` and `vocabulary.json`, so `runs.load_run` (and the CLI's
            `generate` / `evaluate`) read it like an MLE run.
        data_dir: the WebNLG folder; None: `$WEBNLG_DIR`, else the corpus `webnlg.download_webnlg()` fetches.
        enriched_dir: the enriched WebNLG folder, read if the MLE run was trained with
            `gold_mentions` (its train and dev texts are delexicalised the same way here); None:
            `$WEBNLG_ENRICHED_DIR`.

    Returns `{"mle": test scores, "adversarial": test scores, "discriminator": accuracies,
    "timing": {...}}`.
    """
    start = time.perf_counter()
    run_dir = pathlib.Path(run_dir)
    runs.check_output_dir(run_dir)
    mle_resolved, run_resolved = pathlib.Path(mle_run_dir).resolve(), run_dir.resolve()
    if run_resolved == mle_resolved or mle_resolved in run_resolved.parents or run_resolved in mle_resolved.parents:
        raise ValueError(
            f"Run folder {run_dir}: expected a folder apart from the MLE run {mle_run_dir} (the stage writes its own "
            "config.json, vocabulary and reports). Received: the same folder, or one inside the other."
        )
    # Before its model loads; a missing folder is named by `load_run`.
    folder = pathlib.Path(mle_run_dir)
    if folder.is_dir() and not runs.finished_run(folder, runs.SUMMARY_FILE):
        if (folder / runs.GENERATOR_FILE).is_file() or (folder / runs.ADVERSARIAL_CONFIG_FILE).is_file():
            received = "an adversarial stage's run folder; pass the MLE run it was trained from"
        elif not (folder / runs.CONFIG_FILE).is_file():
            received = f"a folder that holds no run (no {runs.CONFIG_FILE})"
        else:
            received = "an unfinished one; rerun `onestep-gan train` on it to finish it"
        raise ValueError(
            f"--mle-run-dir {mle_run_dir}: expected a finished MLE run (its {runs.SUMMARY_FILE} written and no "
            f"{runs.BACKUP_DIR}/ left). Received: {received}."
        )
    keras.utils.set_random_seed(config.seed)
    transformer, preprocessor, mle_config = runs.load_run(mle_run_dir)
    if config.max_length > transformer.max_target_length:
        raise ValueError(
            f"max_length={config.max_length} exceeds the generator's max_target_length="
            f"{transformer.max_target_length}."
        )

    mentions = {"gold_mentions": mle_config.gold_mentions, "enriched_dir": enriched_dir}
    holdout = {"holdout_categories": mle_config.holdout_categories}  # the MLE run's train categories
    train_entries = runs.load_split("train", data_dir, config.max_train_entries, config.seed, **mentions, **holdout)
    # The same dev/test entries and decoding settings as the MLE run, so scores compare.
    dev_entries = runs.load_split("dev", data_dir, mle_config.max_eval_entries, mle_config.seed, **mentions, **holdout)
    test_entries = runs.load_split("test", data_dir, mle_config.max_eval_entries, mle_config.seed, **holdout)
    aligner = runs.load_aligner(mle_run_dir) or SlotAligner.from_entries(
        runs.load_split("train", data_dir, **holdout)
    )
    # The backup holds G's fine-tuned weights: it resumes only on the MLE run it was made from
    # (that run's training settings and best dev loss; decoding settings may change).
    metadata = {**config.to_dict(), **checkpoints.run_environment(),
                "mle_run": trained_run_identity(mle_run_dir, mle_config)}
    # Every input read and checked (an interrupted run's backup too): only now is the folder written.
    checkpoints.TrainingBackup(run_dir / runs.BACKUP_DIR, metadata=metadata).check()
    run_dir.mkdir(parents=True, exist_ok=True)
    checkpoints.remove_partial_files(run_dir)
    (run_dir / runs.COMPARISON_FILE).unlink(missing_ok=True)  # no finished run here until it is rewritten
    checkpoints.atomic_save(run_dir / runs.ADVERSARIAL_CONFIG_FILE, config.save)
    checkpoints.atomic_save(run_dir / runs.CONFIG_FILE, mle_config.save)
    checkpoints.atomic_save(run_dir / runs.VOCABULARY_FILE, preprocessor.vocabulary.save)
    checkpoints.atomic_save(run_dir / runs.ALIGNER_FILE, aligner.save)
    train_examples = whole_texts(preprocessor.encode_entries(train_entries, for_training=True), preprocessor.max_target_length)
    held_out_examples = whole_texts(preprocessor.encode_entries(dev_entries, for_training=True), preprocessor.max_target_length)
    epochs = -(-config.adversarial_steps // config.steps_per_epoch)

    def make_dataset(examples, **epoch_arguments):
        return datasets.make_adversarial_dataset(
            examples, config.batch_size, config.max_length, preprocessor.max_source_length,
            shuffle=True, seed=config.seed, pad_id=preprocessor.pad_id, eos_id=preprocessor.eos_id,
            **epoch_arguments,
        )

    def held_out_accuracy(pretrainer):
        # A new dataset each time: every evaluation (first run or resumed) sees the same batches.
        results = pretrainer.evaluate(
            make_dataset(held_out_examples), steps=config.held_out_batches, verbose=0, return_dict=True
        )
        return {name: float(results[name]) for name in pretrainer.trackers}

    sampler, discriminator = build_gan_parts(config, transformer, preprocessor)
    # Built now rather than on its first call in pretraining, which a resumed run skips: the
    # backup's variables must meet the same variables.
    discriminator([
        ops.zeros((1, preprocessor.max_source_length), "int32"), ops.zeros((1, config.max_length), "int32")
    ])
    divergence = TerminateOnDivergence(monitor="loss", max_loss=config.max_loss)
    backup = checkpoints.TrainingBackup(
        run_dir / runs.BACKUP_DIR, metadata=metadata, skip_if=lambda: divergence.diverged is not None
    )

    # Training and D's scores in steps that repeat bit for bit (decoding repeats anyway).
    with repeatable_training():
        # 1. Discriminator pretraining (skipped when resuming: the backup holds D and its scores).
        hard_negatives = HardNegatives.for_preprocessor(preprocessor) if config.hard_negative_weight > 0 else None
        pretrainer = build_pretrainer(config, sampler, discriminator, hard_negatives)
        timing = {}
        if not backup.exists():
            accuracy = {"before_pretraining": held_out_accuracy(pretrainer)}
            if config.corruption_pretrain_steps:
                # First against corrupted and mismatched real texts only: no sampling, so many
                # cheap steps, where D learns which value belongs to which triple.
                t0 = time.perf_counter()
                corruption_pretrainer = build_pretrainer(config, sampler, discriminator, hard_negatives, samples=False)
                corruption_pretrainer.fit(
                    make_dataset(train_examples), steps_per_epoch=config.corruption_pretrain_steps, epochs=1,
                    shuffle=False, verbose="auto",
                )
                timing["corruption_pretrain_seconds"] = time.perf_counter() - t0
                accuracy["after_corruption_pretraining"] = held_out_accuracy(pretrainer)
                logger.info("Discriminator held-out accuracy after corruption pretraining: %s",
                            accuracy["after_corruption_pretraining"])
            t0 = time.perf_counter()
            pretrainer.fit(
                make_dataset(train_examples), steps_per_epoch=config.pretrain_steps, epochs=1, shuffle=False,
                verbose="auto",
            )  # the dataset shuffles itself
            timing["pretrain_seconds"] = time.perf_counter() - t0 + timing.get("corruption_pretrain_seconds", 0.0)
            accuracy["after_pretraining"] = held_out_accuracy(pretrainer)
            logger.info("Discriminator held-out accuracy after pretraining: %s", accuracy["after_pretraining"])
            backup.extra = {"accuracy": accuracy, "timing": dict(timing)}
        sampler.trainable = True

        # 2. Adversarial fine-tuning: one model, one loss, plain fit.
        gan = build_one_step_gan(config, sampler, discriminator, hard_negatives)
        gan.build()  # G and D are built already
        initial_epoch = backup.restore(gan)  # 0 for a new run; raises on a damaged backup
        accuracy = dict(backup.extra["accuracy"])
        # The pretraining's seconds as the process that ran it measured them (a backup of an earlier
        # release holds only their sum).
        timing.update(backup.extra.get("timing") or {"pretrain_seconds": backup.extra["pretrain_seconds"]})
        log_path = run_dir / ADVERSARIAL_LOG_FILE
        keep_log_rows(log_path, len(backup.epoch_logs))  # no rows of epochs the rerun redoes
        callbacks = [
            divergence,
            SaveGANParts(run_dir, transformer, discriminator, divergence),
            keras.callbacks.CSVLogger(str(log_path), append=True),
            backup,  # last: saves after the others
        ]
        t0 = time.perf_counter()
        if not backup.finished:  # a finished fine-tuning phase (killed while decoding) is not redone
            try:
                gan.fit(
                    make_dataset(train_examples, epochs=epochs, initial_epoch=initial_epoch,
                                 steps_per_epoch=config.steps_per_epoch),
                    steps_per_epoch=config.steps_per_epoch, epochs=epochs, initial_epoch=initial_epoch,
                    callbacks=callbacks, shuffle=False, verbose="auto",
                )
            except TrainingDivergedError as error:
                # The backup keeps the last good epoch, but resuming from it would diverge again.
                shutil.rmtree(run_dir / runs.BACKUP_DIR, ignore_errors=True)
                raise TrainingDivergedError(
                    f"{error} The last good generator and discriminator are in "
                    f"{run_dir / runs.GENERATOR_FILE} and {run_dir / runs.DISCRIMINATOR_FILE} "
                    "(none if the first epoch diverged)."
                ) from error
        timing["adversarial_seconds"] = backup.train_seconds  # the whole fine-tuning, over its processes (resumes)
        timing["adversarial_seconds_this_process"] = time.perf_counter() - t0
        timing["adversarial_steps"] = len(backup.epoch_logs) * config.steps_per_epoch
        sampler.trainable = False
        accuracy["after_adversarial"] = held_out_accuracy(pretrainer)
        logger.info("Discriminator held-out accuracy after fine-tuning: %s", accuracy["after_adversarial"])

    # 3. Decode with the fine-tuned generator; compare with the MLE run's own scores.
    decode = decoder_for(
        transformer, preprocessor, mle_config, aligner,
        discriminator=(discriminator, onestep_gan.losses.get(config.loss).real_sign),
    )
    results = {}
    for name, entries in (("dev", dev_entries), ("test", test_entries)):
        examples = preprocessor.encode_entries(entries, for_training=False)
        t0 = time.perf_counter()
        hypotheses = decode(examples)
        timing[f"decode_{name}_seconds"] = time.perf_counter() - t0
        results[name] = evaluation.write_report(
            run_dir, hypotheses, entries, name=f"adversarial_{name}", aligner=aligner
        )
    timing["total_seconds"] = time.perf_counter() - start  # this process's (a resumed run: its own share)
    mle_scores_path = pathlib.Path(mle_run_dir) / "test_scores.json"
    mle_scores = runs.read_json(mle_scores_path, "the MLE run's test scores") if mle_scores_path.is_file() else None
    summary = {"mle": mle_scores, "adversarial": results["test"], "discriminator": accuracy, "timing": timing}
    comparison = runs.write_comparison(run_dir, summary)
    backup.delete()  # the run is complete: a rerun starts afresh
    logger.info("Comparison:\n%s", comparison)
    return summary
