"""File-system access that never blocks, never trips on a symlink loop and never leaves half a file.

Reading opens without blocking and accepts regular files only (a FIFO named `x.py` would otherwise
hang the run); a bounded read (a cache entry) rejects a file over its bound or with holes before
reading a byte. Writing puts the whole new content in a temporary file in the same folder first (with
SIGINT and SIGTERM held back meanwhile), so a full disk, a quota or a file-size limit fails before the
file is touched; that file then replaces the target in one rename, so an interrupted run (even kill -9)
leaves every file old or new. A file with several hard links cannot be renamed over without unlinking
it, so its new content is copied into it from there, and its old bytes, kept in memory, are written
back when the copy fails. Files without write permission are refused, as editors and ruff do, and a
file that changed since it was read is never overwritten.
"""

from __future__ import annotations

import errno
import os
import signal
import stat
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_FILE_KINDS = {stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket", stat.S_IFCHR: "a device", stat.S_IFBLK: "a device",
               stat.S_IFDIR: "a folder"}
_HELD_SIGNALS = {signal.SIGINT, signal.SIGTERM}
_ALL_WRITE_BITS = stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH


class FileChangedError(OSError):
    """The file is no longer what was read (someone edited it meanwhile); nothing was written."""

    def __init__(self, path: Path) -> None:
        super().__init__(errno.EAGAIN, "the file changed while it was being fixed; not written", str(path))


def real_path(path: Path) -> Path:
    """`path` made absolute with symlinks resolved as far as they go; unlike `Path.resolve()` on
    Python 3.10-3.12, never raises on a symlink loop."""
    return Path(os.path.realpath(path))


def read_file(path: Path, limit: int | None = None) -> bytes:
    """The bytes of the regular file at `path` (symlinks followed). Anything else (a FIFO, a socket, a
    device, a folder) raises OSError at once. With `limit`, a file larger than `limit` bytes or with
    holes (a sparse file, which jaxcheck never writes) raises OSError before anything is read, and at
    most `limit` + 1 bytes are read (a file growing meanwhile)."""
    handle = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        status = os.fstat(handle)
        if not stat.S_ISREG(status.st_mode):
            kind = _FILE_KINDS.get(stat.S_IFMT(status.st_mode), "a special file")
            raise OSError(errno.EINVAL, f"not a regular file ({kind})")
        if limit is not None and (status.st_size > limit or _has_holes(handle, status.st_size)):
            raise OSError(errno.EFBIG, f"larger than {limit} bytes or sparse")
        return _read_all(handle, None if limit is None else limit + 1)
    finally:
        os.close(handle)


def _has_holes(handle: int, size: int) -> bool:
    """Whether the open file has a hole before its end (False where the system cannot tell); the
    handle's offset is left at the start."""
    if not size or not hasattr(os, "SEEK_HOLE"):
        return False
    try:
        return os.lseek(handle, 0, os.SEEK_HOLE) < size
    except OSError:
        return False
    finally:
        os.lseek(handle, 0, os.SEEK_SET)


def _read_all(handle: int, most: int | None = None) -> bytes:
    """The bytes from the handle's offset to the end of the file, at most `most` of them."""
    chunks = []
    remaining = most
    while remaining is None or remaining > 0:
        chunk = os.read(handle, 1 << 20 if remaining is None else min(remaining, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        remaining = None if remaining is None else remaining - len(chunk)
    return b"".join(chunks)


def _write_all(handle: int, data: bytes) -> None:
    """Write all of `data` at the handle's offset (OSError when the disk, a quota or a limit stops it)."""
    view = memoryview(data)
    while view:
        view = view[os.write(handle, view):]


def replace_file(path: Path, data: bytes, mode: int | None = None, durable: bool = True,
                 expected: bytes | None = None) -> None:
    """Make `path` hold `data` in one rename (a symlink at `path` itself is replaced, not followed).
    `mode` sets the permission bits; the temporary file never outlives the call. `durable` flushes the
    data to disk before the rename, so a power failure leaves the old or the new content (a cache
    entry, which a reader checks, need not wait for the disk: one cut short is a miss). With `expected`,
    raises :class:`FileChangedError` instead when the file's bytes are no longer `expected`."""
    with held_signals():
        temporary = _written_temporary(path, data, durable)
        try:
            if mode is not None:
                os.chmod(temporary, mode)
            if expected is not None and read_file(path) != expected:
                raise FileChangedError(path)
            os.replace(temporary, path)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise


def _written_temporary(path: Path, data: bytes, durable: bool) -> Path:
    """A new temporary file beside `path` that holds all of `data` (removed again when that fails)."""
    handle, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    temporary = Path(name)
    try:
        try:
            _write_all(handle, data)
            if durable:
                os.fsync(handle)
        finally:
            os.close(handle)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return temporary


def write_through(path: Path, data: bytes, expected: bytes | None = None) -> None:
    """Write `data` to the file `path` names, keeping what identifies it: a symlink keeps pointing at
    its target, which is written; permission bits are kept; a file with several hard links stays linked
    (see :func:`_rewrite_linked`), any other file is replaced atomically (see :func:`replace_file`).

    Raises PermissionError ("Permission denied") for a file this user may not write or that nobody may
    (mode r--r--r--, which root could override), and :class:`FileChangedError` when `expected` is given
    and the file's bytes are no longer those. Whenever it raises, the file is as it was."""
    target = real_path(path)
    status = os.stat(target)
    if not os.access(target, os.W_OK) or not status.st_mode & _ALL_WRITE_BITS:
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
    if status.st_nlink > 1:
        _rewrite_linked(target, data, expected)
    else:
        replace_file(target, data, stat.S_IMODE(status.st_mode), expected=expected)


def _rewrite_linked(target: Path, data: bytes, expected: bytes | None) -> None:
    """Rewrite a file with several hard links in place, without losing its bytes: `data` is first
    written in full to a temporary file beside it (so a full disk, a quota or a file-size limit fails
    there, with the file untouched), then copied into the file; when that copy fails all the same, the
    old bytes (read from the same handle) are written back. Should that fail too, the error says so and
    the temporary file, which holds the new content, is kept."""
    with held_signals():
        temporary = _written_temporary(target, data, durable=True)
        kept = False
        try:
            handle = os.open(target, os.O_RDWR | getattr(os, "O_CLOEXEC", 0))
            try:
                original = _read_all(handle)
                if expected is not None and original != expected:
                    raise FileChangedError(target)
                try:
                    _overwrite(handle, data)
                except OSError as failure:
                    try:
                        _overwrite(handle, original)
                    except OSError:
                        kept = True
                        raise OSError(failure.errno, f"{failure.strerror}; the file may be damaged, its fixed text is "
                                      f"kept in {temporary}") from failure
                    raise
            finally:
                os.close(handle)
        finally:
            if not kept:
                temporary.unlink(missing_ok=True)


def _overwrite(handle: int, data: bytes) -> None:
    """Make the open file hold exactly `data`, flushed to disk."""
    os.lseek(handle, 0, os.SEEK_SET)
    _write_all(handle, data)
    os.ftruncate(handle, len(data))
    os.fsync(handle)


@contextmanager
def held_signals() -> Iterator[None]:
    """Hold SIGINT and SIGTERM back while the block runs (they are delivered when it ends)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
