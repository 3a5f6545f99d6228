"""Files that survive a kill: each is written to a hidden `.NAME.partial*` file beside its target,
flushed to disk, then renamed over the target (`os.replace`, atomic on POSIX), so a kill at any
moment leaves the previous complete file (or none), never a truncated one. Every file a job or a
report writes goes through here (models through `checkpoints.atomic_save_model`)."""

import os
import pathlib


def partial_path(path):
    """The hidden file beside `path` that `atomic_write` writes first (same suffix)."""
    path = pathlib.Path(path)
    return path.with_name(f".{path.stem}.partial{path.suffix}")


def _commit(partial, path):
    """Flushes `partial` to disk and renames it over `path`."""
    with open(partial, "rb+") as file:
        os.fsync(file.fileno())
    os.replace(partial, path)


def atomic_write(path, data):
    """Writes `data` (bytes or str, UTF-8) to `path` atomically."""
    atomic_save(path, lambda partial: pathlib.Path(partial).write_bytes(
        data.encode("utf-8") if isinstance(data, str) else data))


def atomic_write_all(files):
    """Writes `files` (`{path: bytes or str}`) as one set: every file is written to its partial file
    before any is renamed over its target, so a failed write (a full disk) leaves none of them new."""
    partials = {pathlib.Path(path): partial_path(path) for path in files}
    try:
        for (path, partial), data in zip(partials.items(), files.values()):
            partial.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
            with open(partial, "rb+") as file:
                os.fsync(file.fileno())
    except BaseException:
        for partial in partials.values():
            partial.unlink(missing_ok=True)
        raise
    for path, partial in partials.items():
        os.replace(partial, path)


def atomic_save(path, save, partial=None):
    """Calls `save(partial)`, then flushes the written file and renames it over `path`. A write that
    fails (a full disk, an error in `save`) removes its partial file and leaves `path` as it was.
    `partial` defaults to `partial_path(path)`; a writer that wants its own suffix (Keras: a
    `.weights.h5` name) names another hidden file beside `path`."""
    path = pathlib.Path(path)
    partial = partial_path(path) if partial is None else pathlib.Path(partial)
    try:
        save(partial)
        _commit(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def remove_partial_files(folder):
    """Deletes the leftovers of writes a kill interrupted (`.*.partial*` files)."""
    folder = pathlib.Path(folder)
    if folder.is_dir():
        for path in folder.glob(".*.partial*"):
            path.unlink(missing_ok=True)


def check_output_dir(run_dir, what="Run folder"):
    """Raises `ValueError` when a job could not write its run into `run_dir`: the path, or a folder
    above it, is a file, or the nearest existing folder cannot be written. Called before the job
    reads or writes anything; `what` names the folder."""
    run_dir = pathlib.Path(run_dir)
    for folder in (run_dir, *run_dir.parents):
        if folder.exists():
            if not folder.is_dir():
                raise ValueError(f"{what} {run_dir}: {folder} is a file, expected a folder (created if missing).")
            if not os.access(folder, os.W_OK | os.X_OK):
                raise ValueError(f"{what} {run_dir}: {folder} cannot be written, expected a folder this user can write.")
            return
