"""`OneStepGAN`: generator and discriminator in one Keras model with one loss.

    L = L_D(D(real), D(sg(G))) + lam * [L_G(D(G)) - L_G(D(sg(G)))]      sg = stop_gradient

The bracket is 0 in value. Its gradient reaches only G, and the first term's
gradient reaches only D, so one backward pass of one loss trains both nets and
a plain `compile` + `fit` replaces the hand-written alternating loop.

Exactness. Written literally, the bracket's gradient on D's weights is zero
only up to rounding (a prototype measured residues up to 4.6e-7 on entries
whose true gradient is 0; Adam, which divides by the gradient's own scale,
turns such residues into near full-size steps). Here the G term is evaluated
with D's weights stop-gradiented (D called inside a `keras.StatelessScope`) and the subtracted half
is the stop-gradient of the same value:

    bracket = L_G(D_frozen(G)) - sg(L_G(D_frozen(G)))

It has the formula's value (exactly 0) and gradient (lam * dL_G/dG on G) and an
exactly zero gradient on D. D runs three passes: D(real) and D(sg(G)) with live
weights, D_frozen(G) for the generator; the literal formula's fourth term is
not computed.

The learning-rate ratio. Under SGD, lam sets the D:G learning-rate ratio
1:lam. Adaptive optimizers (Adam, RMSprop, ...) are invariant to the gradient's
scale, so there lam barely matters; use `GANOptimizer(...,
generator_learning_rate_ratio=r)` for a G:D ratio that holds under any
optimizer.
"""

import keras
from keras import ops
from keras import tree

from onestep_gan import distribute
from onestep_gan.gan_model import GANModel
from onestep_gan.gan_model import float32_sum
from onestep_gan.gan_model import check_number
from onestep_gan import gradients as gradients_lib
from onestep_gan.optimizers import GANOptimizer
from onestep_gan.optimizers import no_generator_gradient_error


def real_leaf(real):
    return tree.flatten(real)[0]


@keras.saving.register_keras_serializable(package="onestep_gan")
class OneStepGAN(GANModel):
    """A GAN trained by plain `model.fit` with a single loss.

    Args:
        generator: a `keras.Model` producing samples, differentiably.
        discriminator: a `keras.Model` producing one score per example,
            shape `(batch,)` or `(batch, 1)`.
        loss: `"hinge"` (default), `"non_saturating"`, `"least_squares"`,
            `"relativistic"` or `"wasserstein"` (with gradient penalty).
        lam: weight of the generator bracket, a finite number >= 0 (under SGD,
            the G:D learning-rate ratio).
        latent_dim: noise size for an unconditional GAN; `None` (default) for a
            conditional GAN fit on `(conditions, real)`.
        gradient_penalty_weight: WGAN-GP weight, used by `"wasserstein"`.
        seed: integer seed of the noise.
        generator_extra_loss: optional `fn(conditions, real, fake) -> scalar`
            added to the loss with its gradient routed to G only (for example an
            MLE term on the generator). D's weights see none of it as long as
            the function does not call D.
        discriminator_extra_loss: optional `fn(conditions, real, fake) -> scalar`
            added to the loss with its gradient routed to D only, the mirror of
            `generator_extra_loss` (for example D scoring hard negatives made
            from the real data). It receives G's sample with its gradient
            stopped, so no term it computes can reach G's weights.
            Both return this replica's batch mean, as `ops.mean` gives it: the
            engine divides the whole loss by the number of replicas once. A
            `keras.losses.Loss` object divides by them too under tf.distribute;
            multiply its value by `onestep_gan.distribute.num_replicas_in_sync()`.

    Call arguments:
        inputs: conditions (conditional) or a batch of real samples, used only
            for its batch size (unconditional). Returns a generated batch.

    `fit` logs `loss`, `d_loss`, `g_loss`, `real_score` and `fake_score`;
    `evaluate` reports the same without updating weights. Keras infers the
    direction of `loss` only: use `EarlyStopping(monitor="d_loss", mode="min")`.
    Regularisation losses of G and D (weights, activity) are added unweighted,
    each reaching only its own net; D's activity counts on its real and fake
    passes. Training draws noise from `seed_generator`; `evaluate`, `predict`
    and `sample` from `inference_seed_generator`; both are saved with the weights.

    Example:

    ```python
    gan = onestep_gan.OneStepGAN(generator, discriminator, loss="hinge", latent_dim=16)
    gan.compile(optimizer=keras.optimizers.Adam(2e-4, beta_1=0.5))
    gan.fit(real_points, batch_size=128, epochs=10)
    ```
    """

    def __init__(
        self,
        generator,
        discriminator,
        loss="hinge",
        lam=1.0,
        latent_dim=None,
        gradient_penalty_weight=10.0,
        seed=None,
        generator_extra_loss=None,
        discriminator_extra_loss=None,
        **kwargs,
    ):
        lam = check_number("lam", lam)
        super().__init__(
            generator,
            discriminator,
            loss=loss,
            latent_dim=latent_dim,
            gradient_penalty_weight=gradient_penalty_weight,
            seed=seed,
            **kwargs,
        )
        self.lam = lam
        self.generator_extra_loss = generator_extra_loss
        self.discriminator_extra_loss = discriminator_extra_loss

    def compile(self, optimizer="adam", **kwargs):
        """Like `keras.Model.compile`; the optimizer is wrapped in a `GANOptimizer`.

        A plain optimizer becomes two copies of itself, one for G and one for D
        (the same update as one optimizer over both: its `global_clipnorm` is one
        norm over G's and D's gradients together, see `GANOptimizer`), and G's
        variables are registered so that a generator receiving no gradient fails
        loudly. `metrics`, `weighted_metrics` and `loss_weights` are refused (the
        GAN logs its own); under a `mixed_float16` policy the optimizer is wrapped
        in a `LossScaleOptimizer` as for any Keras model.
        """
        if kwargs.get("loss") is not None:
            raise ValueError(
                "OneStepGAN computes its own single loss; choose it with "
                f"OneStepGAN(loss=...). Received: compile(loss={kwargs['loss']!r})"
            )
        kwargs.pop("loss", None)
        optimizer = keras.optimizers.get(optimizer)
        loss_scale = None
        if isinstance(optimizer, keras.optimizers.LossScaleOptimizer):
            loss_scale, optimizer = optimizer, optimizer.inner_optimizer
        if not isinstance(optimizer, GANOptimizer):
            optimizer = GANOptimizer(optimizer)
            if loss_scale is not None:
                loss_scale = keras.optimizers.LossScaleOptimizer(
                    optimizer,
                    initial_scale=loss_scale.initial_scale,
                    dynamic_growth_steps=loss_scale.dynamic_growth_steps,
                )
        generator = self.generator
        optimizer.assign_generator_variables(lambda: generator.trainable_variables)
        super().compile(optimizer=loss_scale or optimizer, **kwargs)
        self.build_optimizer_if_ready()

    def compile_from_config(self, config):
        # Restores the (GANOptimizer) optimizer when a saved model is loaded.
        config = keras.saving.deserialize_keras_object(config)
        self.compile(**config)
        if self.built and not self.optimizer.built:
            self.optimizer.build(self.trainable_variables)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        conditions, real = self.split_batch(x, y, sample_weight)
        fake = y_pred if y_pred is not None else self(x, training=training)
        fake = self.check_sample_matches(real, fake)
        if training:
            self.warn_if_a_part_is_frozen()
        # Regularisation of the forward pass: weights of G and D, G's activity. Read now,
        # before D's top-level calls below reset its sublayers' losses.
        regularization = list(self.losses)
        if training and keras.backend.backend() == "jax":
            self.check_generator_gradient(x, conditions, real)  # calls G again: after reading G's losses
        fake_stopped = tree.map_structure(ops.stop_gradient, fake)

        # First term: gradient reaches D only (G's sample is stopped).
        d_loss, real_scores, fake_scores, d_activity = self.discriminator_terms(
            conditions, real, fake_stopped, training
        )
        regularization += d_activity  # D's activity on its real and fake passes

        # Bracket: value exactly 0, gradient lam * dL_G/dG on G, exactly 0 on D.
        generator_scores = self.score_with_frozen_discriminator(conditions, fake, training)
        g_loss = self.gan_loss.generator_loss(generator_scores, ops.stop_gradient(real_scores))
        bracket = g_loss - ops.stop_gradient(g_loss)
        total = d_loss + self.lam * bracket

        # Extra terms are added in float32 (under mixed precision they may come in float16).
        if self.generator_extra_loss is not None:
            total = total + ops.cast(self.generator_extra_loss(conditions, real, fake), "float32")
        if self.discriminator_extra_loss is not None:
            # Only the stopped sample goes in: nothing computed here depends on G's weights.
            total = total + ops.cast(self.discriminator_extra_loss(conditions, real, fake_stopped), "float32")
        if regularization:  # Each term touches only its own net's weights.
            total = total + float32_sum(regularization)

        self.update_gan_metrics(d_loss, g_loss, real_scores, fake_scores)
        return distribute.scale_loss_for_distribution(total)

    def check_generator_gradient(self, x, conditions, real):
        """JAX: raises if G's sample (and extra loss) has no gradient path to G's weights.

        On TensorFlow and PyTorch such a gradient is `None` and `GANOptimizer.apply` raises;
        JAX returns zeros instead, so the path is looked for when the step is traced.
        """
        generator_variables = self.generator.trainable_variables
        if not generator_variables:
            return
        if self.conditional:
            inputs = x
        else:
            inputs = ops.zeros((ops.shape(real_leaf(real))[0], self.latent_dim))

        def sample_and_extra():
            fake = self.generator(inputs, training=True)
            if self.generator_extra_loss is None:
                return fake
            return [fake, self.generator_extra_loss(conditions, real, fake)]

        if not gradients_lib.jax_depends_on(sample_and_extra, generator_variables):
            raise no_generator_gradient_error(generator_variables)

    def get_config(self):
        if self.generator_extra_loss is not None or self.discriminator_extra_loss is not None:
            raise ValueError(
                "A OneStepGAN with a generator_extra_loss or discriminator_extra_loss function "
                "cannot be serialised; "
                "save the generator and discriminator separately, or subclass OneStepGAN "
                "and override compute_loss."
            )
        config = super().get_config()
        config["lam"] = self.lam
        return config
