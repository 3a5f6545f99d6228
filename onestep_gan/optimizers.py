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
"""

import keras


@keras.saving.register_keras_serializable(package="onestep_gan")
class GANOptimizer(keras.optimizers.Optimizer):
    """Applies one gradient to G and D with separate optimizers.

    Args:
        discriminator_optimizer: optimizer (instance or identifier) for D's variables.
        generator_optimizer: optimizer for G's variables. Defaults to a copy of
            `discriminator_optimizer` whose learning rate is multiplied by
            `generator_learning_rate_ratio`.
        generator_learning_rate_ratio: G's learning rate divided by D's, used
            only when `generator_optimizer` is not given. TTUR typically uses
            a slower G (e.g. 0.25). Must be positive.

    `OneStepGAN.compile` tells the optimizer which variables belong to G
    (`assign_generator_variables`); every other variable is D's. The
    `learning_rate` property reads and sets D's learning rate; setting it
    keeps the G:D ratio.

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
        generator_learning_rate_ratio=1.0,
        name=None,
        **kwargs,
    ):
        if kwargs:
            raise ValueError(
                "GANOptimizer takes its options from its inner optimizers. "
                f"Received unexpected arguments: {sorted(kwargs)}"
            )
        if not generator_learning_rate_ratio > 0:
            raise ValueError(
                "Expected generator_learning_rate_ratio > 0. "
                f"Received: generator_learning_rate_ratio={generator_learning_rate_ratio}"
            )
        discriminator_optimizer = keras.optimizers.get(discriminator_optimizer)
        if generator_optimizer is None:
            config = discriminator_optimizer.get_config()
            learning_rate = config["learning_rate"]
            if not isinstance(learning_rate, (int, float)):
                raise ValueError(
                    "generator_learning_rate_ratio needs a constant learning rate on "
                    "discriminator_optimizer; with a schedule, pass generator_optimizer "
                    f"explicitly. Received: learning_rate={learning_rate!r}"
                )
            config["learning_rate"] = learning_rate * generator_learning_rate_ratio
            config["name"] = config["name"] + "_generator"
            generator_optimizer = discriminator_optimizer.__class__.from_config(config)
        else:
            generator_optimizer = keras.optimizers.get(generator_optimizer)
        super().__init__(learning_rate=0.0, name=name)
        self.discriminator_optimizer = discriminator_optimizer
        self.generator_optimizer = generator_optimizer
        self.generator_learning_rate_ratio = generator_learning_rate_ratio
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

    def apply(self, grads, trainable_variables=None):
        if trainable_variables is None:
            raise ValueError("GANOptimizer.apply needs the trainable_variables.")
        grads, trainable_variables = list(grads), list(trainable_variables)
        (generator_grads, generator_variables), (discriminator_grads, discriminator_variables) = (
            self._split(grads, trainable_variables)
        )
        if generator_variables and all(grad is None for grad in generator_grads):
            raise ValueError(
                "No gradient reaches the generator's trainable weights "
                f"({len(generator_variables)} variables, e.g. {generator_variables[0].path!r}): "
                "the discriminator would train alone. The generator's sample must be "
                "differentiable: argmax ids, a cast to int or a stop_gradient cut the "
                "gradient. For discrete outputs such as text, emit a straight-through "
                "Gumbel-softmax one-hot (exact one-hot forward, soft gradient backward) "
                "and embed it as probs @ embedding_matrix in the discriminator."
            )
        if generator_variables:
            self.generator_optimizer.apply(generator_grads, generator_variables)
        if discriminator_variables:
            self.discriminator_optimizer.apply(discriminator_grads, discriminator_variables)

    def stateless_apply(self, optimizer_variables, grads, trainable_variables):
        raise NotImplementedError(
            "GANOptimizer supports stateful backends (TensorFlow, PyTorch); the JAX "
            "trainer's stateless_apply is not implemented yet."
        )

    @property
    def variables(self):
        return (
            self._variables
            + self.generator_optimizer.variables
            + self.discriminator_optimizer.variables
        )

    @property
    def iterations(self):
        return self.discriminator_optimizer.iterations

    @property
    def learning_rate(self):
        return self.discriminator_optimizer.learning_rate

    @learning_rate.setter
    def learning_rate(self, learning_rate):
        # Called once by the base constructor, before the inner optimizers exist.
        if "discriminator_optimizer" not in self.__dict__:
            return
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
        }

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        for key in ("discriminator_optimizer", "generator_optimizer"):
            config[key] = keras.optimizers.deserialize(config[key], custom_objects=custom_objects)
        return cls(**config)
