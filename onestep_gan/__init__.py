"""onestep_gan: GANs in Keras trained by plain `model.fit` with one loss.

    L = L_D(D(real), D(sg(G))) + lam * [L_G(D(G)) - L_G(D(sg(G)))]

The engine does not import its application: `import onestep_gan.rdf2text` for the WebNLG
RDF-to-text models (it registers them for `keras.saving.load_model`).
"""

from onestep_gan import losses
from onestep_gan.alternating_gan import AlternatingGAN
from onestep_gan.distribute import ReplicaSeedGenerator
from onestep_gan.gan_model import GANModel
from onestep_gan.one_step_gan import OneStepGAN
from onestep_gan.optimizers import GANOptimizer

__version__ = "0.1.0"

__all__ = [
    "AlternatingGAN",
    "GANModel",
    "GANOptimizer",
    "OneStepGAN",
    "ReplicaSeedGenerator",
    "losses",
]
