"""The persistent project index: what a run needs to know about every project file, kept in the cache
folder and keyed by content, so a run re-reads only what changed.

Three kinds of entries, all signed JSON data checked on read like the result cache's (:mod:`.cache`; no
pickle):

- **Per-file results and summaries** (the :class:`ResultCache` entries): a file's own outcome, with its
  `ModuleSummary`, under the hash of its bytes, path, module and the run's fingerprint (jaxcheck's
  version and sources, settings, rules); the outcome linted with a project solve under that key plus
  the solve's signature for the file (`Solution.signature_parts`); and the summary alone of a project
  module that is only needed for the solve (an importer of a checked file).
- **An import table** per project root: for each file, the digest of its bytes, its module name and
  the modules it may import. Finding the importers of a checked file then needs no decoding or
  scanning of unchanged files; an entry whose digest differs from the file's is rescanned.
- **Run records**: the findings of a whole run under a key that hashes the request and the content
  digest of every file the result can depend on (the checked files and every project file that may
  import them). An unchanged re-run hashes the files and reads one record, without summaries,
  solving or LibCST.
- **Run states**: the last complete run of a request (its files, not their contents): per checked
  file, the digest it had, the key of its own entry (which holds its summary), digests of the parts
  of its solve signature, the names its summary makes the solve look up, and its findings. A re-run
  after a few files changed compares their new summaries with the old ones: when all are equal (a
  comment, a docstring, a constant: most edits inside a body), the project solve is the same as last
  time, so every other file keeps its findings and only the changed files (and those whose notes cite
  them) are linted again (the early cutoff of incremental build systems). When summaries changed,
  only the groups of linked functions their old and new links touch are solved again, with the modules
  the run's link table says they need (see :mod:`.semantics.locality`); the changed file, and the
  files of those modules whose signature parts about the touched functions changed, are linted again
  with a solve that gives them the recorded parts for every other function.
- **Link tables**: per run state, the groups of linked functions of its solve and the modules each
  needs (a :class:`.locality.LinkTable`), read only when a summary changed.

Cross-module staleness: a file's findings depend on its own bytes and on the project solve; the solved
outcome is keyed by the file's solve signature, which the run recomputes from the current summaries,
so editing a module another imports re-lints the importer exactly when its signature changes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from jaxcheck.analyzer.cache import ResultCache, content_digest, hash_parts
from jaxcheck.analyzer.codec import CodecError, decode, encode
from jaxcheck.analyzer.diagnostics import Diagnostic
from jaxcheck.analyzer.files import read_file, replace_file
from jaxcheck.analyzer.project import ModuleName, imported_modules
from jaxcheck.analyzer.semantics.locality import LinkTable
from jaxcheck.analyzer.semantics.summary import ModuleSummary
from jaxcheck.analyzer.source import SourceDecodeError, decode_source

IMPORT_TABLE_FORMAT = "jaxcheck-import-table"
IMPORT_TABLE_VERSION = 2
MAX_TABLE_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ImportEntry:
    """One file of the import table: the digest of the bytes it was scanned from, its module name and
    every module it may import (see :func:`.project.imported_modules`)."""

    digest: str
    module: ModuleName
    imports: frozenset[str]


@dataclass(frozen=True, slots=True)
class RunRecord:
    """The findings of a whole run that had no errors, and whether it found any function traced (None:
    not known)."""

    diagnostics: tuple[Diagnostic, ...]
    traced: bool | None = None


@dataclass(frozen=True, slots=True)
class FileState:
    """One checked file in a :class:`RunState`: its path, the digest of its bytes, the key of its own
    result entry, its findings, the other files their notes cite, the digests of the parts of the
    solve signature it was linted with (per function key, and "" for 64-bit mode: see
    `Solution.signature_parts`) and the names its summary makes the solve look up (see
    :func:`.locality.referenced_names`)."""

    path: str
    digest: str
    own_key: str
    diagnostics: tuple[Diagnostic, ...]
    cites: tuple[str, ...] = ()
    parts: tuple[tuple[str, str], ...] = ()
    references: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RunState:
    """The checked files of the last complete run of a request (see the module docstring), the other
    files solved with them (importers) and the names those make the solve look up, and whether the
    solve reached its fixpoint (a state without that knowledge allows no cutoff for a changed summary)."""

    files: tuple[FileState, ...]
    importers: tuple[str, ...] = ()
    importer_references: tuple[str, ...] = ()
    converged: bool = False
    links: str = ""
    """The key of the solve's link table (a :class:`.locality.LinkTable` entry; "" when none)."""
    traced: bool | None = None
    """Whether the solve found any function traced (None: not known)."""


@dataclass(frozen=True, slots=True)
class WholeRun:
    """Where the last complete run over the whole project left its state (the key of its
    :class:`RunState`), with each file's resolved path and configuration key: a check of some of the
    files answers from it while none of the project's files changed."""

    state: str
    files: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class ProjectFile:
    """A file of the project as this run read it."""

    path: Path
    module: ModuleName
    data: bytes
    digest: str


class ProjectIndex:
    """The index of the project at `root`, stored through `cache` (see the module docstring).

    Reads never fail: an unusable entry is a miss (counted in the cache's `ignored`). Writes are atomic
    and their failures ignored, so processes sharing the folder never see half an entry; the import
    table's last writer wins, and entries are validated by digest, so a lost update costs a rescan only.
    """

    def __init__(self, cache: ResultCache, root: Path) -> None:
        self.cache = cache
        self.root = root
        self._table_path = cache.directory / f"imports-{hash_parts(cache.fingerprint, str(root))[:32]}.json"
        self._table: dict[str, ImportEntry] | None = None
        self._table_changed = False

    # ------------------------------------------------------------------------------ run records
    def run_key(self, request: Iterable[str], checked: Iterable[ProjectFile], others: Iterable[ProjectFile]) -> str:
        """The key of a run's record: the request (options that change which files are checked) and the
        path, module and digest of every checked file and every other project file."""
        return hash_parts(self.cache.fingerprint, "run", *request, "checked", *_identities(checked, True),
                          "others", *_identities(others, True))

    def load_run(self, key: str) -> RunRecord | None:
        """The record stored under `key`, if usable."""
        record: RunRecord | None = self.cache.load_value(key, RunRecord)
        return record

    def store_run(self, key: str, diagnostics: Iterable[Diagnostic], traced: bool | None = None) -> None:
        """Record a run's findings and whether it found any function traced (only runs without errors are
        recorded)."""
        self.cache.store_value(key, RunRecord(tuple(diagnostics), traced))

    def state_key(self, request: Iterable[str], checked: Iterable[ProjectFile], others: Iterable[ProjectFile]) -> str:
        """The key of a request's run state: like :meth:`run_key` without the contents of the checked
        files (other project files count with their digests: when one changes, the state is not used)."""
        return hash_parts(self.cache.fingerprint, "state", *request, "checked", *_identities(checked, False),
                          "others", *_identities(others, True))

    def load_state(self, key: str) -> RunState | None:
        """The run state stored under `key`, if usable."""
        state: RunState | None = self.cache.load_value(key, RunState)
        return state

    def store_state(self, key: str, state: RunState, links: LinkTable | None = None) -> None:
        """Record the state of a complete run without errors, with `links` (when given) as its link table:
        stored under a key of the state's file digests, so a state and the table it names always
        describe the same summaries."""
        if links is not None:
            links_key = hash_parts(key, "links", *(file.digest for file in state.files))
            self.cache.store_value(links_key, links)
            state = replace(state, links=links_key)
        self.cache.store_value(key, state)

    def whole_run_key(self) -> str:
        """The key under which the last whole-project run of this root is recorded."""
        return hash_parts(self.cache.fingerprint, "whole", str(self.root))

    def load_whole_run(self) -> WholeRun | None:
        """The last whole-project run recorded for this root, if usable."""
        whole: WholeRun | None = self.cache.load_value(self.whole_run_key(), WholeRun)
        return whole

    def store_whole_run(self, whole: WholeRun) -> None:
        """Record `whole` as the last whole-project run of this root."""
        self.cache.store_value(self.whole_run_key(), whole)

    # ------------------------------------------------------------------------------- summaries
    def summary_key(self, file: ProjectFile, settings: str = "") -> str:
        """The key of the summary of a file that is solved with the checked files but not linted;
        `settings` is what of the file's own configuration the summary depends on."""
        return ResultCache.solved_key(self.cache.key(str(file.path), f"{file.module!r}|{settings}", file.data,
                                                     file.digest), "summary")

    def load_summary(self, file: ProjectFile, settings: str = "") -> ModuleSummary | None:
        """The stored summary of `file` at its current bytes (and `settings`), if any."""
        summary: ModuleSummary | None = self.cache.load_value(self.summary_key(file, settings), ModuleSummary)
        return summary

    def store_summary(self, file: ProjectFile, summary: ModuleSummary, settings: str = "") -> None:
        """Store the summary of `file` at its current bytes (and `settings`)."""
        self.cache.store_value(self.summary_key(file, settings), summary)

    # ---------------------------------------------------------------------------------- imports
    def imports(self, file: ProjectFile) -> frozenset[str] | None:
        """The modules `file` may import; None when it cannot be decoded."""
        table = self._load_table()
        entry = table.get(str(file.path))
        if entry is not None and entry.digest == file.digest and entry.module == file.module:
            return entry.imports
        try:
            text = decode_source(file.data).text
        except SourceDecodeError:
            return None
        found = frozenset(imported_modules(text, file.module.package))
        table[str(file.path)] = ImportEntry(file.digest, file.module, found)
        self._table_changed = True
        return found

    def save(self) -> None:
        """Write the import table if this run changed it; failures are ignored."""
        if not self._table_changed or self._table is None:
            return
        entry = {"format": IMPORT_TABLE_FORMAT, "version": IMPORT_TABLE_VERSION, "fingerprint": self.cache.fingerprint,
                 "root": str(self.root), "entries": encode(self._table)}
        try:
            data = self.cache.seal(entry)
            self.cache.prepare()
            replace_file(self._table_path, data)
            self._table_changed = False
        except (OSError, CodecError, RecursionError, ValueError):
            pass

    def _load_table(self) -> dict[str, ImportEntry]:
        if self._table is not None:
            return self._table
        self._table = {}
        try:
            data = read_file(self._table_path, MAX_TABLE_BYTES)
        except FileNotFoundError:
            return self._table
        except OSError:
            self.cache.ignored += 1
            return self._table
        try:
            if len(data) > MAX_TABLE_BYTES:
                raise CodecError("table too large")
            entry = self.cache.unseal(data)
            if entry.get("format") != IMPORT_TABLE_FORMAT:
                raise CodecError("not a jaxcheck import table")
            if entry.get("version") != IMPORT_TABLE_VERSION or entry.get("fingerprint") != self.cache.fingerprint \
                    or entry.get("root") != str(self.root):
                raise CodecError("table of another version, run or project")
            self._table = decode(dict[str, ImportEntry], entry.get("entries"))
        except (ValueError, TypeError, RecursionError, MemoryError):
            self.cache.ignored += 1
            self._table = {}
        return self._table


def _identities(files: Iterable[ProjectFile], with_digest: bool) -> list[str]:
    """Each file's path and module (and content digest), sorted: what keys of index entries hash."""
    return sorted(f"{f.path}\0{f.module.name}\0{f.module.package}" + (f"\0{f.digest}" if with_digest else "")
                  for f in files)


def project_file(path: Path, module: ModuleName, data: bytes) -> ProjectFile:
    """A :class:`ProjectFile` with the digest of `data`."""
    return ProjectFile(path, module, data, content_digest(data))


def importers(targets: Iterable[str], candidates: Mapping[Path, tuple[ModuleName, frozenset[str]]]) -> list[Path]:
    """The files among `candidates` (path -> module name and the modules it may import) that import a
    module in `targets`, directly or through other importers (the reverse-import closure)."""
    wanted = set(targets)
    found: list[Path] = []
    remaining = dict(candidates)
    changed = True
    while changed:
        changed = False
        for path, (module, imports) in list(remaining.items()):
            if not imports.isdisjoint(wanted):
                found.append(path)
                wanted.add(module.name)
                del remaining[path]
                changed = True
    return found
