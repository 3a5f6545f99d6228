"""`runs.hold_out_categories`: train categories held out to stand in for unseen ones."""

import pytest

from onestep_gan.rdf2text import runs
from onestep_gan.rdf2text.webnlg import Triple, WebNLGEntry


def _entry(split, category, number, seen=None):
    triple = Triple(f"{category}_{number}", "location", "Paris")
    return WebNLGEntry(f"{split}/1triples/{category}/Id{number}", category, 1, (triple,), ("A text.",), seen=seen)


TRAIN = [_entry("train", "Airport", 1), _entry("train", "Food", 2), _entry("train", "Airport", 3),
         _entry("train", "City", 4)]


def test_train_loses_the_held_out_categories_and_keeps_the_rest_in_order():
    kept = runs.hold_out_categories(TRAIN, "train", ("Airport",))
    assert [entry.entry_id for entry in kept] == ["train/1triples/Food/Id2", "train/1triples/City/Id4"]
    assert runs.hold_out_categories(TRAIN, "train", ()) == TRAIN  # nothing held out: unchanged


def test_dev_entries_of_held_out_categories_are_unseen_and_the_others_seen():
    dev = [_entry("dev", "Airport", 1), _entry("dev", "Food", 2), _entry("dev", "City", 3)]
    marked = runs.hold_out_categories(dev, "dev", ("Airport", "City"))
    assert [entry.seen for entry in marked] == [False, True, False]
    assert [entry.entry_id for entry in marked] == [entry.entry_id for entry in dev]
    assert [entry.seen for entry in runs.hold_out_categories(dev, "dev", ())] == [None, None, None]


def test_test_entries_stay_unseen_and_held_out_seen_ones_become_unseen():
    test = [_entry("test", "Airport", 1, seen=True), _entry("test", "Food", 2, seen=True),
            _entry("test", "Athlete", 3, seen=False)]
    marked = runs.hold_out_categories(test, "test", ("Airport",))
    assert [entry.seen for entry in marked] == [False, True, False]


def test_a_category_train_does_not_have_is_refused_with_the_known_ones_named():
    with pytest.raises(ValueError, match=r"^holdout_categories: Airpot, Athlete not among the train categories\. "
                                         r"Expected some of: Airport, City, Food$"):
        runs.hold_out_categories(TRAIN, "train", ("Athlete", "Airpot", "Food"))
    with pytest.raises(ValueError, match="leaves nothing to train on"):
        runs.hold_out_categories(TRAIN, "train", ("Airport", "City", "Food"))
