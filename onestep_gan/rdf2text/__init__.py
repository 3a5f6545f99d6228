"""RDF-to-text generation on WebNLG with a Transformer generator and a text GAN stage.

Data flows one way through the modules:

    webnlg (corpus) -> preprocessor (entries <-> ids) -> datasets (tf.data)
    -> layers, backbone, transformer (G), discriminator (D) -> decoding, inference, sampling
    -> mle, adversarial (the jobs; config, runs) -> cli

Importing the package registers the serialisable models (`TransformerGenerator`,
`TextSampler`, `TextDiscriminator`), so `keras.saving.load_model` finds them; the engine
package `onestep_gan` does not import it.
"""

from onestep_gan.rdf2text.discriminator import TextDiscriminator
from onestep_gan.rdf2text.sampling import TextSampler
from onestep_gan.rdf2text.transformer import TransformerGenerator

__all__ = ["TextDiscriminator", "TextSampler", "TransformerGenerator"]
