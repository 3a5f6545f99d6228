"""Under tf.distribute.MirroredStrategy, fit gives the one-device result, and replicas draw different noise.

Logical devices must be configured before TensorFlow starts, so the check runs in a fresh process.
"""

import json
import subprocess
import sys
import textwrap

import os

import keras
import pytest

from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="tf.distribute (MirroredStrategy) is TensorFlow-only; the TensorFlow test run covers it",
)

SCRIPT = textwrap.dedent(
    """
    import json, os
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    import numpy as np
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    import keras
    import onestep_gan
    from tests.test_one_step_gan import make_generator, make_conditional_discriminator
    from tests.test_one_step_gan import make_unconditional_discriminator

    rng = np.random.default_rng(0)
    conditions = rng.normal(size=(32, 3)).astype("float32")
    real = rng.normal(size=(32, 2)).astype("float32")

    def train(strategy, optimizer):
        keras.utils.set_random_seed(0)
        with strategy.scope():
            gan = onestep_gan.OneStepGAN(make_generator(), make_conditional_discriminator(), lam=0.5)
            gan.compile(optimizer=optimizer())
        history = gan.fit(conditions, real, batch_size=16, epochs=2, shuffle=False, verbose=0)
        return [v.numpy() for v in gan.trainable_variables], history.history

    results = {}
    for name, optimizer in [("sgd", lambda: keras.optimizers.SGD(0.1)), ("adam", lambda: keras.optimizers.Adam(1e-2))]:
        single, single_history = train(tf.distribute.OneDeviceStrategy("/cpu:0"), optimizer)
        mirrored, mirrored_history = train(tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]), optimizer)
        results[name] = {
            "max_weight_difference": max(float(np.max(np.abs(a - b))) for a, b in zip(single, mirrored)),
            "loss_single": single_history["loss"],
            "loss_mirrored": mirrored_history["loss"],
            "d_loss_single": single_history["d_loss"],
            "d_loss_mirrored": mirrored_history["d_loss"],
        }

    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        gan = onestep_gan.OneStepGAN(make_generator(4), make_unconditional_discriminator(), latent_dim=4, seed=3)
    noise = strategy.run(tf.function(lambda: gan.sample_noise(5)))
    local = [t.numpy() for t in strategy.experimental_local_results(noise)]
    results["replicas"] = len(local)
    results["noise_difference"] = float(np.max(np.abs(local[0] - local[1])))

    # Replica streams never meet: replica 0's seed after a stride of draws is not replica 1's first.
    with strategy.scope():
        seeds = onestep_gan.ReplicaSeedGenerator(7)
    draw = tf.function(lambda: seeds.next())
    first = [t.numpy().tolist() for t in strategy.experimental_local_results(strategy.run(draw))]
    seeds.state.assign([7, onestep_gan.ReplicaSeedGenerator.REPLICA_STRIDE])
    later = [t.numpy().tolist() for t in strategy.experimental_local_results(strategy.run(draw))]
    results["first_seeds"], results["later_seeds"] = first, later

    # The text GAN's MLE term is a per-replica mean like the GAN's own terms (the engine divides the
    # whole loss by the replicas once), though it is computed by a keras.losses.Loss, which divides too.
    from onestep_gan.rdf2text.adversarial import mle_term

    class FakeTransformer:
        pad_id, bos_id = 0, 1
        logits = tf.constant(rng.normal(size=(4, 3, 6)).astype("float32"))

        def __call__(self, inputs, training=None):
            return self.logits

    term = mle_term(FakeTransformer(), weight=2.0)
    labels = tf.constant([[2, 3, 0], [4, 5, 5], [2, 0, 0], [3, 3, 4]])
    single = float(term(None, labels, None))
    per_replica = strategy.run(tf.function(lambda: term(None, labels, None)))
    results["mle_term"] = [single] + [float(t) for t in strategy.experimental_local_results(per_replica)]
    print("RESULT" + json.dumps(results))
    """
)


@pytest.fixture(scope="module")
def mirrored_results():
    completed = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=REPO_ROOT, capture_output=True, text=True, timeout=600,
        env={**os.environ, "KERAS_BACKEND": "tensorflow"},
    )
    lines = [line for line in completed.stdout.splitlines() if line.startswith("RESULT")]
    assert lines, f"check script failed:\n{completed.stdout[-3000:]}\n{completed.stderr[-3000:]}"
    return json.loads(lines[-1][len("RESULT"):])


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_mirrored_fit_matches_one_device(mirrored_results, optimizer):
    result = mirrored_results[optimizer]
    assert result["max_weight_difference"] < 1e-5
    # Loss and metrics are not doubled by the 2 replicas.
    for single, mirrored in zip(result["loss_single"], result["loss_mirrored"]):
        assert mirrored == pytest.approx(single, rel=1e-5)
    for single, mirrored in zip(result["d_loss_single"], result["d_loss_mirrored"]):
        assert mirrored == pytest.approx(single, rel=1e-5)


def test_replicas_draw_different_noise(mirrored_results):
    assert mirrored_results["replicas"] == 2
    assert mirrored_results["noise_difference"] > 0.1


def test_replica_seed_streams_never_meet(mirrored_results):
    """Replica r's seeds are replica 0's stream moved by r strides of the seed, not of the counter (a
    counter offset made replica 0 draw replica 1's noise after 1,000,003 draws); replica 0 draws what a
    plain `SeedGenerator` draws."""
    first, later = mirrored_results["first_seeds"], mirrored_results["later_seeds"]
    assert first[0] == [7, 0] and first[1] != first[0]
    seen = {tuple(seed) for seed in first}
    assert not any(tuple(seed) in seen for seed in later), (first, later)


def test_the_text_gans_mle_term_is_a_per_replica_mean(mirrored_results):
    single, *replicas = mirrored_results["mle_term"]
    assert len(replicas) == 2 and single > 0
    assert replicas == pytest.approx([single, single], rel=1e-6)
