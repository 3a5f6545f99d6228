"""examples/webnlg_source_swap_probe.py: the swapped sources, the drops against a direct computation,
and its table for a run with held-out categories."""

import contextlib
import io
import warnings

import keras
import numpy as np
import pytest

from onestep_gan.rdf2text import mle, runs
from onestep_gan.rdf2text.preprocessor import EncodedExample
from tests.conftest import load_example
from tests.test_mle import fixture_with_an_airport_dev_entry, tiny_config

swap_probe = load_example("webnlg_source_swap_probe.py")


def test_each_pair_of_source_placeholders_is_swapped_once():
    # Ids 20-22 stand for ENT_1..ENT_3, 5 and 6 for words.
    example = EncodedExample("e0", (5, 20, 6, 21, 5, 20, 6, 22), (20, 6, 21), {})
    pairs, sources = swap_probe.probe_rows(example, {20, 21, 22, 23})
    assert pairs == [None, (20, 21), (20, 22), (21, 22)]
    assert sources == [
        (5, 20, 6, 21, 5, 20, 6, 22),
        (5, 21, 6, 20, 5, 21, 6, 22),
        (5, 22, 6, 21, 5, 22, 6, 20),
        (5, 20, 6, 22, 5, 20, 6, 21),
    ]
    assert swap_probe.swap_ids((1, 2, 3, 2), 2, 3) == (1, 3, 2, 3)
    assert swap_probe.summary([0.0, 0.05, 1.0, 2.0]) == (4, 0.7625, 50.0, 50.0)


@pytest.fixture(scope="module")
def held_out_run(tmp_path_factory):
    if keras.backend.backend() != "tensorflow":
        pytest.skip("data handling, the same on every backend: run on TensorFlow")
    tmp_path = tmp_path_factory.mktemp("probe")
    data = fixture_with_an_airport_dev_entry(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        mle.train_and_evaluate(tiny_config(holdout_categories=("Airport",)), data, tmp_path / "run")
    return data, tmp_path / "run"


def test_the_drops_are_those_of_direct_model_calls(held_out_run):
    data, run_dir = held_out_run
    model, preprocessor, config = runs.load_run(run_dir)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        entries = runs.load_split("dev", data, holdout_categories=config.holdout_categories)
    examples = [e for e in preprocessor.encode_entries(entries, for_training=True) if
                len({t for t in e.source_ids if t in preprocessor.placeholder_ids}) >= 2]
    assert examples, "the fixture's dev has inputs of two entities or more"
    drops = swap_probe.source_swap_drops(model, preprocessor, examples, batch_size=3)
    for example, example_drops in zip(examples, drops):
        expected = []
        own = _log_probs(model, preprocessor, example.source_ids, example.target_ids)
        pairs, sources = swap_probe.probe_rows(example, set(preprocessor.placeholder_ids))
        swapped = [_log_probs(model, preprocessor, source, example.target_ids) for source in sources[1:]]
        for position, token in enumerate(example.target_ids):
            expected += [own[position] - other[position] for pair, other in zip(pairs[1:], swapped) if token in pair]
        np.testing.assert_allclose(example_drops, expected, atol=1e-4)
    assert any(drops)


def _log_probs(model, preprocessor, source, text):
    """One model call on one unpadded pair: log p of each text token."""
    logits = keras.ops.convert_to_numpy(model(
        {"source": np.array([source], "int32"), "target": np.array([[preprocessor.bos_id, *text]], "int32")},
        training=False,
    ))[0].astype("float64")
    log_probs = logits - logits.max(-1, keepdims=True)
    log_probs -= np.log(np.exp(log_probs).sum(-1, keepdims=True))
    return [log_probs[position, token] for position, token in enumerate(text)]


def test_a_run_with_held_out_categories_gets_rows_for_seen_and_unseen(held_out_run):
    data, run_dir = held_out_run
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert swap_probe.main(["--run-dir", str(run_dir), "--data-dir", str(data)]) == 0
    rows = [line.strip("| ").split(" | ") for line in printed.getvalue().splitlines()[3:]]
    assert [row[0] for row in rows] == ["all", "seen", "unseen"]
    counts = [int(row[1]) for row in rows]
    assert counts[0] == counts[1] + counts[2] and counts[2] > 0
