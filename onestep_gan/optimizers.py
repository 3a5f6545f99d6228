"""One gradient, two optimizers: a G:D learning-rate ratio that holds for any optimizer.

The one-step loss multiplies G's gradient by `lam`. Under SGD that sets the
D:G learning-rate ratio to 1:lam, but Adam, RMSprop and the other adaptive
optimizers divide each gradient by a running estimate of its own scale, so
`lam` cancels out of the step (measured: Adam, 50 steps, G moved 0.2% more
with lam=1 than with lam=0.1; under SGD 9.7x). To set the ratio under any
optimizer, `GANOptimizer` applies the single gradient of the single loss
with two inner optimizers, one over G's variables and one over D's: the two
time-scale update rule (TTUR, Heusel et al. 2017) with one loss, one backward
pass and plain `compile`/`fit`.

It also refuses to train D alone: if no gradient reaches any of G's trainable
variables (argmax ids, a cast to int, a stop_gradient on the sample), it raises
on the first step instead of letting Keras drop the missing gradients with a
warning.

Why not `keras.optimizers.MultiOptimizer` (Keras 3.15): it refuses to read or
set `learning_rate` (so `LearningRateScheduler` and `ReduceLROnPlateau` fail),
overwrites its inner optimizers' `loss_scale_factor` with its own (None by
default), applies `global_clipnorm` per inner optimizer and has no G:D ratio;
building on it would remove about 30 lines and keep or add those problems.
`GANOptimizer` keeps its duck-typed `optimizers` list, which is all
`SwapEMAWeights` needs.
"""

import numbers

import keras
from keras import ops

from onestep_gan import _registration
from onestep_gan.gan_model import check_number


@keras.saving.register_keras_serializable(package="onestep_gan")
class ScaledSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """A learning-rate schedule times a constant: G's schedule at `ratio` times D's."""

    def __init__(self, schedule, factor):
        if isinstance(schedule, dict):
            schedule = keras.optimizers.schedules.deserialize(schedule)
        self.schedule = schedule
        self.factor = check_number("factor", factor, strictly_positive=True)

    def __call__(self, step):
        return self.schedule(step) * self.factor

    def get_config(self):
        return {"schedule": keras.optimizers.schedules.serialize(self.schedule), "factor": self.factor}


def _constant_learning_rate(optimizer):
    """The optimizer's learning rate as a float, or None if it follows a schedule or a callable."""
    learning_rate = optimizer._learning_rate  # what `get_config` would serialise: read, not serialised
    if isinstance(learning_rate, keras.Variable) or ops.is_tensor(learning_rate):
        return float(ops.convert_to_numpy(learning_rate))
    return float(learning_rate) if isinstance(learning_rate, numbers.Real) else None


def _copy(optimizer, learning_rate_factor, suffix):
    """A fresh copy of `optimizer` (no slots) with its learning rate (or schedule) scaled. A schedule
    or callable is shared, not serialised: any one Keras trains with will do (saving needs it
    serialisable, as for any Keras optimizer)."""
    constant = _constant_learning_rate(optimizer)
    schedule = optimizer._learning_rate
    if constant is not None:
        config = optimizer.get_config()
    else:  # `get_config` would serialise the schedule or callable: the rest of the config only
        optimizer._learning_rate = 0.0
        try:
            config = optimizer.get_config()
        finally:
            optimizer._learning_rate = schedule
    if constant is not None:
        config["learning_rate"] = constant * learning_rate_factor
    elif learning_rate_factor == 1.0:
        config["learning_rate"] = schedule
    elif isinstance(schedule, keras.optimizers.schedules.LearningRateSchedule):
        config["learning_rate"] = ScaledSchedule(schedule, learning_rate_factor)
    else:  # a callable learning rate
        config["learning_rate"] = lambda: schedule() * learning_rate_factor
    config["name"] = config["name"] + suffix
    # Settings a GANOptimizer took over from this optimizer (it wraps the same object again).
    config.update(getattr(optimizer, "_moved_to_gan_optimizer", {}))
    copy = optimizer.__class__.from_config(config)
    # Not in the config: the variables and name patterns excluded from weight decay.
    for attribute in ("_exclude_from_weight_decay", "_exclude_from_weight_decay_pattern"):
        if hasattr(optimizer, attribute):
            setattr(copy, attribute, getattr(optimizer, attribute))
    return copy


def _take_over(optimizer, name):
    """Moves the setting `name` (global_clipnorm, loss_scale_factor) off an inner optimizer and returns
    it; the optimizer remembers it, so that a GANOptimizer wrapping it again (a second `compile` with
    the same optimizer) takes the same value."""
    moved = getattr(optimizer, "_moved_to_gan_optimizer", {})
    value = getattr(optimizer, name)
    if value is None:
        value = moved.get(name)
    if value is not None:
        # Set past Keras' attribute tracking: a plain dict of two settings.
        object.__setattr__(optimizer, "_moved_to_gan_optimizer", {**moved, name: value})
    setattr(optimizer, name, None)
    return value


def no_generator_gradient_error(generator_variables):
    """The error for a generator that no gradient reaches (raised on every backend)."""
    return ValueError(
        "No gradient reaches the generator's trainable weights "
        f"({len(generator_variables)} variables, e.g. {generator_variables[0].path!r}): "
        "the discriminator would train alone. The generator's sample must be "
        "differentiable: argmax ids, a cast to int or a stop_gradient cut the "
        "gradient. For discrete outputs such as text, emit a straight-through "
        "Gumbel-softmax one-hot (exact one-hot forward, soft gradient backward) "
        "and embed it as probs @ embedding_matrix in the discriminator."
    )


def _current(scope, variable):
    value = scope.get_current_value(variable)
    return variable.value if value is None else value


@keras.saving.register_keras_serializable(package="onestep_gan")
class GANOptimizer(keras.optimizers.Optimizer):
    """Applies one gradient to G and D with separate optimizers.

    Args:
        discriminator_optimizer: optimizer (instance or identifier) for D's variables.
        generator_optimizer: optimizer for G's variables. Defaults to a copy of
            `discriminator_optimizer` (same class and options, learning-rate schedule
            included) whose learning rate is multiplied by `generator_learning_rate_ratio`.
        generator_learning_rate_ratio: G's learning rate divided by D's (default 1.0),
            only when `generator_optimizer` is not given. TTUR typically uses a slower G
            (e.g. 0.25). Must be positive. With an explicit `generator_optimizer`, the
            ratio is that of the two given learning rates.
        global_clipnorm: clips the gradient of G and D together to this global norm
            (one norm over both nets, as one optimizer over both would).
        loss_scale_factor: as for any Keras optimizer: the loss is multiplied by it and
            the gradients divided by it before the update.

    Semantics, the same as one optimizer over G's and D's variables together:

    - Per-variable options (`clipnorm`, `clipvalue`, `weight_decay` and its
      `exclude_from_weight_decay` choices, `use_ema`, `gradient_accumulation_steps`)
      belong to the inner optimizers and are copied with them.
    - `global_clipnorm` is one norm over both nets. Given on a plain optimizer
      (`compile(optimizer=Adam(global_clipnorm=1.0))` or
      `GANOptimizer(Adam(global_clipnorm=1.0))`), it moves to the `GANOptimizer`.
      For one norm per net, pass both optimizers explicitly, each with its own
      `global_clipnorm`.
      With `gradient_accumulation_steps` it is refused (it would clip each batch's
      gradient, not the accumulated one); one norm per net works with it.
    - `loss_scale_factor` of the inner optimizers moves to the `GANOptimizer` (G's
      and D's must agree), which scales the loss and unscales the gradient once.
    - `learning_rate` reads D's learning rate; setting it sets D's and G's, keeping
      the G:D ratio, also for an explicit `generator_optimizer`. Keras'
      `LearningRateScheduler` and `ReduceLROnPlateau` set each inner optimizer
      instead (they read `optimizers`); G's rate then follows D's at the ratio from
      the next step (a schedule that ignores the current rate, `min_lr`).
    - `optimizers` lists `[generator_optimizer, discriminator_optimizer]`, which is
      what `keras.callbacks.SwapEMAWeights` reads.
    - `iterations` counts the updates applied, also while G or D is frozen (each inner
      optimizer counts only its own net's): one a training step of `OneStepGAN`,
      `discriminator_steps + 1` of `AlternatingGAN`, which applies D's and G's updates apart.

    `OneStepGAN.compile` tells the optimizer which variables belong to G
    (`assign_generator_variables`); every other variable is D's.

    Example:

    ```python
    gan.compile(optimizer=onestep_gan.GANOptimizer(
        keras.optimizers.Adam(4e-4, beta_1=0.0, beta_2=0.9),
        generator_learning_rate_ratio=0.25))
    ```
    """

    def __init__(
        self,
        discriminator_optimizer,
        generator_optimizer=None,
        generator_learning_rate_ratio=None,
        global_clipnorm=None,
        loss_scale_factor=None,
        name=None,
        **kwargs,
    ):
        if kwargs:
            raise ValueError(
                "GANOptimizer takes global_clipnorm and loss_scale_factor; per-variable options "
                "(clipnorm, clipvalue, weight_decay, use_ema, ...) belong to its inner optimizers. "
                f"Received unexpected arguments: {sorted(kwargs)}"
            )
        discriminator_optimizer = keras.optimizers.get(discriminator_optimizer)
        if generator_optimizer is None:
            ratio = 1.0
            if generator_learning_rate_ratio is not None:
                ratio = check_number(
                    "generator_learning_rate_ratio", generator_learning_rate_ratio, strictly_positive=True
                )
            generator_optimizer = _copy(discriminator_optimizer, ratio, "_generator")
            # A plain optimizer's global norm is over all its variables: both nets.
            inner_clipnorm = _take_over(discriminator_optimizer, "global_clipnorm")
            generator_optimizer.global_clipnorm = None
            if inner_clipnorm:
                if global_clipnorm is not None and global_clipnorm != inner_clipnorm:
                    raise ValueError(
                        "Expected one global_clipnorm. Received: "
                        f"global_clipnorm={global_clipnorm} and a discriminator_optimizer with "
                        f"global_clipnorm={inner_clipnorm}"
                    )
                global_clipnorm = inner_clipnorm
        else:
            if generator_learning_rate_ratio is not None:
                raise ValueError(
                    "Pass either generator_optimizer or generator_learning_rate_ratio, not both "
                    "(the ratio makes G's optimizer as a copy of D's). Received: "
                    f"generator_optimizer={generator_optimizer!r}, "
                    f"generator_learning_rate_ratio={generator_learning_rate_ratio!r}"
                )
            generator_optimizer = keras.optimizers.get(generator_optimizer)
            if global_clipnorm is not None and (
                generator_optimizer.global_clipnorm or discriminator_optimizer.global_clipnorm
            ):
                raise ValueError(
                    "Expected global_clipnorm on the GANOptimizer (one norm over both nets) or "
                    "on the inner optimizers (one norm per net), not both. Received: "
                    f"global_clipnorm={global_clipnorm}, inner global_clipnorm "
                    f"{generator_optimizer.global_clipnorm} (G), "
                    f"{discriminator_optimizer.global_clipnorm} (D)"
                )
            discriminator_rate = _constant_learning_rate(discriminator_optimizer)
            generator_rate = _constant_learning_rate(generator_optimizer)
            ratio = None  # No fixed ratio to keep: a schedule, or D's rate is 0.
            if discriminator_rate and generator_rate is not None:
                ratio = generator_rate / discriminator_rate
        inner_factors = [_take_over(part, "loss_scale_factor") for part in (discriminator_optimizer, generator_optimizer)]
        factors = {factor for factor in (loss_scale_factor, *inner_factors) if factor is not None}
        if len(factors) > 1:
            raise ValueError(
                "Expected one loss_scale_factor for the one loss of G and D. Received: "
                f"loss_scale_factor={loss_scale_factor}, discriminator_optimizer's "
                f"{inner_factors[0]}, generator_optimizer's {inner_factors[1]}"
            )
        accumulation = discriminator_optimizer.gradient_accumulation_steps or generator_optimizer.gradient_accumulation_steps
        if global_clipnorm and accumulation:
            # Keras clips the accumulated gradient when it applies it; the joint norm, taken here
            # before the inner optimizers accumulate, would clip each batch's gradient instead.
            raise ValueError(
                "global_clipnorm (one norm over G and D) cannot be combined with gradient_accumulation_steps: "
                "it would clip each batch's gradient, not the accumulated one. For one norm per net, pass both "
                "optimizers, each with its own global_clipnorm. Received: "
                f"global_clipnorm={global_clipnorm}, gradient_accumulation_steps={accumulation}"
            )
        super().__init__(
            learning_rate=0.0,
            global_clipnorm=global_clipnorm,
            loss_scale_factor=factors.pop() if factors else None,
            name=name,
        )
        self.discriminator_optimizer = discriminator_optimizer
        self.generator_optimizer = generator_optimizer
        self.generator_learning_rate_ratio = ratio
        self._generator_variables = None
    def assign_generator_variables(self, generator_variables):
        """Marks G's variables (a list, or a callable returning it, for models
        built lazily); all other variables are updated as D's."""
        if not callable(generator_variables):
            # A closure keeps Keras' attribute tracking from adopting the variables.
            generator_variables = (lambda variables: lambda: variables)(list(generator_variables))
        self._generator_variables = generator_variables

    def _split(self, values, variables):
        if self._generator_variables is None:
            raise ValueError(
                "GANOptimizer does not know which variables belong to the generator. "
                "Compile it with OneStepGAN.compile(), or call "
                "optimizer.assign_generator_variables(generator.trainable_variables)."
            )
        generator_ids = {id(variable) for variable in self._generator_variables()}
        generator, discriminator = ([], []), ([], [])
        for value, variable in zip(values, variables):
            side = generator if id(variable) in generator_ids else discriminator
            side[0].append(value)
            side[1].append(variable)
        return generator, discriminator

    def build(self, var_list):
        (_, generator_variables), (_, discriminator_variables) = self._split(var_list, var_list)
        self.generator_optimizer.build(generator_variables)
        self.discriminator_optimizer.build(discriminator_variables)
        super().build([])
        # The variables (in their order) that stateless_apply takes values of; in a closure,
        # so that Keras' tracking does not adopt them as the optimizer's own.
        self._built_on_variables = (lambda variables: lambda: variables)(list(var_list))

    @property
    def _built_on(self):
        return self._built_on_variables() if hasattr(self, "_built_on_variables") else []

    def apply(self, grads, trainable_variables=None):
        if trainable_variables is None:
            raise ValueError("GANOptimizer.apply needs the trainable_variables.")
        # NumPy gradients are accepted on every backend (PyTorch's tensors do not mix with them).
        grads = [None if g is None else ops.convert_to_tensor(g) for g in grads]
        trainable_variables = list(trainable_variables)
        (generator_grads, generator_variables), (discriminator_grads, discriminator_variables) = (
            self._split(grads, trainable_variables)
        )
        if generator_variables and all(grad is None for grad in generator_grads):
            raise no_generator_gradient_error(generator_variables)
        grads = generator_grads + discriminator_grads
        # As Keras' own apply: a variable overwritten with its "gradient" (float8 scales and amax
        # history) takes it as its new value, neither unscaled nor in the norm.
        overwritten = [
            getattr(variable, "overwrite_with_gradient", False)
            for variable in generator_variables + discriminator_variables
        ]
        if self.loss_scale_factor is not None:
            grads = [g if g is None or over else g / self.loss_scale_factor for g, over in zip(grads, overwritten)]
        if self.global_clipnorm:
            grads = self._clip_by_joint_norm(grads, overwritten)
        count = len(generator_grads)
        if generator_variables:
            self._follow_discriminator_learning_rate()
            self.generator_optimizer.apply(grads[:count], generator_variables)
        if discriminator_variables:
            self.discriminator_optimizer.apply(grads[count:], discriminator_variables)
        # Its own count of steps: an inner optimizer's stays at 0 while its net is frozen.
        self._iterations.assign_add(1)

    def _follow_discriminator_learning_rate(self):
        """G's rate := D's times the ratio, if a callback set them apart. Keras' `LearningRateScheduler`
        and `ReduceLROnPlateau` see `optimizers` (which `SwapEMAWeights` needs) and set each inner
        optimizer on its own: a schedule that ignores the current rate gives G D's rate, and `min_lr`
        floors each net apart. Within float32 rounding of the ratio (as constructed) G's rate is left
        as it is, so an unchanged rate trains bit for bit as before."""
        ratio = self.generator_learning_rate_ratio
        generator_rate = self.generator_optimizer._learning_rate
        discriminator_rate = self.discriminator_optimizer._learning_rate
        if ratio is None or not (isinstance(generator_rate, keras.Variable)
                                 and isinstance(discriminator_rate, keras.Variable)):
            return  # a schedule, or rates set apart on purpose (no ratio): nothing to follow
        current = generator_rate.value
        wanted = discriminator_rate.value * ops.cast(ratio, discriminator_rate.dtype)
        apart = ops.abs(current - wanted) > 1e-5 * ops.abs(wanted)
        generator_rate.assign(ops.where(apart, wanted, current))

    def _clip_by_joint_norm(self, grads, overwritten):
        present = [g for g, over in zip(grads, overwritten) if g is not None and not over]
        if not present:
            return grads
        norm = ops.sqrt(sum(ops.sum(ops.square(ops.cast(g, "float32"))) for g in present))
        factor = self.global_clipnorm / ops.maximum(norm, self.global_clipnorm)
        return [g if g is None or over else g * ops.cast(factor, g.dtype) for g, over in zip(grads, overwritten)]

    def stateless_apply(self, optimizer_variables, grads, trainable_variables):
        """`apply` without side effects, for the JAX trainer: takes and returns values.

        `trainable_variables` are the values of the variables the optimizer was built on, in
        that order; returns their updated values and those of `variables` (both inner
        optimizers' state).
        """
        if not self.built:
            raise ValueError(
                "To call stateless_apply, GANOptimizer must be built: call "
                "optimizer.build(trainable_variables) (OneStepGAN.compile does it once G and D "
                "are built)."
            )
        built_on = self._built_on
        if len(trainable_variables) != len(built_on) or len(optimizer_variables) != len(self.variables):
            raise ValueError(
                "GANOptimizer.stateless_apply expects the values of the "
                f"{len(built_on)} trainable variables it was built on and of its "
                f"{len(self.variables)} variables. Received {len(trainable_variables)} and "
                f"{len(optimizer_variables)}."
            )
        mapping = list(zip(built_on, trainable_variables)) + list(zip(self.variables, optimizer_variables))
        with keras.StatelessScope(state_mapping=mapping) as scope:
            self.apply(grads, built_on)
        new_trainable = [_current(scope, variable) for variable in built_on]
        new_optimizer = [_current(scope, variable) for variable in self.variables]
        return new_trainable, new_optimizer

    @property
    def variables(self):
        return (
            self._variables
            + self.generator_optimizer.variables
            + self.discriminator_optimizer.variables
        )

    @property
    def optimizers(self):
        """The inner optimizers, `[generator_optimizer, discriminator_optimizer]`."""
        return [self.generator_optimizer, self.discriminator_optimizer]

    def exclude_from_weight_decay(self, var_list=None, var_names=None):
        """Excludes variables from weight decay in both inner optimizers."""
        for optimizer in self.optimizers:
            optimizer.exclude_from_weight_decay(var_list=var_list, var_names=var_names)

    @property
    def learning_rate(self):
        return self.discriminator_optimizer.learning_rate

    @learning_rate.setter
    def learning_rate(self, learning_rate):
        # Called once by the base constructor, before the inner optimizers exist.
        if "discriminator_optimizer" not in self.__dict__:
            return
        if self.generator_learning_rate_ratio is None:
            raise ValueError(
                "Setting GANOptimizer.learning_rate sets D's rate and G's at a fixed G:D ratio, "
                "and this GANOptimizer has none (a learning-rate schedule, or D's rate is 0). "
                "Set discriminator_optimizer.learning_rate and generator_optimizer.learning_rate "
                f"instead. Received: learning_rate={learning_rate!r}"
            )
        self.discriminator_optimizer.learning_rate = learning_rate
        self.generator_optimizer.learning_rate = learning_rate * self.generator_learning_rate_ratio

    def _get_current_learning_rate(self):
        return self.discriminator_optimizer._get_current_learning_rate()

    def finalize_variable_values(self, var_list):
        (_, generator_variables), (_, discriminator_variables) = self._split(var_list, var_list)
        self.generator_optimizer.finalize_variable_values(generator_variables)
        self.discriminator_optimizer.finalize_variable_values(discriminator_variables)

    def get_config(self):
        return {
            "name": self.name,
            "discriminator_optimizer": keras.optimizers.serialize(self.discriminator_optimizer),
            "generator_optimizer": keras.optimizers.serialize(self.generator_optimizer),
            "generator_learning_rate_ratio": self.generator_learning_rate_ratio,
            "global_clipnorm": self.global_clipnorm,
            "loss_scale_factor": self.loss_scale_factor,
        }

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        for key in ("discriminator_optimizer", "generator_optimizer"):
            config[key] = keras.optimizers.deserialize(config[key], custom_objects=custom_objects)
        # Both optimizers are saved; the ratio is restored as saved (not re-derived in float32).
        ratio = config.pop("generator_learning_rate_ratio", None)
        optimizer = cls(**config)
        optimizer.generator_learning_rate_ratio = ratio
        return optimizer


# Last: if Keras was first imported from here, the modules that import this one's names register now.
_registration.import_pending()
