"""Differentiable text from a TransformerGenerator: straight-through Gumbel-softmax sampling.

A GAN generator for text must hand the discriminator something it can differentiate: argmax
ids cut the gradient (the engine then refuses to train, see `GANOptimizer`). `TextSampler`
writes text autoregressively and free-running: at every step it draws a token with the
straight-through Gumbel-softmax estimator (Jang et al., 2017; Maddison et al., 2017),

    y_soft = softmax(beta * (logits + g)),   g ~ Gumbel(0, 1)
    y      = one_hot(argmax(y_soft)) + (y_soft - stop_gradient(y_soft))

whose forward value is an exact one-hot (the bracket is exactly 0 in floating point) and
whose gradient is the soft sample's. The one-hot is fed back into the generator's cached
`decode_step`, so the whole sampled text stays differentiable with respect to every
generator weight on the path (embeddings, encoder, decoder, output projection). The
discriminator embeds it as `probs @ embedding_matrix`, which for a one-hot is the id's
embedding: real texts (exact one-hots of ids) and samples look alike to it.

`beta` is the inverse temperature. It changes only the gradient (the forward one-hot is a
sample of softmax(logits) whatever beta): a small beta gives smooth, low-variance but more
biased gradients, a large beta less biased and noisier ones. Schedules move it during
training (annealing, as in Jang et al.), driven by a step counter that `TextSampler`
increments on each training call.

References:
- Jang, Gu & Poole, 2017. Categorical Reparameterization with Gumbel-Softmax.
- Maddison, Mnih & Teh, 2017. The Concrete Distribution.
- Kusner & Hernandez-Lobato, 2016. GANs for Sequences of Discrete Elements with the
  Gumbel-softmax Distribution.
"""

import keras
from keras import ops

from onestep_gan import distribute
from onestep_gan.rdf2text.transformer import TransformerGenerator

# Smallest uniform draw; keeps -log(-log(u)) finite (u = 0 would give -inf).
_UNIFORM_MIN = 1e-20


# ----------------------------------------------------------------------------- schedules
def _check_positive_number(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"`{name}` must be a number > 0. Received: {name}={value!r}")
    return float(value)


def _check_num_steps(num_steps):
    if isinstance(num_steps, bool) or not isinstance(num_steps, int) or num_steps < 1:
        raise ValueError(f"`num_steps` must be a positive int. Received: num_steps={num_steps!r}")
    return num_steps


class TemperatureSchedule:
    """Base class: maps a training step (int scalar tensor) to an inverse temperature.

    Subclasses implement `__call__(step) -> float32 scalar` with `keras.ops` only (it runs
    inside a compiled training step) and `get_config`.
    """

    def __call__(self, step):
        raise NotImplementedError

    def get_config(self):
        raise NotImplementedError

    @classmethod
    def from_config(cls, config):
        return cls(**config)


@keras.saving.register_keras_serializable(package="onestep_gan")
class ConstantSchedule(TemperatureSchedule):
    """A fixed inverse temperature.

    Args:
        inverse_temperature: beta > 0.
    """

    def __init__(self, inverse_temperature=1.0):
        self.inverse_temperature = _check_positive_number("inverse_temperature", inverse_temperature)

    def __call__(self, step):
        del step
        return ops.convert_to_tensor(self.inverse_temperature, dtype="float32")

    def get_config(self):
        return {"inverse_temperature": self.inverse_temperature}


class _InterpolatedSchedule(TemperatureSchedule):
    """Shared arguments of schedules that move beta from `beta_start` to `beta_end`."""

    def __init__(self, beta_start, beta_end, num_steps):
        self.beta_start = _check_positive_number("beta_start", beta_start)
        self.beta_end = _check_positive_number("beta_end", beta_end)
        self.num_steps = _check_num_steps(num_steps)

    def _fraction(self, step):
        """min(step / num_steps, 1) as float32: 0 at step 0, 1 from `num_steps` on."""
        step = ops.cast(step, "float32")
        return ops.clip(step / float(self.num_steps), 0.0, 1.0)

    def get_config(self):
        return {"beta_start": self.beta_start, "beta_end": self.beta_end, "num_steps": self.num_steps}


@keras.saving.register_keras_serializable(package="onestep_gan")
class LinearSchedule(_InterpolatedSchedule):
    """`beta = beta_start + (beta_end - beta_start) * min(step / num_steps, 1)`.

    Args:
        beta_start: inverse temperature at step 0, > 0.
        beta_end: inverse temperature from step `num_steps` on, > 0.
        num_steps: length of the ramp, a positive int.
    """

    def __call__(self, step):
        fraction = self._fraction(step)
        return self.beta_start + (self.beta_end - self.beta_start) * fraction


@keras.saving.register_keras_serializable(package="onestep_gan")
class ExponentialSchedule(_InterpolatedSchedule):
    """`beta = beta_start * (beta_end / beta_start) ** min(step / num_steps, 1)`.

    Geometric interpolation: beta is multiplied by the same factor at every step, the usual
    Gumbel-softmax annealing `tau = max(tau_end, tau_start * exp(-r * step))` written as an
    inverse temperature with an explicit end point.

    Args: as `LinearSchedule`.
    """

    def __call__(self, step):
        fraction = self._fraction(step)
        beta = self.beta_start * ops.power(self.beta_end / self.beta_start, fraction)
        # power(x, 1) * start may round; the end value is returned exactly.
        return ops.where(fraction >= 1.0, self.beta_end, beta)


def get_schedule(identifier):
    """A schedule from a schedule, a number (constant beta) or a serialised config."""
    if isinstance(identifier, TemperatureSchedule):
        return identifier
    if isinstance(identifier, (int, float)) and not isinstance(identifier, bool):
        return ConstantSchedule(identifier)
    if isinstance(identifier, dict):
        schedule = keras.saving.deserialize_keras_object(identifier)
        if isinstance(schedule, TemperatureSchedule):
            return schedule
    raise ValueError(
        "Expected a temperature schedule (ConstantSchedule, LinearSchedule, "
        "ExponentialSchedule), a number > 0 or a serialised schedule. "
        f"Received: schedule={identifier!r}"
    )


# ------------------------------------------------------------- straight-through Gumbel
def gumbel_noise(shape, seed=None, dtype="float32"):
    """Standard Gumbel noise `-log(-log(u))`, `u ~ U(0, 1)`, drawn with `keras.random`.

    `seed`: an int or a `keras.random.SeedGenerator` (stateless draws on every backend).
    """
    uniform = keras.random.uniform(shape, minval=_UNIFORM_MIN, maxval=1.0, dtype=dtype, seed=seed)
    return -ops.log(-ops.log(uniform))


def _straight_through_softmax(scores):
    """One-hot of argmax(scores) forward, gradient of softmax(scores) backward.

    `hard + (soft - stop_gradient(soft))`: the bracket is exactly 0, so the value is
    exactly `hard`. (Written `hard + soft - stop_gradient(soft)`, left to right, it would
    be `(hard + soft) - soft`, which rounds: 1 + 0.3 - 0.3 != 1 in float32.)
    """
    soft = ops.softmax(scores, axis=-1)
    # argmax of the scores equals argmax of the softmax but cannot tie where softmax
    # rounds two saturated entries to the same value.
    hard = ops.one_hot(ops.argmax(scores, axis=-1), ops.shape(scores)[-1], dtype=soft.dtype)
    return hard + (soft - ops.stop_gradient(soft))


def straight_through_gumbel_softmax(logits, inverse_temperature=1.0, seed=None):
    """Samples one-hots from `softmax(logits)` with a soft (Gumbel-softmax) gradient.

    Args:
        logits: `(..., vocab)` unnormalised log-probabilities.
        inverse_temperature: beta > 0, scalar (number or tensor); the soft sample is
            `softmax(beta * (logits + g))`.
        seed: an int or a `keras.random.SeedGenerator` for the Gumbel noise `g`.

    Returns `(..., vocab)`: the forward value is an EXACT one-hot (entries exactly 0.0 and
    1.0, the token `argmax(logits + g)`, a sample of `softmax(logits)` whatever beta);
    its gradient is that of `softmax(beta * (logits + g))`.
    """
    noise = gumbel_noise(ops.shape(logits), seed=seed, dtype=logits.dtype)
    beta = ops.cast(inverse_temperature, logits.dtype)
    return _straight_through_softmax(beta * (logits + noise))


# ----------------------------------------------------------------------------- sampler
# Backends whose loop is `ops.while_loop`: TensorFlow backpropagates through it, and it stops
# once every row has finished. JAX cannot reverse-differentiate a while loop (its trip count is
# data-dependent), so the other backends scan over all `max_length` steps; rows that have
# finished emit exact PAD one-hots, so the texts are the same. (Keras' TensorFlow `scan` would
# not do there: it stacks outputs shaped like the whole carry. Tests compare each backend's
# loop with the same steps unrolled in Python.)
_WHILE_LOOP_BACKENDS = ("tensorflow",)


def _scan_with_variables(step_fn, carry, xs, variables):
    """`keras.ops.scan(step_fn, carry, xs)` where `step_fn` may assign `variables`.

    A scan body must be a pure function on JAX: a variable assigned inside it (a dropout
    layer's seed state) would leak a traced value out of the loop. The variables' values ride
    in the carry instead, read and written through a `StatelessScope` in each step, and are
    assigned once after the loop: the same values, in the same order, as the steps assigning
    them directly. Unlisted variables (the trainable weights) are read from the enclosing scope.
    """
    from onestep_gan.gradients import forwarding_scope

    variables = list(variables)

    def body(state, inputs):
        carry, values = state
        with forwarding_scope(list(zip(variables, values))) as scope:
            carry, outputs = step_fn(carry, inputs)
        return (carry, [scope.get_current_value(variable) for variable in variables]), outputs

    (carry, values), outputs = ops.scan(body, (carry, [variable.value for variable in variables]), xs)
    for variable, value in zip(variables, values):
        variable.assign(value)
    return carry, outputs


@keras.saving.register_keras_serializable(package="onestep_gan")
class TextSampler(keras.Model):
    """Free-running, differentiable text generation from a `TransformerGenerator`.

    Each step feeds the previous step's straight-through Gumbel one-hot back into the
    generator's cached `decode_step` (one decoder position per token). A row that has
    emitted EOS is finished: its later positions are exact PAD one-hots (no gradient), the
    padding real texts have. On TensorFlow the loop is a `keras.ops.while_loop` with
    `maximum_iterations=max_length`, which backpropagates eagerly, in a `tf.function` and
    under XLA, and stops early once every row is finished. On JAX (and PyTorch) it is a
    `keras.ops.scan` over all `max_length` steps, which JAX can differentiate (a while
    loop's trip count depends on the data); the finished rows' PAD makes the texts the same.

    The inverse temperature is `schedule(step_counter)`; `step_counter` is a non-trainable
    int64 variable incremented by every call with `training=True` (once per `fit` step
    when the sampler is a GAN's generator).

    Args:
        generator: a `TransformerGenerator`.
        max_length: number of generated positions (after BOS); defaults to
            `generator.max_target_length`. Real texts for the discriminator must have
            this length (EOS, then PAD one-hots).
        schedule: a `TemperatureSchedule` or a number (constant inverse temperature).
        seed: integer seed of the Gumbel noise.
        feedback_gradient: True (default): backpropagate through the whole loop, including
            each sampled token's effect on the later steps it is fed back into. False: the
            cheaper estimator. The loop then only picks the tokens, and one teacher-forced
            decoder pass over the sampled prefix gives every position its logits and so
            its straight-through gradient. Gradients reach all the weights the logits
            depend on, but not the path through the fed-back tokens. The forward values
            are the same one-hots for the same seed. `benchmarks/step_time.py` measures
            both modes.

    Call arguments:
        source_ids: int `(batch, source_len)` linearised triples.
        training: bool; enables dropout and advances the temperature schedule.

    Returns `(batch, max_length, vocabulary_size)` float32 one-hots that carry gradients.

    Example:

    ```python
    sampler = TextSampler(generator, schedule=LinearSchedule(1.0, 5.0, num_steps=10_000))
    gan = onestep_gan.OneStepGAN(sampler, TextDiscriminator(...), loss="hinge")
    gan.compile(optimizer=keras.optimizers.Adam(1e-4))
    gan.fit(source_ids, keras.ops.one_hot(target_ids, vocabulary_size), batch_size=32)
    ```
    """

    def __init__(
        self, generator, max_length=None, schedule=1.0, seed=None, feedback_gradient=True, **kwargs
    ):
        super().__init__(**kwargs)
        if not isinstance(generator, TransformerGenerator):
            raise ValueError(
                "Expected a TransformerGenerator (it provides encode, init_cache and "
                f"decode_step). Received: generator of type {type(generator).__name__}"
            )
        if max_length is None:
            max_length = generator.max_target_length
        if (
            isinstance(max_length, bool)
            or not isinstance(max_length, int)
            or not 1 <= max_length <= generator.max_target_length
        ):
            raise ValueError(
                f"`max_length` must be an int in [1, max_target_length="
                f"{generator.max_target_length}]. Received: max_length={max_length!r}"
            )
        if not isinstance(feedback_gradient, bool):
            raise ValueError(
                f"`feedback_gradient` must be True or False. Received: {feedback_gradient!r}"
            )
        self.generator = generator
        self.max_length = max_length
        self.feedback_gradient = feedback_gradient
        self.schedule = get_schedule(schedule)
        self.seed = seed
        self.seed_generator = distribute.ReplicaSeedGenerator(seed)
        self.step_counter = self.add_weight(
            name="step_counter",
            shape=(),
            dtype="int64",
            initializer="zeros",
            trainable=False,
            aggregation="only_first_replica",
        )

    @property
    def vocabulary_size(self):
        return self.generator.vocabulary_size

    @property
    def pad_id(self):
        return self.generator.pad_id

    def build(self, input_shape=None):
        self.generator._ensure_built()
        self.built = True

    def inverse_temperature(self):
        """The current beta, `schedule(step_counter)`."""
        return ops.cast(self.schedule(self.step_counter.value), "float32")

    def call(self, source_ids, training=None):
        training = bool(training)
        generator = self.generator
        beta = self.inverse_temperature()
        if training:
            self.step_counter.assign_add(1)

        memory, source_mask = generator.encode(source_ids, training=training)
        batch_size = ops.shape(source_ids)[0]
        # All Gumbel noise in one stateless draw outside the loop: no RNG state changes
        # inside the loop body (simpler under XLA), and one kernel instead of max_length.
        # float32 under any policy, as the scores are: in float16 the uniform's floor rounds to 0.
        noise = gumbel_noise(
            (self.max_length, batch_size, generator.vocabulary_size),
            seed=self.seed_generator,
            dtype="float32",
        )  # (max_length, batch, vocab)
        if self.feedback_gradient:
            return self._free_run(memory, source_mask, source_ids, noise, beta, training)
        # The loop only picks the tokens; its ops carry no gradient, so backpropagation
        # does not go through it (no per-step intermediates are kept either).
        texts = ops.stop_gradient(
            self._free_run(ops.stop_gradient(memory), source_mask, source_ids, noise, beta, training)
        )
        return self._rescore(texts, memory, source_mask, source_ids, noise, beta, training)

    def _pad_one_hot(self, dtype):
        one_hot = ops.one_hot(
            ops.full((1,), self.generator.pad_id, "int32"), self.generator.vocabulary_size
        )
        return ops.cast(one_hot, dtype)  # (1, vocab)

    def _free_run(self, memory, source_mask, source_ids, noise, beta, training):
        """The autoregressive loop: `(batch, max_length, vocab)` straight-through one-hots."""
        generator = self.generator
        batch_size = ops.shape(memory)[0]
        cache = generator.init_cache(memory, source_mask, self.max_length, source_ids=source_ids)
        pad_one_hot = self._pad_one_hot(memory.dtype)
        token = ops.cast(
            ops.one_hot(ops.full((batch_size,), generator.bos_id, "int32"), generator.vocabulary_size),
            memory.dtype,
        )  # (batch, vocab): BOS
        finished = ops.zeros((batch_size,), dtype="bool")

        def sample_step(token, finished, cache, step, step_noise):
            """One position: the sample (PAD for finished rows), the updated flags and cache."""
            logits, cache = generator.decode_step(token, step, cache, training=training)
            scores = beta * (ops.cast(logits, noise.dtype) + step_noise)
            sample = ops.cast(_straight_through_softmax(scores), memory.dtype)  # (batch, vocab), exact one-hots
            sample = ops.where(finished[:, None], pad_one_hot, sample)
            finished = ops.logical_or(finished, ops.argmax(sample, axis=-1) == generator.eos_id)
            return sample, finished, cache

        if keras.backend.backend() in _WHILE_LOOP_BACKENDS:
            texts = self._while_loop(sample_step, token, finished, cache, noise, pad_one_hot)
        else:

            def scan_step(carry, inputs):
                sample, finished, cache = sample_step(*carry, *inputs)
                return (sample, finished, cache), sample

            steps = ops.arange(self.max_length, dtype="int32")
            _, texts = _scan_with_variables(
                scan_step, (token, finished, cache), (steps, noise), generator.non_trainable_variables
            )  # (max_length, batch, vocab)
        return ops.transpose(texts, (1, 0, 2))

    def _while_loop(self, sample_step, token, finished, cache, noise, pad_one_hot):
        """`sample_step` in a while loop that stops once every row is finished; the steps are
        kept in a `TensorArray` (TensorFlow only), whose write and its gradient cost one slot
        (an `ops.where` into a `(max_length, batch, vocab)` tensor costs the whole tensor per
        step, forward and backward: 2.4 s instead of 1.7 s at WebNLG sizes on CPU).
        Returns `(max_length, batch, vocab)`."""
        import tensorflow as tf

        max_length = self.max_length

        def condition(step, token, finished, written, cache):
            return ops.logical_and(step < max_length, ops.logical_not(ops.all(finished)))

        def body(step, token, finished, written, cache):
            sample, finished, cache = sample_step(token, finished, cache, step, ops.take(noise, step, axis=0))
            return step + 1, sample, finished, written.write(step, sample), cache

        written = tf.TensorArray(token.dtype, size=max_length, element_shape=(None, ops.shape(noise)[2]))
        step = ops.convert_to_tensor(0, dtype="int32")
        num_steps, _, _, written, _ = ops.while_loop(
            condition, body, (step, token, finished, written, cache), maximum_iterations=max_length
        )
        # Positions after an early stop (every row finished) were never written (they stack as
        # zeros): PAD.
        unwritten = ops.arange(max_length, dtype="int32") >= num_steps
        return ops.where(unwritten[:, None, None], pad_one_hot[None], written.stack())

    def _rescore(self, texts, memory, source_mask, source_ids, noise, beta, training):
        """Gradients for sampled `texts` from one teacher-forced pass over their own prefix.

        The forward value stays `texts` exactly (`hard + (soft - stop_gradient(soft))`);
        `soft` is the Gumbel-softmax of the logits the parallel decoder gives each
        position, with the noise the loop used. PAD after EOS carries no gradient, as in
        the loop. (A PAD sampled before EOS is masked as a decoder input here but attended
        to in the loop; that changes the gradient estimate of such rows only.)
        """
        generator = self.generator
        ids = ops.cast(ops.argmax(texts, axis=-1), "int32")  # (batch, max_length)
        bos = ops.full((ops.shape(ids)[0], 1), generator.bos_id, "int32")
        prefix = ops.concatenate([bos, ids[:, :-1]], axis=1)
        logits = generator.decode(prefix, memory, source_mask, training=training, source_ids=source_ids)
        scores = beta * (ops.cast(logits, noise.dtype) + ops.transpose(noise, (1, 0, 2)))
        soft = ops.softmax(scores, axis=-1)
        samples = texts + ops.cast(soft - ops.stop_gradient(soft), texts.dtype)
        is_eos = ops.cast(ops.equal(ids, generator.eos_id), "int32")
        finished_before = (ops.cumsum(is_eos, axis=1) - is_eos) > 0  # (batch, max_length)
        return ops.where(finished_before[..., None], self._pad_one_hot(texts.dtype)[None], samples)

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.max_length, self.vocabulary_size)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "generator": keras.saving.serialize_keras_object(self.generator),
                "max_length": self.max_length,
                "schedule": keras.saving.serialize_keras_object(self.schedule),
                "seed": self.seed,
                "feedback_gradient": self.feedback_gradient,
            }
        )
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        config["generator"] = keras.saving.deserialize_keras_object(
            config["generator"], custom_objects=custom_objects
        )
        config["schedule"] = get_schedule(config["schedule"])
        return cls(**config)
