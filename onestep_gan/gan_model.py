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

import inspect
import math
import numbers
import warnings

import keras
from keras import ops
from keras import tree

from onestep_gan import _registration
from onestep_gan import distribute
from onestep_gan import gradients as gradients_lib
from onestep_gan import losses as losses_lib


_MISMATCHED_BATCHES = (
    "A conditional GAN is fit on (conditions, real) pairs with the same batch size: the "
    "i-th real sample goes with the i-th condition. Batch both with one batch size"
)


def _refuse_mismatched_batches(conditions_batch, real_batch):
    if conditions_batch is not None and real_batch is not None and conditions_batch != real_batch:
        raise ValueError(
            f"{_MISMATCHED_BATCHES}. Received: conditions batch {conditions_batch}, real batch {real_batch}"
        )


def _refuse_sample_weight(bound_arguments):
    """Refuses `sample_weight` (`fit`, `evaluate`, `train_on_batch`, `test_on_batch`): Keras drops a
    sample_weight given with x alone (no y) before the step sees it, so an unconditional GAN would
    train as if none were given."""
    weights = bound_arguments.get("sample_weight")
    if weights is not None:
        shape = getattr(weights, "shape", None)
        received = f"sample_weight of shape {tuple(shape)}" if shape is not None else f"sample_weight={weights!r}"
        raise ValueError(
            "GAN training does not use sample weights: a GAN's loss compares batches of real and "
            f"generated samples, not targets one by one. Resample the data instead. Received: {received}"
        )


def _to_tensors(structure):
    return tree.map_structure(ops.convert_to_tensor, structure)


def check_number(name, value, minimum=0.0, integer=False, strictly_positive=False):
    """Validates a numeric argument (Python or NumPy number, not a bool) and returns it as int or float."""
    kind = numbers.Integral if integer else numbers.Real
    valid = isinstance(value, kind) and not isinstance(value, bool) and math.isfinite(value)
    valid = valid and (value > minimum if strictly_positive else value >= minimum)
    if not valid:
        what = "an int" if integer else "a finite number"
        bound = f"> {minimum:g}" if strictly_positive else f">= {minimum:g}"
        raise ValueError(f"Expected {name} to be {what} {bound}. Received: {name}={value!r}")
    return int(value) if integer else float(value)


def float32_sum(losses):
    """Sum of scalar losses in float32 (regularisers may run in float16 under mixed precision)."""
    return ops.sum(ops.stack([ops.cast(loss, "float32") for loss in losses]))


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
        if latent_dim is not None:
            latent_dim = check_number("latent_dim", latent_dim, minimum=1, integer=True)
        gradient_penalty_weight = check_number("gradient_penalty_weight", gradient_penalty_weight)
        if seed is not None:
            seed = check_number("seed", seed, integer=True)
        self.generator = generator
        self.discriminator = discriminator
        self.gan_loss = losses_lib.get(loss)
        self.latent_dim = latent_dim
        self.gradient_penalty_weight = gradient_penalty_weight
        self.seed = seed
        # Two noise streams: training steps draw from the first; inference (predict, sample,
        # evaluate) from the second, so that evaluating never changes what training draws next.
        # Both are saved with the model's weights (save_own_variables).
        self.seed_generator = distribute.ReplicaSeedGenerator(seed)
        self.inference_seed_generator = distribute.ReplicaSeedGenerator(
            None if seed is None else seed + 1
        )
        self.d_loss_tracker = keras.metrics.Mean(name="d_loss")
        self.g_loss_tracker = keras.metrics.Mean(name="g_loss")
        self.real_score_tracker = keras.metrics.Mean(name="real_score")
        self.fake_score_tracker = keras.metrics.Mean(name="fake_score")
        # The GAN has no weights of its own: built once G and D are (`keras.callbacks.BackupAndRestore`
        # refuses an unbuilt model, and TensorFlow's trainer builds it only by a first call).
        self.built = generator.built and discriminator.built

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
            noise = self.sample_noise(ops.shape(first)[0], training=bool(training))
            sample = self.generator(noise, training=training)
        if not self.discriminator.built:
            # Keras builds a model by calling it symbolically before `fit`; score the sample
            # once so that D's variables exist too and the optimizer is built on all of them
            # (rather than inside the traced train step).
            self.discriminator(self._discriminator_inputs(conditions, sample), training=False)
        return sample

    def noise_stream(self, training):
        """The seed generator of the training noise, or (training=False) of the inference noise."""
        return self.seed_generator if training else self.inference_seed_generator

    def sample_noise(self, batch_size, training=False):
        """z ~ N(0, I) of shape (batch_size, latent_dim), different on every replica.

        Training steps draw from the training stream; everything else (predict, sample,
        evaluate) from the inference stream, which leaves the training stream untouched.
        """
        return keras.random.normal((batch_size, self.latent_dim), seed=self.noise_stream(training))

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
            return self._check_batch_sizes(_to_tensors(x), _to_tensors(y))
        if y is not None:
            raise ValueError(
                f"An unconditional GAN (latent_dim={self.latent_dim}) is fit on real samples "
                "only: gan.fit(real). Received a second element (y); for a conditional GAN "
                "set latent_dim=None."
            )
        return None, _to_tensors(x)

    def _check_pairs(self, bound_arguments):
        """Before `fit` / `evaluate` starts: arrays without `y` for a conditional GAN (a forgotten
        `latent_dim`). Keras calls the GAN on `x` before the first step, so G would first fail on
        them with its layers' shape error; a dataset or generator is checked in the step."""
        x = bound_arguments.get("x")
        if self.conditional and bound_arguments.get("y") is None and x is not None and hasattr(x, "shape"):
            self.split_batch(x, None)

    def _check_dataset_batch_sizes(self, data):
        """Before `fit` / `evaluate` starts: a `tf.data` dataset whose (conditions, real) batch sizes
        are known. (TensorFlow may reuse a step traced before, with relaxed shapes, where a check
        traced inside does not run before every update.)"""
        if not self.conditional or type(data).__module__.split(".")[0] != "tensorflow":
            return
        spec = getattr(data, "element_spec", None)
        if isinstance(spec, tuple) and len(spec) >= 2:
            conditions, real = tree.flatten(spec[0]), tree.flatten(spec[1])
            if conditions and real and all(getattr(part, "shape", None) is not None for part in (conditions[0], real[0])):
                _refuse_mismatched_batches(conditions[0].shape[0], real[0].shape[0])

    def _check_batch_sizes(self, conditions, real):
        """Conditions and real samples must pair up: one batch size (checked at run time if
        unknown; then the returned tensors depend on the check, so it runs before G and D)."""
        conditions_leaf, real_leaf = tree.flatten(conditions)[0], tree.flatten(real)[0]
        conditions_batch, real_batch = conditions_leaf.shape[0], real_leaf.shape[0]
        if conditions_batch is not None and real_batch is not None:
            _refuse_mismatched_batches(conditions_batch, real_batch)
        elif keras.backend.backend() == "tensorflow":  # Shapes known only at run time.
            import tensorflow as tf

            check = tf.debugging.assert_equal(
                tf.shape(conditions_leaf)[0], tf.shape(real_leaf)[0],
                message=f"{_MISMATCHED_BATCHES}. Received (conditions batch, real batch):",
            )
            with tf.control_dependencies([check] if check is not None else []):
                conditions = tree.map_structure(tf.identity, conditions)
                real = tree.map_structure(tf.identity, real)
        return conditions, real

    def warn_if_a_part_is_frozen(self):
        """Warns (once per traced train step) if G or D has no trainable weights."""
        for role, part in (("generator", self.generator), ("discriminator", self.discriminator)):
            if not part.trainable_variables:
                warnings.warn(
                    f"The {role} has no trainable weights ({role}.trainable is False?): "
                    f"only the other net trains. Set {role}.trainable = True and compile "
                    "again to train both.",
                    stacklevel=2,
                )

    def check_sample_matches(self, real, fake):
        """Raises if the generator's sample cannot stand in for a real sample; returns the sample in
        the real samples' containers (a G with `outputs=[a, b]` returns a list where the data,
        from Keras' TensorFlow adapter or tf.data, hold a tuple)."""
        try:
            tree.assert_same_structure(tree.lists_to_tuples(real), tree.lists_to_tuples(fake))
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
        return tree.pack_sequence_as(real, tree.flatten(fake))

    # ------------------------------------------------------------ discriminator
    def _discriminator_inputs(self, conditions, sample):
        sample = _to_tensors(sample)
        return sample if conditions is None else [_to_tensors(conditions), sample]

    def score(self, conditions, sample, training=None):
        """D's scores for a sample, as a float32 (batch,) tensor."""
        scores = self.discriminator(self._discriminator_inputs(conditions, sample), training=training)
        return self._check_scores(scores)

    def discriminator_activity_losses(self):
        """The activity-regulariser and `add_loss` losses of D's last top-level call.

        D's `losses` list those first and its weight-regularisation terms last; every top-level
        call of D replaces the former, so they are read after each pass that should count.
        """
        discriminator = self.discriminator
        losses = discriminator.losses
        weight_terms = sum(
            1 for variable in discriminator.trainable_weights
            if getattr(variable, "regularizer", None) is not None
        )
        return losses[: len(losses) - weight_terms]

    def score_with_frozen_discriminator(self, conditions, sample, training=None):
        """D's scores with D's weights stop-gradiented: the gradient reaches only the sample.

        D runs under a `keras.StatelessScope` that maps its trainable variables to their
        stop-gradiented values, so the gradient on D's weights is exactly zero (not zero up
        to rounding, as subtracting two D passes would give). The call goes through
        `D.__call__`, so `training` reaches every sublayer even when D's own `call` takes no
        `training` argument. Updated float state (BatchNorm statistics) is discarded: the live
        D passes already update it; integer state (the seeds of Dropout and other random
        layers) advances, so that the next pass draws a fresh mask. D's activity losses of
        this pass are discarded (they would train G towards D's regulariser).
        """
        discriminator = self.discriminator
        mapping = [(v, ops.stop_gradient(v.value)) for v in discriminator.trainable_variables]
        mapping += [(v, v.value) for v in discriminator.non_trainable_variables]
        inputs = self._discriminator_inputs(conditions, sample)
        with keras.StatelessScope(state_mapping=mapping) as scope:
            scores = discriminator(inputs, training=training)
        for variable in discriminator.non_trainable_variables:
            if "int" in keras.backend.standardize_dtype(variable.dtype):
                variable.assign(scope.get_current_value(variable))
        return self._check_scores(scores)

    def _check_scores(self, scores):
        if isinstance(scores, (list, tuple, dict)):
            raise ValueError(
                "The discriminator must return one tensor of scores, shape (batch,) or "
                f"(batch, 1). Received a {type(scores).__name__} of {len(scores)} outputs."
            )
        shape = tuple(scores.shape)
        if len(shape) == 2 and shape[1] == 1:
            scores = ops.squeeze(scores, axis=1)
        elif len(shape) != 1:
            raise ValueError(
                "The discriminator must return scores of shape (batch,) or (batch, 1). "
                f"Received: shape {shape}"
            )
        # Losses are computed in float32, whatever D's compute dtype (mixed precision).
        return ops.cast(scores, "float32")

    def gradient_penalty(self, conditions, real, fake, training=None):
        """WGAN-GP: `mean((||grad_x D(x_hat)|| - 1)^2)` on random interpolates of real and fake."""
        real_leaves, fake_leaves = tree.flatten(real), tree.flatten(fake)
        batch_size = ops.shape(fake_leaves[0])[0]
        epsilon = keras.random.uniform((batch_size,), seed=self.noise_stream(training))
        interpolates = []
        for real_leaf, fake_leaf in zip(real_leaves, fake_leaves):
            # In float32 (D casts them to its compute dtype), so mixed precision works too.
            real_leaf, fake_leaf = ops.cast(real_leaf, "float32"), ops.cast(fake_leaf, "float32")
            weight = ops.reshape(epsilon, (-1,) + (1,) * (len(fake_leaf.shape) - 1))
            interpolates.append(weight * real_leaf + (1.0 - weight) * fake_leaf)

        def total_score(leaves):
            return ops.sum(self.score(conditions, tree.pack_sequence_as(fake, leaves), training))

        # BatchNorm statistics move with D's real and fake passes only: the pass on the
        # interpolates (in training mode, as every D pass of the step) gives its updates back.
        statistics = [
            variable
            for layer in self.discriminator._flatten_layers()
            if isinstance(layer, keras.layers.BatchNormalization)
            for variable in (layer.moving_mean, layer.moving_variance)
        ]
        saved = [ops.copy(ops.convert_to_tensor(variable)) for variable in statistics]
        # Differentiable again: the trainer's backward pass reaches D's weights through it.
        gradients = gradients_lib.input_gradients(total_score, interpolates)
        for variable, value in zip(statistics, saved):
            variable.assign(value)
        squared_norm = sum(
            ops.sum(ops.square(ops.reshape(ops.cast(g, "float32"), (batch_size, -1))), axis=1)
            for g in gradients
            if g is not None  # a part of the sample D does not read
        )
        return ops.mean(ops.square(ops.sqrt(squared_norm + 1e-12) - 1.0))

    def discriminator_terms(self, conditions, real, fake_stopped, training=None):
        """The D term L_D(D(real), D(sg(G))) with its penalty, the scores, and D's activity
        losses of the two passes (a list; weight regularisation is not in it)."""
        with gradients_lib.collecting_losses():  # JAX: Keras' scope would drop the activity
            real_scores = self.score(conditions, real, training)
            activity = self.discriminator_activity_losses()
            fake_scores = self.score(conditions, fake_stopped, training)
            activity += self.discriminator_activity_losses()
        d_loss = self.gan_loss.discriminator_loss(real_scores, fake_scores)
        if self.gan_loss.gradient_penalty and self.gradient_penalty_weight > 0:
            d_loss = d_loss + self.gradient_penalty_weight * self.gradient_penalty(
                conditions, real, fake_stopped, training
            )
        return d_loss, real_scores, fake_scores, activity

    def discriminator_loss(self, conditions, real, fake_stopped, training=None):
        """The D term L_D(D(real), D(sg(G))) with its penalty; also returns the scores."""
        return self.discriminator_terms(conditions, real, fake_stopped, training)[:3]

    def update_gan_metrics(self, d_loss, g_loss, real_scores, fake_scores):
        # Weighted by batch size, like Keras' own `loss` tracker, so that epoch means agree
        # (a short last batch counts for its size): `loss` then equals `d_loss` plus extras.
        batch_size = ops.cast(ops.shape(real_scores)[0], "float32")
        self.d_loss_tracker.update_state(d_loss, sample_weight=batch_size)
        self.g_loss_tracker.update_state(g_loss, sample_weight=batch_size)
        self.real_score_tracker.update_state(real_scores)
        self.fake_score_tracker.update_state(fake_scores)

    # ------------------------------------------------------------ refused arguments
    def compile(self, optimizer="adam", **kwargs):
        for key in ("metrics", "weighted_metrics", "loss_weights"):
            if kwargs.get(key) is not None:
                raise ValueError(
                    f"{type(self).__name__} does not take compile({key}=...): Keras would apply it "
                    "to (real, generated) sample pairs, which are not targets and predictions. "
                    "The GAN logs d_loss, g_loss, real_score and fake_score; for other "
                    "measures use a callback or override compute_metrics. "
                    f"Received: {key}={kwargs[key]!r}"
                )
        super().compile(optimizer=optimizer, **kwargs)

    def _refuse_weights(self, method, args, kwargs):
        """`method`'s arguments, bound, after refusing `class_weight` and `sample_weight`."""
        bound = inspect.signature(method).bind(self, *args, **kwargs).arguments
        if bound.get("class_weight") is not None:
            raise ValueError(
                f"{type(self).__name__} does not take class_weight: a GAN's batches are not "
                "labelled with classes (and GAN training does not use sample weights). "
                "Resample the data instead. "
                f"Received: class_weight={bound['class_weight']!r}"
            )
        _refuse_sample_weight(bound)
        return bound

    def fit(self, *args, **kwargs):
        bound = self._refuse_weights(keras.Model.fit, args, kwargs)
        self._check_pairs(bound)
        self._check_dataset_batch_sizes(bound.get("x"))
        return self._restoring_values_on_error(super().fit, *args, **kwargs)

    def evaluate(self, *args, **kwargs):
        bound = self._refuse_weights(keras.Model.evaluate, args, kwargs)
        self._check_pairs(bound)
        self._check_dataset_batch_sizes(bound.get("x"))
        return self._restoring_values_on_error(super().evaluate, *args, **kwargs)

    def train_on_batch(self, *args, **kwargs):
        # Keras turns class weights into sample weights from `y` (an IndexError without one).
        self._refuse_weights(keras.Model.train_on_batch, args, kwargs)
        return super().train_on_batch(*args, **kwargs)

    def test_on_batch(self, *args, **kwargs):
        self._refuse_weights(keras.Model.test_on_batch, args, kwargs)
        return super().test_on_batch(*args, **kwargs)

    def predict(self, *args, **kwargs):
        return self._restoring_values_on_error(super().predict, *args, **kwargs)

    def _restoring_values_on_error(self, method, *args, **kwargs):
        # Keras' JAX trainer detaches the variables' values when `fit`, `evaluate` or `predict`
        # starts and reattaches them only after a completed step: an error in the first step (a
        # refused batch, a generator without gradient) would leave the model reading its
        # initializers. `evaluate` inside `fit` (validation) is covered by `fit`'s call.
        if keras.backend.backend() != "jax" or getattr(self, "_purged_values", None) is not None:
            return method(*args, **kwargs)
        # Set past Keras' attribute tracking (a list would be tracked as layer state).
        object.__setattr__(self, "_purged_values", [])
        try:
            return method(*args, **kwargs)
        except BaseException:
            # The steps that ran left their state in `_jax_state` (live arrays): put it back first.
            # A variable still detached gets the last value recorded for it that is not deleted
            # (Keras' jitted steps donate, and so delete, the values they are given).
            if getattr(self, "_jax_state", None) and not getattr(self, "_jax_state_synced", True):
                self.jax_state_sync()
            for variable, value in reversed(self._purged_values):
                if variable._value is None and not (hasattr(value, "is_deleted") and value.is_deleted()):
                    variable._value = value
            raise
        finally:
            object.__setattr__(self, "_purged_values", None)

    def _purge_model_variables(self, **kwargs):
        # JAX trainer only: remembers the values it detaches (see fit).
        lists = {
            "trainable_variables": lambda: self.trainable_variables,
            "non_trainable_variables": lambda: self.non_trainable_variables,
            "optimizer_variables": lambda: self.optimizer.variables,
            "metrics_variables": lambda: self.metrics_variables,
        }
        purged = getattr(self, "_purged_values", None)
        if purged is not None:
            for key, variables in lists.items():
                if kwargs.get(key):
                    purged.extend((variable, variable._value) for variable in variables())
        super()._purge_model_variables(**kwargs)

    # ------------------------------------------------------------ serialisation
    NOISE_STATE_KEYS = ("training_noise_seed", "inference_noise_seed")

    def save_own_variables(self, store):
        # The noise streams' states, so that a loaded or resumed GAN draws the noise the
        # uninterrupted run would have drawn.
        super().save_own_variables(store)
        for key, stream in zip(self.NOISE_STATE_KEYS, (self.seed_generator, self.inference_seed_generator)):
            store[key] = stream.state

    def load_own_variables(self, store):
        keys = list(store.keys())
        for key, stream in zip(self.NOISE_STATE_KEYS, (self.seed_generator, self.inference_seed_generator)):
            if key in keys:  # Files saved before the noise state was saved lack it.
                stream.state.assign(store[key])
        own = self._trainable_variables + self._non_trainable_variables
        for index, variable in enumerate(own):
            variable.assign(store[f"{index}"])

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "generator": keras.saving.serialize_keras_object(self.generator),
                "discriminator": keras.saving.serialize_keras_object(self.discriminator),
                "loss": losses_lib.serialize(self.gan_loss),
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


# Last: if Keras was first imported from here, the modules that import this one's names register now.
_registration.import_pending()
