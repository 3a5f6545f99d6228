"""examples/webnlg_decoding_sweep.py: dev sources with their predicate words masked (unseen-like), two
runs' weights mixed, and the rows of a run with held-out categories."""

import contextlib
import io
import warnings

import keras
import numpy as np
import pytest

from onestep_gan.rdf2text import mle, webnlg
from onestep_gan.rdf2text.preprocessor import TextPreprocessor
from onestep_gan.rdf2text.vocabulary import Vocabulary
from tests.conftest import fixture_2017_dir, load_example
from tests.test_mle import fixture_with_an_airport_dev_entry, tiny_config

decoding_sweep = load_example("webnlg_decoding_sweep.py")


def _preprocessor_and_examples():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # a fixture entry without text is skipped
        entries = webnlg.load_webnlg("train", fixture_2017_dir())
    preprocessor = TextPreprocessor.build(entries, 64, 64, predicate_placeholders=True)
    return preprocessor, preprocessor.encode_entries(entries, for_training=False)


def test_masking_replaces_predicate_words_alone_and_is_seeded():
    preprocessor, examples = _preprocessor_and_examples()
    everything = decoding_sweep.mask_predicate_words(examples, preprocessor, 1.0, seed=0)
    last = preprocessor.vocabulary.decode(everything[-1].source_ids, strip_special=False)
    assert last == ["<S>", "ENT_1", "<P>", "PRED_1", "<unk>", "<unk>", "<O>", "ENT_2",
                    "<S>", "ENT_1", "<P>", "PRED_2", "<unk>", "<unk>", "<O>", "ENT_3"]
    assert [example.entity_map for example in everything] == [example.entity_map for example in examples]
    assert decoding_sweep.mask_predicate_words(examples, preprocessor, 0.0, seed=0) == examples
    half = decoding_sweep.mask_predicate_words(examples, preprocessor, 0.5, seed=3)
    assert half == decoding_sweep.mask_predicate_words(examples, preprocessor, 0.5, seed=3)
    for masked, example in zip(half, examples):  # only UNKs are new, only where a predicate word was
        flags = preprocessor.predicate_word_mask(example.source_ids)
        for new, old, flag in zip(masked.source_ids, example.source_ids, flags):
            assert new == old or (flag and new == Vocabulary.UNK)


def test_interpolation_mixes_each_array_and_refuses_other_architectures():
    run = [np.array([1.0, 2.0]), np.array([[4.0]])]
    other = [np.array([3.0, 6.0]), np.array([[0.0]])]
    mixed = decoding_sweep.interpolate(run, other, 0.75)
    np.testing.assert_allclose(mixed[0], [1.5, 3.0])
    np.testing.assert_allclose(mixed[1], [[3.0]])
    np.testing.assert_allclose(decoding_sweep.interpolate(run, other, 1.5)[0], [0.0, 0.0])  # beyond the run
    with pytest.raises(ValueError, match="same architecture"):
        decoding_sweep.interpolate(run, [np.array([3.0, 6.0]), np.array([0.0])], 0.5)
    with pytest.raises(ValueError, match="same architecture"):
        decoding_sweep.interpolate(run, other[:1], 0.5)


def test_a_run_with_held_out_categories_gets_a_row_for_dev_seen_and_unseen(tmp_path):
    if keras.backend.backend() != "tensorflow":
        pytest.skip("data handling, the same on every backend: run on TensorFlow")
    data = fixture_with_an_airport_dev_entry(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        results = mle.train_and_evaluate(tiny_config(holdout_categories=("Airport",)), data, tmp_path / "run")
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            decoding_sweep.main(["--run-dir", str(tmp_path / "run"), "--data-dir", str(data), "--settings", "2,0.6,1"])
    rows = [line.split(" | ") for line in printed.getvalue().splitlines()[2:]]
    assert [row[4] for row in rows] == ["all", "seen", "unseen"]
    # The run's own settings (beam 2, length penalty 0.6, reranked): the run's own dev scores.
    assert [float(row[5]) for row in rows] == [round(results["dev"][name]["bleu_2017"], 2) for name in ("all", "seen", "unseen")]


@pytest.mark.parametrize("setting", ["12,0.6", "12,x,1", "0,0.6,1", "12,0.6,yes", "12,0.6,1,many"])
def test_a_bad_setting_is_refused_when_the_flags_are_read(setting, capsys):
    with pytest.raises(SystemExit) as raised:
        decoding_sweep.main(["--run-dir", "RUN", "--settings", "4,0.6,0", setting])
    assert raised.value.code == 2
    assert "expected BEAM_WIDTH,LENGTH_PENALTY,RERANK[,MIN_FOREIGN]" in capsys.readouterr().err
