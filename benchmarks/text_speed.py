"""Speed of the RDF-to-text generator: MLE training examples/s and decoding sentences/s.

Decoding is measured for greedy and beam search, with and without the key/value cache,
side by side. The inputs are real WebNLG train entries (a seeded sample, delexicalised and
encoded as in training), so lengths are realistic; the model is untrained, so decoding
runs to `--max-length` tokens unless it happens to emit EOS (worst case per sentence).

    python benchmarks/text_speed.py                       # default MLEConfig sizes
    python benchmarks/text_speed.py --quick               # tiny model, seconds
    python benchmarks/text_speed.py --model-dim 192 --layers 2 --train-steps 30

Needs the WebNLG corpus ($WEBNLG_DIR or --data-dir).
"""

import argparse
import dataclasses
import logging
import os
import sys
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras

from onestep_gan.rdf2text import datasets, webnlg
from onestep_gan.rdf2text.cli import run_script
from onestep_gan.rdf2text.config import MLEConfig
from onestep_gan.rdf2text.inference import make_generate_function
from onestep_gan.rdf2text.mle import build_model, compile_model
from onestep_gan.rdf2text.preprocessor import TextPreprocessor
from onestep_gan.rdf2text.vocabulary import Vocabulary


def training_speeds(config, examples, preprocessor, train_steps, rounds=1):
    """Examples/s of `model.fit` over the same `train_steps` batches, once per round.

    An untimed pass over the batches first traces (compiles) the train step for every batch
    shape. Returns `(model, [examples/s of each round], number of parameters)`.
    """
    dataset = datasets.make_training_dataset(
        examples, config.batch_size, seed=config.seed, bucket_boundaries=config.bucket_boundaries,
        **preprocessor.special_ids,
    )
    batches = dataset.take(train_steps).cache()
    examples_per_pass = sum(int(labels.shape[0]) for _, labels in batches)  # also fills the cache
    model = build_model(config, preprocessor)
    model.build()
    compile_model(model, config, total_steps=(rounds + 1) * train_steps)
    model.fit(batches, shuffle=False, verbose=0)  # traces the train step for every shape
    speeds = []
    for _ in range(rounds):
        start = time.perf_counter()
        model.fit(batches, shuffle=False, verbose=0)
        speeds.append(examples_per_pass / (time.perf_counter() - start))
    return model, speeds, model.count_params()


def decoding_speeds(generate_functions, examples, batch_size, pad_id, rounds=1):
    """Sentences/s of compiled decoders, `rounds` rounds each, the decoders interleaved.

    `generate_functions`: name -> a `make_generate_function` decoder. Tracing (once per
    shape) is not timed. Returns name -> [sentences/s of each round].
    """
    batches = list(datasets.source_batches(examples, batch_size, pad_id=pad_id))
    one_batch_per_shape = {source_ids.shape: source_ids for source_ids, _ in batches}.values()
    for function in generate_functions.values():
        for source_ids in one_batch_per_shape:  # traces every shape before timing
            keras.ops.convert_to_numpy(function(source_ids))
    speeds = {name: [] for name in generate_functions}
    names = list(generate_functions)
    for round_index in range(rounds):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            start, sentences = time.perf_counter(), 0
            for source_ids, indices in batches:
                keras.ops.convert_to_numpy(generate_functions[name](source_ids))
                sentences += len(indices)
            speeds[name].append(sentences / (time.perf_counter() - start))
    return speeds


def main():
    parser = argparse.ArgumentParser(description=__doc__.strip().split("\n")[0])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--quick", action="store_true", help="MLEConfig.quick() sizes")
    parser.add_argument("--model-dim", type=int)
    parser.add_argument("--feedforward-dim", type=int)
    parser.add_argument("--layers", type=int, help="encoder and decoder layers (each)")
    parser.add_argument("--batch-size", type=int)
    parser.add_argument("--vocabulary-size", type=int, default=4000,
                        help="model vocabulary size (full WebNLG 2017 train: ~4k)")
    parser.add_argument("--train-entries", type=int, default=300, help="train entries sampled")
    parser.add_argument("--train-steps", type=int, default=20)
    parser.add_argument("--decode-sentences", type=int, default=64)
    parser.add_argument("--decode-batch-size", type=int, default=32)
    parser.add_argument("--beam-width", type=int, default=4)
    parser.add_argument("--max-length", type=int, default=48, help="decoded tokens (<= max_target_length)")
    parser.add_argument("--skip-uncached", action="store_true", help="only the cached decoders")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    config = MLEConfig.quick() if args.quick else MLEConfig()
    overrides = {"model_dim": args.model_dim, "feedforward_dim": args.feedforward_dim, "batch_size": args.batch_size}
    if args.layers:
        overrides.update(num_encoder_layers=args.layers, num_decoder_layers=args.layers)
    config = dataclasses.replace(config, **{k: v for k, v in overrides.items() if v is not None})

    entries = webnlg.load_webnlg("train", args.data_dir)
    entries = entries[:: max(1, len(entries) // args.train_entries)][: args.train_entries]
    preprocessor = TextPreprocessor.build(entries, config.max_source_length, config.max_target_length)
    train_examples = preprocessor.encode_entries(entries, for_training=True)
    decode_examples = preprocessor.encode_entries(entries, for_training=False)[: args.decode_sentences]
    # A model vocabulary of realistic size: pad the sample's vocabulary with unused tokens.
    tokens = preprocessor.vocabulary.tokens[len(Vocabulary(()).tokens):]
    extra = [f"<unused_{index}>" for index in range(max(0, args.vocabulary_size - preprocessor.vocabulary_size))]
    preprocessor = TextPreprocessor(Vocabulary(tokens + extra), config.max_source_length, config.max_target_length)
    vocabulary_size = preprocessor.vocabulary_size

    model, (train_speed,), parameters = training_speeds(config, train_examples, preprocessor, args.train_steps)
    print(
        f"model_dim={config.model_dim} layers={config.num_encoder_layers}+{config.num_decoder_layers} "
        f"ff={config.feedforward_dim} vocabulary={vocabulary_size} parameters={parameters:,} "
        f"batch={config.batch_size}"
    )
    print(f"MLE training: {train_speed:.1f} examples/s "
          f"(one WebNLG 2017 epoch of 18,102 examples: {18102 / train_speed / 60:.1f} min)")

    max_length = min(args.max_length, config.max_target_length)
    decoders = {
        (method, use_cache): make_generate_function(
            model, method=method, beam_width=args.beam_width, max_length=max_length, use_cache=use_cache
        )
        for method in ("greedy", "beam")
        for use_cache in (True, False)
        if use_cache or not args.skip_uncached
    }
    speeds = decoding_speeds(decoders, decode_examples, args.decode_batch_size, model.pad_id)
    print(f"\nDecoding {len(decode_examples)} sentences, batch {args.decode_batch_size}, "
          f"beam {args.beam_width}, up to {args.max_length} tokens (untrained model: worst case)")
    print(f"| {'method':<8} | {'cached sent/s':>13} | {'uncached sent/s':>15} | {'speed-up':>8} |")
    print(f"|{'-' * 10}|{'-' * 15}:|{'-' * 17}:|{'-' * 10}:|")
    for method in ("greedy", "beam"):
        cached = speeds[(method, True)][0]
        uncached = speeds.get((method, False), [float("nan")])[0]
        print(f"| {method:<8} | {cached:13.2f} | {uncached:15.2f} | {cached / uncached:7.1f}x |")


if __name__ == "__main__":
    sys.exit(run_script(main))
