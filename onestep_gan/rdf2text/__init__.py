"""RDF-to-text generation on WebNLG: data, models, decoding and evaluation.

Importing the package registers the serialisable models (`TransformerGenerator`,
`TextSampler`, `TextDiscriminator`), so `keras.saving.load_model` finds them. The
data, training and evaluation modules are imported on use.
"""

from onestep_gan.rdf2text.discriminator import TextDiscriminator
from onestep_gan.rdf2text.sampling import TextSampler
from onestep_gan.rdf2text.transformer import TransformerGenerator

__all__ = ["TextDiscriminator", "TextSampler", "TransformerGenerator"]
