"""The text GAN's generator on the other Keras backends gives what it gives on TensorFlow.

A `TransformerGenerator` (with placeholder copying) is saved on TensorFlow and loaded in a fresh
process per other installed backend (a Python process has one Keras backend), which decodes
(compiled greedy and beam search, the beam candidates' scores) and samples (the straight-through
Gumbel `TextSampler`, with the Gumbel noise fixed from a file: each backend draws its own random
numbers) and differentiates the sample. TensorFlow's while loops and the JAX scan must agree:
the same ids and one-hots, the same gradients up to float rounding.
"""

import importlib.util
import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest

from onestep_gan.rdf2text import sampling
from onestep_gan.rdf2text.transformer import TransformerGenerator
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow", reason="compares the other backends with TensorFlow's results"
)

VOCABULARY_SIZE = 13
MAX_LENGTH = 7
SOURCE = np.array([[7, 4, 8, 5, 0], [9, 6, 10, 0, 0], [11, 12, 4, 0, 0], [5, 9, 0, 0, 0]], dtype="int32")

# Run in the child process and, with the same code, here: everything the backends must agree on.
OUTPUTS = textwrap.dedent(
    """
    import keras
    import numpy as np
    from keras import ops

    from onestep_gan.gradients import value_and_gradients
    from onestep_gan.rdf2text import sampling
    from onestep_gan.rdf2text.inference import make_generate_function


    def outputs(generator, source, noise, score_weights):
        sampling.gumbel_noise = lambda shape, seed=None, dtype="float32": ops.convert_to_tensor(noise, dtype)
        result = {}
        for method in ("greedy", "beam"):
            result[method] = make_generate_function(generator, method=method, beam_width=3)(source)
        result["candidates"], result["candidate_scores"] = make_generate_function(
            generator, method="beam", beam_width=3, return_candidates=True
        )(source)
        sampler = sampling.TextSampler(generator, seed=0)

        def loss():
            texts = sampler(source, training=True)
            return ops.sum(texts * ops.convert_to_tensor(score_weights)), texts

        (_, result["texts"]), gradients = value_and_gradients(loss, generator.trainable_variables, has_aux=True)
        result.update({f"gradient_{i}": ops.convert_to_tensor(g) for i, g in enumerate(gradients)})
        return {name: keras.ops.convert_to_numpy(value) for name, value in result.items()}
    """
)

CHILD = OUTPUTS + textwrap.dedent(
    """
    import sys
    model_path, inputs_path, outputs_path = sys.argv[1:4]
    inputs = np.load(inputs_path)
    generator = keras.saving.load_model(model_path, safe_mode=True)
    np.savez(outputs_path, backend=keras.backend.backend(),
             **outputs(generator, inputs["source"], inputs["noise"], inputs["score_weights"]))
    """
)


def _generator():
    keras.utils.set_random_seed(8)
    generator = TransformerGenerator(
        VOCABULARY_SIZE, max_source_length=8, max_target_length=MAX_LENGTH, model_dim=16, num_heads=2,
        feedforward_dim=32, num_encoder_layers=1, num_decoder_layers=2, dropout=0.0, placeholder_ids=(4, 5, 6),
    )
    generator._ensure_built()
    bias = np.zeros(VOCABULARY_SIZE, "float32")
    bias[generator.eos_id] = 1.5  # texts of several lengths: the early-stop paths are compared
    generator.output_bias.assign(bias)
    return generator


@pytest.mark.parametrize("target", ["jax", "torch"])
def test_a_generator_decodes_and_samples_on_another_backend_as_on_tensorflow(target, tmp_path, monkeypatch):
    if importlib.util.find_spec(target) is None:
        pytest.skip(f"{target} is not installed")
    generator = _generator()
    rng = np.random.default_rng(0)
    noise = -np.log(-np.log(rng.uniform(1e-20, 1.0, (MAX_LENGTH, len(SOURCE), VOCABULARY_SIZE))))
    inputs = {"source": SOURCE, "noise": noise.astype("float32"),
              "score_weights": rng.normal(size=(len(SOURCE), MAX_LENGTH, VOCABULARY_SIZE)).astype("float32")}
    generator.save(tmp_path / "generator.keras")
    np.savez(tmp_path / "inputs.npz", **inputs)

    namespace = {}
    exec(OUTPUTS, namespace)  # noqa: S102 - the child's code, run on this backend
    monkeypatch.setattr(sampling, "gumbel_noise", sampling.gumbel_noise)  # restored after the test
    expected = namespace["outputs"](generator, **{
        "source": inputs["source"], "noise": inputs["noise"], "score_weights": inputs["score_weights"]})

    completed = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path / "generator.keras"), str(tmp_path / "inputs.npz"),
         str(tmp_path / "outputs.npz")],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600,
        env={**os.environ, "KERAS_BACKEND": target, "PYTHONPATH": str(REPO_ROOT)},
    )
    assert completed.returncode == 0, f"{target} failed:\n{completed.stdout[-3000:]}\n{completed.stderr[-3000:]}"
    received = np.load(tmp_path / "outputs.npz")
    assert str(received["backend"]) == target
    ids = expected["texts"].argmax(axis=-1)
    assert len({int(np.flatnonzero(row == generator.eos_id)[0]) for row in ids if generator.eos_id in row}) >= 2
    for name in ("greedy", "beam", "candidates", "texts"):
        np.testing.assert_array_equal(received[name], expected[name], err_msg=name)
    np.testing.assert_allclose(received["candidate_scores"], expected["candidate_scores"], rtol=1e-5)
    for index, variable in enumerate(generator.trainable_variables):
        # Float32 sums in another order: an absolute tolerance relative to the gradient's scale
        # (entries near 0 of an O(1) gradient differ by ~1e-6 across backends).
        expected_gradient = expected[f"gradient_{index}"]
        np.testing.assert_allclose(
            received[f"gradient_{index}"], expected_gradient, rtol=1e-4,
            atol=1e-5 * max(1.0, float(np.abs(expected_gradient).max())), err_msg=variable.path,
        )
