"""Speed per Keras backend, side by side: MLE training, decoding, and the text GAN's update.

One subprocess per backend (TensorFlow, JAX, PyTorch, where installed; a process has one
backend) measures, at the default sizes (`MLEConfig`, `AdversarialConfig`) on WebNLG 2017 train
batches with untrained models:

- MLE training examples/s: `fit` on the job's bucketed batches (batch 64);
- greedy and beam (the job's width, `MLEConfig.beam_width`) sentences/s of cached decoding, up to `--max-length`
  tokens (an untrained model writes them all: the worst case);
- the text GAN's update (`TextSampler` over the generator, `TextDiscriminator`, hinge loss,
  batch 32 of 48 tokens, the default `feedback_gradient=True`): one `OneStepGAN` update vs one
  `AlternatingGAN` update, the same parts and batch; the stage's own update (`OneStepGAN` plus
  the MLE term on G and D's hard negatives, as `onestep-gan adversarial` trains); and both
  expressed in MLE steps of the same generator on the same batch.

Every figure is the median over `--rounds` rounds, with the smallest and largest; variants
compared with each other are timed in interleaved rounds, and ratios are taken within a round.
A job that cannot run on a backend yet prints `not supported: <reason>` (the error it raised)
instead of a figure. Run it on quiet cores: the header shows the load.

    python benchmarks/backends.py                      # full size, every installed backend
    python benchmarks/backends.py --quick              # tiny sizes, about a minute: a check
    python benchmarks/backends.py --backends tensorflow jax --rounds 9

Needs the WebNLG corpus ($WEBNLG_DIR or --data-dir).
"""

import argparse
import datetime
import importlib.util
import json
import os
import platform
import re
import statistics
import subprocess
import sys

from onestep_gan.rdf2text.cli import run_script

BACKENDS = ("tensorflow", "jax", "torch")
MARKER = "@@backends.py "  # prefixes the worker's result lines on its stdout

# (key, label); the worker emits values under the keys.
ROWS = (
    ("mle_examples", "MLE training, examples/s"),
    ("greedy", "greedy decoding, sentences/s"),
    ("beam", "beam decoding, sentences/s"),
    ("onestep", "OneStepGAN update, ms"),
    ("alternating", "AlternatingGAN update, ms"),
    ("onestep_vs_alternating", "one-step / alternating"),
    ("stage", "stage update (+ MLE term, hard negatives), ms"),
    ("mle_step", "MLE step (same generator and batch), ms"),
    ("onestep_in_mle_steps", "one-step update in MLE steps"),
    ("stage_in_mle_steps", "stage update in MLE steps"),
)


# ------------------------------------------------------------------ worker (one backend)
def _emit(**record):
    print(MARKER + json.dumps(record), flush=True)


_NOISE = ("File ", "in user code", "Exception encountered when calling", "Arguments received", "•", "---",
          "For simplicity")


def _reason(error):
    """The line of an error's message that says what failed: the innermost `...Error: ...` line
    of a traced function's error, else the first line that is not a frame or a wrapper's."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(error))
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    raised = [line for line in lines if re.match(r"^[A-Za-z_.]*(Error|Exception): ", line)]
    if raised:
        return raised[-1][:300]
    meaningful = [line for line in lines if not line.startswith(_NOISE)]
    return f"{type(error).__name__}: {meaningful[0] if meaningful else ''}"[:300]


def _emit_ratio(key, numerator, denominator, times):
    missing = [name for name in (numerator, denominator) if name not in times]
    if missing:
        _emit(key=key, error=f"needs the {' and '.join(missing)} row(s)")
    else:
        _emit(key=key, values=[a / b for a, b in zip(times[numerator], times[denominator])])


def mle_and_decoding_rows(args, mle_config, preprocessor, train_examples, decode_examples):
    """MLE training examples/s, then greedy and beam sentences/s of the model it trained a little."""
    import text_speed

    from onestep_gan.rdf2text import datasets
    from onestep_gan.rdf2text.inference import make_generate_function
    from onestep_gan.rdf2text.mle import build_model

    model = None
    try:
        model, speeds, _ = text_speed.training_speeds(
            mle_config, train_examples, preprocessor, args.train_steps, rounds=args.rounds
        )
        _emit(key="mle_examples", values=speeds)
    except Exception as error:  # noqa: BLE001 - reported as the row's reason
        _emit(key="mle_examples", error=_reason(error))
    if model is None:
        model = build_model(mle_config, preprocessor)
    first_sources, _ = next(
        datasets.source_batches(decode_examples, mle_config.decode_batch_size, pad_id=preprocessor.pad_id)
    )
    decoders = {}
    for name, settings in (("greedy", {}), ("beam", {"beam_width": mle_config.beam_width})):
        try:
            decoders[name] = make_generate_function(
                model, method=name, max_length=min(args.max_length, mle_config.max_target_length), **settings
            )
            decoders[name](first_sources)  # can it run? (traces the first shape)
        except Exception as error:  # noqa: BLE001
            _emit(key=name, error=_reason(error))
            decoders.pop(name, None)
    if decoders:
        speeds = text_speed.decoding_speeds(
            decoders, decode_examples, mle_config.decode_batch_size, preprocessor.pad_id, rounds=args.rounds
        )
        for name, values in speeds.items():
            _emit(key=name, values=values)


def gan_rows(args, mle_config, adversarial_config, preprocessor, train_examples):
    """The text GAN's updates (one-step, alternating, the stage's) and the MLE step, interleaved."""
    import keras
    import numpy as np
    import step_time

    from onestep_gan.rdf2text import adversarial, datasets
    from onestep_gan.rdf2text.mle import build_model

    batch = datasets.make_adversarial_dataset(
        train_examples, adversarial_config.batch_size, adversarial_config.max_length,
        preprocessor.max_source_length, shuffle=True, seed=adversarial_config.seed,
        pad_id=preprocessor.pad_id, eos_id=preprocessor.eos_id,
    )
    sources, texts = (np.asarray(part) for part in next(iter(batch)))
    decoder_input = np.concatenate([np.full_like(texts[:, :1], preprocessor.bos_id), texts[:, :-1]], axis=1)

    def parts():
        keras.utils.set_random_seed(step_time.SEED)
        generator = build_model(mle_config, preprocessor)
        generator.build()
        sampler, discriminator = adversarial.build_gan_parts(adversarial_config, generator, preprocessor)
        return generator, sampler, discriminator

    def make_stage():
        _, sampler, discriminator = parts()
        hard_negatives = (
            adversarial.HardNegatives.for_preprocessor(preprocessor)
            if adversarial_config.hard_negative_weight > 0 else None
        )
        gan = adversarial.build_one_step_gan(adversarial_config, sampler, discriminator, hard_negatives)
        gan(sources)  # builds D; then the optimizer is built eagerly, not in the traced step
        gan.build_optimizer_if_ready()
        return gan

    make_onestep, make_alternating, make_mle = step_time.text_gan_trainers(parts, sources)
    candidates = {
        "onestep": (make_onestep, (sources, texts)),
        "alternating": (make_alternating, (sources, texts)),
        "stage": (make_stage, (sources, texts)),
        "mle_step": (make_mle, ({"source": sources, "target": decoder_input}, texts)),
    }
    models = {}
    for name, (make, data) in candidates.items():
        try:
            models[name] = (make(), data)
        except Exception as error:  # noqa: BLE001
            _emit(key=name, error=_reason(error))
    # Warm up (trace, build the optimizer) after every model is made: making one reseeds
    # TensorFlow's global generator, which makes the functions traced before it trace again.
    for name, (model, data) in list(models.items()):
        try:
            step_time._run_steps(model, data, args.warmup)
        except Exception as error:  # noqa: BLE001
            _emit(key=name, error=_reason(error))
            del models[name]
    times = step_time.time_interleaved(models, args.rounds, steps=1, warmup=0)
    for name, values in times.items():
        _emit(key=name, values=values)
    _emit_ratio("onestep_vs_alternating", "onestep", "alternating", times)
    _emit_ratio("onestep_in_mle_steps", "onestep", "mle_step", times)
    _emit_ratio("stage_in_mle_steps", "stage", "mle_step", times)


def worker(args):
    """Measures every row on this process's backend; prints one `MARKER` JSON line a result."""
    import keras

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # step_time, text_speed
    from onestep_gan.rdf2text import runs
    from onestep_gan.rdf2text.config import AdversarialConfig, MLEConfig
    from onestep_gan.rdf2text.preprocessor import TextPreprocessor

    backend = keras.backend.backend()
    _emit(version=f"{backend} {importlib.import_module(backend).__version__} (Keras {keras.__version__})")
    mle_config = MLEConfig.quick() if args.quick else MLEConfig()
    adversarial_config = AdversarialConfig.quick() if args.quick else AdversarialConfig()
    # The MLE job's data and vocabulary (all train entries, or quick()'s sample).
    entries = runs.load_split("train", args.data_dir, mle_config.max_train_entries, mle_config.seed)
    preprocessor = TextPreprocessor.build(
        entries, mle_config.max_source_length, mle_config.max_target_length, min_count=mle_config.min_token_count,
        predicate_placeholders=mle_config.predicate_placeholders, entity_roles=mle_config.entity_roles,
        entity_words=mle_config.entity_words, canonical_order=mle_config.canonical_triple_order,
    )
    train_examples = preprocessor.encode_entries(entries, for_training=True)
    decode_examples = preprocessor.encode_entries(entries[: args.decode_sentences], for_training=False)
    _emit(sizes=(
        f"vocabulary {preprocessor.vocabulary_size}; G d={mle_config.model_dim} "
        f"{mle_config.num_encoder_layers}+{mle_config.num_decoder_layers} layers ff={mle_config.feedforward_dim}; "
        f"D d={adversarial_config.discriminator_dim} {adversarial_config.discriminator_layers}+"
        f"{adversarial_config.discriminator_layers} layers ff={adversarial_config.discriminator_feedforward_dim}; "
        f"MLE batch {mle_config.batch_size} x {args.train_steps} steps a round; decoding "
        f"{len(decode_examples)} sentences, batch {mle_config.decode_batch_size}, beam {mle_config.beam_width}, "
        f"up to {args.max_length} tokens; GAN batch {adversarial_config.batch_size} x "
        f"{adversarial_config.max_length} tokens, 1 update a round after {args.warmup}"
    ))
    mle_and_decoding_rows(args, mle_config, preprocessor, train_examples, decode_examples)
    keras.backend.clear_session()
    gan_rows(args, mle_config, adversarial_config, preprocessor, train_examples)


# ------------------------------------------------------------------ launcher
def machine_line():
    try:
        uptime = subprocess.run(["uptime"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        uptime = "load average: {:.2f}, {:.2f}, {:.2f}".format(*os.getloadavg())
    return f"{platform.machine()}, {os.cpu_count()} CPUs visible; uptime: {uptime}"


def run_backend(backend, argv, timeout):
    """The worker's records for `backend`: {"version", "sizes", key: values or error}."""
    if importlib.util.find_spec(backend) is None:
        return {"error": f"{backend} is not installed"}
    env = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "3"}
    try:
        completed = subprocess.run(
            [sys.executable, os.path.abspath(__file__), *argv, "--worker"],
            env=env, capture_output=True, text=True, timeout=timeout,
        )
        stdout, stderr, code = completed.stdout, completed.stderr, completed.returncode
    except subprocess.TimeoutExpired as expired:
        stdout = expired.stdout.decode() if isinstance(expired.stdout, bytes) else expired.stdout or ""
        stderr, code = f"timed out after {timeout} s", "timeout"
    records = {}
    for line in stdout.splitlines():
        if line.startswith(MARKER):
            record = json.loads(line[len(MARKER):])
            key = record.pop("key", None)
            if key is None:
                records.update(record)
            else:
                records[key] = record
    if code != 0:
        last = [line for line in stderr.strip().splitlines() if line.strip()][-1:] or [f"exit code {code}"]
        records.setdefault("error", f"the worker stopped ({last[0][:300]})")
    return records


def cell(record, notes):
    if "values" in record:
        values = record["values"]
        median = statistics.median(values)
        digits = 2 if median < 10 else (1 if median < 100 else 0)
        return f"{median:.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"
    notes.append(record["error"])
    return f"not supported [{len(notes)}]"


def print_table(results, rounds):
    notes = []
    header = f"| {'job (median of ' + str(rounds) + ' rounds, min-max)':<46} |" + "".join(
        f" {backend:>22} |" for backend in results
    )
    print(header)
    print("|" + "-" * 48 + "|" + "".join("-" * 23 + ":|" for _ in results))
    for key, label in ROWS:
        cells = []
        for records in results.values():
            record = records.get(key) or {"error": records.get("error", "no result (the worker stopped before it)")}
            cells.append(cell(record, notes))
        print(f"| {label:<46} |" + "".join(f" {text:>22} |" for text in cells))
    for index, note in enumerate(notes, start=1):
        print(f"[{index}] not supported: {note}")


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=BACKENDS)
    parser.add_argument("--quick", action="store_true", help="tiny sizes and 3 rounds: checks the script")
    parser.add_argument("--rounds", type=int, default=None, help="rounds per figure (default 7, --quick 3)")
    parser.add_argument("--train-steps", type=int, default=None, help="MLE batches a round (default 20)")
    parser.add_argument("--decode-sentences", type=int, default=None, help="default 64")
    parser.add_argument("--max-length", type=int, default=None, help="decoded tokens (default 48)")
    parser.add_argument("--warmup", type=int, default=None, help="untimed GAN/MLE steps first (default 2)")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--timeout", type=int, default=3600, help="seconds per backend")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    defaults = dict(rounds=3, warmup=1, train_steps=3, decode_sentences=16, max_length=16) if args.quick else dict(
        rounds=7, warmup=2, train_steps=20, decode_sentences=64, max_length=48
    )
    for name, value in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if args.worker:
        worker(args)
        return

    start = datetime.datetime.now()
    print(f"benchmarks/backends.py {' '.join(argv)}  {start:%Y-%m-%d %H:%M}")
    print(f"start: {machine_line()}")
    results = {}
    for backend in args.backends:
        results[backend] = run_backend(backend, [arg for arg in argv if arg != "--worker"], args.timeout)
        print(f"  {backend}: {results[backend].get('version', results[backend].get('error', ''))}", flush=True)
    sizes = next((records["sizes"] for records in results.values() if "sizes" in records), None)
    if sizes:
        print(f"sizes: {sizes}")
    print()
    print_table(results, args.rounds)
    print(f"\nend ({(datetime.datetime.now() - start).total_seconds() / 60:.1f} min): {machine_line()}")


if __name__ == "__main__":
    sys.exit(run_script(main))
