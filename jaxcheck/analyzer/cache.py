"""A content-addressed cache of per-file results, one JSON file per entry.

A key is a hash of everything a result depends on: the file's bytes, its display path and module name,
and the run's fingerprint (jaxcheck's version and source files, the settings, the enabled rules). Results
linted with a project-wide solve are stored under a key that also hashes the solved traces they were
linted with.

The cache folder may be shared, or written by someone else, so an entry is data only: JSON read with
:mod:`.codec`, which builds nothing but the declared result classes. An entry is checked on read (its
format name, format version, key and every field's type); one that is unreadable, corrupt or from
another format version is a miss, counted in :attr:`ResultCache.ignored` for a note, never an error.
Entries are read as regular files only and written atomically (a temporary file in the same folder,
then a rename that replaces a planted symlink rather than writing through it), so two processes sharing
the folder never see half an entry; the last writer of a key wins, with equal content. Writes do not
wait for the disk (an fsync per entry costs more than encoding it): an entry a power failure cuts
short is a miss like any corrupt one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from jaxcheck.analyzer.codec import CodecError, decode, encode
from jaxcheck.analyzer.files import read_file, replace_file
from jaxcheck.analyzer.outcome import FileOutcome

DEFAULT_CACHE_DIR = ".jaxcheck_cache"
FORMAT = "jaxcheck-cache"
FORMAT_VERSION = 3
"""Bump when the entry layout changes: entries of other versions are then ignored."""
MAX_ENTRY_BYTES = 64 * 1024 * 1024
"""Larger entries are not ours (a result is a few kilobytes): ignored without being parsed."""


class ResultCache:
    """JSON results under `directory`, keyed by :meth:`key`. Write failures are ignored."""

    def __init__(self, directory: Path, fingerprint: str) -> None:
        """`fingerprint` identifies the run's version, settings and rules; it is mixed into every key."""
        self.directory = directory
        self.fingerprint = fingerprint
        self.ignored = 0
        """How many entries were found but could not be used (unreadable, corrupt, another version)."""
        self._prepared = False

    def key(self, display_path: str, module: str, data: bytes, digest: str | None = None) -> str:
        """The key of a file's own result: its bytes (or their `digest`, :func:`content_digest`), path
        and module under this run's fingerprint."""
        return _hash(self.fingerprint, display_path, module, digest or content_digest(data))

    @staticmethod
    def solved_key(key: str, signature: str) -> str:
        """The key of a file's result linted with a project solve of this `signature` (see `Solution.signature_parts`)."""
        return _hash(key, signature)

    def load(self, key: str) -> FileOutcome | None:
        """The outcome stored under `key`, or None when there is no usable entry."""
        outcome: FileOutcome | None = self.load_value(key, FileOutcome)
        return outcome

    def store(self, key: str, outcome: FileOutcome) -> None:
        """Store `outcome` under `key` atomically; failures (read-only folder, full disk) are ignored."""
        self.store_value(key, outcome)

    def load_value(self, key: str, hint: Any) -> Any:
        """The value of type `hint` (a type :mod:`.codec` decodes) stored under `key`, or None when there
        is no usable entry."""
        path = self._path(key)
        try:
            data = read_file(path, MAX_ENTRY_BYTES)
        except FileNotFoundError:
            return None
        except OSError:
            self.ignored += 1
            return None
        try:
            if len(data) > MAX_ENTRY_BYTES:
                raise CodecError("entry too large")
            entry = json.loads(data)
            if not isinstance(entry, dict) or entry.get("format") != FORMAT:
                raise CodecError("not a jaxcheck cache entry")
            if entry.get("version") != FORMAT_VERSION or entry.get("key") != key:
                raise CodecError("entry of another version or key")
            return decode(hint, entry.get("outcome"))
        except (ValueError, TypeError, RecursionError, MemoryError):  # CodecError, JSON errors: ValueErrors
            self.ignored += 1
            return None

    def store_value(self, key: str, value: object) -> None:
        """Store `value` (data :mod:`.codec` encodes) under `key` atomically; failures are ignored."""
        path = self._path(key)
        try:
            entry = {"format": FORMAT, "version": FORMAT_VERSION, "key": key, "outcome": encode(value)}
            text = json.dumps(entry, separators=(",", ":"))
            self.prepare()
            path.parent.mkdir(exist_ok=True)
            replace_file(path, text.encode("ascii"), durable=False)
        except (OSError, ValueError, TypeError, RecursionError):  # CodecError is a ValueError
            pass

    def prepare(self) -> None:
        """Create the folder with a `.gitignore` that hides everything in it."""
        if self._prepared:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        ignore = self.directory / ".gitignore"
        if not ignore.exists():
            replace_file(ignore, b"*\n")
        self._prepared = True

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key[2:]}.json"


def content_digest(data: bytes) -> str:
    """The hex SHA-256 of a file's bytes: what keys its entries."""
    return hashlib.sha256(data).hexdigest()


def fingerprint(version: str, settings_json: str, rule_codes: Iterable[str], noqa: bool) -> str:
    """A run's fingerprint: results of runs with equal fingerprints are interchangeable. It includes
    the size and modification time of jaxcheck's own source files, so editing a rule (in a checkout,
    without a new version) does not serve stale results."""
    return _hash(version, str(FORMAT_VERSION), _source_stamp(), settings_json, ",".join(sorted(rule_codes)),
                 str(noqa))


def _source_stamp() -> str:
    package = Path(__file__).resolve().parent.parent
    stamps = []
    for source in sorted(package.rglob("*.py")):
        status = source.stat()
        stamps.append(f"{source.relative_to(package)}:{status.st_size}:{status.st_mtime_ns}")
    return _hash(*stamps)


def hash_parts(*parts: str) -> str:
    """A hex digest of `parts` (for keys built outside this module)."""
    return _hash(*parts)


def _hash(*parts: str) -> str:
    """A hex digest of `parts`; any string, also a file name that is not valid UTF-8, can be hashed."""
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()
