"""
Title: Adversarial fine-tuning for RDF-to-text with one model and one loss
Description: Start from an MLE WebNLG generator, pretrain a (triples, text) discriminator,
    then fine-tune generator and discriminator together with `OneStepGAN.fit`.
Expected run time on 2 CPU cores: `--quick` about 3 minutes (it trains its own tiny MLE
    model first); the defaults about 25 minutes after the MLE run (120 D pretraining steps,
    150 adversarial steps of ~5 s each at batch 32 and 48 tokens, then beam search over dev
    and test). On a GPU raise `--adversarial-steps`.

## What happens

1. The MLE run (`examples/webnlg.py`) gives a `TransformerGenerator` and its vocabulary.
2. `TextSampler` turns it into a differentiable text generator: free-running decoding where
   every token is a straight-through Gumbel-softmax one-hot (exact one-hot forward, soft
   gradient backward), with an annealed inverse temperature.
3. `DiscriminatorPretrainer.fit` trains a `TextDiscriminator` on real pairs against samples
   and against mismatched real texts (another tripleset's text), so it judges faithfulness.
4. `OneStepGAN(sampler, discriminator, generator_extra_loss=mle_term(...)).fit(...)`:
   the single loss `L_D + lam * [L_G - sg(L_G)] + MLE` trains both nets in one step.
5. The fine-tuned generator decodes dev and test; `comparison.md` puts MLE and MLE+GAN
   side by side (BLEU, chrF++, entity coverage, repeated 3-grams, D accuracy, wall time).

    python examples/webnlg.py --run-dir runs/webnlg_mle                     # the MLE stage
    python examples/webnlg_adversarial.py --mle-run-dir runs/webnlg_mle --run-dir runs/webnlg_gan
    python examples/webnlg_adversarial.py --quick                            # smoke run
"""

import argparse
import logging
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from onestep_gan.rdf2text import adversarial, training  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description="Adversarial fine-tuning of a WebNLG generator.")
    parser.add_argument("--mle-run-dir", help="finished examples/webnlg.py run (default: train one; --quick only)")
    parser.add_argument("--run-dir", default="runs/webnlg_gan")
    parser.add_argument("--data-dir", default=None, help="WebNLG 2017 folder (default: $WEBNLG_DIR)")
    parser.add_argument("--quick", action="store_true", help="tiny data, models and step counts")
    parser.add_argument("--pretrain-steps", type=int)
    parser.add_argument("--adversarial-steps", type=int)
    parser.add_argument("--lam", type=float)
    parser.add_argument("--generator-learning-rate-ratio", type=float)
    parser.add_argument("--mle-weight", type=float)
    parser.add_argument("--discriminator-learning-rate", type=float)
    parser.add_argument("--inverse-temperature-end", type=float)
    parser.add_argument("--seed", type=int)
    parser.add_argument(
        "--no-feedback-gradient",
        dest="feedback_gradient",
        action="store_false",
        default=None,
        help="cheaper sampler gradient: one parallel pass over the sampled prefix (TextSampler)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    config = adversarial.AdversarialConfig.quick() if args.quick else adversarial.AdversarialConfig()
    overridable = (
        "pretrain_steps", "adversarial_steps", "lam", "generator_learning_rate_ratio", "mle_weight",
        "discriminator_learning_rate", "inverse_temperature_end", "seed", "feedback_gradient",
    )
    for name in overridable:
        if getattr(args, name) is not None:
            setattr(config, name, getattr(args, name))
    config.__post_init__()

    mle_run_dir = args.mle_run_dir
    if mle_run_dir is None:
        if not args.quick:
            parser.error("--mle-run-dir is required without --quick (run examples/webnlg.py first)")
        mle_run_dir = os.path.join(args.run_dir, "mle")
        training.train_and_evaluate(training.RDF2TextConfig.quick(), args.data_dir, mle_run_dir)
    adversarial.train_adversarial(config, mle_run_dir, args.run_dir, args.data_dir)


if __name__ == "__main__":
    main()
