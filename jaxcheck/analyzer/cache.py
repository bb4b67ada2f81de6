"""A content-addressed cache of per-file results, one JSON file per entry.

A key is a hash of everything a result depends on: the file's bytes, its display path and module name,
and the run's fingerprint (jaxcheck's version and source files, the settings, the enabled rules). Results
linted with a project-wide solve are stored under a key that also hashes the solved traces they were
linted with.

The cache folder may be shared, or written by someone else, so an entry is data only, and believed only
when jaxcheck itself wrote it for this key: JSON read with :mod:`.codec`, which builds nothing but the
declared result classes, and signed with an HMAC of its text under a secret key that lives outside the
folder (see :func:`cache_secret`). An entry is checked on read, before it is parsed: its size (a larger
or sparse file is not read), its signature (an entry edited, or copied under another entry's name with
its key rewritten, no longer matches), then its format name, format version, key and every field's
type. One that fails is a miss, counted in :attr:`ResultCache.ignored` for a note, never an error.
Entries are read as regular files only and written atomically (a temporary file in the same folder,
then a rename that replaces a planted symlink rather than writing through it), so two processes sharing
the folder never see half an entry; the last writer of a key wins, with equal content. Writes do not
wait for the disk (an fsync per entry costs more than encoding it): an entry a power failure cuts
short is a miss like any corrupt one.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import secrets
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from jaxcheck.analyzer.codec import CodecError, decode, encode
from jaxcheck.analyzer.files import read_file, replace_file
from jaxcheck.analyzer.outcome import FileOutcome

DEFAULT_CACHE_DIR = ".jaxcheck_cache"
FORMAT = "jaxcheck-cache"
FORMAT_VERSION = 4
"""Bump when the entry layout changes: entries of other versions are then ignored."""
MAX_ENTRY_BYTES = 64 * 1024 * 1024
"""Larger entries are not ours (a result is a few kilobytes): ignored without being read."""
SECRET_ENV = "JAXCHECK_CACHE_SECRET"
"""The environment variable that, when set, holds the key entries are signed with (see :func:`cache_secret`)."""
_SEAL = b'{"mac":"'
_SEAL_END = len(_SEAL) + 64


class ResultCache:
    """JSON results under `directory`, keyed by :meth:`key`. Write failures are ignored."""

    def __init__(self, directory: Path, fingerprint: str, secret: bytes | None = None) -> None:
        """`fingerprint` identifies the run's version, settings and rules; it is mixed into every key.
        `secret` signs and checks entries (default: :func:`cache_secret`); worker processes receive it
        with the cache."""
        self.directory = directory
        self.fingerprint = fingerprint
        self.secret = cache_secret() if secret is None else secret
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
            entry = self.unseal(data)
            if entry.get("format") != FORMAT:
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
            data = self.seal({"format": FORMAT, "version": FORMAT_VERSION, "key": key, "outcome": encode(value)})
            self.prepare()
            path.parent.mkdir(exist_ok=True)
            replace_file(path, data, durable=False)
        except (OSError, ValueError, TypeError, RecursionError):  # CodecError is a ValueError
            pass

    def seal(self, entry: dict[str, object]) -> bytes:
        """`entry` as JSON text that starts with its signature: `{"mac":"<HMAC of the rest>",...}`."""
        body = json.dumps(entry, separators=(",", ":")).encode("utf-8", "surrogatepass")
        return _SEAL + self._mac(body) + b'",' + body[1:]

    def unseal(self, data: bytes) -> dict[str, Any]:
        """The entry :meth:`seal` made into `data`; CodecError when the signature is missing or does not
        match (the text was edited, or signed with another key), before the text is parsed."""
        if not data.startswith(_SEAL) or data[_SEAL_END:_SEAL_END + 2] != b'",':
            raise CodecError("not a signed jaxcheck cache entry")
        body = b"{" + data[_SEAL_END + 2:]
        if not hmac.compare_digest(data[len(_SEAL):_SEAL_END], self._mac(body)):
            raise CodecError("the entry's signature does not match")
        entry = json.loads(body)
        if not isinstance(entry, dict):
            raise CodecError("not a jaxcheck cache entry")
        return entry

    def _mac(self, body: bytes) -> bytes:
        return hmac.new(self.secret, body, hashlib.sha256).hexdigest().encode("ascii")

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


def cache_secret() -> bytes:
    """The key that signs cache entries: the value of JAXCHECK_CACHE_SECRET when set (a team or a CI
    pipeline shares a cache by sharing that secret), else this user's own random key, made on first use
    in the user's cache folder, readable by the user alone (`$XDG_CACHE_HOME/jaxcheck/secret`, by
    default `~/.cache/jaxcheck/secret`), else, where that cannot be made, one of this process alone
    (its entries then serve no later run)."""
    shared = os.environ.get(SECRET_ENV)
    if shared:
        return shared.encode("utf-8", "surrogateescape")
    return _user_secret()


@functools.cache
def _user_secret() -> bytes:
    configured = os.environ.get("XDG_CACHE_HOME", "")
    try:
        folder = (Path(configured) if os.path.isabs(configured) else Path.home() / ".cache") / "jaxcheck"
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        path = folder / "secret"
        if not path.exists():
            _create_secret(path)
        return _private_secret(path)
    except (OSError, RuntimeError, ValueError):  # RuntimeError: no home folder
        return secrets.token_bytes(32)


def _create_secret(path: Path) -> None:
    """Make the secret file at `path` with a new random key; a process that made it first wins."""
    temporary = path.with_name(f".secret.{secrets.token_hex(8)}.tmp")
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        try:
            os.write(handle, secrets.token_bytes(32))
            os.fsync(handle)
        finally:
            os.close(handle)
        os.link(temporary, path)
    except FileExistsError:
        pass
    finally:
        temporary.unlink(missing_ok=True)


def _private_secret(path: Path) -> bytes:
    """The key in the secret file at `path`; ValueError unless it is this user's own, private, regular file."""
    handle = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    try:
        status = os.fstat(handle)
        owner = getattr(os, "getuid", lambda: status.st_uid)()
        if not stat.S_ISREG(status.st_mode) or status.st_uid != owner or status.st_mode & 0o077 or status.st_size != 32:
            raise ValueError(f"{path} is not a private key file")
        return os.read(handle, 32)
    finally:
        os.close(handle)


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
