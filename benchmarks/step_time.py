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
import os
import platform
import statistics
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras
import numpy as np

import onestep_gan

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


# name -> fn(args) -> cases; each family reads the command-line options it needs.
FAMILIES = {"toy_mlp": lambda args: toy_mlp_family(widths=args.widths, batch_size=args.batch_size)}


# ------------------------------------------------------------------ timing
def _run_steps(model, batch, steps):
    """Milliseconds per step over `steps` consecutive train_on_batch calls."""
    x, y = batch if isinstance(batch, tuple) else (batch, None)
    start = time.perf_counter()
    for _ in range(steps):
        model.train_on_batch(x, y)
    return 1000.0 * (time.perf_counter() - start) / steps


def time_pair(make_onestep, make_alternating, batch, repeats, steps, warmup):
    """Median ms per update of both trainers, timed in interleaved rounds."""
    onestep, alternating = make_onestep(), make_alternating()
    for model in (onestep, alternating):
        _run_steps(model, batch, warmup)  # traces the train function, builds the optimizer
    onestep_times, alternating_times = [], []
    for round_index in range(repeats):
        # Swap which goes first every round, so neither always follows the other.
        order = [(onestep, onestep_times), (alternating, alternating_times)]
        if round_index % 2:
            order.reverse()
        for model, times in order:
            times.append(_run_steps(model, batch, steps))
    return statistics.median(onestep_times), statistics.median(alternating_times)


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
    args = parser.parse_args(argv)

    print(hardware_line())
    print(f"median of {args.repeats} rounds x {args.steps} steps, after {args.warmup} warm-up steps")
    header = f"{'model':<28}{'OneStepGAN ms':>15}{'Alternating ms':>16}{'ratio':>8}"
    print(header)
    print("-" * len(header))
    for family in args.families:
        for name, make_onestep, make_alternating, batch in FAMILIES[family](args):
            onestep_ms, alternating_ms = time_pair(
                make_onestep, make_alternating, batch, args.repeats, args.steps, args.warmup
            )
            print(f"{name:<28}{onestep_ms:>15.2f}{alternating_ms:>16.2f}{onestep_ms / alternating_ms:>8.2f}")
            keras.backend.clear_session()


if __name__ == "__main__":
    main()
