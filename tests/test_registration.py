"""Importing any module of the package first works: the registration hook that runs when Keras
is imported does not trip over the half-initialised module that imported Keras."""

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT


def assert_prints_all_true(script):
    """Runs `script` in a fresh interpreter (Keras not yet imported); its last line must be three Trues."""
    completed = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT), "KERAS_BACKEND": "tensorflow"},
    )
    assert completed.stdout.strip().splitlines()[-1:] == ["[True, True, True]"], completed.stderr[-2000:]


@pytest.mark.parametrize("first", ["layers", "backbone", "transformer"])
def test_any_module_imported_first_and_every_model_registers(first):
    script = (
        f"import onestep_gan.rdf2text.{first}\n"
        "import keras, onestep_gan.rdf2text as text\n"
        "text.register_models()\n"
        "names = ('TransformerGenerator', 'TextSampler', 'TextDiscriminator')\n"
        "print([keras.saving.get_registered_object('onestep_gan>' + name) is getattr(text, name) for name in names])\n"
    )
    assert_prints_all_true(script)


@pytest.mark.parametrize("first", ["GANOptimizer", "GANModel", "ReplicaSeedGenerator", "OneStepGAN", "losses"])
def test_the_engine_registers_whichever_export_imports_keras(first):
    """`import onestep_gan`, then any export touched first, then `keras.saving.load_model` finds every
    engine class without a call to `register()`: the modules the half-initialised one kept from
    importing are imported once it is done."""
    script = (
        "import onestep_gan\n"
        f"onestep_gan.{first}\n"
        "import keras\n"
        "names = ('OneStepGAN', 'AlternatingGAN', 'GANOptimizer')\n"
        "print([keras.saving.get_registered_object('onestep_gan>' + name) is not None for name in names])\n"
    )
    assert_prints_all_true(script)
