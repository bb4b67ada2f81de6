"""File-system access that never blocks, never trips on a symlink loop and never leaves half a file.

Reading opens without blocking and accepts regular files only (a FIFO named `x.py` would otherwise
hang the run). Writing goes to a temporary file in the same folder that replaces the target in one
rename, with SIGINT and SIGTERM held back meanwhile, so an interrupted run leaves every file old or
new and no temporary file behind.
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


def real_path(path: Path) -> Path:
    """`path` made absolute with symlinks resolved as far as they go; unlike `Path.resolve()` on
    Python 3.10-3.12, never raises on a symlink loop."""
    return Path(os.path.realpath(path))


def read_file(path: Path, limit: int | None = None) -> bytes:
    """The bytes of the regular file at `path` (symlinks followed), at most `limit` + 1 of them.
    Anything else (a FIFO, a socket, a device, a folder) raises OSError at once."""
    handle = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(handle).st_mode
        if not stat.S_ISREG(mode):
            kind = _FILE_KINDS.get(stat.S_IFMT(mode), "a special file")
            raise OSError(errno.EINVAL, f"not a regular file ({kind})")
        chunks = []
        remaining = None if limit is None else limit + 1
        while remaining is None or remaining > 0:
            chunk = os.read(handle, 1 << 20 if remaining is None else min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining = None if remaining is None else remaining - len(chunk)
        return b"".join(chunks)
    finally:
        os.close(handle)


def replace_file(path: Path, data: bytes, mode: int | None = None, durable: bool = True) -> None:
    """Make `path` hold `data` in one rename (a symlink at `path` itself is replaced, not followed).
    `mode` sets the permission bits; the temporary file never outlives the call. `durable` flushes the
    data to disk before the rename, so a power failure leaves the old or the new content (a cache
    entry, which a reader checks, need not wait for the disk: one cut short is a miss)."""
    with held_signals():
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(handle, "wb") as stream:
                stream.write(data)
                if durable:
                    stream.flush()
                    os.fsync(stream.fileno())
            if mode is not None:
                os.chmod(temporary, mode)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise


def write_through(path: Path, data: bytes) -> None:
    """Write `data` to the file `path` names, keeping what identifies it: a symlink keeps pointing at
    its target, which is written (atomically, as :func:`replace_file`); a file with several hard links
    is rewritten in place (with signals held back) so every link sees the new text; permission bits
    are kept either way."""
    target = real_path(path)
    status = os.stat(target)
    if status.st_nlink > 1:
        with held_signals():
            with open(target, "r+b") as stream:
                stream.write(data)
                stream.truncate()
                stream.flush()
                os.fsync(stream.fileno())
        return
    replace_file(target, data, stat.S_IMODE(status.st_mode))


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
