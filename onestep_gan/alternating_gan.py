"""`AlternatingGAN`: the classic two-loss, two-optimizer trainer, as a reference.

Each `fit` step makes a discriminator update on stop-gradient fakes, then a
generator update from a fresh generator forward pass through the updated D,
as in Goodfellow et al. 2014 and the keras-io GAN examples. It has the same
data contract as `OneStepGAN`, so benchmarks and users can compare the two on
the same models and batches. Its `train_step` takes its two gradients with
`onestep_gan.gradients` (a tape on TensorFlow, `torch.autograd.grad` on PyTorch,
`jax.value_and_grad` on JAX, where the step is stateless), so it runs on every
backend.
"""

import keras
from keras import ops
from keras import tree

from onestep_gan import distribute
from onestep_gan import gradients as gradients_lib
from onestep_gan.gan_model import GANModel
from onestep_gan.gan_model import check_number
from onestep_gan.gan_model import float32_sum
from onestep_gan.optimizers import GANOptimizer
from onestep_gan.optimizers import no_generator_gradient_error


@keras.saving.register_keras_serializable(package="onestep_gan")
class AlternatingGAN(GANModel):
    """A GAN trained by alternating D and G steps with two optimizers.

    Args:
        generator, discriminator, loss, latent_dim, gradient_penalty_weight, seed:
            as for `OneStepGAN`.
        discriminator_steps: D updates per G update (default 1).

    Compile with `compile(discriminator_optimizer=..., generator_optimizer=...)`.

    Example:

    ```python
    gan = onestep_gan.AlternatingGAN(generator, discriminator, latent_dim=16)
    gan.compile(discriminator_optimizer=keras.optimizers.Adam(2e-4),
                generator_optimizer=keras.optimizers.Adam(2e-4))
    gan.fit(real_points, batch_size=128)
    ```
    """

    def __init__(self, generator, discriminator, discriminator_steps=1, **kwargs):
        discriminator_steps = check_number(
            "discriminator_steps", discriminator_steps, minimum=1, integer=True
        )
        super().__init__(generator, discriminator, **kwargs)
        self.discriminator_steps = discriminator_steps

    def compile(self, discriminator_optimizer="adam", generator_optimizer="adam", **kwargs):
        if kwargs.get("loss") is not None or kwargs.get("optimizer") is not None:
            raise ValueError(
                "AlternatingGAN takes discriminator_optimizer and generator_optimizer; "
                "its losses are chosen with AlternatingGAN(loss=...)."
            )
        kwargs.pop("loss", None)
        kwargs.pop("optimizer", None)
        # One GANOptimizer holds both, so that each is built on its own net's
        # variables and both are saved with the model. Under mixed_float16, Keras wraps it
        # in a LossScaleOptimizer; train_step scales and applies through self.optimizer.
        optimizer = GANOptimizer(discriminator_optimizer, generator_optimizer=generator_optimizer)
        generator = self.generator
        optimizer.assign_generator_variables(lambda: generator.trainable_variables)
        super().compile(optimizer=optimizer, **kwargs)
        if keras.backend.backend() == "jax" and isinstance(
            self.optimizer, keras.optimizers.LossScaleOptimizer
        ):
            raise ValueError(
                "AlternatingGAN cannot train under the mixed_float16 policy on JAX: its two "
                "updates per step go through the LossScaleOptimizer's stateful apply, whose "
                "conditional update Keras cannot trace under JAX (only its stateless_apply, "
                "one update of all variables, is JAX-compatible). Use mixed_bfloat16 (no loss "
                "scaling), OneStepGAN (one update per step), or the TensorFlow or PyTorch backend."
            )
        self.build_optimizer_if_ready()

    @property
    def gan_optimizer(self):
        """The `GANOptimizer` (unwrapped from the `LossScaleOptimizer` of mixed_float16)."""
        return _unwrap(self.optimizer)

    @property
    def discriminator_optimizer(self):
        return self.gan_optimizer.discriminator_optimizer

    @property
    def generator_optimizer(self):
        return self.gan_optimizer.generator_optimizer

    def compile_from_config(self, config):
        optimizer = _unwrap(keras.saving.deserialize_keras_object(config["optimizer"]))
        # The rest of compile's settings (steps_per_execution, jit_compile, run_eagerly) as saved.
        refused = ("optimizer", "loss", "metrics", "weighted_metrics", "loss_weights")
        settings = {key: value for key, value in config.items() if key not in refused}
        self.compile(
            discriminator_optimizer=optimizer.discriminator_optimizer,
            generator_optimizer=optimizer.generator_optimizer,
            **settings,
        )
        self.gan_optimizer.loss_scale_factor = optimizer.loss_scale_factor
        if self.built and not self.optimizer.built:
            self.optimizer.build(self.trainable_variables)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """Used by `evaluate`: reports L_D + L_G on the batch without updating."""
        conditions, real = self.split_batch(x, y, sample_weight)
        fake = y_pred if y_pred is not None else self(x, training=training)
        fake = self.check_sample_matches(real, fake)
        d_loss, real_scores, fake_scores = self.discriminator_loss(conditions, real, fake, training)
        g_loss = self.gan_loss.generator_loss(fake_scores, real_scores)
        g_loss = ops.cast(g_loss, "float32")
        self.update_gan_metrics(d_loss, g_loss, real_scores, fake_scores)
        return distribute.scale_loss_for_distribution(d_loss + g_loss)

    def train_step(self, *args):
        """A D step (L_D + D's regularisation) on stopped fakes, then a G step (L_G + G's
        regularisation) through the updated D. Regularisation: each net's weight terms and
        activity losses (D's on its real and fake passes, G's on its forward pass).

        One implementation for every backend (`gradients.value_and_gradients`). Keras' JAX
        trainer is stateless, `train_step(state, data) -> (logs, state)`: there the same
        step runs in a `keras.StatelessScope` holding the state.
        """
        if keras.backend.backend() != "jax":
            (data,) = args
            return self._two_pass_step(data)
        state, data = args
        trainable, non_trainable, optimizer_values, metrics_values = state
        groups = (
            self.trainable_variables, self.non_trainable_variables,
            self.optimizer.variables, self.metrics_variables,
        )
        mapping = [
            (variable, value)
            for variables, values in zip(groups, state)
            for variable, value in zip(variables, values)
        ]
        with keras.StatelessScope(state_mapping=mapping, collect_losses=True) as scope:
            logs = self._two_pass_step(data)
        new_state = tuple(
            [
                value if (current := scope.get_current_value(variable)) is None else current
                for variable, value in zip(variables, values)
            ]
            for variables, values in zip(groups, state)
        )
        return logs, new_state

    def _two_pass_step(self, data):
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
        conditions, real = self.split_batch(x, y, sample_weight)
        self.warn_if_a_part_is_frozen()
        optimizer = self.optimizer  # GANOptimizer, maybe in a LossScaleOptimizer: it routes by variable.

        for _ in range(self.discriminator_steps):
            fake = tree.map_structure(ops.stop_gradient, self(x, training=True))
            fake = self.check_sample_matches(real, fake)
            # Read after G's pass: nets written without keras.Input are built by it (`call`
            # scores the sample once); the optimizer is then built on both nets' variables.
            self.build_optimizer_if_ready()
            discriminator_variables = self.discriminator.trainable_variables

            def discriminator_step_loss():
                d_loss, real_scores, fake_scores, activity = self.discriminator_terms(
                    conditions, real, fake, training=True
                )
                regularization = activity + _weight_regularization(self.discriminator)
                total = d_loss + float32_sum(regularization) if regularization else d_loss
                scaled = optimizer.scale_loss(distribute.scale_loss_for_distribution(total))
                return scaled, (d_loss, real_scores, fake_scores)

            (_, (d_loss, real_scores, fake_scores)), gradients = gradients_lib.value_and_gradients(
                discriminator_step_loss, discriminator_variables, has_aux=True
            )
            if discriminator_variables:
                optimizer.apply(gradients, discriminator_variables)

        if self.gan_loss.generator_uses_real:  # RSGAN's G step compares with the updated D.
            real_scores = self.score(conditions, real, training=True)
        generator_variables = self.generator.trainable_variables
        if generator_variables and keras.backend.backend() == "jax":
            # JAX returns zeros, not None, for a gradient without a path.
            if not gradients_lib.jax_depends_on(lambda: self(x, training=True), generator_variables):
                raise no_generator_gradient_error(generator_variables)
        stopped_real_scores = ops.stop_gradient(real_scores)

        def generator_step_loss():
            fake = self(x, training=True)
            regularization = list(self.generator.losses)  # G's weights and activity
            generator_scores = self.score(conditions, fake, training=True)
            g_loss = self.gan_loss.generator_loss(generator_scores, stopped_real_scores)
            total = g_loss + float32_sum(regularization) if regularization else g_loss
            return optimizer.scale_loss(distribute.scale_loss_for_distribution(total)), (g_loss, fake)

        (_, (g_loss, fake)), gradients = gradients_lib.value_and_gradients(
            generator_step_loss, generator_variables, has_aux=True
        )
        if generator_variables and all(gradient is None for gradient in gradients):
            raise no_generator_gradient_error(generator_variables)
        if generator_variables:
            optimizer.apply(gradients, generator_variables)

        self.update_gan_metrics(d_loss, g_loss, real_scores, fake_scores)
        # Weighted by batch size, as d_loss and g_loss are (and Keras' `loss` in `evaluate`).
        batch_size = ops.cast(ops.shape(real_scores)[0], "float32")
        self._loss_tracker.update_state(d_loss + g_loss, sample_weight=batch_size)
        # As Keras' own train step: an overriding `compute_metrics` sees the step's samples (G's pass).
        return self.compute_metrics(x, y, tree.map_structure(ops.stop_gradient, fake), sample_weight)

    def get_config(self):
        config = super().get_config()
        config["discriminator_steps"] = self.discriminator_steps
        return config


def _unwrap(optimizer):
    if isinstance(optimizer, keras.optimizers.LossScaleOptimizer):
        return optimizer.inner_optimizer
    return optimizer


def _weight_regularization(layer):
    return [
        variable.regularizer(variable)
        for variable in layer.trainable_weights
        if getattr(variable, "regularizer", None) is not None
    ]
