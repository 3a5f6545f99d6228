"""A pinned archive in the Keras cache: downloaded, verified and extracted, all or nothing.

`fetch_archive(url, sha256)` returns `{cache_dir}/datasets/{name}_extracted/`, the layout of
`keras.utils.get_file(..., extract=True)`, with what that function leaves to chance made sure:

- the archive is downloaded (with a Keras progress bar) to a hidden `.NAME.partial` file beside
  its place, its SHA-256 computed on the way, and renamed into place only when it matches;
- a cached archive is checked the same way; one that fails is deleted and downloaded again;
- it is extracted into a hidden temporary folder, renamed into place when complete, holding a
  `.sha256` file that names the archive it came from (a folder from another archive is redone);
- a damaged archive (truncated, not an archive, a member failing its CRC) or one that `locate`
  refuses is deleted with anything extracted from it, so a rerun fetches it afresh;
- a `cache_dir` that does not exist yet is created (`get_file` silently falls back to
  `/tmp/.keras` when it cannot write to `cache_dir`).

Every failure raises a one-line `ValueError` naming the URL or the archive and the cause. Members
with absolute paths or `..` are skipped, as `get_file` does. The `datasets` folder is found as
Keras finds it: `cache_dir`, else `$KERAS_HOME`, else `~/.keras`.
"""

import hashlib
import http.client
import logging
import os
import pathlib
import shutil
import tarfile
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile
import zlib

logger = logging.getLogger(__name__)

MARKER_FILE = ".sha256"
_CHUNK_BYTES = 1 << 20
_TIMEOUT_SECONDS = 60


def fetch_archive(url, sha256, cache_dir=None, locate=None, progress=True):
    """Downloads, verifies and extracts the archive at `url` (see the module docstring).

    Args:
        url: the archive's URL (`https://...`, `file://...`); its last path part is the file name.
        sha256: the archive's SHA-256, 64 hex digits.
        cache_dir: the Keras cache folder (holding `datasets/`); None: `$KERAS_HOME` or `~/.keras`.
        locate: optional `fn(extracted_folder) -> path`, raising `ValueError` when the archive
            lacks what is needed; such an archive is deleted with its extraction.
        progress: show a progress bar while downloading.

    Returns:
        `locate(folder)` when given, else the extracted folder.
    """
    sha256 = check_sha256(sha256)
    name = os.path.basename(urllib.parse.urlsplit(url).path)
    if not name:
        raise ValueError(f"Cannot read an archive file name from the URL. Received: url={url!r}")
    folder = datasets_folder(cache_dir)
    archive = folder / name
    extracted = folder / f"{name.split('.')[0]}_extracted"
    _remove_leftovers(archive, extracted)
    if _marker(extracted) != sha256:
        if archive.is_file() and file_sha256(archive) != sha256:
            logger.warning("The cached archive %s fails its SHA-256 check: deleted, downloading it again.", archive)
            archive.unlink()
        if not archive.is_file():
            _download(url, archive, sha256, progress)
        _extract_or_discard(archive, extracted, sha256)
    if locate is None:
        return extracted
    try:
        return locate(extracted)
    except ValueError:
        _discard(archive, extracted)
        raise


def check_sha256(sha256):
    """`sha256` as 64 lower-case hex digits; raises `ValueError` otherwise."""
    text = str(sha256 or "").strip().lower()
    if len(text) != 64 or any(character not in "0123456789abcdef" for character in text):
        raise ValueError(f"Expected a SHA-256 of 64 hex digits. Received: sha256={sha256!r}")
    return text


def datasets_folder(cache_dir=None):
    """`{cache_dir}/datasets`, created if missing; `cache_dir` None: `$KERAS_HOME` or `~/.keras`."""
    base = cache_dir or os.environ.get("KERAS_HOME") or os.path.join("~", ".keras")
    folder = pathlib.Path(base).expanduser() / "datasets"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ValueError(f"Cannot create the cache folder {folder}: {error.strerror}. Pass another cache_dir.") from None
    return folder


def file_sha256(path):
    hasher = hashlib.sha256()
    with open(path, "rb") as file:
        while chunk := file.read(_CHUNK_BYTES):
            hasher.update(chunk)
    return hasher.hexdigest()


def _partial(path):
    return path.with_name(f".{path.name}.partial")


def _remove_leftovers(archive, extracted):
    """Deletes what a killed download or extraction left (hidden `.partial` files and folders)."""
    _partial(archive).unlink(missing_ok=True)
    for path in extracted.parent.glob(f".{extracted.name}.partial*"):
        shutil.rmtree(path, ignore_errors=True)


def _marker(extracted):
    path = extracted / MARKER_FILE
    return path.read_text(encoding="ascii").strip() if path.is_file() else None


def _download(url, archive, sha256, progress):
    partial = _partial(archive)
    hasher = hashlib.sha256()
    logger.info("Downloading %s to %s", url, archive)
    length, done = None, 0
    try:
        with urllib.request.urlopen(url, timeout=_TIMEOUT_SECONDS) as response, open(partial, "wb") as file:
            length = response.headers.get("Content-Length")
            progress_bar = _progress_bar(int(length) if length else None) if progress else None
            while chunk := response.read(_CHUNK_BYTES):
                file.write(chunk)
                hasher.update(chunk)
                done += len(chunk)
                if progress_bar is not None:
                    progress_bar.update(done)
            if length and done < int(length):  # the server closed the connection early
                raise http.client.IncompleteRead(b"", int(length) - done)
            file.flush()
            os.fsync(file.fileno())
    except http.client.IncompleteRead:  # a chunked transfer cut short raises it itself
        partial.unlink(missing_ok=True)
        of = f" of {int(length)}" if length else ""  # a chunked transfer does not say its length
        raise ValueError(f"Cannot download {url}: the transfer ended early (received {done}{of} bytes).") from None
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as error:
        partial.unlink(missing_ok=True)
        reason = getattr(error, "reason", None) or getattr(error, "strerror", None) or error
        raise ValueError(f"Cannot download {url}: {' '.join(str(reason).split())}.") from None
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    received = hasher.hexdigest()
    if received != sha256:
        partial.unlink()
        raise ValueError(
            f"The archive downloaded from {url} ({archive.name}) fails its SHA-256 check, so it was "
            f"deleted: expected {sha256}. Received: {received}"
        )
    os.replace(partial, archive)


def _progress_bar(total_bytes):
    import keras  # Here: only a download needs it.

    return keras.utils.Progbar(total_bytes, unit_name="byte")


def _discard(archive, extracted):
    archive.unlink(missing_ok=True)
    shutil.rmtree(extracted, ignore_errors=True)


class DamagedArchiveError(ValueError):
    """The archive cannot be read (truncated, not an archive, a member failing its CRC)."""


def _extract_or_discard(archive, extracted, sha256):
    """Extracts `archive` into `extracted` (replaced whole); a damaged archive is deleted."""
    temporary = pathlib.Path(tempfile.mkdtemp(prefix=f".{extracted.name}.partial", dir=extracted.parent))
    try:
        _extract(archive, temporary)
        (temporary / MARKER_FILE).write_text(sha256 + "\n", encoding="ascii")
        shutil.rmtree(extracted, ignore_errors=True)
        os.replace(temporary, extracted)
    except DamagedArchiveError:
        _discard(archive, extracted)
        raise
    except OSError as error:  # the disk, not the archive: keep the verified archive
        raise ValueError(f"Cannot extract {archive} into {extracted.parent}: {error}") from None
    finally:
        shutil.rmtree(temporary, ignore_errors=True)


def _is_safe(member_name):
    path = pathlib.PurePosixPath(member_name)
    return not path.is_absolute() and ".." not in path.parts


def _extract(archive, target):
    damaged = "The archive {} is damaged ({}); it was deleted, so a rerun downloads it again."
    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as zip_file:
                for member in zip_file.infolist():
                    if _is_safe(member.filename):
                        zip_file.extract(member, target)  # reads the member whole: checks its CRC
        elif tarfile.is_tarfile(archive):
            with tarfile.open(archive) as tar_file:
                members = [
                    member for member in tar_file.getmembers()
                    if _is_safe(member.name) and (member.isfile() or member.isdir())
                ]
                data_filter = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
                tar_file.extractall(target, members=members, **data_filter)
        else:
            raise DamagedArchiveError(damaged.format(archive, "not a zip or tar archive: truncated or corrupt"))
    except (zipfile.BadZipFile, tarfile.TarError, zlib.error, EOFError) as error:
        cause = f"{type(error).__name__}: {' '.join(str(error).split())}"
        raise DamagedArchiveError(damaged.format(archive, cause)) from None
