"""A shrunken adversarial stage in its own process, for tests/test_resume.py; it can kill itself.

    python tests/resume_adversarial_child.py MLE_RUN_DIR RUN_DIR DATA_DIR [KILL]

KILL as in tests/resume_child.py (`generator-save:N` for generator.keras).
"""

import os
import sys
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from onestep_gan.rdf2text import adversarial  # noqa: E402
from onestep_gan.rdf2text.config import AdversarialConfig  # noqa: E402
from tests.resume_child import install_kill  # noqa: E402


def config():
    """Batch 2 of texts up to 15 tokens, 2 pretraining steps, 3 epochs of 2 fine-tuning steps."""
    return AdversarialConfig.quick(
        batch_size=2, max_length=16, pretrain_steps=2, held_out_batches=1, adversarial_steps=6,
        steps_per_epoch=2,
    )


if __name__ == "__main__":
    mle_run_dir, run_dir, data_dir = sys.argv[1:4]
    if len(sys.argv) > 4:
        install_kill(sys.argv[4])
    warnings.simplefilter("ignore", UserWarning)
    adversarial.train_adversarial(config(), mle_run_dir, run_dir, data_dir)
