import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import pathlib

import keras
import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]


def webnlg_dir():
    """The WebNLG 2017 corpus: $WEBNLG_DIR, else ../shared/webnlg/2017 beside the repo, else None."""
    candidates = [os.environ.get("WEBNLG_DIR"), REPO_ROOT.parent / "shared" / "webnlg" / "2017"]
    for candidate in candidates:
        if candidate and (pathlib.Path(candidate) / "train").is_dir():
            return pathlib.Path(candidate)
    return None


@pytest.fixture
def webnlg_path():
    path = webnlg_dir()
    if path is None:
        pytest.skip("WebNLG 2017 corpus not found (set WEBNLG_DIR or place it at ../shared/webnlg/2017)")
    return path


@pytest.fixture(autouse=True)
def _seed_and_clear():
    keras.utils.set_random_seed(1234)
    yield
    keras.backend.clear_session()
