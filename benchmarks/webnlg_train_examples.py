"""The MLE job's train examples for the training-speed benchmarks (a module they import, not a benchmark).

All WebNLG 2017 train entries with a text (or the first `max_entries`), encoded as the MLE job encodes
them, without the enriched corpus's mentions: the vocabulary and placeholders of `config`.
"""

from onestep_gan.rdf2text import webnlg
from onestep_gan.rdf2text.preprocessor import TextPreprocessor


def encode_train_split(config, data_dir=None, max_entries=None):
    """`(preprocessor, examples)`: a preprocessor built from the train split and its encoded examples."""
    entries = [entry for entry in webnlg.load_webnlg("train", data_dir) if entry.texts][:max_entries]
    preprocessor = TextPreprocessor.build(
        entries, config.max_source_length, config.max_target_length, min_count=config.min_token_count,
        predicate_placeholders=config.predicate_placeholders,
    )
    return preprocessor, preprocessor.encode_entries(entries, for_training=True)
