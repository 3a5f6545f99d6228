"""`GANModel`: the data contract shared by `OneStepGAN` and `AlternatingGAN`.

A GAN model holds a generator G and a discriminator D and is trained with
plain `fit`:

- conditional (`latent_dim=None`): `fit(conditions, real)` or a dataset of
  `(conditions, real)` pairs; G is called as `generator(conditions)` and D as
  `discriminator([conditions, sample])`;
- unconditional (`latent_dim` set): `fit(real)`; z ~ N(0, I) of shape
  `(batch, latent_dim)` is drawn with `keras.random` and G is called as
  `generator(z)`, D as `discriminator(sample)`.

Calling the model on a batch returns a generated batch matched to it: the
generator's sample for those conditions, or (unconditional) a fresh sample
of the same batch size, so `predict` yields samples. D's scores may be
`(batch,)` or `(batch, 1)`; samples may be tensors or nested structures.
"""

import keras
from keras import ops
from keras import tree

from onestep_gan import distribute
from onestep_gan import losses as losses_lib


def _to_tensors(structure):
    return tree.map_structure(ops.convert_to_tensor, structure)


class GANModel(keras.Model):
    """Base class: holds G and D, validates the data contract, scores samples.

    Args:
        generator: a `keras.Model` (or layer) producing samples.
        discriminator: a `keras.Model` (or layer) producing one score per example.
        loss: a name from `onestep_gan.losses.LOSSES` or a `GANLoss`.
        latent_dim: size of the noise vector for an unconditional GAN; `None`
            for a conditional GAN.
        gradient_penalty_weight: weight of the WGAN-GP penalty, used by losses
            that ask for one (`wasserstein`).
        seed: integer seed of the noise.
    """

    def __init__(
        self,
        generator,
        discriminator,
        loss="hinge",
        latent_dim=None,
        gradient_penalty_weight=10.0,
        seed=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        for role, part in (("generator", generator), ("discriminator", discriminator)):
            if not isinstance(part, keras.layers.Layer):
                raise ValueError(
                    f"Expected the {role} to be a keras.Model or keras.layers.Layer. "
                    f"Received: {role}={part!r} of type {type(part).__name__}"
                )
        if latent_dim is not None and (not isinstance(latent_dim, int) or latent_dim < 1):
            raise ValueError(
                f"Expected latent_dim to be None or a positive int. Received: latent_dim={latent_dim!r}"
            )
        if not gradient_penalty_weight >= 0:
            raise ValueError(
                "Expected gradient_penalty_weight >= 0. "
                f"Received: gradient_penalty_weight={gradient_penalty_weight}"
            )
        self.generator = generator
        self.discriminator = discriminator
        self.gan_loss = losses_lib.get(loss)
        self.latent_dim = latent_dim
        self.gradient_penalty_weight = gradient_penalty_weight
        self.seed = seed
        self.seed_generator = distribute.ReplicaSeedGenerator(seed)
        self.d_loss_tracker = keras.metrics.Mean(name="d_loss")
        self.g_loss_tracker = keras.metrics.Mean(name="g_loss")
        self.real_score_tracker = keras.metrics.Mean(name="real_score")
        self.fake_score_tracker = keras.metrics.Mean(name="fake_score")

    def build(self, input_shape=None):
        # G and D build themselves on their first call; the GAN has no weights of its own.
        self.built = True

    def build_optimizer_if_ready(self):
        """Builds the optimizer now if G and D already have their variables.

        Without a distribution strategy, Keras' TensorFlow trainer builds the optimizer
        while tracing the train step; a retrace (e.g. an XLA fallback) would then try to
        create its variables a second time. Compiling after G and D are built (call the GAN
        on a batch first) avoids that: the variables are created here, eagerly.
        """
        parts_built = all(layer.built for layer in (self.generator, self.discriminator))
        if self.optimizer is not None and not self.optimizer.built and parts_built:
            self.optimizer.build(self.trainable_variables)

    @property
    def conditional(self):
        return self.latent_dim is None

    # ------------------------------------------------------------------ forward
    def call(self, inputs, training=None):
        if self.conditional:
            conditions = inputs
            sample = self.generator(inputs, training=training)
        else:
            conditions = None
            first = tree.flatten(inputs)[0]
            sample = self.generator(self.sample_noise(ops.shape(first)[0]), training=training)
        if not self.discriminator.built:
            # Keras builds a model by calling it symbolically before `fit`; score the sample
            # once so that D's variables exist too and the optimizer is built on all of them
            # (rather than inside the traced train step).
            self.discriminator(self._discriminator_inputs(conditions, sample), training=False)
        return sample

    def sample_noise(self, batch_size):
        """z ~ N(0, I) of shape (batch_size, latent_dim), different on every replica."""
        return keras.random.normal((batch_size, self.latent_dim), seed=self.seed_generator)

    def sample(self, num_samples, training=False):
        """Draws `num_samples` samples from an unconditional generator."""
        if self.conditional:
            raise ValueError(
                "sample() draws noise for an unconditional GAN; this GAN is conditional "
                "(latent_dim=None). Call generator(conditions) or predict(conditions)."
            )
        return self.generator(self.sample_noise(num_samples), training=training)

    def split_batch(self, x, y, sample_weight=None):
        """Maps Keras' (x, y) onto (conditions, real) and checks the contract."""
        if sample_weight is not None:
            raise ValueError(
                "GAN training does not use sample weights. Received a sample_weight "
                "(a third element in the data tuple)."
            )
        if self.conditional:
            if y is None:
                raise ValueError(
                    "A conditional GAN (latent_dim=None) is fit on (conditions, real) pairs: "
                    "gan.fit(conditions, real). Received only one input and no real samples. "
                    "For an unconditional GAN, set latent_dim."
                )
            return _to_tensors(x), _to_tensors(y)
        if y is not None:
            raise ValueError(
                f"An unconditional GAN (latent_dim={self.latent_dim}) is fit on real samples "
                "only: gan.fit(real). Received a second element (y); for a conditional GAN "
                "set latent_dim=None."
            )
        return None, _to_tensors(x)

    def check_sample_matches(self, real, fake):
        """Raises if the generator's sample cannot stand in for a real sample."""
        try:
            tree.assert_same_structure(real, fake)
        except (ValueError, TypeError) as error:
            raise ValueError(
                "The generator's sample must have the structure of the real samples. "
                f"Received: real structure {tree.map_structure(lambda t: None, real)!r}, "
                f"generated structure {tree.map_structure(lambda t: None, fake)!r}"
            ) from error
        for real_leaf, fake_leaf in zip(tree.flatten(real), tree.flatten(fake)):
            real_shape, fake_shape = tuple(real_leaf.shape), tuple(fake_leaf.shape)
            # Equal ranks must agree past the batch axis. Ranks may differ when the
            # discriminator embeds ids and distributions alike (text: ids vs probs).
            if len(real_shape) == len(fake_shape) and any(
                r is not None and f is not None and r != f
                for r, f in zip(real_shape[1:], fake_shape[1:])
            ):
                raise ValueError(
                    "The generator's sample must have the shape of the real samples "
                    f"(batch axis aside). Received: real shape {real_shape}, "
                    f"generated shape {fake_shape}"
                )

    # ------------------------------------------------------------ discriminator
    def _discriminator_inputs(self, conditions, sample):
        return sample if conditions is None else [conditions, sample]

    def score(self, conditions, sample, training=None):
        """D's scores for a sample, as a (batch,) tensor."""
        scores = self.discriminator(self._discriminator_inputs(conditions, sample), training=training)
        return self._check_scores(scores)

    def score_with_frozen_discriminator(self, conditions, sample, training=None):
        """D's scores with D's weights stop-gradiented: the gradient reaches only the sample.

        `stateless_call` with stopped trainable variables makes the gradient on D's
        weights exactly zero (not zero up to rounding, as subtracting two D passes
        would give). Updated non-trainable state (e.g. BatchNorm statistics) is
        discarded: the live D passes already update it.
        """
        discriminator = self.discriminator
        frozen = [ops.stop_gradient(variable) for variable in discriminator.trainable_variables]
        non_trainable = [variable.value for variable in discriminator.non_trainable_variables]
        scores, _ = discriminator.stateless_call(
            frozen, non_trainable, self._discriminator_inputs(conditions, sample), training=training
        )
        return self._check_scores(scores)

    def _check_scores(self, scores):
        if isinstance(scores, (list, tuple, dict)):
            raise ValueError(
                "The discriminator must return one tensor of scores, shape (batch,) or "
                f"(batch, 1). Received a {type(scores).__name__} of {len(scores)} outputs."
            )
        shape = tuple(scores.shape)
        if len(shape) == 2 and shape[1] == 1:
            return ops.squeeze(scores, axis=1)
        if len(shape) != 1:
            raise ValueError(
                "The discriminator must return scores of shape (batch,) or (batch, 1). "
                f"Received: shape {shape}"
            )
        return scores

    def gradient_penalty(self, conditions, real, fake, training=None):
        """WGAN-GP: `mean((||grad_x D(x_hat)|| - 1)^2)` on random interpolates of real and fake."""
        if keras.backend.backend() != "tensorflow":
            raise NotImplementedError(
                "The gradient penalty needs input gradients inside the loss; it is "
                f"implemented for the TensorFlow backend. Received backend: {keras.backend.backend()}"
            )
        import tensorflow as tf

        real_leaves, fake_leaves = tree.flatten(real), tree.flatten(fake)
        batch_size = ops.shape(fake_leaves[0])[0]
        epsilon = keras.random.uniform((batch_size,), seed=self.seed_generator)
        interpolates = []
        for real_leaf, fake_leaf in zip(real_leaves, fake_leaves):
            real_leaf = ops.cast(real_leaf, fake_leaf.dtype)
            weight = ops.reshape(epsilon, (-1,) + (1,) * (len(fake_leaf.shape) - 1))
            interpolates.append(weight * real_leaf + (1.0 - weight) * fake_leaf)
        with tf.GradientTape() as tape:
            tape.watch(interpolates)
            scores = self.score(conditions, tree.pack_sequence_as(fake, interpolates), training)
            total_score = ops.sum(scores)
        gradients = tape.gradient(total_score, interpolates)
        squared_norm = sum(
            ops.sum(ops.square(ops.reshape(g, (batch_size, -1))), axis=1) for g in gradients
        )
        return ops.mean(ops.square(ops.sqrt(squared_norm + 1e-12) - 1.0))

    def discriminator_loss(self, conditions, real, fake_stopped, training=None):
        """The D term L_D(D(real), D(sg(G))) with its penalty; also returns the scores."""
        real_scores = self.score(conditions, real, training)
        fake_scores = self.score(conditions, fake_stopped, training)
        d_loss = self.gan_loss.discriminator_loss(real_scores, fake_scores)
        if self.gan_loss.gradient_penalty and self.gradient_penalty_weight > 0:
            d_loss = d_loss + self.gradient_penalty_weight * self.gradient_penalty(
                conditions, real, fake_stopped, training
            )
        return d_loss, real_scores, fake_scores

    def update_gan_metrics(self, d_loss, g_loss, real_scores, fake_scores):
        # Weighted by batch size, like Keras' own `loss` tracker, so that epoch means agree
        # (a short last batch counts for its size): `loss` then equals `d_loss` plus extras.
        batch_size = ops.cast(ops.shape(real_scores)[0], "float32")
        self.d_loss_tracker.update_state(d_loss, sample_weight=batch_size)
        self.g_loss_tracker.update_state(g_loss, sample_weight=batch_size)
        self.real_score_tracker.update_state(real_scores)
        self.fake_score_tracker.update_state(fake_scores)

    # ------------------------------------------------------------ serialisation
    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "generator": keras.saving.serialize_keras_object(self.generator),
                "discriminator": keras.saving.serialize_keras_object(self.discriminator),
                "loss": self.gan_loss.name,
                "latent_dim": self.latent_dim,
                "gradient_penalty_weight": self.gradient_penalty_weight,
                "seed": self.seed,
            }
        )
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        for key in ("generator", "discriminator"):
            config[key] = keras.saving.deserialize_keras_object(
                config[key], custom_objects=custom_objects
            )
        return cls(**config)
