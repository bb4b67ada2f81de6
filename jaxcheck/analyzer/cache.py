"""A content-addressed cache of per-file results, one pickle file per entry.

A key is a hash of everything a result depends on: the file's bytes, its display path and module name,
and the run's fingerprint (jaxcheck's version and source files, the settings, the enabled rules). Results linted with a
project-wide solve are stored under a key that also hashes the solved traces they were linted with.
Entries are written atomically (temporary file, then `os.replace`); an entry that cannot be read or
unpickled is a miss, never an error. Entries are our own files, so `pickle` is safe here.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from collections.abc import Iterable
from pathlib import Path


DEFAULT_CACHE_DIR = ".jaxcheck_cache"


class ResultCache:
    """Pickled results under `directory`, keyed by :meth:`key`. Write failures are ignored."""

    def __init__(self, directory: Path, fingerprint: str) -> None:
        """`fingerprint` identifies the run's version, settings and rules; it is mixed into every key."""
        self.directory = directory
        self.fingerprint = fingerprint
        self._prepared = False

    def key(self, display_path: str, module: str, data: bytes) -> str:
        """The key of a file's own result: its bytes, path and module under this run's fingerprint."""
        digest = hashlib.sha256(data).hexdigest()
        return _hash(self.fingerprint, display_path, module, digest)

    @staticmethod
    def solved_key(key: str, signature: str) -> str:
        """The key of a file's result linted with a project solve of this `signature` (see `Solution.signature`)."""
        return _hash(key, signature)

    def load(self, key: str) -> object | None:
        """The entry stored under `key`, or None when missing, unreadable or corrupt."""
        try:
            with open(self._path(key), "rb") as stream:
                return pickle.load(stream)
        except Exception:  # any unreadable or corrupt entry is a miss
            return None

    def store(self, key: str, value: object) -> None:
        """Store `value` under `key` atomically; failures (read-only folder, full disk) are ignored."""
        path = self._path(key)
        try:
            self._prepare()
            path.parent.mkdir(exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            try:
                with os.fdopen(handle, "wb") as stream:
                    pickle.dump(value, stream, protocol=pickle.HIGHEST_PROTOCOL)
                os.replace(temporary, path)
            except BaseException:
                os.unlink(temporary)
                raise
        except (OSError, pickle.PicklingError):
            pass

    def _prepare(self) -> None:
        """Create the folder with a `.gitignore` that hides everything in it."""
        if self._prepared:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        ignore = self.directory / ".gitignore"
        if not ignore.exists():
            ignore.write_text("*\n")
        self._prepared = True

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key[2:]}.pickle"


def fingerprint(version: str, settings_json: str, rule_codes: Iterable[str], noqa: bool) -> str:
    """A run's fingerprint: results of runs with equal fingerprints are interchangeable. It includes
    the size and modification time of jaxcheck's own source files, so editing a rule (in a checkout,
    without a new version) does not serve stale results."""
    return _hash(version, _source_stamp(), settings_json, ",".join(sorted(rule_codes)), str(noqa))


def _source_stamp() -> str:
    package = Path(__file__).resolve().parent.parent
    stamps = []
    for source in sorted(package.rglob("*.py")):
        status = source.stat()
        stamps.append(f"{source.relative_to(package)}:{status.st_size}:{status.st_mtime_ns}")
    return _hash(*stamps)


def _hash(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()
