"""Reader for the WebNLG RDF-to-text corpus (2017 challenge and 3.0 release layouts).

WebNLG (Gardent et al., 2017, "Creating Training Corpora for NLG Micro-Planners"; "The WebNLG
Challenge: Generating Text from RDF Data") pairs sets of 1-7 DBpedia triples with reference texts.
Each XML `<entry category=.. eid=.. size=..>` holds `<modifiedtripleset><mtriple>S | P | O</mtriple>`
and one `<lex>` per reference text.

Layouts understood by `load_webnlg` (`data_dir` is the folder holding `train/dev/test`, or the
folder holding `en/` for 3.0):
- 2017 challenge: `train/NtriplesN/*.xml`, `dev/NtriplesN/*.xml`, `test/testdata_with_lex.xml`
  (all 15 categories; `testdata_unseen_with_lex.xml` is the unseen subset and is not loaded again).
- 3.0 release: `en/train/NtriplesN/*.xml`, `en/dev/NtriplesN/*.xml`, `en/test/*.xml` (the
  `rdf-to-text-generation-test-data-with-refs-en.xml` file). A `<lex>` there may carry child
  elements; its text is the `<lex>` text or that of a `<text>` child.

Entry ids are `"{split}/{eid}"` in the test split (one file) and
`"{split}/{size}triples/{category}/{eid}"` in train/dev (one file per size and category).
"""

import dataclasses
import logging
import os
import pathlib
import warnings
import xml.etree.ElementTree as ET

logger = logging.getLogger(__name__)

SPLITS = ("train", "dev", "test")
# The public WebNLG repository (Claire Gardent's group, maintained by Anastasia Shimorina),
# all releases in one archive: `webnlg_challenge_2017/`, `release_v2/`, ..., `release_v3.0/en/`,
# pinned at a fixed commit. URL, size (25,499,351 bytes) and SHA-256 as HuggingFace `datasets`
# records them: github.com/huggingface/datasets, datasets/web_nlg/dataset_infos.json,
# "download_checksums" (the same entry in every configuration of that file).
_COMMIT = "587fa698bec705efbefe72a235a6019c2b9b8b6c"
DEFAULT_URL = f"https://gitlab.com/shimorina/webnlg-dataset/-/archive/{_COMMIT}/webnlg-dataset-{_COMMIT}.zip"
DEFAULT_SHA256 = "d6837063d6ef2a2e05418c1511f989c85fd9fffd21f5bd04bc5b34886f24c94e"
DEFAULT_RELEASE = "webnlg_challenge_2017"
# Environment variables: the data folder, and another archive (a mirror) with its SHA-256.
DATA_DIR_VARIABLE = "WEBNLG_DIR"
URL_VARIABLE = "WEBNLG_URL"
SHA256_VARIABLE = "WEBNLG_SHA256"
# The 10 DBpedia categories of the 2017 training data; the test set adds 5 "unseen" ones
# (Artist, Athlete, CelestialBody, MeanOfTransportation, Politician).
SEEN_CATEGORIES_2017 = (
    "Airport", "Astronaut", "Building", "City", "ComicsCharacter",
    "Food", "Monument", "SportsTeam", "University", "WrittenWork",
)
TRIPLE_SEPARATOR = " | "
_TEST_FILE_2017 = "testdata_with_lex.xml"
_TEST_FILE_3_0 = "rdf-to-text-generation-test-data-with-refs-en.xml"


@dataclasses.dataclass(frozen=True)
class Triple:
    """One RDF triple, as written in WebNLG (underscores, quotes and all)."""

    subject: str
    predicate: str
    object: str


@dataclasses.dataclass(frozen=True)
class WebNLGEntry:
    """One WebNLG entry.

    Attributes:
        entry_id: unique within a split, e.g. "test/Id17" or "train/2triples/Airport/Id4".
        category: DBpedia category, e.g. "Airport".
        size: number of triples, from the `size` attribute.
        triples: the modified triples (`<mtriple>`), in file order.
        texts: all reference texts (`<lex>`), in file order.
        seen: test split only: whether the category occurs in train; `None` for train/dev.
        mentions: known entity mentions of each text, `((entity, surface), ...)` per text in
            `texts` order (`enriched.with_mentions`); `()` when none are known.
    """

    entry_id: str
    category: str
    size: int
    triples: tuple
    texts: tuple
    seen: bool | None = None
    mentions: tuple = ()


def resolve_data_dir(data_dir=None):
    """The WebNLG folder: `data_dir`, else `$WEBNLG_DIR`, else the corpus that `download_webnlg()`
    fetches (pinned and verified) into the Keras cache, once; as a `pathlib.Path`."""
    if data_dir is None:
        data_dir = os.environ.get(DATA_DIR_VARIABLE)
    if data_dir:
        return pathlib.Path(data_dir).expanduser()
    try:
        return download_webnlg()
    except ValueError as error:
        raise ValueError(
            f"No WebNLG folder given (--data-dir or {DATA_DIR_VARIABLE}), and fetching the corpus "
            f"failed: {error} Pass the folder holding train/dev/test to use a copy fetched elsewhere."
        ) from None


def load_webnlg(split, data_dir=None):
    """Loads one split ("train", "dev" or "test") of WebNLG 2017 or 3.0.

    Entries without any reference text are skipped, with one warning giving their count.
    For "test", `seen` is whether the entry's category occurs in the training data (the fixed
    `SEEN_CATEGORIES_2017` for the 2017 layout; the categories of the train folder for 3.0).

    Returns:
        A list of `WebNLGEntry`, in file order (files sorted by path).
    """
    if split not in SPLITS:
        raise ValueError(f"Unknown WebNLG split: expected one of {SPLITS}. Received: split={split!r}")
    root = _layout_root(resolve_data_dir(data_dir))
    files = _split_files(root, split)
    entries, skipped = [], 0
    for path in files:
        file_entries, file_skipped = _parse_file(path, split, require_text=True)
        entries.extend(file_entries)
        skipped += file_skipped
    if skipped:
        warnings.warn(
            f"Skipped {skipped} WebNLG {split} entries without any reference text "
            f"(in {len(files)} file(s) under {root / split}).",
            stacklevel=2,
        )
    _check_unique_ids(entries, root / split)
    if split == "test":
        seen_categories = _seen_categories(root)
        entries = [
            dataclasses.replace(entry, seen=entry.category in seen_categories) for entry in entries
        ]
    return entries


def parse_webnlg_xml(path, split_name="test", require_text=True):
    """Parses one WebNLG XML file.

    Args:
        path: the XML file.
        split_name: prefix of the entry ids (see the module docstring for the id format).
        require_text: if True, entries without reference text are skipped (with one warning
            giving their count); if False they are kept with `texts=()`.

    Returns:
        A list of `WebNLGEntry` with `seen=None`.
    """
    entries, skipped = _parse_file(pathlib.Path(path), split_name, require_text)
    if skipped:
        warnings.warn(f"Skipped {skipped} entries without any reference text in {path}.", stacklevel=2)
    return entries


def download_webnlg(url=None, sha256=None, cache_dir=None, release=DEFAULT_RELEASE, progress=True):
    """Downloads, verifies and extracts a WebNLG archive into the Keras cache; returns the data folder.

    The archive lands in `{cache_dir or $KERAS_HOME or ~/.keras}/datasets/`, is checked against
    its SHA-256 (a cached one too; what fails the check is deleted) and extracted all or nothing
    (`download.fetch_archive`), so it is downloaded once and a damaged one is fetched afresh.

    Args:
        url: None: `$WEBNLG_URL` if set, else `DEFAULT_URL`, the official repository archive
            (https://gitlab.com/shimorina/webnlg-dataset) at a pinned commit.
        sha256: the archive's SHA-256; needed with a `url` of your own (or `$WEBNLG_SHA256` with
            `$WEBNLG_URL`); `DEFAULT_SHA256` for `DEFAULT_URL`.
        cache_dir: the Keras cache folder, created if missing.
        release: the folder to use among several releases of one archive (`"webnlg_challenge_2017"`,
            or `"release_v3.0"` for 3.0). An archive with a single release needs no `release`.
        progress: show a progress bar while downloading.

    Returns:
        The folder holding `train/dev/test` (or `en/` for 3.0): pass it to `load_webnlg`.
    """
    from onestep_gan.rdf2text import download  # Here: reading a corpus folder needs none of it.

    if url is None and os.environ.get(URL_VARIABLE):
        url = os.environ[URL_VARIABLE]
        sha256 = sha256 or os.environ.get(SHA256_VARIABLE)
        if not sha256:
            raise ValueError(
                f"{URL_VARIABLE} is set without {SHA256_VARIABLE}: expected the archive's SHA-256 "
                f"(64 hex digits) in {SHA256_VARIABLE}. Received: {URL_VARIABLE}={url!r}"
            )
    url = url or DEFAULT_URL
    if sha256 is None:
        if url != DEFAULT_URL:
            raise ValueError(
                "A WebNLG archive URL of your own needs its sha256 (64 hex digits), checked after "
                f"downloading. Received: url={url!r}, sha256=None"
            )
        sha256 = DEFAULT_SHA256

    def locate(extracted):
        candidates = sorted(
            folder
            for folder in [extracted, *(path for path in extracted.rglob("*") if path.is_dir())]
            if _is_data_dir(folder)
        )
        if len(candidates) > 1 and release:
            candidates = [folder for folder in candidates if release in folder.parts] or candidates
        if not candidates:
            raise ValueError(
                f"The archive from {url} has no folder holding train/, dev/ and test/ (or en/ with "
                "them); it was deleted."
            )
        if len(candidates) > 1:
            logger.warning("Several WebNLG data folders in %s; using %s.", extracted, candidates[0])
        return candidates[0]

    return download.fetch_archive(url, sha256, cache_dir, locate=locate, progress=progress)


def _is_data_dir(folder):
    return all((folder / split).is_dir() for split in SPLITS) or all(
        (folder / "en" / split).is_dir() for split in SPLITS
    )


def _layout_root(data_dir):
    """The folder holding train/dev/test: `data_dir` itself, or `data_dir/en` (3.0)."""
    if not data_dir.is_dir():
        raise ValueError(f"WebNLG data directory not found. Received: data_dir={str(data_dir)!r}")
    if not (data_dir / "train").is_dir() and (data_dir / "en").is_dir():
        return data_dir / "en"
    return data_dir


def _is_2017_layout(root):
    return (root / "test" / _TEST_FILE_2017).is_file()


def _split_files(root, split):
    folder = root / split
    if not folder.is_dir():
        raise ValueError(
            f"WebNLG split folder not found: expected {folder} (with {'*.xml' if split == 'test' else 'NtriplesN/*.xml'})."
        )
    if split != "test":
        files = sorted(folder.glob("*triple*/*.xml"))
        if not files:
            raise ValueError(f"No WebNLG XML files found: expected {folder}/NtriplesN/*.xml.")
        return files
    for name in (_TEST_FILE_2017, _TEST_FILE_3_0):
        if (folder / name).is_file():
            return [folder / name]
    files = sorted(
        path for path in folder.glob("*.xml")
        if not any(part in path.name for part in ("no_lex", "without-refs", "semantic-parsing"))
    )
    if not files:
        raise ValueError(
            f"No WebNLG test file found in {folder}: expected {_TEST_FILE_2017} (2017), "
            f"{_TEST_FILE_3_0} (3.0) or another *.xml with references."
        )
    return files


def _seen_categories(root):
    if _is_2017_layout(root):
        return frozenset(SEEN_CATEGORIES_2017)
    categories = set()
    for path in _split_files(root, "train"):
        for entry in _parse_file(path, "train", require_text=False)[0]:
            categories.add(entry.category)
    return frozenset(categories)


def _check_unique_ids(entries, where):
    seen_ids = set()
    for entry in entries:
        if entry.entry_id in seen_ids:
            raise ValueError(f"Duplicate WebNLG entry id {entry.entry_id!r} under {where}.")
        seen_ids.add(entry.entry_id)


def _parse_file(path, split_name, require_text):
    """Returns (entries, number of entries skipped for lacking text)."""
    if not path.is_file():
        raise ValueError(f"WebNLG XML file not found. Received: path={str(path)!r}")
    try:
        tree = ET.parse(path)
    except ET.ParseError as error:
        line, column = error.position
        raise ValueError(
            f"Malformed WebNLG XML in {path} at line {line}, column {column}: {error}"
        ) from error
    except OSError as error:
        raise ValueError(f"{path}: cannot be read ({type(error).__name__}: {error.strerror or error}).") from None
    root = tree.getroot()
    if root.tag != "benchmark":
        raise ValueError(
            f"{path}, line 1: expected a WebNLG file whose root element is <benchmark>. "
            f"Received: <{root.tag}>"
        )
    entries, skipped = [], 0
    for element in root.iter("entry"):
        entry = _parse_entry(element, path, split_name)
        if require_text and not entry.texts:
            skipped += 1
            continue
        entries.append(entry)
    return entries, skipped


def _parse_entry(element, path, split_name):
    attributes = {name: element.get(name) for name in ("category", "eid", "size")}
    missing = [name for name, value in attributes.items() if value is None]
    if missing:
        raise ValueError(
            f"WebNLG entry in {path} lacks attribute(s) {missing}: expected category, eid and "
            f"size. Received: {dict(element.attrib)}"
        )
    category, eid = attributes["category"], attributes["eid"]
    try:
        size = int(attributes["size"])
    except ValueError:
        raise ValueError(
            f"WebNLG entry {eid} in {path}: expected an integer size. Received: size={attributes['size']!r}"
        ) from None
    if split_name == "test":
        entry_id = f"{split_name}/{eid}"
    else:
        entry_id = f"{split_name}/{size}triples/{category}/{eid}"

    triples = tuple(
        _parse_triple(mtriple.text or "", path, eid)
        for tripleset in element.findall("modifiedtripleset")
        for mtriple in tripleset.findall("mtriple")
    )
    if not triples:
        raise ValueError(
            f"WebNLG entry {eid} in {path}: expected at least one <mtriple> in "
            "<modifiedtripleset>. Received: none."
        )
    if size != len(triples):
        raise ValueError(
            f"WebNLG entry {eid} in {path}: expected size=\"{len(triples)}\" (its number of "
            f"<mtriple>s). Received: size=\"{size}\""
        )
    texts = tuple(text for text in (_lex_text(lex) for lex in element.findall("lex")) if text)
    return WebNLGEntry(entry_id, category, size, triples, texts, seen=None)


def _parse_triple(text, path, eid):
    parts = text.strip().split(TRIPLE_SEPARATOR)
    if len(parts) != 3 or not all(part.strip() for part in parts):
        raise ValueError(
            f"WebNLG entry {eid} in {path}: expected a triple 'subject | predicate | object' "
            f"(three non-empty parts). Received: {text!r}"
        )
    return Triple(*(part.strip() for part in parts))


def _lex_text(lex):
    """Text of a `<lex>`: its own text, else that of a `<text>` child (WebNLG 2.0+ variants)."""
    text = (lex.text or "").strip()
    if not text:
        child = lex.find("text")
        text = (child.text or "").strip() if child is not None else ""
    return " ".join(text.split())
