import hashlib
import pathlib
import re
import warnings
import zipfile

import pytest

from onestep_gan.rdf2text import webnlg
from onestep_gan.rdf2text.preprocessing import delexicalise
from onestep_gan.rdf2text.webnlg import Triple, load_webnlg, parse_webnlg_xml
from tests.conftest import fixture_2017_dir

FIXTURES = pathlib.Path(__file__).parent / "fixtures" / "webnlg"
DATA_2017 = fixture_2017_dir()
DATA_3_0 = FIXTURES / "3.0"


def _write(path, body):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"<?xml version='1.0' encoding='UTF-8'?>\n<benchmark><entries>{body}</entries></benchmark>\n")
    return path


def _entry(triples, lexes=("A text.",), eid="Id1"):
    mtriples = "".join(f"<mtriple>{triple}</mtriple>" for triple in triples)
    lex = "".join(f'<lex comment="good" lid="Id{i}">{text}</lex>' for i, text in enumerate(lexes))
    return (f'<entry category="Airport" eid="{eid}" size="{len(triples)}">'
            f"<modifiedtripleset>{mtriples}</modifiedtripleset>{lex}</entry>")


def test_load_train_2017_fields_and_skip_warning():
    with pytest.warns(UserWarning, match="Skipped 1 WebNLG train entries"):
        entries = load_webnlg("train", DATA_2017)
    assert [entry.entry_id for entry in entries] == [
        "train/1triples/Airport/Id1", "train/2triples/Astronaut/Id1"]
    first = entries[0]
    assert first.category == "Airport" and first.size == 1 and first.seen is None
    assert first.triples == (Triple("Abilene_Regional_Airport", "cityServed", "Abilene,_Texas"),)
    assert first.texts == ("Abilene Regional Airport serves Abilene, Texas.",
                           "Abilene, Texas is served by the Abilene regional airport.")
    assert entries[1].triples[1] == Triple("Alan_Bean", "birthDate", '"1932-03-15"')


def test_load_dev_and_test_2017_seen_flags():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dev = load_webnlg("dev", DATA_2017)
        test = load_webnlg("test", DATA_2017)
    assert [entry.entry_id for entry in dev] == ["dev/1triples/Food/Id1"]
    assert [(entry.entry_id, entry.category, entry.seen) for entry in test] == [
        ("test/Id1", "Airport", True), ("test/Id2", "Politician", False)]
    assert test[0].triples[0].object == '"Aarhus, Denmark"@en'
    assert len(test[1].texts) == 2


def test_load_3_0_layout_text_child_and_seen_from_train():
    train = load_webnlg("train", DATA_3_0)
    assert train[0].triples == (Triple("Aarhus_Airport", "cityServed", '"Aarhus, Denmark"'),)
    test = load_webnlg("test", DATA_3_0)  # the semantic-parsing file is not read
    assert [(entry.entry_id, entry.seen) for entry in test] == [("test/Id1", True), ("test/Id2", False)]
    assert test[1].texts == ("Super Capers runs 98 minutes.",)
    # `data_dir` may also point at en/ directly.
    assert load_webnlg("dev", DATA_3_0 / "en")[0].texts == ("Aarhus Airport is the airport of Aarhus, Denmark.",)


def test_unknown_split_and_missing_folders(tmp_path):
    with pytest.raises(ValueError, match=r"expected one of \('train', 'dev', 'test'\).*'valid'"):
        load_webnlg("valid", DATA_2017)
    with pytest.raises(ValueError, match="not found"):
        load_webnlg("train", tmp_path / "nowhere")
    with pytest.raises(ValueError, match="split folder not found"):
        load_webnlg("train", tmp_path)
    (tmp_path / "test").mkdir()
    with pytest.raises(ValueError, match="No WebNLG test file"):
        load_webnlg("test", tmp_path)


def test_malformed_xml_names_file_and_line(tmp_path):
    path = tmp_path / "bad.xml"
    path.write_text("<benchmark>\n<entries>\n<entry>\n</benchmark>\n")
    with pytest.raises(ValueError, match=r"bad\.xml at line 4"):
        parse_webnlg_xml(path)


def test_a_file_that_cannot_be_read_is_named(tmp_path, monkeypatch):
    path = tmp_path / "locked.xml"
    path.write_text("<benchmark/>\n")

    def refuse(source, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(source))

    monkeypatch.setattr("xml.etree.ElementTree.parse", refuse)  # as for a file the user may not read
    with pytest.raises(ValueError, match=r"locked\.xml: cannot be read \(PermissionError: .*Permission denied"):
        parse_webnlg_xml(path)


def test_bad_triple_and_empty_tripleset(tmp_path):
    path = _write(tmp_path / "t.xml", _entry(["A | b"], eid="Id7"))
    with pytest.raises(ValueError, match=r"Id7 in .*t\.xml.*three non-empty parts.*'A \| b'"):
        parse_webnlg_xml(path)
    path = _write(tmp_path / "e.xml", _entry([], eid="Id9"))
    with pytest.raises(ValueError, match=r"Id9 in .*e\.xml.*at least one <mtriple>"):
        parse_webnlg_xml(path)


def test_parse_keeps_textless_entries_on_request(tmp_path):
    path = _write(tmp_path / "t.xml", _entry(["A | b | C"], lexes=()) + _entry(["A | b | D"], eid="Id2"))
    with pytest.warns(UserWarning, match="Skipped 1 entries"):
        assert len(parse_webnlg_xml(path)) == 1
    entries = parse_webnlg_xml(path, split_name="dev", require_text=False)
    assert [(entry.entry_id, entry.texts) for entry in entries] == [
        ("dev/1triples/Airport/Id1", ()), ("dev/1triples/Airport/Id2", ("A text.",))]


# The download (issue 11, items 4-6 and 12), on archives built here and served by file:// URLs.

def _sha256(path):
    return hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()


def _corpus_zip(path, compression=zipfile.ZIP_DEFLATED):
    """A zip of the 2017 fixture laid out as the official archive: `top/webnlg_challenge_2017/...`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", compression=compression) as zip_file:
        for member in sorted(DATA_2017.rglob("*.xml")):
            zip_file.write(member, pathlib.Path("webnlg-mini") / "webnlg_challenge_2017" / member.relative_to(DATA_2017))
    return path


def _download(archive, cache_dir, **kwargs):
    return webnlg.download_webnlg(url=archive.as_uri(), sha256=_sha256(archive), cache_dir=str(cache_dir), **kwargs)


def _cache_listing(cache_dir):
    """Everything under `cache_dir/datasets`, hidden files included (as relative paths)."""
    folder = pathlib.Path(cache_dir) / "datasets"
    return sorted(str(path.relative_to(folder)) for path in folder.iterdir()) if folder.is_dir() else []


def test_download_from_local_zip(tmp_path):
    archive = _corpus_zip(tmp_path / "webnlg-mini.zip")
    data_dir = _download(archive, tmp_path / "cache")
    assert data_dir.name == "webnlg_challenge_2017"
    assert len(load_webnlg("test", data_dir)) == 2
    assert _download(archive, tmp_path / "cache") == data_dir  # cached: the same folder


def test_download_archive_without_data(tmp_path):
    archive = tmp_path / "empty.zip"
    with zipfile.ZipFile(archive, "w") as zip_file:
        zip_file.writestr("readme.txt", "nothing")
    with pytest.raises(ValueError, match="no folder holding train/"):
        _download(archive, tmp_path / "cache")
    assert _cache_listing(tmp_path / "cache") == []  # nothing kept: a fixed source is fetched afresh


def test_default_url_is_pinned_with_its_sha256():
    """Item 6: a fixed commit, not a moving branch, and the archive's SHA-256."""
    assert "/archive/master/" not in webnlg.DEFAULT_URL
    assert re.fullmatch(r"https://gitlab\.com/shimorina/webnlg-dataset/-/archive/([0-9a-f]{40})/webnlg-dataset-\1\.zip",
                        webnlg.DEFAULT_URL)
    assert re.fullmatch(r"[0-9a-f]{64}", webnlg.DEFAULT_SHA256)


def test_download_refuses_an_archive_that_fails_its_sha256(tmp_path):
    """Item 6: the downloaded file is verified; what fails the check is deleted."""
    archive = _corpus_zip(tmp_path / "webnlg-mini.zip")
    with pytest.raises(ValueError, match=f"webnlg-mini.zip.*expected {'0' * 64}. Received: {_sha256(archive)}"):
        webnlg.download_webnlg(url=archive.as_uri(), sha256="0" * 64, cache_dir=str(tmp_path / "cache"))
    assert _cache_listing(tmp_path / "cache") == []
    with pytest.raises(ValueError, match="sha256"):  # a custom URL comes with its hash
        webnlg.download_webnlg(url=archive.as_uri(), cache_dir=str(tmp_path / "cache"))


def test_download_checks_a_cached_archive_and_replaces_a_bad_one(tmp_path):
    """Item 6: a cached archive that fails the check is deleted and fetched afresh."""
    archive = _corpus_zip(tmp_path / "webnlg-mini.zip")
    cache = tmp_path / "cache"
    cached = cache / "datasets" / archive.name
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b"PK\x03\x04 stale or tampered")
    data_dir = _download(archive, cache)
    assert _sha256(cached) == _sha256(archive)
    assert len(load_webnlg("test", data_dir)) == 2


def test_download_truncated_archive_is_reported_and_deleted(tmp_path):
    """Item 4: one line naming the archive and the cause; the bad archive and any partial
    extraction are deleted, so a rerun after fixing the source downloads afresh."""
    good = _corpus_zip(tmp_path / "good.zip")
    archive = tmp_path / "source" / "webnlg-mini.zip"
    archive.parent.mkdir()
    archive.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    cache = tmp_path / "cache"
    with pytest.raises(ValueError) as error:
        _download(archive, cache)
    message = str(error.value)
    assert "\n" not in message and "webnlg-mini.zip" in message and "truncated" in message, message
    assert _cache_listing(cache) == []
    archive.write_bytes(good.read_bytes())  # the source is fixed
    assert len(load_webnlg("test", _download(archive, cache))) == 2


def test_download_bad_crc_is_reported_and_nothing_half_extracted_is_left(tmp_path):
    """Item 4: a zip whose member fails its CRC: one-line error naming the archive and the
    member, no traceback of `BadZipFile`, nothing extracted left behind."""
    archive = _corpus_zip(tmp_path / "source" / "webnlg-mini.zip", compression=zipfile.ZIP_STORED)
    data = bytearray(archive.read_bytes())
    position = data.index(b"<benchmark>")  # inside the first member's stored bytes
    data[position + 1] ^= 0x01  # <benchmark> -> <bdnchmark>: same length, wrong CRC
    archive.write_bytes(bytes(data))
    cache = tmp_path / "cache"
    with pytest.raises(ValueError) as error:
        _download(archive, cache)
    message = str(error.value)
    assert "\n" not in message and "webnlg-mini.zip" in message and "CRC" in message, message
    assert _cache_listing(cache) == []


def test_download_creates_a_missing_cache_dir(tmp_path):
    """Item 5: a `cache_dir` that does not exist yet is created and used."""
    archive = _corpus_zip(tmp_path / "webnlg-mini.zip")
    cache = tmp_path / "not" / "yet" / "there"
    data_dir = _download(archive, cache)
    assert cache / "datasets" in data_dir.parents
    assert (cache / "datasets" / archive.name).is_file()


@pytest.fixture
def fresh_machine(tmp_path, monkeypatch):
    """No WEBNLG_DIR; the Keras cache in tmp; the corpus archive served from a file:// URL."""
    archive = _corpus_zip(tmp_path / "served" / "webnlg-mini.zip")
    monkeypatch.delenv("WEBNLG_DIR", raising=False)
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras_home"))
    monkeypatch.setenv("WEBNLG_URL", archive.as_uri())
    monkeypatch.setenv("WEBNLG_SHA256", _sha256(archive))
    return tmp_path / "keras_home"


def test_without_data_dir_the_corpus_is_fetched_into_the_keras_cache(fresh_machine):
    """Item 12: no `data_dir`, no WEBNLG_DIR: the reader fetches the (verified) corpus."""
    assert len(load_webnlg("test")) == 2
    assert webnlg.resolve_data_dir().is_relative_to(fresh_machine / "datasets")
    assert (fresh_machine / "datasets" / "webnlg-mini.zip").is_file()


def test_resolve_data_dir(monkeypatch, fresh_machine):
    monkeypatch.setenv("WEBNLG_DIR", str(DATA_2017))
    assert webnlg.resolve_data_dir() == DATA_2017
    assert webnlg.resolve_data_dir(DATA_3_0) == DATA_3_0
    monkeypatch.setenv("WEBNLG_URL", "https://example.org/webnlg.zip")
    monkeypatch.delenv("WEBNLG_DIR")
    monkeypatch.delenv("WEBNLG_SHA256")
    with pytest.raises(ValueError, match="WEBNLG_SHA256"):  # a custom URL comes with its hash
        webnlg.resolve_data_dir()


@pytest.mark.slow
def test_real_2017_corpus_counts(webnlg_path):
    train = load_webnlg("train", webnlg_path)
    dev = load_webnlg("dev", webnlg_path)
    test = load_webnlg("test", webnlg_path)
    assert len(test) == 1862
    assert sum(not entry.seen for entry in test) == 891
    assert {entry.category for entry in train} == set(webnlg.SEEN_CATEGORIES_2017)
    assert len(train) > 0 and len(dev) > 0
    assert all(entry.texts and len(entry.triples) == entry.size for entry in train + dev + test)
    assert (len(train), len(dev)) == (6940, 872)
    # Delexicalisation quality: share of (reference, entity) pairs whose entity is found (0.92 measured).
    found = total = 0
    for entry in test:
        for text in entry.texts:
            example = delexicalise(entry.triples, text)
            total += len(example.entity_map)
            found += len(set(example.entity_map) & set(example.target_tokens))
    assert found / total > 0.9


@pytest.mark.parametrize("framing", ["chunked", "content-length"])
def test_a_download_cut_mid_transfer_is_one_line_and_leaves_nothing(tmp_path, framing):
    """A server that closes the connection early: chunked, `http.client.IncompleteRead` escaped as a
    traceback; with a Content-Length, the short file was only reported as failing its SHA-256."""
    import socket
    import threading

    from onestep_gan.rdf2text import download

    response = {
        "chunked": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n0123456789abcdef\r\n10\r\n0123",
        "content-length": b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + b"x" * 100,
    }[framing]
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)

    def serve():
        connection, _ = server.accept()
        connection.recv(65536)
        connection.sendall(response)
        connection.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.getsockname()[1]}/data.zip"
    try:
        with pytest.raises(ValueError) as error:
            download.fetch_archive(url, "0" * 64, cache_dir=str(tmp_path / "cache"), progress=False)
    finally:
        thread.join(5)
        server.close()
    message = str(error.value)
    assert "\n" not in message and message.startswith(f"Cannot download {url}: the transfer ended early"), message
    assert _cache_listing(tmp_path / "cache") == []
