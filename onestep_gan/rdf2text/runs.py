"""The run-folder contract: what each job writes, and loading it back.

An MLE run folder (`mle.train_and_evaluate`) holds

    config.json        MLEConfig (sizes, lengths, decoding settings)
    vocabulary.json    the Vocabulary (special ids 0-3, then train tokens)
    model.keras        the TransformerGenerator with the best dev loss
    aligner.json       the SlotAligner mined from train (slot error scores, reranking)
    {dev,test}_hypotheses.txt, {dev,test}_scores.{json,md}, timing.json, summary.md

An adversarial run folder (`adversarial.train_adversarial`) holds the same `config.json` and
`vocabulary.json` and `aligner.json` (copied from its MLE run, so it decodes the same way), `generator.keras` and
`discriminator.keras`, `adversarial_config.json` and its own scores (`adversarial_{dev,test}_*`,
`adversarial_summary.json` and its table `comparison.md`). `load_run` reads either kind,
so `generate` and `evaluate` work on both.

`load_split` is the one way the jobs read WebNLG splits (with the seeded sampling of
`max_train_entries` / `max_eval_entries`, and the categories `holdout_categories` holds out of
train), so an adversarial run decodes exactly the dev and test entries of its MLE run.
"""

import dataclasses
import json
import logging
import os
import pathlib
import random
import zipfile

from onestep_gan.rdf2text import enriched, evaluation, webnlg
from onestep_gan.rdf2text.atomic_files import check_output_dir  # noqa: F401 (the jobs' and the CLI's)
from onestep_gan.rdf2text.checkpoints import atomic_write
from onestep_gan.rdf2text.config import MLEConfig
from onestep_gan.rdf2text.faithfulness import SlotAligner
from onestep_gan.rdf2text.preprocessor import TextPreprocessor
from onestep_gan.rdf2text.vocabulary import Vocabulary

logger = logging.getLogger(__name__)

CONFIG_FILE = "config.json"
VOCABULARY_FILE = "vocabulary.json"
MODEL_FILE = "model.keras"
TIMING_FILE = "timing.json"
SUMMARY_FILE = "summary.md"
GENERATOR_FILE = "generator.keras"
DISCRIMINATOR_FILE = "discriminator.keras"
ADVERSARIAL_CONFIG_FILE = "adversarial_config.json"
ADVERSARIAL_SUMMARY_FILE = "adversarial_summary.json"
COMPARISON_FILE = "comparison.md"
ALIGNER_FILE = "aligner.json"
BACKUP_DIR = "backup"


def sample_entries(entries, limit, seed):
    """A seeded random sample of `limit` entries, in their original order (all if None)."""
    if limit is None or limit >= len(entries):
        return list(entries)
    chosen = sorted(random.Random(seed).sample(range(len(entries)), limit))
    return [entries[index] for index in chosen]


def hold_out_categories(entries, split, categories):
    """`entries` of `split` with the train `categories` held out (`MLEConfig.holdout_categories`):
    train loses their entries; a dev or test entry of a held-out category is unseen (`seen`
    False), the other dev entries are seen, the other test entries as WebNLG marks them.

    Raises ValueError for train entries when a category is not one of theirs.
    """
    categories = set(categories)
    if not categories:
        return list(entries)
    if split == "train":
        known = {entry.category for entry in entries}
        unknown = sorted(categories - known)
        if unknown:
            raise ValueError(
                f"holdout_categories: {', '.join(unknown)} not among the train categories. "
                f"Expected some of: {', '.join(sorted(known))}"
            )
        if categories >= known:
            raise ValueError(f"holdout_categories: holding out every train category ({', '.join(sorted(known))}) leaves nothing to train on.")
        return [entry for entry in entries if entry.category not in categories]
    return [
        dataclasses.replace(entry, seen=entry.seen is not False and entry.category not in categories)
        for entry in entries
    ]


def load_split(split, data_dir=None, limit=None, seed=0, gold_mentions=False, enriched_dir=None,
               holdout_categories=()):
    """WebNLG `split` entries (`webnlg.load_webnlg`), with `holdout_categories` held out
    (`hold_out_categories`), sampled by `sample_entries`; with `gold_mentions`, their texts'
    mentions from the enriched corpus in `enriched_dir` (`enriched.with_mentions`; None:
    `$WEBNLG_ENRICHED_DIR`)."""
    entries = hold_out_categories(webnlg.load_webnlg(split, data_dir), split, holdout_categories)
    entries = sample_entries(entries, limit, seed)
    if gold_mentions:
        entries = enriched.with_mentions(entries, enriched.load_mentions(split, enriched_dir))
    logger.info("Loaded %d %s entries", len(entries), split)
    return entries


def preprocessor_for(config, vocabulary):
    """The `TextPreprocessor` of a run: its vocabulary, its config's length limits and
    whether it delexicalises predicates."""
    return TextPreprocessor(
        vocabulary, config.max_source_length, config.max_target_length,
        predicate_placeholders=config.predicate_placeholders, entity_roles=config.entity_roles,
        entity_words=config.entity_words, canonical_order=config.canonical_triple_order,
    )


def load_config(path):
    """The `MLEConfig` of `path` (a run's config.json); errors name the file and the field."""
    return MLEConfig.load(path)


def load_model_file(path):
    """A saved text model (`TransformerGenerator` or `TextDiscriminator`), without its optimizer.

    Importing `onestep_gan.rdf2text` registers the text models with Keras; this function is
    what to call (or import that package before `keras.saving.load_model`). A missing file and
    a damaged one (empty, truncated: not a zip archive) raise `ValueError` naming the file.
    """
    import keras

    from onestep_gan.rdf2text import register_models

    register_models()  # the text models must be registered with Keras before loading

    path = pathlib.Path(path)
    if not path.is_file():
        raise ValueError(f"Model file {path} not found.")
    if not zipfile.is_zipfile(path):
        raise ValueError(
            f"Model file {path} is damaged (empty or truncated: not a .keras archive); "
            "rerun the job that writes it (a rerun of an interrupted run resumes it)."
        )
    try:
        return keras.saving.load_model(path, compile=False)
    except (zipfile.BadZipFile, KeyError, OSError) as error:  # KeyError: a zip without config.json; OSError: h5py
        raise ValueError(
            f"Model file {path} is damaged or not a .keras archive ({type(error).__name__}: {error}); "
            "rerun the job that writes it."
        ) from None
    except ValueError as error:
        if "discriminator" in path.name and "could not be loaded" in str(error).lower():
            raise ValueError(
                f"{path}: this discriminator was saved before TextDiscriminator shared the "
                "generator's TransformerBackbone (onestep_gan 0.1); its weights no longer fit. "
                "Rerun the adversarial stage into a new run folder."
            ) from None
        raise


def read_json(path, expected):
    """The JSON object in `path`; a missing, damaged or non-object file raises ValueError naming the
    file and `expected` ("the MLE run's timing", ...)."""
    path = pathlib.Path(path)
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"{path} not found: expected {expected}.") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path} is not a valid JSON file ({error}); expected {expected}.") from None
    except OSError as error:
        raise ValueError(f"{path} cannot be read ({error.strerror}); expected {expected}.") from None
    if not isinstance(value, dict):
        raise ValueError(f"{path}: expected {expected} (a JSON object). Received: a {type(value).__name__}")
    return value


def finished_run(run_dir, last_file, config=None):
    """True when `run_dir` holds a finished run: its job's last report `last_file` written (the jobs
    remove it when they start writing a run) and no training backup left; with `config`, a run of
    these settings (its `config.json` the same)."""
    run_dir = pathlib.Path(run_dir)
    if not (run_dir / last_file).is_file() or (run_dir / BACKUP_DIR).exists():
        return False
    def settings(saved):  # `verbose` changes the logs only
        return {key: value for key, value in saved.to_dict().items() if key != "verbose"}

    try:
        return config is None or settings(type(config).load(run_dir / CONFIG_FILE)) == settings(config)
    except ValueError:  # a damaged or old config.json: not this run
        return False


def check_run_dir(run_dir):
    """Returns the generator file name of a run folder; raises `ValueError` if files are missing."""
    run_dir = pathlib.Path(run_dir)
    if not run_dir.is_dir():
        raise ValueError(f"Run directory {run_dir} not found: expected a finished MLE or adversarial run.")
    model_file = MODEL_FILE if (run_dir / MODEL_FILE).is_file() else GENERATOR_FILE
    missing = [name for name in (CONFIG_FILE, VOCABULARY_FILE, model_file) if not (run_dir / name).is_file()]
    if missing:
        raise ValueError(
            f"Run directory {run_dir} lacks {missing}: expected the outputs of the MLE job "
            f"({MODEL_FILE}) or of the adversarial stage ({GENERATOR_FILE})."
        )
    return model_file


def load_run(run_dir):
    """`(generator, preprocessor, config)` of a finished MLE or adversarial run folder.

    The generator is `model.keras` (an MLE run) or else `generator.keras` (an adversarial run).
    Its vocabulary size must be that of `vocabulary.json`.
    """
    run_dir = pathlib.Path(run_dir)
    model_file = check_run_dir(run_dir)
    config = load_config(run_dir / CONFIG_FILE)
    preprocessor = preprocessor_for(config, Vocabulary.load(run_dir / VOCABULARY_FILE))
    model = load_model_file(run_dir / model_file)
    if model.vocabulary_size != preprocessor.vocabulary_size:
        raise ValueError(
            f"{run_dir / VOCABULARY_FILE} holds {preprocessor.vocabulary_size} tokens; "
            f"{run_dir / model_file} was trained with {model.vocabulary_size}: the two files come from "
            "different runs."
        )
    for name in ("max_source_length", "max_target_length"):  # the model has no position past its own
        if getattr(model, name) != getattr(config, name):
            raise ValueError(
                f"{run_dir / CONFIG_FILE}: expected the {name} {run_dir / model_file} was built with, "
                f"{getattr(model, name)}. Received: {name}={getattr(config, name)}"
            )
    return model, preprocessor, config


def load_discriminator(run_dir):
    """`(discriminator, real_sign)` of an adversarial run folder: its `TextDiscriminator`
    (`discriminator.keras`) and the orientation of the loss it was trained with (`GANLoss.real_sign`,
    from `adversarial_config.json`: -1 for hinge, whose D scores real texts low)."""
    import onestep_gan
    from onestep_gan.rdf2text.config import AdversarialConfig

    path = pathlib.Path(run_dir) / DISCRIMINATOR_FILE
    if not path.is_file():
        raise ValueError(
            f"{path}: no such file. Expected an adversarial run folder (only the adversarial stage trains a "
            "discriminator)."
        )
    config = AdversarialConfig.load(pathlib.Path(run_dir) / ADVERSARIAL_CONFIG_FILE)
    return load_model_file(path), onestep_gan.losses.get(config.loss).real_sign


def load_aligner(run_dir):
    """The run's `SlotAligner` (`aligner.json`), or None for a run saved without one."""
    path = pathlib.Path(run_dir) / ALIGNER_FILE
    return SlotAligner.load(path) if path.is_file() else None


def load_checker(run_dir, config):
    """The slot check of `generate --format jsonl` and `--unfaithful`: the run's aligner with its
    stricter checks on (the reranker's `min_foreign`, `inversions`, `subjects`, `attachments`, `opposed`);
    None for a run saved without an aligner."""
    aligner = load_aligner(run_dir)
    if aligner is None:
        return None
    min_foreign = config.rerank_min_foreign if config.rerank_min_foreign is not None else aligner.min_foreign
    return aligner.with_settings(min_foreign=min_foreign, inversions=True, subjects=True, attachments=True, opposed=True)


def write_comparison(run_dir, summary):
    """Writes an adversarial stage's `summary` (keys "mle" and "adversarial": test scores,
    "discriminator": held-out accuracies, "timing") to `run_dir`'s `adversarial_summary.json`, and
    its table (`evaluation.format_comparison`) to `comparison.md`, each file whole or not at all.
    Returns the table."""
    run_dir = pathlib.Path(run_dir)
    atomic_write(run_dir / ADVERSARIAL_SUMMARY_FILE, json.dumps(summary, indent=2) + "\n")
    comparison = evaluation.format_comparison(
        summary["mle"], summary["adversarial"], summary["discriminator"], summary["timing"]
    )
    atomic_write(run_dir / COMPARISON_FILE, comparison)
    return comparison
