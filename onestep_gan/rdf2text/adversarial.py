"""Adversarial fine-tuning of an MLE RDF-to-text generator with `OneStepGAN.fit`.

The stage, after MLE training (`training.train_and_evaluate`):

1. Discriminator pretraining: `DiscriminatorPretrainer.fit` teaches a `TextDiscriminator`
   to tell real (triples, text) pairs from generator samples *and* from mismatched real
   texts (the text of another tripleset in the batch), so that D judges faithfulness to
   the triples, not only fluency. Its held-out accuracy is reported.
2. Adversarial fine-tuning: `OneStepGAN(TextSampler(generator), discriminator)` trained by
   plain `fit` with the single loss, plus an MLE term on G inside the same loss
   (`mle_term`, which touches only G), TTUR via `GANOptimizer`, a temperature schedule,
   `TerminateOnDivergence`, and `BackupAndRestore` so an interrupted run resumes.
3. Scoring: the adversarial generator decodes dev/test like the MLE one; both are reported
   side by side.

Text is discrete: the sampler hands D straight-through Gumbel-softmax one-hots (exact
one-hots forward, soft gradient backward), embedded by `probs @ embedding_matrix`; real
text enters D as exact one-hots of its ids. See `sampling.py` and `discriminator.py`.
"""

import dataclasses
import json
import logging
import pathlib
import shutil
import time

import keras
import numpy as np
import tensorflow as tf
from keras import ops

import onestep_gan
from onestep_gan.callbacks import TerminateOnDivergence, TrainingDivergedError
from onestep_gan.rdf2text import evaluation, pipeline, training
from onestep_gan.rdf2text.discriminator import TextDiscriminator, check_compatible
from onestep_gan.rdf2text.sampling import LinearSchedule, TextSampler
from onestep_gan.rdf2text.vocabulary import Vocabulary

logger = logging.getLogger(__name__)

GENERATOR_FILE = "generator.keras"
DISCRIMINATOR_FILE = "discriminator.keras"
ADVERSARIAL_CONFIG_FILE = "adversarial_config.json"


@dataclasses.dataclass
class AdversarialConfig:
    """Settings of the adversarial stage. `quick()` is a tiny variant for smoke runs.

    Defaults are sized for 2 CPU cores, where one free-running sample of 48 tokens at
    batch 32 costs seconds (see benchmarks/step_time.py); on a GPU raise the step counts.
    """

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
    pretrain_steps: int = 120
    pretrain_learning_rate: float = 3e-4
    held_out_batches: int = 8
    # Adversarial fine-tuning
    loss: str = "hinge"
    lam: float = 1.0
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

    def __post_init__(self):
        for name in ("max_length", "batch_size", "pretrain_steps", "adversarial_steps", "steps_per_epoch"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"`{name}` must be positive. Received: {name}={getattr(self, name)}")
        if self.lam < 0 or self.mle_weight < 0:
            raise ValueError(
                f"`lam` and `mle_weight` must be >= 0. Received: lam={self.lam}, mle_weight={self.mle_weight}"
            )

    @classmethod
    def quick(cls, **overrides):
        settings = dict(
            max_train_entries=200, max_length=24, batch_size=8,
            discriminator_dim=32, discriminator_feedforward_dim=64, discriminator_layers=1,
            pretrain_steps=4, held_out_batches=2, adversarial_steps=4, steps_per_epoch=2,
        )
        settings.update(overrides)
        return cls(**settings)

    def to_dict(self):
        return dataclasses.asdict(self)


# ---------------------------------------------------------------------------- data
def make_adversarial_dataset(examples, batch_size, max_length, max_source_length, shuffle=True, seed=0):
    """`(source_ids (b, max_source_length), text_ids (b, max_length))` int32 batches.

    The text is the reference + EOS, padded with PAD to exactly `max_length`: the layout of
    the sampler's output. Fixed shapes keep one compiled step; `drop_remainder` keeps the
    batch size fixed (and splittable over replicas). With `shuffle`, the dataset repeats
    forever (use `steps_per_epoch`). Examples whose text + EOS does not fit
    are skipped and counted in the log.
    """
    kept = [e for e in examples if e.target_ids is not None and len(e.target_ids) + 1 <= max_length]
    if len(kept) < len(examples):
        logger.info("Adversarial data: skipped %d of %d texts longer than %d tokens.",
                    len(examples) - len(kept), len(examples), max_length - 1)
    if len(kept) < (1 if shuffle else batch_size):
        raise ValueError(
            f"Expected at least {1 if shuffle else batch_size} example(s) of at most {max_length - 1} "
            f"tokens (batch_size={batch_size}, shuffle={shuffle}). Received: {len(kept)}"
        )
    sources = np.full((len(kept), max_source_length), Vocabulary.PAD, dtype="int32")
    texts = np.full((len(kept), max_length), Vocabulary.PAD, dtype="int32")
    for row, example in enumerate(kept):
        source = example.source_ids[:max_source_length]
        sources[row, : len(source)] = source
        texts[row, : len(example.target_ids)] = example.target_ids
        texts[row, len(example.target_ids)] = Vocabulary.EOS
    dataset = tf.data.Dataset.from_tensor_slices((sources, texts))
    if shuffle:
        dataset = dataset.shuffle(len(kept), seed=seed, reshuffle_each_iteration=True).repeat()
    return dataset.batch(batch_size, drop_remainder=True).prefetch(tf.data.AUTOTUNE)


def mle_term(generator, weight=1.0, label_smoothing=0.1):
    """`fn(conditions, real, fake)`: the teacher-forced MLE loss of `generator` on the real text.

    Passed as `OneStepGAN(generator_extra_loss=...)`; it never calls D, so its gradient
    reaches G only.
    """
    loss_fn = training.LabelSmoothedSparseCrossEntropy(
        label_smoothing=label_smoothing, ignore_class=Vocabulary.PAD
    )

    def term(conditions, real, fake):
        del fake
        batch_size = ops.shape(real)[0]
        bos = ops.full((batch_size, 1), Vocabulary.BOS, dtype=real.dtype)
        decoder_input = ops.concatenate([bos, real[:, :-1]], axis=1)  # (batch, max_length)
        logits = generator({"source": conditions, "target": decoder_input}, training=True)
        return weight * loss_fn(real, logits)

    return term


# ------------------------------------------------------------------ D pretraining
@keras.saving.register_keras_serializable(package="onestep_gan")
class DiscriminatorPretrainer(keras.Model):
    """Trains a text discriminator alone, against samples and mismatched real texts.

    The loss is the GAN loss's discriminator term with real pairs on the real side and,
    on the fake side, the sampler's texts and the real texts of another tripleset in the
    batch (rolled by one). Accuracies (logged as `real_accuracy`, `fake_accuracy`,
    `mismatch_accuracy` and their mean `accuracy`) count a score as correct when its sign
    is the loss's real orientation (`GANLoss.real_sign`) for real pairs and the opposite for
    the others. The sampler is not trained.

    Args:
        sampler: a `TextSampler` (its weights stay fixed).
        discriminator: a `TextDiscriminator`.
        loss: a GAN loss name or `GANLoss` (pointwise losses: not `relativistic`).
    """

    def __init__(self, sampler, discriminator, loss="hinge", **kwargs):
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
        self.trackers = {
            name: keras.metrics.Mean(name=name)
            for name in ("accuracy", "real_accuracy", "fake_accuracy", "mismatch_accuracy")
        }

    def build(self, input_shape=None):
        self.built = True  # the sampler and D build themselves on their first call

    def call(self, source_ids, training=None):
        return ops.stop_gradient(self.sampler(source_ids, training=False))

    def _scores(self, source_ids, text, training):
        return ops.squeeze(self.discriminator([source_ids, text], training=training), axis=1)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        source_ids, real = x, y
        fake = y_pred if y_pred is not None else self(source_ids)
        mismatched = ops.roll(real, shift=1, axis=0)
        real_scores = self._scores(source_ids, real, training)
        fake_scores = self._scores(source_ids, fake, training)
        mismatch_scores = self._scores(source_ids, mismatched, training)
        loss = self.gan_loss.discriminator_loss(
            real_scores, ops.concatenate([fake_scores, mismatch_scores], axis=0)
        )
        sign = self.gan_loss.real_sign
        correct = {
            "real_accuracy": ops.cast(sign * real_scores > 0, "float32"),
            "fake_accuracy": ops.cast(sign * fake_scores < 0, "float32"),
            "mismatch_accuracy": ops.cast(sign * mismatch_scores < 0, "float32"),
        }
        for name, values in correct.items():
            self.trackers[name].update_state(values)
        self.trackers["accuracy"].update_state(ops.concatenate(list(correct.values()), axis=0))
        return onestep_gan.distribute.scale_loss_for_distribution(loss)


# ------------------------------------------------------------------------- stage
class SaveGANParts(keras.callbacks.Callback):
    """Saves the generator and discriminator as `.keras` files at every epoch end.

    Keras still ends the epoch when a callback stops training mid-epoch; if `divergence`
    (a `TerminateOnDivergence`) has fired, nothing is saved, so the files keep the last
    good epoch.
    """

    def __init__(self, run_dir, generator, discriminator, divergence=None):
        super().__init__()
        self.run_dir = pathlib.Path(run_dir)
        self.generator = generator
        self.discriminator = discriminator
        self.divergence = divergence

    def on_epoch_end(self, epoch, logs=None):
        if self.divergence is not None and self.divergence.diverged is not None:
            return
        self.generator.save(self.run_dir / GENERATOR_FILE)
        self.discriminator.save(self.run_dir / DISCRIMINATOR_FILE)


def load_gan_parts(run_dir):
    """`(generator, discriminator)` saved by an adversarial run; refuses mismatched vocabularies."""
    run_dir = pathlib.Path(run_dir)
    generator = keras.saving.load_model(run_dir / GENERATOR_FILE, compile=False)
    discriminator = keras.saving.load_model(run_dir / DISCRIMINATOR_FILE, compile=False)
    check_compatible(generator, discriminator)
    return generator, discriminator


def held_out_accuracy(pretrainer, dataset, batches):
    results = pretrainer.evaluate(dataset, steps=batches, verbose=0, return_dict=True)
    return {name: float(results[name]) for name in pretrainer.trackers}


def train_adversarial(config, mle_run_dir, run_dir, data_dir=None):
    """Runs D pretraining and adversarial fine-tuning from an MLE run, then scores both.

    Args:
        config: an `AdversarialConfig`.
        mle_run_dir: a finished `training.train_and_evaluate` run (model, vocabulary, scores).
        run_dir: output folder; rerunning on an interrupted run resumes fine-tuning.
        data_dir: the WebNLG folder; None reads `$WEBNLG_DIR`.

    Returns `{"mle": test scores, "adversarial": test scores, "discriminator": accuracies,
    "timing": {...}}`.
    """
    start = time.perf_counter()
    run_dir = pathlib.Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    keras.utils.set_random_seed(config.seed)
    (run_dir / ADVERSARIAL_CONFIG_FILE).write_text(json.dumps(config.to_dict(), indent=2) + "\n")
    generator, vocabulary, mle_config = training.load_run(mle_run_dir)
    if config.max_length > generator.max_target_length:
        raise ValueError(
            f"max_length={config.max_length} exceeds the generator's max_target_length="
            f"{generator.max_target_length}."
        )

    train_entries = training._load_split("train", data_dir, config.max_train_entries, config.seed)
    # The same dev/test entries and decoding settings as the MLE run, so scores compare.
    dev_entries = training._load_split("dev", data_dir, mle_config.max_eval_entries, mle_config.seed)
    test_entries = training._load_split("test", data_dir, mle_config.max_eval_entries, mle_config.seed)
    lengths = (mle_config.max_source_length, mle_config.max_target_length)
    train_examples = pipeline.encode_entries(train_entries, vocabulary, *lengths, for_training=True)
    held_out_examples = pipeline.encode_entries(dev_entries, vocabulary, *lengths, for_training=True)
    make = lambda examples, shuffle: make_adversarial_dataset(  # noqa: E731
        examples, config.batch_size, config.max_length, mle_config.max_source_length, shuffle, config.seed
    )
    train_dataset = make(train_examples, True)
    held_out_dataset = make(held_out_examples, True)

    schedule = LinearSchedule(
        config.inverse_temperature_start, config.inverse_temperature_end, num_steps=config.adversarial_steps
    )
    sampler = TextSampler(
        generator,
        max_length=config.max_length,
        schedule=schedule,
        seed=config.seed,
        feedback_gradient=config.feedback_gradient,
    )
    discriminator = TextDiscriminator(
        vocabulary_size=len(vocabulary),
        max_source_length=mle_config.max_source_length,
        max_target_length=config.max_length,
        model_dim=config.discriminator_dim,
        num_heads=config.discriminator_heads,
        feedforward_dim=config.discriminator_feedforward_dim,
        num_layers=config.discriminator_layers,
        dropout=config.discriminator_dropout,
    )
    resuming = (run_dir / DISCRIMINATOR_FILE).is_file() and (run_dir / "backup").is_dir()

    # 1. Discriminator pretraining (skipped when resuming: the backup holds D).
    pretrainer = DiscriminatorPretrainer(sampler, discriminator, loss=config.loss)
    pretrainer.compile(optimizer=keras.optimizers.Adam(config.pretrain_learning_rate))
    timing = {}
    accuracy = {}
    if not resuming:
        accuracy["before_pretraining"] = held_out_accuracy(pretrainer, held_out_dataset, config.held_out_batches)
        t0 = time.perf_counter()
        pretrainer.fit(
            train_dataset, steps_per_epoch=config.pretrain_steps, epochs=1, shuffle=False, verbose="auto"
        )  # the dataset shuffles itself
        timing["pretrain_seconds"] = time.perf_counter() - t0
        accuracy["after_pretraining"] = held_out_accuracy(pretrainer, held_out_dataset, config.held_out_batches)
        logger.info("Discriminator held-out accuracy after pretraining: %s", accuracy["after_pretraining"])
    sampler.trainable = True

    # 2. Adversarial fine-tuning: one model, one loss, plain fit.
    gan = onestep_gan.OneStepGAN(
        sampler,
        discriminator,
        loss=config.loss,
        lam=config.lam,
        seed=config.seed,
        generator_extra_loss=mle_term(generator, config.mle_weight, config.label_smoothing)
        if config.mle_weight > 0 else None,
    )
    gan.compile(
        optimizer=onestep_gan.GANOptimizer(
            keras.optimizers.Adam(
                config.discriminator_learning_rate, beta_1=0.5, beta_2=0.999, clipnorm=config.gradient_clip_norm
            ),
            generator_learning_rate_ratio=config.generator_learning_rate_ratio,
        )
    )
    gan.build()  # BackupAndRestore needs a built model; G and D are built already
    epochs = -(-config.adversarial_steps // config.steps_per_epoch)
    divergence = TerminateOnDivergence(monitor="loss", max_loss=config.max_loss)
    callbacks = [
        divergence,
        keras.callbacks.BackupAndRestore(backup_dir=str(run_dir / "backup")),
        SaveGANParts(run_dir, generator, discriminator, divergence),
        keras.callbacks.CSVLogger(str(run_dir / "adversarial_log.csv"), append=True),
    ]
    t0 = time.perf_counter()
    try:
        history = gan.fit(
            train_dataset, steps_per_epoch=config.steps_per_epoch, epochs=epochs, callbacks=callbacks,
            shuffle=False, verbose="auto",
        )
    except TrainingDivergedError as error:
        # The backup was written after the divergence: resuming from it would resume the NaNs.
        shutil.rmtree(run_dir / "backup", ignore_errors=True)
        raise TrainingDivergedError(
            f"{error} The last good generator and discriminator are in {run_dir / GENERATOR_FILE} and "
            f"{run_dir / DISCRIMINATOR_FILE} (none if the first epoch diverged)."
        ) from error
    timing["adversarial_seconds"] = time.perf_counter() - t0
    timing["adversarial_steps"] = len(history.history.get("loss", [])) * config.steps_per_epoch
    sampler.trainable = False
    accuracy["after_adversarial"] = held_out_accuracy(pretrainer, held_out_dataset, config.held_out_batches)
    logger.info("Discriminator held-out accuracy after fine-tuning: %s", accuracy["after_adversarial"])

    # 3. Decode with the fine-tuned generator; compare with the MLE run's own scores.
    generate_function = training.make_generate_function(
        generator, method=mle_config.decode_method, beam_width=mle_config.beam_width,
        length_penalty=mle_config.length_penalty,
    )
    results = {}
    for name, entries in (("dev", dev_entries), ("test", test_entries)):
        examples = pipeline.encode_entries(entries, vocabulary, *lengths, for_training=False)
        t0 = time.perf_counter()
        hypotheses = training.decode_examples(generate_function, examples, vocabulary, mle_config.decode_batch_size)
        timing[f"decode_{name}_seconds"] = time.perf_counter() - t0
        results[name] = evaluation.write_report(run_dir, hypotheses, entries, name=f"adversarial_{name}")
    timing["total_seconds"] = time.perf_counter() - start
    mle_scores_path = pathlib.Path(mle_run_dir) / "test_scores.json"
    mle_scores = json.loads(mle_scores_path.read_text()) if mle_scores_path.is_file() else None
    summary = {"mle": mle_scores, "adversarial": results["test"], "discriminator": accuracy, "timing": timing}
    (run_dir / "adversarial_summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (run_dir / "comparison.md").write_text(format_comparison(mle_scores, results["test"], accuracy, timing))
    logger.info("Comparison:\n%s", (run_dir / "comparison.md").read_text())
    return summary


def format_comparison(mle_scores, adversarial_scores, accuracy, timing):
    """Markdown table: MLE vs MLE+GAN on the same test set."""
    rows = [
        ("BLEU-2017 (all)", "bleu_2017", 1.0), ("sacreBLEU (all)", "sacrebleu", 1.0),
        ("chrF++ (all)", "chrf_pp", 1.0), ("entity coverage % (all)", "entity_coverage", 100.0),
        ("repeated 3-gram % (all)", "repeated_trigram_share", 100.0),
    ]
    lines = ["| metric | MLE | MLE+GAN |", "|---|---:|---:|"]
    for label, key, scale in rows:
        mle = f"{mle_scores['all'][key] * scale:.2f}" if mle_scores else "n/a"
        lines.append(f"| {label} | {mle} | {adversarial_scores['all'][key] * scale:.2f} |")
    for subset in ("seen", "unseen"):
        if subset in adversarial_scores:
            mle = f"{mle_scores[subset]['bleu_2017']:.2f}" if mle_scores and subset in mle_scores else "n/a"
            lines.append(f"| BLEU-2017 ({subset}) | {mle} | {adversarial_scores[subset]['bleu_2017']:.2f} |")
    for stage, values in accuracy.items():
        lines.append(f"| D held-out accuracy, {stage.replace('_', ' ')} | | {values['accuracy'] * 100:.1f}% |")
    lines.append(
        f"| adversarial wall time | | {timing.get('adversarial_seconds', 0) / 60:.1f} min "
        f"({timing.get('adversarial_steps', 0)} steps) |"
    )
    return "\n".join(lines) + "\n"
