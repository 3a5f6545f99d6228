"""onestep_gan: GANs in Keras trained by plain `model.fit` with one loss.

    L = L_D(D(real), D(sg(G))) + lam * [L_G(D(G)) - L_G(D(sg(G)))]

The engine does not import its application: `import onestep_gan.rdf2text` for the WebNLG
RDF-to-text models (it registers them for `keras.saving.load_model`).
"""

import importlib

from onestep_gan._registration import register_when_keras_loads

__version__ = "0.1.0"

_EXPORTS = {
    "AlternatingGAN": "onestep_gan.alternating_gan",
    "GANModel": "onestep_gan.gan_model",
    "GANOptimizer": "onestep_gan.optimizers",
    "OneStepGAN": "onestep_gan.one_step_gan",
    "ReplicaSeedGenerator": "onestep_gan.distribute",
}
__all__ = sorted([*_EXPORTS, "losses"])


def __getattr__(name):
    # Lazy: `python -m onestep_gan --help` should not import Keras and TensorFlow.
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    if name == "losses":
        return importlib.import_module("onestep_gan.losses")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def register():
    """Imports the engine modules, which registers their classes for `keras.saving.load_model`."""
    for module in sorted({*_EXPORTS.values(), "onestep_gan.losses"}):
        importlib.import_module(module)


# `import onestep_gan` then `keras.saving.load_model(...)` must find OneStepGAN and friends.
register_when_keras_loads(sorted({*_EXPORTS.values(), "onestep_gan.losses"}))
