"""GAN losses as pure functions of discriminator scores.

Every loss comes as a pair: a discriminator term `L_D(real_scores, fake_scores)`
and a generator term `L_G(fake_scores, real_scores)`. `OneStepGAN` joins them
into the single loss

    L = L_D(D(real), D(sg(G))) + lam * [L_G(D(G)) - L_G(D(sg(G)))]

Scores are raw discriminator outputs (logits), shape `(batch,)`.

Orientation. The hinge loss follows the published one-step formulation, in
which D scores *real low and fakes high* and G lowers D(G). All other losses
use the usual orientation (real high, fake low). `GANLoss.real_sign` records
this (-1 for hinge, +1 otherwise), so code that needs an accuracy or a
"realness" reads `real_sign * score`.

References:
- Hinge: Lim & Ye 2017 (Geometric GAN); Miyato et al. 2018 (SN-GAN).
- Non-saturating: Goodfellow et al. 2014.
- Least squares: Mao et al. 2017 (LSGAN), the 0-1 coding.
- Relativistic: Jolicoeur-Martineau 2018 (RSGAN).
- Wasserstein with gradient penalty: Gulrajani et al. 2017 (WGAN-GP).
"""

import dataclasses
from typing import Callable

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="onestep_gan")
def hinge_discriminator_loss(real_scores, fake_scores):
    """`mean(relu(1 + D(real))) + mean(relu(1 - D(fake)))`: real low, fake high."""
    return ops.mean(ops.relu(1.0 + real_scores)) + ops.mean(ops.relu(1.0 - fake_scores))


@keras.saving.register_keras_serializable(package="onestep_gan")
def hinge_generator_loss(fake_scores, real_scores=None):
    """`mean(D(G))`: the generator lowers the score of its samples."""
    del real_scores
    return ops.mean(fake_scores)


@keras.saving.register_keras_serializable(package="onestep_gan")
def non_saturating_discriminator_loss(real_scores, fake_scores):
    """Binary cross-entropy on logits, real -> 1, fake -> 0:
    `mean(softplus(-D(real))) + mean(softplus(D(fake)))`."""
    return ops.mean(ops.softplus(-real_scores)) + ops.mean(ops.softplus(fake_scores))


@keras.saving.register_keras_serializable(package="onestep_gan")
def non_saturating_generator_loss(fake_scores, real_scores=None):
    """Binary cross-entropy with fake -> 1: `mean(softplus(-D(G)))`."""
    del real_scores
    return ops.mean(ops.softplus(-fake_scores))


@keras.saving.register_keras_serializable(package="onestep_gan")
def least_squares_discriminator_loss(real_scores, fake_scores):
    """`0.5 * mean((D(real) - 1)^2) + 0.5 * mean(D(fake)^2)`."""
    return 0.5 * ops.mean(ops.square(real_scores - 1.0)) + 0.5 * ops.mean(ops.square(fake_scores))


@keras.saving.register_keras_serializable(package="onestep_gan")
def least_squares_generator_loss(fake_scores, real_scores=None):
    """`0.5 * mean((D(G) - 1)^2)`."""
    del real_scores
    return 0.5 * ops.mean(ops.square(fake_scores - 1.0))


@keras.saving.register_keras_serializable(package="onestep_gan")
def relativistic_discriminator_loss(real_scores, fake_scores):
    """RSGAN: `mean(softplus(-(D(real) - D(fake))))`, pairing the i-th real with the i-th fake."""
    return ops.mean(ops.softplus(fake_scores - real_scores))


@keras.saving.register_keras_serializable(package="onestep_gan")
def relativistic_generator_loss(fake_scores, real_scores):
    """RSGAN: `mean(softplus(-(D(G) - D(real))))`."""
    return ops.mean(ops.softplus(real_scores - fake_scores))


@keras.saving.register_keras_serializable(package="onestep_gan")
def wasserstein_discriminator_loss(real_scores, fake_scores):
    """Critic loss `mean(D(fake)) - mean(D(real))`.

    The gradient penalty `gp_weight * mean((||grad_x D(x_hat)|| - 1)^2)` is
    added by the trainer (it needs D itself, not only scores); see
    `OneStepGAN(gradient_penalty_weight=...)`.
    """
    return ops.mean(fake_scores) - ops.mean(real_scores)


@keras.saving.register_keras_serializable(package="onestep_gan")
def wasserstein_generator_loss(fake_scores, real_scores=None):
    """`-mean(D(G))`."""
    del real_scores
    return -ops.mean(fake_scores)


@keras.saving.register_keras_serializable(package="onestep_gan")
@dataclasses.dataclass(frozen=True)
class GANLoss:
    """A named pair of discriminator and generator losses.

    Attributes:
        name: the registry name.
        discriminator_loss: `fn(real_scores, fake_scores) -> scalar`.
        generator_loss: `fn(fake_scores, real_scores) -> scalar`.
        real_sign: +1 if D scores real samples high, -1 if low (hinge).
        decision_threshold: the score between real and fake, for accuracies: 0, or 0.5 for
            least squares' 0/1 targets. A sample reads as real when
            `real_sign * (score - decision_threshold) > 0`.
        gradient_penalty: whether the trainer adds a gradient penalty to the D term.
        generator_uses_real: whether `generator_loss` reads the real scores.

    A custom loss saves with its model like any Keras object: register its two
    functions with `keras.saving.register_keras_serializable()` (a lambda or an
    unregistered function cannot be loaded back with `safe_mode=True`).

    Example:

    ```python
    @keras.saving.register_keras_serializable(package="my_gan")
    def d_loss(real_scores, fake_scores): ...
    @keras.saving.register_keras_serializable(package="my_gan")
    def g_loss(fake_scores, real_scores=None): ...
    gan = OneStepGAN(generator, discriminator, loss=GANLoss("my_loss", d_loss, g_loss))
    ```
    """

    name: str
    discriminator_loss: Callable
    generator_loss: Callable
    real_sign: float = 1.0
    gradient_penalty: bool = False
    generator_uses_real: bool = False
    decision_threshold: float = 0.0

    def get_config(self):
        return {
            "name": self.name,
            "discriminator_loss": keras.saving.serialize_keras_object(self.discriminator_loss),
            "generator_loss": keras.saving.serialize_keras_object(self.generator_loss),
            "real_sign": self.real_sign,
            "gradient_penalty": self.gradient_penalty,
            "generator_uses_real": self.generator_uses_real,
            "decision_threshold": self.decision_threshold,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        for key in ("discriminator_loss", "generator_loss"):
            config[key] = keras.saving.deserialize_keras_object(config[key])
        return cls(**config)


LOSSES = {
    "hinge": GANLoss("hinge", hinge_discriminator_loss, hinge_generator_loss, real_sign=-1.0),
    "non_saturating": GANLoss(
        "non_saturating", non_saturating_discriminator_loss, non_saturating_generator_loss
    ),
    "least_squares": GANLoss(
        "least_squares", least_squares_discriminator_loss, least_squares_generator_loss, decision_threshold=0.5
    ),
    "relativistic": GANLoss(
        "relativistic",
        relativistic_discriminator_loss,
        relativistic_generator_loss,
        generator_uses_real=True,
    ),
    "wasserstein": GANLoss(
        "wasserstein",
        wasserstein_discriminator_loss,
        wasserstein_generator_loss,
        gradient_penalty=True,
    ),
}


def get(name):
    """Returns the `GANLoss` for a name in `LOSSES`, a `GANLoss`, or its serialised config."""
    if isinstance(name, GANLoss):
        return name
    if isinstance(name, dict):
        loss = keras.saving.deserialize_keras_object(name)
        if not isinstance(loss, GANLoss):
            raise ValueError(f"Expected a serialised GANLoss. Received: loss={name!r}")
        return loss
    if name not in LOSSES:
        raise ValueError(
            f"Unknown GAN loss. Expected one of {sorted(LOSSES)} or a GANLoss. "
            f"Received: loss={name!r}"
        )
    return LOSSES[name]


def serialize(loss):
    """A built-in loss saves as its name; any other `GANLoss` as its full config."""
    if LOSSES.get(loss.name) == loss:
        return loss.name
    return keras.saving.serialize_keras_object(loss)
