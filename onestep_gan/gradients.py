"""Gradients on every Keras backend: of a function with respect to variables or to inputs.

Keras has no backend-neutral `GradientTape`; the engine needs two kinds of gradient outside the
trainer's own backward pass: input gradients inside the loss (the WGAN-GP penalty, which is
differentiated again by the trainer) and weight gradients for a two-pass train step
(`AlternatingGAN`) and for tests. Here they are written once per backend:

- TensorFlow: `tf.GradientTape`;
- PyTorch: `torch.autograd.grad` (`create_graph=True` where the result is differentiated again);
- JAX: `jax.value_and_grad` of the function run in a `keras.StatelessScope` that maps the
  variables to traced values. Variable updates made inside (seeds of random layers, BatchNorm
  statistics, metrics) are returned from the traced function and assigned afterwards, so they
  land where they would on the other backends (in the enclosing `StatelessScope` under `fit`).

Gradients that do not reach a variable are `None` on TensorFlow and PyTorch; JAX has no such
notion and returns zeros.
"""

import contextlib

import keras
from keras import tree


class _ForwardingScope(keras.StatelessScope):
    """A `StatelessScope` that reads unmapped variables from the enclosing scope (if any) and
    remembers which variables were assigned."""

    def __init__(self, state_mapping, collect_losses=False):
        from keras.src.backend.common.stateless_scope import get_stateless_scope

        self.parent = get_stateless_scope()
        super().__init__(state_mapping=state_mapping, collect_losses=collect_losses)
        self.updated = {}

    def add_update(self, update):
        super().add_update(update)
        self.updated[id(update[0])] = update[0]

    def get_current_value(self, variable):
        value = super().get_current_value(variable)
        if value is None and self.parent is not None:
            value = self.parent.get_current_value(variable)
        return value


def forwarding_scope(state_mapping):
    """A `keras.StatelessScope` over `state_mapping` (`[(variable, value), ...]`) in which the
    unmapped variables read their value from the enclosing stateless scope, if any (under JAX's
    `fit`, the traced weights). `scope.get_current_value(variable)` gives a mapped variable's
    value after the assignments made inside. Used to carry variables through a loop body."""
    return _ForwardingScope(state_mapping)


@contextlib.contextmanager
def collecting_losses():
    """Makes `add_loss` (activity regularisers) count inside an enclosing `StatelessScope`.

    A `StatelessScope` that does not collect losses drops every `add_loss` made in it, and
    Keras runs `compute_loss` in such a scope on JAX. Within this context the losses are
    collected (`layer.losses` reads them); variable updates go to the enclosing scope.
    Outside a stateless scope (TensorFlow, PyTorch) it does nothing.
    """
    from keras.src.backend.common.stateless_scope import get_stateless_scope

    parent = get_stateless_scope()
    if parent is None or parent.collect_losses:
        yield
        return
    with _ForwardingScope([], collect_losses=True) as scope:
        yield
    for variable in scope.updated.values():
        variable.assign(scope.get_current_value(variable))


def _split_output(output, has_aux):
    return output if has_aux else (output, None)


def value_and_gradients(fn, variables, has_aux=False):
    """Runs `fn()` and returns `(value, gradients)`: the gradients of its scalar value with
    respect to the Keras `variables` (a list): None for a variable the value does not reach (zeros
    on JAX). With `has_aux`, `fn` returns `(value, aux)` and the result is `((value, aux),
    gradients)`; `aux` may hold any tensors."""
    variables = list(variables)
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        with tf.GradientTape() as tape:
            value, aux = _split_output(fn(), has_aux)
        gradients = tape.gradient(value, [variable.value for variable in variables])
    elif backend == "torch":
        import torch

        with torch.enable_grad():
            value, aux = _split_output(fn(), has_aux)
            targets = [variable.value for variable in variables]
            # A frozen net has no variables, and torch refuses an empty list of inputs; a value
            # that reaches no variable has no graph: None for each, as TensorFlow gives.
            gradients = [None] * len(targets)
            if targets and value.requires_grad:
                gradients = list(torch.autograd.grad(value, targets, allow_unused=True, retain_graph=True))
    elif backend == "jax":
        import jax

        def pure(values):
            with _ForwardingScope(list(zip(variables, values)), collect_losses=True) as scope:
                value, aux = _split_output(fn(), has_aux)
            mapped = {id(variable) for variable in variables}
            updated = [v for key, v in scope.updated.items() if key not in mapped]
            updates = [scope.get_current_value(v) for v in updated]
            return value, (aux, updates, updated)

        values = [variable.value for variable in variables]

        # `updated` holds Variables, which are not JAX types: passed out through a closure.
        holder = {}

        def traced(values):
            value, (aux, updates, updated) = pure(values)
            holder["updated"] = updated
            return value, (aux, updates)

        (value, (aux, updates)), gradients = jax.value_and_grad(traced, has_aux=True)(values)
        for variable, update in zip(holder["updated"], updates):
            variable.assign(update)
        gradients = list(gradients)
    else:
        raise NotImplementedError(f"No gradient support for the {backend!r} backend.")
    return ((value, aux) if has_aux else value), gradients


def input_gradients(fn, inputs, create_graph=True):
    """The gradients of the scalar `fn(inputs)` with respect to `inputs` (a list of float
    tensors), differentiable again (for a penalty in a loss) when `create_graph`: None for an
    input the value does not reach (zeros on JAX).

    On JAX the function may touch Keras variables (a model call): their updates are kept, as
    for `value_and_gradients`.
    """
    inputs = list(inputs)
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        with tf.GradientTape() as tape:
            tape.watch(inputs)
            value = fn(inputs)
        return tape.gradient(value, inputs)
    if backend == "torch":
        import torch

        with torch.enable_grad():
            inputs = [
                leaf if leaf.requires_grad else leaf.detach().requires_grad_(True) for leaf in inputs
            ]
            value = fn(inputs)
            return list(
                torch.autograd.grad(value, inputs, create_graph=create_graph, allow_unused=True)
            )
    if backend == "jax":
        import jax

        holder = {}

        def traced(inputs):
            with _ForwardingScope([], collect_losses=True) as scope:
                value = fn(inputs)
            holder["updated"] = list(scope.updated.values())
            return value, [scope.get_current_value(v) for v in holder["updated"]]

        gradients, updates = jax.grad(traced, has_aux=True)(inputs)
        for variable, update in zip(holder["updated"], updates):
            variable.assign(update)
        return list(gradients)
    raise NotImplementedError(f"No gradient support for the {backend!r} backend.")


def jax_depends_on(fn, variables):
    """JAX: whether any floating output of `fn()` has a gradient path to the `variables`.

    The function is linearised (`jax.linearize`) and the linear map's jaxpr searched for a
    path from its inputs to its outputs. The other backends need no such test: a gradient
    without a path is `None` there. Variable updates and losses of `fn` are discarded.
    """
    import jax

    variables = list(variables)

    def pure(values):
        with _ForwardingScope(list(zip(variables, values)), collect_losses=True):
            outputs = tree.flatten(fn())
        return [
            output for output in outputs
            if "float" in keras.backend.standardize_dtype(output.dtype)
        ]

    values = [variable.value for variable in variables]
    _, linear = jax.linearize(pure, values)
    jaxpr = jax.make_jaxpr(linear)(values).jaxpr

    def is_literal(var):
        return type(var).__name__ == "Literal"

    live = set(jaxpr.invars)
    for equation in jaxpr.eqns:
        if any(not is_literal(var) and var in live for var in equation.invars):
            live.update(equation.outvars)
    return any(not is_literal(var) and var in live for var in jaxpr.outvars)


def to_numpy(structure):
    """Tensors (of any backend, requiring gradients or not) as NumPy arrays; None stays None."""
    return tree.map_structure(
        lambda t: None if t is None else keras.ops.convert_to_numpy(t), structure
    )
