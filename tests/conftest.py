import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import atexit
import functools
import importlib.util
import pathlib
import shutil
import tempfile

import keras
import pytest

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
FIXTURES = REPO_ROOT / "tests" / "fixtures" / "webnlg"
# MLE runs read gold mentions by default (MLEConfig.gold_mentions): tests read a hand-written
# enriched fixture matching the 2017 fixture's texts (a text it does not hold, e.g. of the real
# corpus, simply has no gold mentions). Child processes inherit it.
os.environ.setdefault("WEBNLG_ENRICHED_DIR", str(FIXTURES / "enriched"))


def load_example(file_name):
    """The script `examples/FILE_NAME` as a module named for its stem (examples/ is not a package),
    run as an import: its `main` does not run."""
    path = REPO_ROOT / "examples" / file_name
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.lru_cache(maxsize=None)
def fixture_2017_dir():
    """The hand-written 2017 fixture, laid out as the reader expects.

    Its test file is stored as `test/test_entries.xml`, a name nobody mistakes for the real
    corpus, and copied (once per test session) to the `testdata_with_lex.xml` the 2017 layout needs.
    """
    root = pathlib.Path(tempfile.mkdtemp(prefix="onestep_gan_webnlg_"))
    atexit.register(shutil.rmtree, root, True)
    target = root / "2017"
    shutil.copytree(FIXTURES / "2017", target)
    (target / "test" / "test_entries.xml").rename(target / "test" / "testdata_with_lex.xml")
    return target


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


# Same-seed reruns in one process, skipped on TensorFlow only: there tests/test_resume.py's
# kill-and-rerun tests start the MLE job and the adversarial stage afresh with the same seed in
# separate processes and require the uninterrupted run's weights and outputs (the killed run's
# first epochs become the resumed run's), which costs CI a whole run less.
same_seed_rerun_in_one_process = pytest.mark.skipif(
    keras.backend.backend() == "tensorflow",
    reason="on TensorFlow, tests/test_resume.py reruns the same seed in fresh processes",
)


@pytest.fixture(autouse=True)
def _seed_and_clear():
    keras.utils.set_random_seed(1234)
    yield
    # Without a full garbage collection per test: with the module fixtures' models alive, one
    # collection costs about 2 s, which over the suite was minutes. Python still collects as usual.
    keras.backend.clear_session(free_memory=False)
