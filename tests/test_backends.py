"""A `.keras` file saved on one Keras backend loads on the others with the same outputs.

The test saves on the backend of this pytest process and loads each other installed backend
in a fresh process (a Python process has one Keras backend). Run with KERAS_BACKEND=jax or
torch, it checks those directions too.
"""

import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest

import onestep_gan
from onestep_gan.gradients import to_numpy
from tests.conftest import REPO_ROOT
from tests.test_one_step_gan import batch, make_conditional_discriminator, make_generator

BACKEND_MODULES = {"tensorflow": "tensorflow", "jax": "jax", "torch": "torch"}

LOAD_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import keras
    import onestep_gan
    path, conditions_path, real_path = sys.argv[1:4]
    conditions, real = np.load(conditions_path), np.load(real_path)
    gan = keras.saving.load_model(path, safe_mode=True)
    result = {
        "backend": keras.backend.backend(),
        "samples": keras.ops.convert_to_numpy(gan.generator(conditions)).tolist(),
        "scores": keras.ops.convert_to_numpy(gan.discriminator([conditions, real])).tolist(),
        "optimizer": [np.asarray(v.numpy()).tolist() for v in gan.optimizer.variables],
        "ratio": gan.optimizer.generator_learning_rate_ratio,
    }
    history = gan.fit(conditions, real, batch_size=4, epochs=1, verbose=0)  # keeps training
    result["loss_finite"] = bool(np.all(np.isfinite(history.history["loss"])))
    print("RESULT" + json.dumps(result))
    """
)


def other_backends():
    return [
        backend for backend, module in BACKEND_MODULES.items()
        if backend != keras.backend.backend() and importlib.util.find_spec(module) is not None
    ]


@pytest.mark.parametrize("target", sorted(BACKEND_MODULES))
def test_keras_file_loads_on_another_backend_with_the_same_outputs(target, tmp_path):
    if target == keras.backend.backend():
        pytest.skip("same backend: covered by the round-trip tests of test_one_step_gan.py")
    if target not in other_backends():
        pytest.skip(f"{target} is not installed")
    conditions, real = batch()
    gan = onestep_gan.OneStepGAN(make_generator(), make_conditional_discriminator(), lam=0.5)
    # jit_compile=False: on JAX "auto" resolves to True and Keras saves the resolved value, so
    # the PyTorch process would torch.compile the train step (about 2 min on 2 CPU cores).
    gan.compile(
        optimizer=onestep_gan.GANOptimizer(keras.optimizers.Adam(1e-2), generator_learning_rate_ratio=0.5),
        jit_compile=False,
    )
    gan.fit(conditions, real, batch_size=4, epochs=1, verbose=0)
    path = tmp_path / "gan.keras"
    gan.save(path)
    np.save(tmp_path / "conditions.npy", conditions)
    np.save(tmp_path / "real.npy", real)

    completed = subprocess.run(
        [sys.executable, "-c", LOAD_SCRIPT, str(path), str(tmp_path / "conditions.npy"), str(tmp_path / "real.npy")],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "KERAS_BACKEND": target, "PYTHONPATH": str(REPO_ROOT)},
    )
    lines = [line for line in completed.stdout.splitlines() if line.startswith("RESULT")]
    assert lines, f"loading on {target} failed:\n{completed.stdout[-3000:]}\n{completed.stderr[-3000:]}"
    result = json.loads(lines[-1][len("RESULT"):])
    assert result["backend"] == target
    # Same weights; the backends' kernels may differ in the last bits.
    np.testing.assert_allclose(result["samples"], to_numpy(gan.generator(conditions)), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(result["scores"], to_numpy(gan.discriminator([conditions, real])), rtol=1e-6, atol=1e-6)
    assert len(result["optimizer"]) == len(gan.optimizer.variables)
    for loaded, variable in zip(result["optimizer"], gan.optimizer.variables):
        np.testing.assert_array_equal(np.asarray(loaded), np.asarray(variable.numpy()))
    assert result["ratio"] == 0.5
    assert result["loss_finite"]


@pytest.mark.parametrize("keras_first", [True, False])
def test_import_onestep_gan_is_enough_to_load_a_saved_gan(keras_first, tmp_path):
    """`import onestep_gan` registers the engine's classes whether Keras is imported before or
    after it (the package itself imports Keras lazily)."""
    conditions, real = batch()
    gan = onestep_gan.OneStepGAN(make_generator(), make_conditional_discriminator())
    gan.compile(optimizer="adam")
    gan.fit(conditions, real, batch_size=4, epochs=1, verbose=0)
    gan.save(tmp_path / "gan.keras")
    imports = "import keras\nimport onestep_gan\n" if keras_first else "import onestep_gan\nimport keras\n"
    script = imports + f"print(type(keras.saving.load_model({str(tmp_path / 'gan.keras')!r})).__name__)\n"
    completed = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    assert completed.stdout.strip().splitlines()[-1:] == ["OneStepGAN"], completed.stderr[-2000:]


def test_a_value_that_does_not_depend_on_the_variables_or_inputs_has_no_gradient():
    """On every backend: None (JAX: zeros) for a variable or input the value does not reach, where
    PyTorch raised "element 0 of tensors does not require grad"."""
    from keras import ops

    from onestep_gan import gradients

    variable = keras.Variable(np.ones((2,), "float32"))
    _, (grad,) = gradients.value_and_gradients(lambda: ops.convert_to_tensor(3.0), [variable])
    assert grad is None or not np.any(to_numpy(grad))
    used, unused = ops.ones((2, 3)), ops.ones((2, 2))
    grads = gradients.input_gradients(lambda leaves: ops.sum(ops.square(leaves[0])), [used, unused])
    np.testing.assert_allclose(to_numpy(grads[0]), 2 * np.ones((2, 3)))
    assert grads[1] is None or not np.any(to_numpy(grads[1]))


def test_the_gradient_penalty_skips_a_sample_part_the_critic_does_not_read():
    """A WGAN-GP critic of (x, extra) samples that reads x only: the penalty is x's, where TensorFlow
    and PyTorch failed on the unused part's missing gradient."""
    from keras import ops

    class FirstPartCritic(keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = keras.layers.Dense(1)

        def call(self, sample):
            return self.dense(sample[0])

    critic = FirstPartCritic()
    real = (ops.ones((4, 2)), ops.ones((4, 3)))
    critic(real)
    critic.dense.kernel.assign(np.array([[3.0], [4.0]], "float32"))  # ||w|| = 5
    generator = keras.Sequential([keras.Input((2,)), keras.layers.Dense(2)])
    gan = onestep_gan.OneStepGAN(generator, critic, loss="wasserstein", latent_dim=2, gradient_penalty_weight=1.0)
    fake = (ops.zeros((4, 2)), ops.zeros((4, 3)))
    assert float(gan.gradient_penalty(None, real, fake)) == pytest.approx(16.0, rel=1e-5)  # (5 - 1)^2
