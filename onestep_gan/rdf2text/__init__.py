"""RDF-to-text generation on WebNLG with a Transformer generator and a text GAN stage.

Data flows one way through the modules:

    webnlg (corpus; enriched: its gold mentions) -> preprocessor (entries <-> ids) -> datasets (tf.data)
    -> layers, backbone, transformer (G), discriminator (D) -> decoding, inference, sampling
    -> mle, adversarial (the jobs; config, runs) -> cli

Importing the package registers the serialisable models (`TransformerGenerator`,
`TextSampler`, `TextDiscriminator`), so `keras.saving.load_model` finds them; the engine
package `onestep_gan` does not import it. The models themselves load lazily: if Keras is not
imported yet, they are registered right after Keras is, so `onestep-gan --help` and the
TensorFlow-free modules (webnlg, config) never import TensorFlow.
"""

import importlib

from onestep_gan._registration import register_when_keras_loads

_MODELS = {
    "TextDiscriminator": "onestep_gan.rdf2text.discriminator",
    "TextSampler": "onestep_gan.rdf2text.sampling",
    "TransformerGenerator": "onestep_gan.rdf2text.transformer",
}
__all__ = sorted(_MODELS)


def register_models():
    """Imports (and so registers with Keras) the serialisable text models."""
    for module in _MODELS.values():
        importlib.import_module(module)


def __getattr__(name):
    # The models import Keras (and TensorFlow); they load on first use, so that the CLI's
    # `--help` and the TensorFlow-free modules (webnlg, config) start fast.
    if name in _MODELS:
        return getattr(importlib.import_module(_MODELS[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


register_when_keras_loads(sorted(set(_MODELS.values())))
