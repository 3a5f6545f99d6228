"""
Title: One-step GAN on a ring of eight Gaussians
Description: Fit an unconditional OneStepGAN with plain `fit` on the 2-D mode-collapse
    benchmark and compare it with the classic alternating trainer.
Expected run time: about 1 minute on 2 (shared) CPU cores for both trainers, 4,000 steps each.

## Introduction

The ring of eight Gaussians (radius 2, standard deviation 0.02) is the standard
mode-collapse test for GANs (Srivastava et al. 2017, VEEGAN; Metz et al. 2017,
Unrolled GANs). A generator that collapses covers one or two of the eight modes;
a good one covers all eight and puts almost every sample within 3 standard
deviations of a mode.

`OneStepGAN` trains G and D with one loss and one backward pass,

    L = L_D(D(real), D(sg(G))) + lam * [L_G(D(G)) - L_G(D(sg(G)))]

so `compile` + `fit` is the whole training loop. `AlternatingGAN` is the
classic reference (a D step, then a G step through the updated D); here it gets
the same models, loss and optimizer settings.

Two figures per trainer, on 2,500 generated samples:

- *modes covered*: modes with at least `MIN_SAMPLES_PER_MODE` samples within
  3 sigma of their centre;
- *high quality*: the share of samples within 3 sigma of any mode.

Run:

    python examples/toy_mixture.py                 # defaults, both trainers
    python examples/toy_mixture.py --seed 1 --plot ring.png

Measured with the defaults (hinge loss, Adam 2e-3 / beta_1 0.5 for G and D,
MLPs of 2 x 128, batch 256, 8 epochs x 500 steps; 2 shared CPU cores, TF 2.21):

    seed  trainer          modes covered  high quality  wall time
    0     OneStepGAN       8 / 8          57%           29 s
    0     AlternatingGAN   8 / 8          89%           24 s
    1     OneStepGAN       8 / 8          46%           23 s
    1     AlternatingGAN   8 / 8          61%           27 s

Both cover every mode; the one-step trainer updates G and D simultaneously
(G follows the D of the same step, not the updated one), and its samples sit
a little less tightly on the modes. At Adam 1e-3 the one-step trainer reached
7 of 8 modes in the same 4,000 steps; a slower generator (G:D ratio 0.5) or the
non-saturating / least-squares losses did worse in this budget.
"""

import argparse
import sys
import dataclasses
import os
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras
import numpy as np

import onestep_gan
from onestep_gan.rdf2text.cli import run_script
from onestep_gan.rdf2text.config import finite_float

"""
## The data: eight Gaussians on a ring

Numpy, seeded: the same seed gives the same points.
"""

NUM_MODES = 8
RADIUS = 2.0
STD = 0.02
# A mode counts as covered when at least this many of the evaluation samples lie
# within 3 sigma of it (2,500 samples spread evenly give ~312 per mode).
MIN_SAMPLES_PER_MODE = 20
NUM_EVAL_SAMPLES = 2_500


def ring_centers(num_modes=NUM_MODES, radius=RADIUS):
    """The modes' centres, shape (num_modes, 2), evenly spaced on a circle."""
    angles = 2.0 * np.pi * np.arange(num_modes) / num_modes
    return np.stack([radius * np.cos(angles), radius * np.sin(angles)], axis=1).astype("float32")


def ring_of_gaussians(num_samples, seed, num_modes=NUM_MODES, radius=RADIUS, std=STD):
    """`num_samples` points, shape (num_samples, 2), from the ring mixture (equal weights)."""
    rng = np.random.default_rng(seed)
    centers = ring_centers(num_modes, radius)
    modes = rng.integers(num_modes, size=num_samples)
    noise = rng.normal(scale=std, size=(num_samples, 2))
    return (centers[modes] + noise).astype("float32")


"""
## The metric: modes covered and high-quality share
"""


def mode_coverage(samples, centers, std=STD, num_sigmas=3.0, min_samples=MIN_SAMPLES_PER_MODE):
    """Scores generated points against the mixture's modes.

    Each sample is assigned to its nearest centre; it is *high quality* if it
    lies within `num_sigmas * std` of that centre. A mode is *covered* if at
    least `min_samples` high-quality samples are assigned to it.

    Returns:
        (modes_covered, high_quality_share, counts), `counts[k]` being the
        number of high-quality samples at mode k.
    """
    samples = np.asarray(samples, dtype="float64")
    centers = np.asarray(centers, dtype="float64")
    # (num_samples, num_modes)
    distances = np.linalg.norm(samples[:, None, :] - centers[None, :, :], axis=-1)
    nearest = np.argmin(distances, axis=1)
    close = distances[np.arange(len(samples)), nearest] <= num_sigmas * std
    counts = np.bincount(nearest[close], minlength=len(centers))
    modes_covered = int(np.sum(counts >= min_samples))
    high_quality_share = float(np.mean(close)) if len(samples) else 0.0
    return modes_covered, high_quality_share, counts


"""
## The models

Small MLPs. The generator maps z ~ N(0, I) to a point; the discriminator maps a
point to one raw score (no activation: the losses take logits).
"""


@dataclasses.dataclass
class Config:
    """Every setting of one run; the defaults are the tuned example."""

    seed: int = 0
    latent_dim: int = 16
    hidden: int = 128
    generator_layers: int = 2
    discriminator_layers: int = 2
    loss: str = "hinge"
    lam: float = 1.0
    learning_rate: float = 2e-3
    beta_1: float = 0.5
    beta_2: float = 0.99
    generator_learning_rate_ratio: float = 1.0
    batch_size: int = 256
    steps_per_epoch: int = 500
    epochs: int = 8
    steps_per_execution: int = 50
    trainers: tuple = ("OneStepGAN", "AlternatingGAN")


def make_generator(config):
    layers = [keras.Input((config.latent_dim,))]
    layers += [keras.layers.Dense(config.hidden, activation="relu") for _ in range(config.generator_layers)]
    layers += [keras.layers.Dense(2)]
    return keras.Sequential(layers, name="generator")


def make_discriminator(config):
    layers = [keras.Input((2,))]
    layers += [
        keras.layers.Dense(config.hidden, activation="relu")
        for _ in range(config.discriminator_layers)
    ]
    layers += [keras.layers.Dense(1)]
    return keras.Sequential(layers, name="discriminator")


def make_adam(config, learning_rate):
    return keras.optimizers.Adam(learning_rate, beta_1=config.beta_1, beta_2=config.beta_2)


"""
## The two trainers

Both start from identical weights (same seed) and see the same data. The G:D
learning-rate ratio is the same for both: `GANOptimizer` for the one-step
trainer, two Adams for the alternating one.
"""


def build_onestep(config):
    keras.utils.set_random_seed(config.seed)
    gan = onestep_gan.OneStepGAN(
        make_generator(config),
        make_discriminator(config),
        loss=config.loss,
        lam=config.lam,
        latent_dim=config.latent_dim,
        seed=config.seed,
    )
    optimizer = onestep_gan.GANOptimizer(
        make_adam(config, config.learning_rate),
        generator_learning_rate_ratio=config.generator_learning_rate_ratio,
    )
    gan.compile(optimizer=optimizer, steps_per_execution=steps_per_execution(config))
    return gan


def steps_per_execution(config):
    """Keras' PyTorch trainer runs one step per call."""
    return 1 if keras.backend.backend() == "torch" else config.steps_per_execution


def build_alternating(config):
    keras.utils.set_random_seed(config.seed)
    gan = onestep_gan.AlternatingGAN(
        make_generator(config),
        make_discriminator(config),
        loss=config.loss,
        latent_dim=config.latent_dim,
        seed=config.seed,
    )
    gan.compile(
        discriminator_optimizer=make_adam(config, config.learning_rate),
        generator_optimizer=make_adam(
            config, config.learning_rate * config.generator_learning_rate_ratio
        ),
        steps_per_execution=steps_per_execution(config),
    )
    return gan


BUILDERS = {"OneStepGAN": build_onestep, "AlternatingGAN": build_alternating}

"""
## Training and evaluation

Plain `fit` on a numpy array. Wall time includes tracing the train function.
"""


def train_and_evaluate(config, verbose=0):
    """Trains each trainer in `config.trainers`; returns one result dict per trainer."""
    real = ring_of_gaussians(config.batch_size * config.steps_per_epoch, seed=config.seed)
    centers = ring_centers()
    results = []
    for name in config.trainers:
        gan = BUILDERS[name](config)
        start = time.perf_counter()
        gan.fit(real, batch_size=config.batch_size, epochs=config.epochs, shuffle=True, verbose=verbose)
        wall_time = time.perf_counter() - start
        samples = keras.ops.convert_to_numpy(gan.sample(NUM_EVAL_SAMPLES))
        modes_covered, quality, counts = mode_coverage(samples, centers)
        results.append(
            {
                "trainer": name,
                "modes_covered": modes_covered,
                "high_quality_share": quality,
                "counts": counts,
                "wall_time_s": wall_time,
                "samples": samples,
            }
        )
    return results


def format_table(results):
    """The side-by-side table, one row per trainer."""
    lines = [
        f"{'trainer':<16}{'modes covered':>15}{'high quality':>14}{'wall time':>11}",
        "-" * 56,
    ]
    for result in results:
        lines.append(
            f"{result['trainer']:<16}"
            f"{result['modes_covered']:>11} / {NUM_MODES}"
            f"{result['high_quality_share']:>13.1%}"
            f"{result['wall_time_s']:>10.1f}s"
        )
    return "\n".join(lines)


"""
## Plotting (optional)
"""


def plot_samples(results, path, seed=0):
    """Scatter plot of real vs generated points, one panel per trainer."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as error:
        raise ImportError("--plot needs matplotlib: pip install matplotlib") from error
    real = ring_of_gaussians(NUM_EVAL_SAMPLES, seed=seed + 1)
    figure, axes = plt.subplots(1, len(results), figsize=(5 * len(results), 5), squeeze=False)
    for axis, result in zip(axes[0], results):
        axis.scatter(real[:, 0], real[:, 1], s=2, alpha=0.3, label="real")
        generated = result["samples"]
        axis.scatter(generated[:, 0], generated[:, 1], s=2, alpha=0.3, label="generated")
        axis.set_title(
            f"{result['trainer']}: {result['modes_covered']}/{NUM_MODES} modes, "
            f"{result['high_quality_share']:.0%} high quality"
        )
        axis.set_xlim(-3, 3)
        axis.set_ylim(-3, 3)
        axis.set_aspect("equal")
        axis.legend(loc="upper right", markerscale=4)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


"""
## Main
"""


def parse_args(argv=None):
    defaults = Config()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].strip())
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--epochs", type=int, default=defaults.epochs)
    parser.add_argument("--steps", type=int, default=defaults.steps_per_epoch, help="steps per epoch")
    parser.add_argument("--batch-size", type=int, default=defaults.batch_size)
    parser.add_argument("--loss", default=defaults.loss, choices=sorted(onestep_gan.losses.LOSSES))
    parser.add_argument("--learning-rate", type=finite_float, default=defaults.learning_rate, help="D's")
    parser.add_argument(
        "--generator-learning-rate-ratio", type=finite_float, default=defaults.generator_learning_rate_ratio
    )
    parser.add_argument("--hidden", type=int, default=defaults.hidden)
    parser.add_argument(
        "--trainers", nargs="+", default=list(defaults.trainers), choices=sorted(BUILDERS)
    )
    parser.add_argument("--plot", metavar="PATH", help="save a scatter plot of real vs generated")
    parser.add_argument("--verbose", type=int, default=0, help="fit's verbosity")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    config = Config(
        seed=args.seed,
        epochs=args.epochs,
        steps_per_epoch=args.steps,
        batch_size=args.batch_size,
        loss=args.loss,
        learning_rate=args.learning_rate,
        generator_learning_rate_ratio=args.generator_learning_rate_ratio,
        hidden=args.hidden,
        trainers=tuple(args.trainers),
        steps_per_execution=min(Config.steps_per_execution, args.steps),
    )
    results = train_and_evaluate(config, verbose=args.verbose)
    print(format_table(results))
    if args.plot:
        plot_samples(results, args.plot, seed=config.seed)
        print(f"plot saved to {args.plot}")
    return results


if __name__ == "__main__":
    sys.exit(run_script(main))
