"""Command line: `onestep-gan train|adversarial|chain|decode|generate|evaluate` (also `python -m onestep_gan`).

    onestep-gan train --run-dir runs/webnlg_mle [--quick] [--epochs N] [--data-dir DIR] [--enriched-dir DIR]
    onestep-gan adversarial --mle-run-dir runs/webnlg_mle --run-dir runs/webnlg_gan
    onestep-gan chain --run-dir runs/webnlg      # both: runs/webnlg/mle, then runs/webnlg/gan
                                                 # (rerun after a kill: a finished mle/ is kept)
    onestep-gan decode --run-dir runs/webnlg_mle --beam-width 16   # dev/test again, other decoding
    onestep-gan generate --run-dir runs/webnlg_mle [--input FILE]   # else reads stdin
    onestep-gan evaluate --hypotheses runs/webnlg_mle/test_hypotheses.txt --split test

`train` and `adversarial` take one flag per field of `MLEConfig` / `AdversarialConfig`
(`--model-dim 256`, `--num-encoder-layers 3`, `--adversarial-weight 0`, ...; see `--help`).
`generate` works on an MLE or an adversarial run folder. It reads one triple set per line,
triples separated by ` ; `, the parts of a triple by ` | `, in WebNLG spelling:

    Alan_Bean | birthPlace | Wheeler,_Texas ; Alan_Bean | occupation | Test_pilot

and prints one text per line; with `--format jsonl`, one JSON object per line: the text and, per
input triple, how the run's slot aligner reads it (`evaluation.check_text`), so that a caller can hold back texts
it flags. The check is a partial one: on WebNLG test outputs it finds about half of the false texts a
careful reader finds, on inputs far from WebNLG far fewer (README, "Commands"). With `--unfaithful
template`, a text the check flags is replaced by a plain template text of the input's triples
(`templates.py`: "The birth place of Alan Bean is Wheeler, Texas."), stiff but stating the input's facts.
"""

import argparse
import dataclasses
import json
import logging
import os
import pathlib
import sys

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from onestep_gan.rdf2text.config import (  # noqa: E402
    AdversarialConfig,
    MLEConfig,
    RERANK_SUBJECTS,
    optional_float,
    add_config_arguments,
    config_from_arguments,
)
from onestep_gan.rdf2text.templates import UNFAITHFUL  # noqa: E402

logger = logging.getLogger(__name__)

TRIPLE_SET_SEPARATOR = " ; "
TRIPLE_PART_SEPARATOR = " | "
_DATA_DIR_DEFAULT = "(default: $WEBNLG_DIR, else the pinned corpus, downloaded once into the Keras cache)"


def add_enriched_dir_argument(parser):
    parser.add_argument(
        "--enriched-dir", default=None,
        help="enriched WebNLG folder, read when the MLE run has gold_mentions (default: $WEBNLG_ENRICHED_DIR)",
    )


def add_train_arguments(parser):
    """Arguments of `train` (shared with examples/webnlg.py)."""
    parser.add_argument("--run-dir", default="runs/webnlg_mle", help="output folder (default: %(default)s)")
    parser.add_argument("--data-dir", default=None, help=f"WebNLG 2017 folder with train/dev/test {_DATA_DIR_DEFAULT}")
    add_enriched_dir_argument(parser)
    parser.add_argument("--quick", action="store_true", help="MLEConfig.quick(): tiny sample and model, 3 epochs")
    add_config_arguments(parser.add_argument_group("MLEConfig fields"), MLEConfig)


def add_adversarial_arguments(parser):
    """Arguments of `adversarial` (shared with examples/webnlg_adversarial.py)."""
    parser.add_argument("--mle-run-dir", help="a finished MLE run folder")
    parser.add_argument("--run-dir", default="runs/webnlg_gan", help="output folder (default: %(default)s)")
    parser.add_argument("--data-dir", default=None, help=f"WebNLG 2017 folder {_DATA_DIR_DEFAULT}")
    add_enriched_dir_argument(parser)
    parser.add_argument("--quick", action="store_true", help="AdversarialConfig.quick(): tiny data, models, steps")
    add_config_arguments(parser.add_argument_group("AdversarialConfig fields"), AdversarialConfig)


def parse_triple_sets(lines, source=None):
    """Lines of `s | p | o ; s | p | o` -> one list of `webnlg.Triple` per line; an error names the
    line (and `source`, the file or "stdin", when given).

    The separators are exactly ` ; ` and ` | ` (spaces included), so an entity may contain `;`
    or `|`. A blank line gives None (its output is a blank line, which keeps outputs aligned
    with the input lines). A ` ;` dangling at the end of a line separates nothing and is dropped
    (each of them).
    """
    from onestep_gan.rdf2text import preprocessing
    from onestep_gan.rdf2text.webnlg import Triple

    triple_sets = []
    where = f"{source}, line" if source else "Line"
    for line_number, line in enumerate(lines, start=1):
        line = line.strip()
        while line.endswith(TRIPLE_SET_SEPARATOR.rstrip()):  # "A | b | C ; ;" too
            line = line[: -len(TRIPLE_SET_SEPARATOR.rstrip())].rstrip()
        if not line:
            triple_sets.append(None)
            continue
        triples = []
        for text in line.split(TRIPLE_SET_SEPARATOR):
            parts = [part.strip() for part in text.split(TRIPLE_PART_SEPARATOR)]
            if len(parts) != 3 or not all(parts):
                raise ValueError(
                    f"{where} {line_number}: expected triples 'subject | predicate | object' separated "
                    f"by ' ; '. Received: {text.strip()!r}"
                )
            subject, predicate, object_ = parts
            written = {
                "subject": preprocessing.normalise_entity(subject),
                "predicate": preprocessing.split_predicate(predicate),
                "object": preprocessing.normalise_entity(object_),
            }
            empty = [name for name, words in written.items() if not any(character.isalnum() for character in words)]
            if empty:  # "_", '""', "!!": nothing a text could state
                raise ValueError(
                    f"{where} {line_number}: expected letters or digits in the {' and '.join(empty)}. "
                    f"Received: {text.strip()!r}"
                )
            triples.append(Triple(*parts))
        triple_sets.append(triples)
    return triple_sets


def _read_text_lines(path, what):
    """The lines of a UTF-8 text file (split at line breaks only: a form feed is not one)."""
    path = pathlib.Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ValueError(f"{what} {path} not found.") from None
    except IsADirectoryError:
        raise ValueError(f"{what} {path} is a folder: expected a text file.") from None
    except OSError as error:  # no permission, a path through a file
        raise ValueError(f"{what} {path} cannot be read ({error.strerror}).") from None
    return _decode_lines(data, str(path))


def _decode_lines(data, name):
    if data.startswith(b"\xef\xbb\xbf"):  # a byte-order mark (some Windows editors write one) is no text
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise ValueError(f"{name}, line {line}: expected UTF-8 text. Received: bytes {data[error.start:error.end]!r}") from None
    lines = text.replace("\r\n", "\n").split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def _int_at_least(minimum, expected):
    """argparse type of an integer flag of at least `minimum` (`expected` names the range in its error)."""
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}. Received: {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected {expected}. Received: {value}")
        return value

    return parse


_positive_int = _int_at_least(1, "a positive integer")
_non_negative_int = _int_at_least(0, "an integer >= 0")


def _optional_non_negative_float(text):
    """`optional_float`, refusing a negative score (the aligner would refuse it after the minutes of loading)."""
    value = optional_float(text)
    if value is not None and value < 0:
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0 or 'none'. Received: {text!r}")
    return value


def _non_negative_float(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0. Received: {text!r}") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0. Received: {value}")
    return value


def _train(args):
    from onestep_gan.rdf2text.evaluation import format_markdown_table
    from onestep_gan.rdf2text.mle import train_and_evaluate

    results = train_and_evaluate(
        config_from_arguments(MLEConfig, args, args.quick), args.data_dir, args.run_dir, args.enriched_dir
    )
    for name in ("dev", "test"):
        print(f"{name}:\n{format_markdown_table(results[name])}")
    return 0


def _adversarial(args):
    if args.mle_run_dir is None:
        raise ValueError("`adversarial` needs --mle-run-dir, a finished `onestep-gan train` run folder.")
    config = config_from_arguments(AdversarialConfig, args, args.quick)
    return _run_adversarial_stage(config, args.mle_run_dir, args.run_dir, args.data_dir, args.enriched_dir)


def _chain(args):
    from onestep_gan.rdf2text import runs
    from onestep_gan.rdf2text.mle import train_and_evaluate

    run_dir = pathlib.Path(args.run_dir)
    mle_config = config_from_arguments(MLEConfig, args, args.quick)
    adversarial_config = AdversarialConfig.quick() if args.quick else AdversarialConfig()
    mle_dir, gan_dir = run_dir / "mle", run_dir / "gan"
    if runs.finished_run(mle_dir, runs.SUMMARY_FILE, mle_config) and not runs.finished_run(
        gan_dir, runs.COMPARISON_FILE
    ):  # killed in the stage: its MLE run is kept, and the stage resumes from its backup
        logger.info("%s holds a finished MLE run of these settings: it is not trained again.", mle_dir)
    elif (gan_dir / runs.BACKUP_DIR).exists():  # refused now, not after the MLE job's hour
        raise ValueError(
            f"{gan_dir / runs.BACKUP_DIR} holds an interrupted adversarial stage, but {mle_dir} is not a finished "
            f"MLE run of these settings. Expected the settings of {mle_dir / runs.CONFIG_FILE} (to resume the "
            f"stage), or no {gan_dir / runs.BACKUP_DIR} (delete it to train both again)."
        )
    else:
        train_and_evaluate(mle_config, args.data_dir, mle_dir, args.enriched_dir)
    return _run_adversarial_stage(adversarial_config, mle_dir, gan_dir, args.data_dir, args.enriched_dir)


def _run_adversarial_stage(config, mle_run_dir, run_dir, data_dir, enriched_dir):
    """What `adversarial` and `chain` share: the stage, then its MLE vs MLE+GAN comparison printed."""
    from onestep_gan.rdf2text.adversarial import train_adversarial

    train_adversarial(config, mle_run_dir, run_dir, data_dir, enriched_dir)
    print((pathlib.Path(run_dir) / "comparison.md").read_text(encoding="utf-8"))
    return 0


def _decode(args):
    from onestep_gan.rdf2text.evaluation import format_markdown_table
    from onestep_gan.rdf2text.mle import decode_run

    results = decode_run(args.run_dir, args.data_dir, **_decoding_overrides(args))
    for name in ("dev", "test"):
        print(f"{name}:\n{format_markdown_table(results[name])}")
    return 0


def _generate(args):
    from onestep_gan.rdf2text import templates
    from onestep_gan.rdf2text.mle import decoder_for
    from onestep_gan.rdf2text import runs
    from onestep_gan.rdf2text.runs import check_run_dir, load_aligner, load_checker, load_discriminator

    check_run_dir(args.run_dir)  # before reading stdin: a wrong folder fails at once
    needs_checker = args.format == "jsonl" or args.unfaithful != "keep"
    if needs_checker and not (pathlib.Path(args.run_dir) / runs.ALIGNER_FILE).is_file():
        raise ValueError(f"{args.run_dir}: --format jsonl and --unfaithful need the run's aligner.json (decode "
                         "the run again with this release to write it).")
    if args.input == "":  # an unset shell variable: not stdin, which would wait for input
        raise ValueError("--input: expected a file of triple sets (or no --input, to read stdin). Received: ''")
    source = args.input if args.input is not None else "stdin"  # errors and warnings name its lines
    if args.input is not None:
        lines = _read_text_lines(args.input, "Input file")
    else:
        lines = _decode_lines(sys.stdin.buffer.read(), "stdin")
    triple_sets = parse_triple_sets(lines, source)
    model, preprocessor, config = runs.load_run(args.run_dir)
    config = dataclasses.replace(config, **_decoding_overrides(args))
    reranking = config.rerank and config.decode_method == "beam"
    aligner = load_aligner(args.run_dir) if reranking else None
    if reranking and aligner is None:
        logger.warning(
            "%s has no aligner.json: its beam candidates are not reranked by slot errors, so the texts may "
            "differ from the run's reports. `onestep-gan decode --run-dir %s` writes it (from the train split); "
            "--no-rerank decodes without it and without this warning.", args.run_dir, args.run_dir,
        )
    wanted = [triples for triples in triple_sets if triples is not None]
    names = [f"{source}, line {number}" for number, triples in enumerate(triple_sets, start=1) if triples is not None]
    discriminator = load_discriminator(args.run_dir) if config.rerank_discriminator_weight > 0 else None
    # as the run decoded dev and test
    decode = decoder_for(model, preprocessor, config, aligner, progress=False, discriminator=discriminator)
    checker = None
    if needs_checker:  # aligner.json checked above, before the model was loaded
        checker = load_checker(args.run_dir, config)
    texts = iter(decode(preprocessor.encode_triples(wanted, names)) if wanted else ())
    for triples in triple_sets:
        if triples is None:
            print("null" if args.format == "jsonl" else "")
            continue
        text = next(texts)
        if checker is None:
            print(text)
            continue
        record = templates.checked_text(checker, triples, text, args.unfaithful)
        print(json.dumps(record, ensure_ascii=False) if args.format == "jsonl" else record["text"])
    return 0


def _evaluate(args):
    from onestep_gan.rdf2text import evaluation, runs, webnlg
    from onestep_gan.rdf2text.faithfulness import SlotAligner

    for flag in ("foreign_known_only", "opposed"):
        if getattr(args, flag) and args.min_foreign is None:
            raise ValueError(f"--{flag.replace('_', '-')} is part of the --min-foreign check: expected --min-foreign "
                             "SCORE with it. Received: no --min-foreign.")
    hypotheses_path = pathlib.Path(args.hypotheses)
    hypotheses = _read_text_lines(hypotheses_path, "Hypotheses file")
    output_dir = pathlib.Path(args.output_dir) if args.output_dir else hypotheses_path.parent
    runs.check_output_dir(output_dir, "--output-dir")  # before the scoring's minutes, not after
    name = args.name or f"{args.split}_evaluated"
    if name != pathlib.Path(name).name or name in (".", ".."):
        raise ValueError(f"--name: expected a file name prefix without a folder. Received: {name!r}")
    written = [output_dir / f"{name}_{suffix}" for suffix in ("hypotheses.txt", "scores.json", "scores.md")]
    if any(path.resolve() == hypotheses_path.resolve() for path in written):
        raise ValueError(
            f"--hypotheses {hypotheses_path} is a file this command writes ({name}_hypotheses.txt in {output_dir}): "
            "expected another --name or --output-dir, so the input is not overwritten."
        )
    limit, train_limit, seed, holdout = None, None, 0, ()
    if args.run_dir:  # a sampled run (--quick, --max-eval-entries) is scored on its own sample,
        config = runs.load_config(pathlib.Path(args.run_dir) / runs.CONFIG_FILE)  # and its own train
        limit, train_limit, seed = config.max_eval_entries, config.max_train_entries, config.seed
        holdout = config.holdout_categories
    # `runs.load_split` without its INFO line, which would make a user error two lines on stderr.
    entries = runs.hold_out_categories(webnlg.load_webnlg(args.split, args.data_dir), args.split, holdout)
    entries = runs.sample_entries(entries, limit, seed)
    if len(hypotheses) != len(entries):
        raise ValueError(
            f"Expected one hypothesis per {args.split} entry ({len(entries)}"
            + (f", the sample of run {args.run_dir}" if args.run_dir else "")
            + f"). Received: {len(hypotheses)} lines in {hypotheses_path}"
            + ("" if args.run_dir else " (for a sampled run, pass its --run-dir)")
        )
    if args.whole_train_aligner:
        train = webnlg.load_webnlg("train", args.data_dir)
    else:  # the train entries the run mined its own aligner from
        train = runs.sample_entries(
            runs.hold_out_categories(webnlg.load_webnlg("train", args.data_dir), "train", holdout), train_limit, seed
        )
    aligner = SlotAligner.from_entries(
        train,
        min_foreign=args.min_foreign, inversions=args.inversions, subjects=args.subjects,
        attachments=args.attachments, value_shapes=args.value_shapes, foreign_known_only=args.foreign_known_only,
        of_phrases=args.of_phrases, opposed=args.opposed,
    )
    scores = evaluation.write_report(output_dir, hypotheses, entries, name=name, aligner=aligner)
    print(evaluation.format_markdown_table(scores))
    return 0


def _add_decoding_overrides(parser):
    """The decoding flags `decode` and `generate` share; each defaults to the run's own setting."""
    parser.add_argument("--decode-method", choices=("greedy", "beam"), help="default: the run's")
    parser.add_argument("--beam-width", type=_positive_int, help="default: the run's")
    parser.add_argument("--length-penalty", type=_non_negative_float, help="default: the run's")
    parser.add_argument("--rerank", action=argparse.BooleanOptionalAction, default=None, help="default: the run's")
    parser.add_argument(
        "--rerank-min-foreign", type=_optional_non_negative_float, default=argparse.SUPPRESS, metavar="SCORE",
        help="the reranker also counts values stated under a relation outside the input (none: not); default: the run's",
    )
    parser.add_argument(
        "--rerank-stated-relations", action=argparse.BooleanOptionalAction, default=None,
        help="ties on slot errors go to the candidate that states unseen relations in their own words; default: the run's",
    )
    parser.add_argument(
        "--rerank-unstated-as-errors", action=argparse.BooleanOptionalAction, default=None,
        help="an unseen relation not stated in its own words counts as a slot error (needs stated relations); "
        "default: the run's",
    )
    parser.add_argument(
        "--rerank-subjects", choices=RERANK_SUBJECTS, default=None,
        help='relations stated of an input entity that is not their subject ("the capital of Alfa Romeo 164" for '
        "Italy capital Rome) in the reranker: counted as slot errors, or breaking ties on them; default: the run's",
    )
    parser.add_argument(
        "--rerank-attachments", action=argparse.BooleanOptionalAction, default=None,
        help='the reranker also counts values attached to another input relation\'s own words ("the diameter of '
        'Ariane 5 is Guiana Space Centre" for Ariane_5 launchSite Guiana_Space_Centre); default: the run\'s',
    )
    parser.add_argument(
        "--rerank-value-shapes", action=argparse.BooleanOptionalAction, default=None,
        help="for a relation without mined cues, the reranker lets another relation bind its value only if that "
        'relation\'s train values have its shape ("born in 1872" for birthYear is not a wrong birthPlace); default: '
        "the run's",
    )
    parser.add_argument(
        "--rerank-foreign-known-only", action=argparse.BooleanOptionalAction, default=None,
        help="the reranker looks for values stated under a relation outside the input only for relations the "
        "training references showed (an unseen relation has no cues but its own words); default: the run's",
    )
    parser.add_argument(
        "--rerank-inversions", action=argparse.BooleanOptionalAction, default=None,
        help='the reranker also counts relations stated the wrong way round ("Alan Bean is the birth place of '
        'Wheeler, Texas" for Alan_Bean birthPlace Wheeler,_Texas); default: the run\'s',
    )
    parser.add_argument(
        "--rerank-of-phrases", action=argparse.BooleanOptionalAction, default=None,
        help='the reranker reads "the P of X is Y" in the relation\'s own words the right way round, not as a swap; '
        "default: the run's",
    )
    parser.add_argument(
        "--rerank-opposed", action=argparse.BooleanOptionalAction, default=None,
        help='with the check outside the input, the reranker also counts a value stated in the words of the relation '
        'of opposed meaning ("was born on" for a death date); default: the run\'s',
    )
    parser.add_argument(
        "--constrain-placeholders", action=argparse.BooleanOptionalAction, default=None,
        help="every input entity written before the text ends, no placeholder more often than the input holds it; "
        "default: the run's",
    )
    parser.add_argument(
        "--no-repeat-ngram-size", type=_non_negative_int, metavar="N",
        help="the search never writes an N-gram of the text twice (0: off); default: the run's",
    )
    parser.add_argument(
        "--rerank-discriminator-weight", type=_non_negative_float, metavar="WEIGHT",
        help="ties on slot errors go to the highest beam score + WEIGHT x the discriminator's score "
        "(adversarial runs; 0: to the most likely); default: the run's",
    )
    parser.add_argument(
        "--rerank-mbr", action=argparse.BooleanOptionalAction, default=None,
        help="ties on slot errors go to the beam's consensus candidate (minimum Bayes risk: the highest expected "
        "n-gram F1 against the other candidates) rather than the most likely; default: the run's",
    )


def _decoding_overrides(args):
    """{MLEConfig field: value} for the decoding flags given (see `_add_decoding_overrides`)."""
    overrides = {
        name: getattr(args, name)
        for name in (
            "decode_method", "beam_width", "length_penalty", "rerank", "rerank_stated_relations",
            "rerank_unstated_as_errors", "rerank_subjects", "rerank_attachments", "rerank_value_shapes",
            "rerank_foreign_known_only", "rerank_inversions", "rerank_of_phrases", "rerank_opposed", "constrain_placeholders",
            "rerank_discriminator_weight", "rerank_mbr", "no_repeat_ngram_size",
        )
        if getattr(args, name) is not None
    }
    if hasattr(args, "rerank_min_foreign"):  # given (`none` is a value: off)
        overrides["rerank_min_foreign"] = args.rerank_min_foreign
    return overrides


def build_parser():
    parser = argparse.ArgumentParser(prog="onestep-gan", description=__doc__.split("\n")[0])
    subparsers = parser.add_subparsers(dest="command", required=True)

    train = subparsers.add_parser("train", help="MLE: train on WebNLG, decode and score dev/test")
    add_train_arguments(train)
    train.set_defaults(handler=_train)

    adversarial = subparsers.add_parser(
        "adversarial", help="adversarial stage: fine-tune an MLE run with OneStepGAN.fit, score dev/test"
    )
    add_adversarial_arguments(adversarial)
    adversarial.set_defaults(handler=_adversarial)

    chain = subparsers.add_parser(
        "chain", help="the default chain: MLE into RUN_DIR/mle, then the adversarial stage into RUN_DIR/gan"
    )
    add_train_arguments(chain)
    chain.set_defaults(handler=_chain, run_dir="runs/webnlg")

    decode = subparsers.add_parser("decode", help="decode and score dev/test again with a finished MLE or adversarial run")
    decode.add_argument("--run-dir", required=True, help="a finished MLE or adversarial run")
    decode.add_argument("--data-dir", default=None, help=f"WebNLG 2017 folder {_DATA_DIR_DEFAULT}")
    _add_decoding_overrides(decode)
    decode.set_defaults(handler=_decode)

    generate = subparsers.add_parser("generate", help="texts for triple sets (one set per line)")
    generate.add_argument("--run-dir", required=True, help="a finished MLE or adversarial run")
    generate.add_argument("--input", help="file of triple sets (default: stdin)")
    generate.add_argument(
        "--format", choices=("text", "jsonl"), default="text",
        help="text: one text per line; jsonl: one JSON object per line, the text with the slot aligner's "
        "label for each input triple (null for a blank input line)",
    )
    generate.add_argument(
        "--unfaithful", choices=UNFAITHFUL, default="keep",
        help="a text the slot check does not call faithful (jsonl's faithful: false): keep it, or print a "
        "plain template text of the input's triples instead (\"The birth place of Alan Bean is Wheeler, Texas.\")",
    )
    _add_decoding_overrides(generate)
    generate.set_defaults(handler=_generate)

    evaluate = subparsers.add_parser("evaluate", help="score a hypotheses file against WebNLG references")
    evaluate.add_argument("--hypotheses", required=True, help="one output per line, in entry order")
    evaluate.add_argument("--split", default="test", choices=("dev", "test"))
    evaluate.add_argument("--data-dir", default=None, help=f"WebNLG folder {_DATA_DIR_DEFAULT}")
    evaluate.add_argument("--output-dir", help="where the scores go (default: beside the hypotheses)")
    evaluate.add_argument("--name", help="file name prefix (default: {split}_evaluated)")
    evaluate.add_argument(
        "--run-dir", help="the run that wrote the hypotheses: score the entries it sampled (--quick, --max-eval-entries) "
        "with the aligner of the train entries it sampled"
    )
    evaluate.add_argument(
        "--min-foreign", type=_optional_non_negative_float, default=None, metavar="SCORE",
        help="slot errors also count values stated under a relation outside the input (SlotAligner min_foreign)",
    )
    evaluate.add_argument(
        "--inversions", action="store_true",
        help='slot errors also count relations stated the wrong way round ("X is the birth place of Y" for Y birthPlace X)',
    )
    evaluate.add_argument(
        "--subjects", action="store_true",
        help='slot errors also count relations stated of an input entity that is not their subject ("the capital '
        'of Alfa Romeo 164 is Rome" for Italy capital Rome)',
    )
    evaluate.add_argument(
        "--attachments", action="store_true",
        help='slot errors also count values attached to another input relation\'s own words ("the diameter of '
        'Ariane 5 is Guiana Space Centre" for Ariane_5 launchSite Guiana_Space_Centre)',
    )
    evaluate.add_argument(
        "--value-shapes", action="store_true",
        help="a value is bound to another input relation only if that relation's train objects take its shape (date, "
        'year, number, other): "born in 1872" for birthYear is not a wrong birthPlace',
    )
    evaluate.add_argument(
        "--foreign-known-only", action="store_true",
        help="with --min-foreign: look for relations outside the input only for relations the training references "
        "showed",
    )
    evaluate.add_argument(
        "--opposed", action="store_true",
        help='with --min-foreign: a value stated in the words of the relation of opposed meaning ("was born on" for a '
        "death date) is wrong, though the words both share match its own",
    )
    evaluate.add_argument(
        "--of-phrases", action="store_true",
        help='the swap test reads "the P of X is Y" in the predicate\'s own words as the right way round (as '
        "--inversions does, without looking for inversions)",
    )
    evaluate.add_argument(
        "--whole-train-aligner", action="store_true",
        help="with --run-dir: mine the slot aligner from the whole train split, not from the run's train entries "
        "(held-out categories' cues included: the run's own aligner has none for their predicates)",
    )
    evaluate.set_defaults(handler=_evaluate)
    return parser


def _import_tensorflow_quietly():
    """Imports TensorFlow with its C++ start-up lines (absl, oneDNN, CUDA) kept off stderr.

    Those lines are written before TensorFlow reads `TF_CPP_MIN_LOG_LEVEL`, so the only way to
    keep them off the terminal is to point file descriptor 2 elsewhere during the import.
    """
    if "tensorflow" in sys.modules:
        return
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            import tensorflow  # noqa: F401
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _user_error(message, program="onestep-gan"):
    """One line on stderr, exit status 2 (as argparse does for a bad flag)."""
    print(f"{program}: error: {' '.join(str(message).split())}", file=sys.stderr)
    return 2


def run_script(main_function):
    """Runs an example script's `main()` as the CLI runs a command: a user error (every one is
    raised as a ValueError naming the file, line or field) is one line on stderr and exit status
    2, not a traceback. Use: `sys.exit(run_script(main))`."""
    try:
        return main_function() or 0
    except (ValueError, OSError) as error:  # OSError: a full disk, a read-only folder (it names the file)
        return _user_error(error, program=pathlib.Path(sys.argv[0]).name)


def run_child(command, log_path):
    """Runs a job's `command` (an example script's child run), its output appended to `log_path`;
    a failed child is a `ValueError` naming the log and quoting its last line (the child's one-line
    error), for `run_script` to print, not a `CalledProcessError` traceback."""
    import subprocess

    log_path = pathlib.Path(log_path)
    with open(log_path, "a", encoding="utf-8") as log:
        returncode = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT).returncode
    if returncode != 0:
        lines = [line for line in log_path.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
        raise ValueError(
            f"{' '.join(map(str, command[1:3]))} ... failed (exit status {returncode}); its output is in {log_path}. "
            f"Last line: {lines[-1].strip() if lines else '(none)'}"
        )


def main(argv=None):
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    _import_tensorflow_quietly()
    try:
        return args.handler(args)
    except BrokenPipeError:  # `generate ... | head -1`: the reader closed the pipe, no user error
        try:  # and no second error when Python flushes stdout at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):  # stdout replaced by an object without a file
            pass
        return 141  # 128 + SIGPIPE (13): as a process the closed pipe killed
    except ValueError as error:  # every user error is raised as a ValueError naming what is wrong
        return _user_error(error)
    except OSError as error:  # the machine's: a full disk, a read-only folder (it names the file)
        return _user_error(error)
