"""Step time: one OneStepGAN update vs one AlternatingGAN update (one D + one G step).

Both trainers get the same generator and discriminator architectures, the same
initial weights, the same optimizer settings and the same fixed batch. Each is
warmed up first (tracing and the optimizer's build are excluded), then the two
are timed in interleaved rounds (A, B, A, B, ...) so that drift in machine load
hits both alike. Every `train_on_batch` returns numpy logs, which waits for the
step to finish, so wall time per call is the step time.

Model families are functions returning a list of cases
`(name, make_onestep, make_alternating, batch)`; add one to `FAMILIES` to
benchmark more models (e.g. the text generator).

    python benchmarks/step_time.py
    python benchmarks/step_time.py --repeats 30 --steps 20 --widths 64 1024
"""

import argparse
import functools
import os
import platform
import statistics
import sys
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras
import numpy as np

import onestep_gan
from onestep_gan.rdf2text.cli import run_script

LATENT_DIM = 16
LEARNING_RATE = 2e-4
SEED = 0


# ------------------------------------------------------------------ families
def _mlp(input_dim, width, output_dim, name):
    return keras.Sequential(
        [
            keras.Input((input_dim,)),
            keras.layers.Dense(width, activation="relu"),
            keras.layers.Dense(width, activation="relu"),
            keras.layers.Dense(output_dim),
        ],
        name=name,
    )


def _adam():
    return keras.optimizers.Adam(LEARNING_RATE, beta_1=0.5)


def toy_mlp_family(widths=(64, 256, 1024), batch_size=256):
    """The 2-D toy MLPs (two hidden layers of `width` in G and D), hinge loss."""
    rng = np.random.default_rng(SEED)
    batch = rng.normal(size=(batch_size, 2)).astype("float32")  # (batch, 2)
    cases = []
    for width in widths:

        def make_onestep(width=width):
            keras.utils.set_random_seed(SEED)
            gan = onestep_gan.OneStepGAN(
                _mlp(LATENT_DIM, width, 2, "generator"),
                _mlp(2, width, 1, "discriminator"),
                loss="hinge",
                latent_dim=LATENT_DIM,
                seed=SEED,
            )
            gan.compile(optimizer=_adam())
            return gan

        def make_alternating(width=width):
            keras.utils.set_random_seed(SEED)
            gan = onestep_gan.AlternatingGAN(
                _mlp(LATENT_DIM, width, 2, "generator"),
                _mlp(2, width, 1, "discriminator"),
                loss="hinge",
                latent_dim=LATENT_DIM,
                seed=SEED,
            )
            gan.compile(discriminator_optimizer=_adam(), generator_optimizer=_adam())
            return gan

        cases.append((f"toy MLP h={width} b={batch_size}", make_onestep, make_alternating, batch))
    return cases


def text_gan_family(batch_size=32, model_dim=128, layers=2, target_length=48, source_length=32, vocabulary_size=3000):
    """The RDF-to-text GAN: TextSampler(TransformerGenerator) vs TextDiscriminator, hinge loss.

    Random ids stand in for WebNLG batches. The cost does not depend on the values, except
    that the sampler stops early once every row emitted EOS; an untrained generator emits
    EOS with probability ~1/vocabulary per position, so nearly every step generates all
    `target_length` positions (the worst case).
    """
    from onestep_gan.rdf2text.discriminator import TextDiscriminator
    from onestep_gan.rdf2text.sampling import TextSampler
    from onestep_gan.rdf2text.transformer import TransformerGenerator

    rng = np.random.default_rng(SEED)
    sources = rng.integers(4, vocabulary_size, size=(batch_size, source_length)).astype("int32")
    texts = rng.integers(4, vocabulary_size, size=(batch_size, target_length)).astype("int32")

    def parts(feedback_gradient):
        keras.utils.set_random_seed(SEED)
        generator = TransformerGenerator(
            vocabulary_size, max_source_length=source_length, max_target_length=target_length,
            model_dim=model_dim, num_heads=4, feedforward_dim=4 * model_dim,
            num_encoder_layers=layers, num_decoder_layers=layers, dropout=0.1,
        )
        generator.build()
        discriminator = TextDiscriminator(
            vocabulary_size, max_source_length=source_length, max_target_length=target_length,
            model_dim=model_dim, num_heads=4, feedforward_dim=4 * model_dim, num_layers=layers,
        )
        sampler = TextSampler(
            generator, max_length=target_length, seed=SEED, feedback_gradient=feedback_gradient
        )
        return generator, sampler, discriminator

    def make_trainers(feedback_gradient):
        return text_gan_trainers(functools.partial(parts, feedback_gradient), sources)

    name = f"text GAN d={model_dim} {layers}+{layers} b={batch_size} T={target_length}"
    mle_batch = ({"source": sources, "target": texts}, texts)
    cases = []
    for feedback_gradient, mode in ((True, "full"), (False, "no-feedback")):
        make_onestep, make_alternating, make_mle = make_trainers(feedback_gradient)
        cases.append((f"{name} {mode}", make_onestep, make_alternating, (sources, texts), make_mle, mle_batch))
    return cases


def text_gan_trainers(parts, sources):
    """`(make_onestep, make_alternating, make_mle)`: compiled trainers over fresh `parts()`.

    `parts() -> (generator, sampler, discriminator)` builds a `TransformerGenerator`, a
    `TextSampler` over it and a `TextDiscriminator` (seeded: every call gives the same
    weights). The GANs use the hinge loss and Adam, the MLE model the label-smoothed loss.
    """

    def make_onestep():
        generator, sampler, discriminator = parts()
        gan = onestep_gan.OneStepGAN(sampler, discriminator, loss="hinge", seed=SEED)
        gan(sources)  # build G and D before compile: the optimizer is then built eagerly
        gan.compile(optimizer=_adam())
        return gan

    def make_alternating():
        generator, sampler, discriminator = parts()
        gan = onestep_gan.AlternatingGAN(sampler, discriminator, loss="hinge", seed=SEED)
        gan(sources)
        gan.compile(discriminator_optimizer=_adam(), generator_optimizer=_adam())
        return gan

    def make_mle():
        from onestep_gan.rdf2text.mle import LabelSmoothedSparseCrossEntropy

        generator, _, _ = parts()
        generator.compile(optimizer=_adam(), loss=LabelSmoothedSparseCrossEntropy(ignore_class=generator.pad_id))
        return generator

    return make_onestep, make_alternating, make_mle


# name -> fn(args) -> cases; each family reads the command-line options it needs.
FAMILIES = {
    "toy_mlp": lambda args: toy_mlp_family(widths=args.widths, batch_size=args.batch_size),
    "text_gan": lambda args: text_gan_family(
        batch_size=args.text_batch_size, model_dim=args.text_model_dim, layers=args.text_layers,
        target_length=args.text_length,
    ),
}


# ------------------------------------------------------------------ timing
def _run_steps(model, batch, steps):
    """Milliseconds per step over `steps` consecutive train_on_batch calls."""
    x, y = batch if isinstance(batch, tuple) else (batch, None)
    start = time.perf_counter()
    for _ in range(steps):
        model.train_on_batch(x, y)
    return 1000.0 * (time.perf_counter() - start) / steps


def time_interleaved(models, repeats, steps, warmup):
    """Milliseconds per step of each model, `repeats` rounds each, the models interleaved.

    `models`: name -> `(model, batch)`. Each model is warmed up first (tracing, the optimizer's
    build); every round then times `steps` steps of each model, in an order rotated by one
    from round to round, so that drift in machine load hits all alike. Returns name -> list
    of the rounds' milliseconds per step.
    """
    if warmup:
        for model, batch in models.values():
            _run_steps(model, batch, warmup)
    times = {name: [] for name in models}
    names = list(models)
    for round_index in range(repeats if names else 0):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            model, batch = models[name]
            times[name].append(_run_steps(model, batch, steps))
    return times


def time_pair(make_onestep, make_alternating, batch, repeats, steps, warmup):
    """Median ms per update of both trainers, timed in interleaved rounds."""
    times = time_interleaved(
        {"onestep": (make_onestep(), batch), "alternating": (make_alternating(), batch)}, repeats, steps, warmup
    )
    return statistics.median(times["onestep"]), statistics.median(times["alternating"])


def peak_memory_line():
    """Peak memory so far: the accelerator's if there is one, else the process's peak RSS."""
    import resource

    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    if gpus:
        peak = tf.config.experimental.get_memory_info("GPU:0")["peak"]
        return f"peak GPU memory {peak / 2**20:.0f} MiB"
    return f"peak process RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB (CPU)"


def time_mle(make_mle, batch, repeats, steps, warmup):
    model = make_mle()
    _run_steps(model, batch, warmup)
    return statistics.median(_run_steps(model, batch, steps) for _ in range(repeats))


def hardware_line():
    import tensorflow as tf

    accelerators = [device.name for device in tf.config.list_physical_devices() if device.device_type != "CPU"]
    return (
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs visible, "
        f"accelerators: {accelerators or 'none'}; TensorFlow {tf.__version__}, Keras {keras.__version__}"
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=15, help="interleaved rounds per trainer")
    parser.add_argument("--steps", type=int, default=10, help="train steps per round")
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps per trainer first")
    parser.add_argument("--widths", type=int, nargs="+", default=[64, 256, 1024])
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--families", nargs="+", default=sorted(FAMILIES), choices=sorted(FAMILIES))
    parser.add_argument("--text-batch-size", type=int, default=32)
    parser.add_argument("--text-model-dim", type=int, default=128)
    parser.add_argument("--text-layers", type=int, default=2)
    parser.add_argument("--text-length", type=int, default=48)
    parser.add_argument("--text-repeats", type=int, default=3, help="rounds for the (slow) text GAN")
    args = parser.parse_args(argv)

    print(hardware_line())
    print(
        f"median of {args.repeats} rounds x {args.steps} steps after {args.warmup} warm-up steps "
        f"(text GAN: {args.text_repeats} rounds x 1 step after 2 warm-up steps)"
    )
    header = f"{'model':<44}{'OneStepGAN ms':>15}{'Alternating ms':>16}{'ratio':>8}"
    print(header)
    print("-" * len(header))
    mle_lines = []
    for family in args.families:
        text = family == "text_gan"
        repeats, steps, warmup = (args.text_repeats, 1, 2) if text else (args.repeats, args.steps, args.warmup)
        for case in FAMILIES[family](args):
            name, make_onestep, make_alternating, batch = case[:4]
            onestep_ms, alternating_ms = time_pair(make_onestep, make_alternating, batch, repeats, steps, warmup)
            print(f"{name:<44}{onestep_ms:>15.2f}{alternating_ms:>16.2f}{onestep_ms / alternating_ms:>8.2f}")
            if len(case) > 4:  # an MLE step of the same generator and batch, for scale
                mle_ms = time_mle(case[4], case[5], repeats, 3, warmup)
                mle_lines.append(
                    f"{name}: MLE step {mle_ms:.1f} ms; one-step adversarial step = "
                    f"{onestep_ms / mle_ms:.1f} MLE steps; alternating = {alternating_ms / mle_ms:.1f}"
                )
            keras.backend.clear_session()
    for line in mle_lines:
        print(line)
    print(peak_memory_line())


if __name__ == "__main__":
    sys.exit(run_script(main))
