"""`jaxcheck server`: a language server over stdio (pygls and lsprotocol, the `server` extra).

Diagnostics are published when a document is opened, changed and saved, each with its rule's page as
`codeDescription.href` and, for a client that takes them, its notes (why the code is traced, where a
value changes) as `relatedInformation`. Code actions offer every fix of a diagnostic (safe ones as preferred quick
fixes, unsafe ones marked so), "suppress with `# noqa: JAXnnn`" and "show rule documentation" (the
server asks the client to open the rule's page). Settings come from the nearest `[tool.jaxcheck]`
above each document, read again when that file changes.

Notebooks are synced as LSP 3.17 notebook documents (`notebookDocument/*`, Python code cells): the
code cells, in order, are checked as one program (as `jaxcheck check` reads an `.ipynb`), and each
finding is published on the cell it is in, with its notes pointing into the cells they lie in; a note
in another cell is also shown there, as information that names the finding's cell. Code actions work
per cell.

The process keeps the project warm: the texts and summaries of the modules that import an open file
are kept per process while those files are unchanged (see `Linter.check_file_in_project`), so an edit
re-parses the edited buffer only. The listing of the project's files is walked again every
WALK_MAX_AGE seconds, or, with a client that watches files for the server, when it says a file was
created or deleted. Handlers never let an exception reach pygls: a buffer that does not
parse gives the JAX001 diagnostic, and an internal error is logged to the client and clears nothing.

Checks run on one thread of their own, so requests (code actions, shutdown) are answered while a check
runs. Edits coalesce: a buffer has at most one pending check, for its newest version, and a burst of
edits is checked once at its end (see SETTLE); a check whose version was superseded while it ran
publishes nothing. A buffer over MAX_BUFFER_BYTES is not checked: the client is told once. With a client
that asks for tracing (`$/setTrace`), each check is traced (`$/logTrace`: started, then published or
superseded). The process ends at once on `exit`, at the end of its input and on SIGTERM, whatever a check
is doing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import signal
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NoReturn

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from jaxcheck.analyzer.config import ConfigError, Configuration, load_configuration
from jaxcheck.analyzer.diagnostics import Diagnostic, Fix, Position, Range, RelatedLocation
from jaxcheck.analyzer.engine import CheckReport, Linter, check_source, forget_project_listings
from jaxcheck.analyzer.notebooks import NotebookIndex, is_notebook, read_notebook
from jaxcheck.analyzer.source import encode_source
from jaxcheck.version import __version__

LOG = logging.getLogger(__name__)

SHOW_DOCUMENTATION = "jaxcheck.showRuleDocumentation"
SOURCE = "jaxcheck"
WALK_MAX_AGE = 10.0
"""Seconds the listing of the project's files is reused between checks (walking a large project with
its `.gitignore` files costs more than linting the edited buffer); a new file is seen after that."""
WATCHED_WALK_MAX_AGE = 300.0
"""The same, for a client that watches the project's files for the server (see FILE_WATCHERS): it says
when a file is created or deleted, so an edit after a pause never waits for a walk; the listing is still
walked again after this long, for files the client's watchers cannot see."""
FILE_WATCHERS = ("**/*.py", "**/*.ipynb", "**/.gitignore")
"""What the server asks a client to watch (`workspace/didChangeWatchedFiles`, dynamically registered):
the files a project listing holds, and the files that decide what it holds."""
MAX_BUFFER_BYTES = 1024 * 1024
"""Buffers larger than this (UTF-8 bytes) are not checked: the client is shown a message once and the
buffer's diagnostics are cleared (`jaxcheck check` still checks such a file). A check's time and memory
grow with the buffer: measured on a shared 2-core machine, jax's own largest module (`lax.py`, 0.39 MB)
takes 5 s and 300 MiB, 1 MB of densely jitted code 50 s and 1.4 GiB, and a 25 MB buffer over 6 GiB
before it was killed. 1 MiB is 2.5 times the largest module of jax, flax, optax and equinox, and bounds
one check at about 1.5 GiB. Requests wait while LibCST's native parser holds the interpreter lock (checks
run on a thread): measured there, about 1 s for `lax.py` and 8 s for a buffer at the limit."""
SETTLE = 0.05
"""Seconds an edit that comes less than this after the previous edit of the same buffer waits for the
edits to stop before it is checked: a burst (a replayed paste, an undo run, a formatter's edits) is
checked once, at its end, while an edit after a pause is checked at once."""
_NOQA = re.compile(r"#\s*noqa(?::\s?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)


@dataclass
class _State:
    """What the server remembers between requests: the last findings per open document, the open
    documents over MAX_BUFFER_BYTES (told once), and a linter per configuration file with that file's
    stamp (replaced when the stamp changes). Read and written on the message thread, except `linters`:
    the check thread's alone."""

    findings: dict[str, tuple[int | None, list[Diagnostic]]] = field(default_factory=dict)
    """Per buffer, the findings last published and the version of the buffer they were computed for."""
    oversized: set[str] = field(default_factory=set)
    linters: dict[str | None, tuple[tuple[int, int], Linter]] = field(default_factory=dict)


@dataclass(frozen=True)
class _Job:
    """A check to run: a buffer's text at one version, not before `due` (a `time.monotonic()`)."""

    uri: str
    version: int | None
    source: str
    due: float
    cells: tuple[tuple[str, int | None], ...] = ()
    """For a notebook (`source` is then its nbformat JSON): the URI and version of each of its cells."""


@dataclass
class _Result:
    """A finished check: the messages for the client, and the findings to publish (as the engine and
    as LSP states them; None when the check failed) if `job.version` is still the buffer's."""

    job: _Job
    seconds: float = 0.0
    shown: list[types.ShowMessageParams] = field(default_factory=list)
    logged: list[types.LogMessageParams] = field(default_factory=list)
    findings: list[Diagnostic] | None = None
    published: list[types.Diagnostic] = field(default_factory=list)
    cells: dict[str, tuple[list[Diagnostic], list[types.Diagnostic]]] = field(default_factory=dict)
    """For a notebook: per code cell URI, its findings (positions within the cell) and as LSP states them."""


class _Checker:
    """The check thread and its queue: at most one pending job per buffer (a newer version replaces it),
    the job due first run first. The thread is a daemon, so it never keeps the process alive."""

    def __init__(self, run: Callable[[_Job], None]) -> None:
        self._run = run
        self._pending: dict[str, _Job] = {}
        self._edited: dict[str, float] = {}
        """When each buffer was last submitted (an edit less than SETTLE after the last one waits)."""
        self._stopped = False
        self._condition = threading.Condition()
        threading.Thread(target=self._serve, name="jaxcheck-checks", daemon=True).start()

    def submit(self, uri: str, version: int | None, source: str,
               cells: tuple[tuple[str, int | None], ...] = ()) -> None:
        """Queue a check of `source` (a notebook's with `cells`), replacing the buffer's pending one."""
        now = time.monotonic()
        with self._condition:
            if self._stopped:
                return
            last = self._edited.get(uri)
            self._edited[uri] = now
            due = now + SETTLE if last is not None and now - last < SETTLE else now
            self._pending[uri] = _Job(uri, version, source, due, cells)
            self._condition.notify()

    def discard(self, uri: str) -> None:
        """Drop the buffer's pending check (a running one finishes; its result is then stale)."""
        with self._condition:
            self._pending.pop(uri, None)
            self._edited.pop(uri, None)

    def stop(self) -> None:
        """Drop every pending check and take no more (the server is shutting down)."""
        with self._condition:
            self._stopped = True
            self._pending.clear()

    def _serve(self) -> None:
        while True:
            self._run(self._next())

    def _next(self) -> _Job:
        """Wait for the pending job due first, and take it."""
        with self._condition:
            while True:
                wait = None
                if self._pending:
                    job = min(self._pending.values(), key=lambda pending: pending.due)
                    wait = job.due - time.monotonic()
                    if wait <= 0:
                        return self._pending.pop(job.uri)
                self._condition.wait(wait)


class JaxcheckServer(LanguageServer):
    """The language server; see the module docstring."""

    def __init__(self) -> None:
        super().__init__("jaxcheck", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                         notebook_document_sync=types.NotebookDocumentSyncOptions(notebook_selector=[
                             types.NotebookDocumentFilterWithCells(cells=[types.NotebookCellLanguage("python")])],
                             save=True))
        self.state = _State()
        self.walk_max_age = WALK_MAX_AGE
        self.shut_down = False
        self._checker: _Checker | None = None

    # ------------------------------------------------------------------------------ checking
    def schedule(self, uri: str) -> None:
        """Queue a check of the document's current version (on the message thread), or refuse it when it
        is over MAX_BUFFER_BYTES. A notebook's JSON opened as text is left alone (its cells come as a
        notebook document)."""
        if is_notebook(uri):
            return
        document = self.workspace.get_text_document(uri)
        source = document.source
        size = len(source) if source.isascii() else len(source.encode("utf-8", "surrogatepass"))
        if size > MAX_BUFFER_BYTES:
            self._refuse(uri, document.version, size)
            return
        self.state.oversized.discard(uri)
        if self._checker is None:
            loop = asyncio.get_running_loop()
            self._checker = _Checker(lambda job: self._run(loop, job))
        self._checker.submit(uri, document.version, source)

    def schedule_notebook(self, uri: str) -> None:
        """Queue a check of the notebook's current cells (on the message thread)."""
        notebook = self.workspace.get_notebook_document(notebook_uri=uri)
        if notebook is None:
            return
        cells: list[dict[str, object]] = []
        documents: list[tuple[str, int | None]] = []
        for cell in notebook.cells:
            document = self.workspace.get_text_document(cell.document)
            code = cell.kind == types.NotebookCellKind.Code and document.language_id in (None, "python")
            order = cell.execution_summary.execution_order if cell.execution_summary is not None else None
            cells.append({"cell_type": "code" if code else "markdown", "execution_count": order, "metadata": {},
                          "source": document.source})
            documents.append((cell.document, document.version))
        source = json.dumps({"cells": cells, "metadata": {"language_info": {"name": "python"}}, "nbformat": 4,
                             "nbformat_minor": 5})
        if len(source) > MAX_BUFFER_BYTES:
            self._refuse(uri, notebook.version, len(source))
            return
        self.state.oversized.discard(uri)
        if self._checker is None:
            loop = asyncio.get_running_loop()
            self._checker = _Checker(lambda job: self._run(loop, job))
        self._checker.submit(uri, notebook.version, source, tuple(documents))

    def _refuse(self, uri: str, version: int | None, size: int) -> None:
        """Do not check a buffer over MAX_BUFFER_BYTES: drop its pending check and, when it has just
        grown over the limit, clear its diagnostics and tell the client."""
        if self._checker is not None:
            self._checker.discard(uri)
        self._trace(f"not checking {uri} (version {version}): {size} bytes, over {MAX_BUFFER_BYTES}")
        if uri in self.state.oversized:
            return
        self.state.oversized.add(uri)
        self.state.findings.pop(uri, None)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[], version=version))
        self.window_show_message(types.ShowMessageParams(types.MessageType.Warning, (
            f"jaxcheck: {uri.rsplit('/', 1)[-1]} is not checked while it is edited: {size / 2**20:.1f} MiB is over "
            f"the {MAX_BUFFER_BYTES / 2**20:g} MiB limit (`jaxcheck check` checks it)")))

    def _run(self, loop: asyncio.AbstractEventLoop, job: _Job) -> None:
        """Run `job` (on the check thread) and hand its result to the message thread."""
        _post(loop, self._trace, f"checking {job.uri} (version {job.version})")
        start = time.perf_counter()
        result = self.check(job)
        result.seconds = time.perf_counter() - start
        _post(loop, self._deliver, result)

    def check(self, job: _Job) -> _Result:
        """Check a buffer as it was at `job.version` (on the check thread: nothing is sent from here)."""
        result = _Result(job)
        fs_path = to_fs_path(job.uri) if job.uri.startswith("file:") else None
        try:
            if job.cells:
                self._check_notebook(job, fs_path, result)
                return result
            if fs_path is None:  # an unsaved buffer (`untitled:`): default settings, no project around it
                report = check_source(job.source, job.uri)
            else:
                try:
                    linter = self.linter_for(Path(fs_path))
                except ConfigError as exc:
                    result.shown.append(types.ShowMessageParams(types.MessageType.Error, f"jaxcheck: {exc}"))
                    linter = Linter(Configuration())
                report = linter.check_file_in_project(Path(fs_path), encode_source(job.source), walk_max_age=self.walk_max_age)
            result.logged.extend(types.LogMessageParams(types.MessageType.Warning, f"jaxcheck: {error}")
                                 for error in report.errors)
            lines = job.source.splitlines(True)
            related = _RelatedFiles(job.uri, lines) if self._accepts_related_information() else None
            result.published = [_lsp_diagnostic(d, lines, related) for d in report.diagnostics]
            result.findings = report.diagnostics
        except Exception as exc:  # the server (and this thread) must outlive any bug in a rule or the engine
            LOG.exception("checking %s failed", job.uri)
            result.logged.append(types.LogMessageParams(types.MessageType.Error,
                                                        f"jaxcheck: checking {job.uri} failed: {exc!r}"))
        return result

    def _check_notebook(self, job: _Job, fs_path: str | None, result: _Result) -> None:
        """Check a notebook's cells as one program; each finding goes to the cell it is in."""
        data = job.source.encode("utf-8", "surrogatepass")
        report = self._report(fs_path, data, result) if fs_path is not None and fs_path.endswith(".ipynb") \
            else check_source(data, "notebook.ipynb")
        result.logged.extend(types.LogMessageParams(types.MessageType.Warning, f"jaxcheck: {error}")
                             for error in report.errors)
        index = read_notebook(data).index
        cells = _NotebookCells(job.cells, index, [str(cell["source"]) for cell in json.loads(job.source)["cells"]])
        result.cells = {uri: ([], []) for uri, _ in (job.cells[number - 1] for number in index.cells)}
        related = self._accepts_related_information()
        for finding in report.diagnostics:
            uri, in_cell = cells.finding(finding)
            located = [cells.location(finding, note) for note in finding.related]
            result.cells[uri][0].append(in_cell)
            result.cells[uri][1].append(_lsp_diagnostic(in_cell, cells.lines(uri), notes=located if related else None))
            cell = index.place(finding.range.start).cell
            for note in located:
                if note.location.uri != uri and note.location.uri in result.cells:
                    result.cells[note.location.uri][1].append(types.Diagnostic(
                        range=note.location.range, message=f"{note.message} (for {finding.code} in cell {cell})",
                        severity=types.DiagnosticSeverity.Information, code=finding.code, source=SOURCE,
                        code_description=types.CodeDescription(href=finding.url)))
        result.findings = report.diagnostics

    def _report(self, fs_path: str, data: bytes, result: _Result) -> CheckReport:
        """The findings of a file's current `data`, with its project around it."""
        try:
            linter = self.linter_for(Path(fs_path))
        except ConfigError as exc:
            result.shown.append(types.ShowMessageParams(types.MessageType.Error, f"jaxcheck: {exc}"))
            linter = Linter(Configuration())
        return linter.check_file_in_project(Path(fs_path), data, walk_max_age=self.walk_max_age)

    def _deliver(self, result: _Result) -> None:
        """Send a finished check's messages, and publish its findings if its version is still the
        buffer's (on the message thread)."""
        for shown in result.shown:
            self.window_show_message(shown)
        for logged in result.logged:
            self.window_log_message(logged)
        job = result.job
        if job.cells:
            self._deliver_notebook(result)
            return
        current = not self.shut_down and self.workspace.get_text_document(job.uri).version == job.version
        outcome = "superseded" if not current else "failed" if result.findings is None else "published"
        if current and result.findings is not None:
            self.state.findings[job.uri] = (job.version, result.findings)
            self.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=job.uri, diagnostics=result.published, version=job.version))
        # Traced after publishing: a client reading the trace has the diagnostics already.
        self._trace(f"checked {job.uri} (version {job.version}) in {result.seconds:.3f} s: {outcome}")

    def _deliver_notebook(self, result: _Result) -> None:
        """Publish a notebook check's findings on each code cell, if the notebook is still at its version."""
        job = result.job
        notebook = self.workspace.get_notebook_document(notebook_uri=job.uri)
        current = not self.shut_down and notebook is not None and notebook.version == job.version
        if current and result.findings is not None:
            versions = dict(job.cells)
            for uri, (findings, published) in result.cells.items():
                self.state.findings[uri] = (versions.get(uri), findings)
                self.text_document_publish_diagnostics(
                    types.PublishDiagnosticsParams(uri=uri, diagnostics=published, version=versions.get(uri)))
            for uri in versions.keys() - result.cells.keys():  # a cell that is no Python code cell (any more)
                if self.state.findings.pop(uri, None) is not None:
                    self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
        outcome = "superseded" if not current else "failed" if result.findings is None else "published"
        self._trace(f"checked {job.uri} (version {job.version}) in {result.seconds:.3f} s: {outcome}")

    def forget_notebook(self, params: types.DidCloseNotebookDocumentParams) -> None:
        """Clear a closed notebook's diagnostics (on each of its cells) and drop its pending check."""
        if self._checker is not None:
            self._checker.discard(params.notebook_document.uri)
        self.forget_cells(cell.uri for cell in params.cell_text_documents)

    def forget_cells(self, uris: Iterable[str]) -> None:
        """Clear the diagnostics of notebook cells that are gone (closed with their notebook, or removed)."""
        for uri in uris:
            self.state.findings.pop(uri, None)
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    def _trace(self, message: str) -> None:
        """`$/logTrace` the message when the client asked for tracing."""
        if self.protocol.trace != types.TraceValue.Off:
            self.log_trace(types.LogTraceParams(message=message))

    def linter_for(self, path: Path) -> Linter:
        """The linter with the settings of the nearest configuration above `path` (ConfigError when
        that file is broken); one per configuration file, replaced when the file changes."""
        configuration = load_configuration(None, path if path.exists() else path.parent)
        source = configuration.source
        stamp = (0, 0)
        if source is not None:
            status = source.stat()
            stamp = (status.st_size, status.st_mtime_ns)
        key = str(source) if source is not None else None
        known = self.state.linters.get(key)
        if known is not None and known[0] == stamp:
            return known[1]
        linter = Linter(configuration)
        self.state.linters[key] = (stamp, linter)
        return linter

    async def watch_project_files(self) -> None:
        """Ask a client that can watch files to tell the server of FILE_WATCHERS' files, so the project
        listing is walked again only when a file was created or deleted (WATCHED_WALK_MAX_AGE)."""
        workspace = self.client_capabilities.workspace
        watching = workspace.did_change_watched_files if workspace is not None else None
        if watching is None or not watching.dynamic_registration:
            return
        options = types.DidChangeWatchedFilesRegistrationOptions(
            watchers=[types.FileSystemWatcher(glob_pattern=pattern) for pattern in FILE_WATCHERS])
        await self.client_register_capability_async(types.RegistrationParams(registrations=[types.Registration(
            id="jaxcheck-project-files", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES, register_options=options)]))
        self.walk_max_age = WATCHED_WALK_MAX_AGE

    @staticmethod
    def files_changed(params: types.DidChangeWatchedFilesParams) -> None:
        """A watched file changed: a file created or deleted, or any change to a `.gitignore`, makes the
        next check walk its project again (a changed file's new text is seen without a walk)."""
        if any(event.type != types.FileChangeType.Changed or event.uri.endswith("/.gitignore")
               for event in params.changes):
            forget_project_listings()

    def _accepts_related_information(self) -> bool:
        """Whether the client takes `relatedInformation` (the notes that say why code is traced)."""
        text_document = self.client_capabilities.text_document
        publishing = text_document.publish_diagnostics if text_document is not None else None
        return bool(publishing is not None and publishing.related_information)

    def forget(self, uri: str) -> None:
        """Clear a closed document's diagnostics and drop its pending check."""
        if self._checker is not None:
            self._checker.discard(uri)
        self.state.findings.pop(uri, None)
        self.state.oversized.discard(uri)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    def shutdown_checks(self) -> None:
        """The `shutdown` request: drop pending checks, take no more and publish nothing more."""
        self.shut_down = True
        if self._checker is not None:
            self._checker.stop()

    # --------------------------------------------------------------------------- code actions
    def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        """Fixes, noqa and documentation actions for the findings that touch the requested range."""
        uri = params.text_document.uri
        checked = self.state.findings.get(uri)
        document = self.workspace.get_text_document(uri)
        if checked is None or checked[0] != document.version:
            return []  # no findings, or computed for an older text: their edits would land in the wrong place
        findings = checked[1]
        if not findings:  # (also an oversized buffer: splitting it into lines alone would take a while)
            return []
        lines = document.lines
        actions: list[types.CodeAction] = []
        for finding in findings:
            diagnostic = _lsp_diagnostic(finding, lines)
            if not _overlaps(diagnostic.range, params.range):
                continue
            if finding.fix is not None:
                actions.append(_fix_action(uri, finding.fix, diagnostic, lines))
            actions.append(_noqa_action(uri, finding, diagnostic, lines))
            actions.append(types.CodeAction(
                title=f"Show documentation for {finding.code} ({finding.name})",
                kind=types.CodeActionKind.QuickFix, diagnostics=[diagnostic],
                command=types.Command(title="Show rule documentation", command=SHOW_DOCUMENTATION,
                                      arguments=[finding.url]),
            ))
        return actions

    def show_documentation(self, arguments: Sequence[Any]) -> None:
        """Ask the client to open a rule's page in the browser."""
        if arguments and isinstance(arguments[0], str) and arguments[0].startswith("https://"):
            self.window_show_document(types.ShowDocumentParams(uri=arguments[0], external=True))


def build_server() -> JaxcheckServer:
    """A server with every feature registered."""
    server = JaxcheckServer()

    def did_open(ls: JaxcheckServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri)

    def did_change(ls: JaxcheckServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri)

    def did_save(ls: JaxcheckServer, params: types.DidSaveTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri)

    def did_close(ls: JaxcheckServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.forget(params.text_document.uri)

    def notebook_did_open(ls: JaxcheckServer, params: types.DidOpenNotebookDocumentParams) -> None:
        ls.schedule_notebook(params.notebook_document.uri)

    def notebook_did_change(ls: JaxcheckServer, params: types.DidChangeNotebookDocumentParams) -> None:
        structure = params.change.cells.structure if params.change.cells is not None else None
        if structure is not None and structure.did_close:  # cells removed: their diagnostics go with them
            ls.forget_cells(cell.uri for cell in structure.did_close)
        ls.schedule_notebook(params.notebook_document.uri)

    def notebook_did_save(ls: JaxcheckServer, params: types.DidSaveNotebookDocumentParams) -> None:
        ls.schedule_notebook(params.notebook_document.uri)

    def notebook_did_close(ls: JaxcheckServer, params: types.DidCloseNotebookDocumentParams) -> None:
        ls.forget_notebook(params)

    async def initialized(ls: JaxcheckServer, params: types.InitializedParams) -> None:
        try:
            await ls.watch_project_files()
        except Exception:  # a client that refuses the registration: the listing is walked by age
            LOG.exception("registering file watchers failed")

    def files_changed(ls: JaxcheckServer, params: types.DidChangeWatchedFilesParams) -> None:
        ls.files_changed(params)

    def code_action(ls: JaxcheckServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        try:
            return ls.code_actions(params)
        except Exception:
            LOG.exception("code actions failed")
            return []

    def show_documentation(ls: JaxcheckServer, *arguments: Any) -> None:
        try:
            ls.show_documentation(arguments)
        except Exception:
            LOG.exception("showing the documentation failed")

    def on_shutdown(ls: JaxcheckServer, params: None) -> None:
        ls.shutdown_checks()

    def on_exit(ls: JaxcheckServer, params: None) -> None:  # pygls calls this first, then would wait for threads
        _end(0 if ls.shut_down else 1)

    server.feature(types.TEXT_DOCUMENT_DID_OPEN)(_guarded(did_open))
    server.feature(types.TEXT_DOCUMENT_DID_CHANGE)(_guarded(did_change))
    server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))(_guarded(did_save))
    server.feature(types.TEXT_DOCUMENT_DID_CLOSE)(_guarded(did_close))
    server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)(_guarded(notebook_did_open))
    server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)(_guarded(notebook_did_change))
    server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)(_guarded(notebook_did_save))
    server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)(_guarded(notebook_did_close))
    server.feature(types.INITIALIZED)(initialized)
    server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)(_guarded(files_changed))
    server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix]))(code_action)
    server.command(SHOW_DOCUMENTATION)(show_documentation)
    server.feature(types.SHUTDOWN)(on_shutdown)
    server.feature(types.EXIT)(on_exit)
    return server


def serve() -> NoReturn:
    """Run the server over stdio until the client sends `exit` or closes its input, then end the
    process. SIGTERM ends it at once (the default action: the console script's handler would only
    raise between bytecodes of the message thread)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    build_server().start_io()
    _end(0)


def _end(status: int) -> NoReturn:
    """End the process now: a check still running on its thread is abandoned, not waited for."""
    logging.shutdown()
    os._exit(status)


def _post(loop: asyncio.AbstractEventLoop, callback: Callable[..., None], *arguments: Any) -> None:
    """Run `callback(*arguments)` on the message thread (nothing once its loop is closed: the process
    is ending)."""
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(callback, *arguments)


# ------------------------------------------------------------------------------------ helpers
def _guarded(handler: Any) -> Any:
    """`handler` with any exception logged instead of raised (a notification has no reply to fail)."""

    def run(ls: JaxcheckServer, params: Any) -> None:
        try:
            handler(ls, params)
        except Exception as exc:
            LOG.exception("handler failed")
            ls.window_log_message(types.LogMessageParams(types.MessageType.Error, f"jaxcheck: internal error: {exc!r}"))

    return run


def _utf16_column(lines: Sequence[str], line: int, column: int) -> int:
    """A 0-based code-point column on 1-based `line` as the UTF-16 offset LSP counts in."""
    if not 1 <= line <= len(lines):
        return column
    prefix = lines[line - 1][:column]
    return column + sum(1 for char in prefix if ord(char) > 0xFFFF)


def _lsp_position(lines: Sequence[str], line: int, column: int) -> types.Position:
    return types.Position(line=max(line - 1, 0), character=_utf16_column(lines, line, column))


def _lsp_range(lines: Sequence[str], start: tuple[int, int], end: tuple[int, int]) -> types.Range:
    return types.Range(start=_lsp_position(lines, *start), end=_lsp_position(lines, *end))


def _lsp_diagnostic(finding: Diagnostic, lines: Sequence[str], related: _RelatedFiles | None = None,
                    notes: list[types.DiagnosticRelatedInformation] | None = None) -> types.Diagnostic:
    """`finding` as LSP states it; with `related`, its notes (the trace chain, where a value changes) as
    `relatedInformation`, in this buffer or in the files they cite (`notes`: located already)."""
    if related is not None and finding.related:
        notes = [related.location(note) for note in finding.related]
    start, end = finding.range.start, finding.range.end
    return types.Diagnostic(
        range=_lsp_range(lines, (start.line, start.column), (end.line, end.column)),
        message=finding.message, severity=types.DiagnosticSeverity.Warning, code=finding.code,
        code_description=types.CodeDescription(href=finding.url), source=SOURCE,
        related_information=notes or None,
    )


class _NotebookCells:
    """Maps a notebook check's findings (positions in the module its code cells make) to its cells."""

    def __init__(self, cells: Sequence[tuple[str, int | None]], index: NotebookIndex, sources: Sequence[str]) -> None:
        self.uris = [uri for uri, _ in cells]
        self.index = index
        self._lines = {uri: source.splitlines(True) for uri, source in zip(self.uris, sources)}
        self._related = _RelatedFiles("", ())

    def lines(self, uri: str) -> Sequence[str]:
        """The cell's lines."""
        return self._lines.get(uri, ())

    def _in_cell(self, position: Position) -> tuple[str, Position]:
        place = self.index.place(position)
        return self.uris[(place.cell or 1) - 1], Position(place.line, place.column)

    def _range(self, span: Range) -> tuple[str, Range]:
        uri, start = self._in_cell(span.start)
        end_uri, end = self._in_cell(span.end)
        return uri, Range(start, end if end_uri == uri else start)

    def finding(self, finding: Diagnostic) -> tuple[str, Diagnostic]:
        """The cell a finding is in, and the finding with positions within that cell (its fix too)."""
        uri, span = self._range(finding.range)
        fix = finding.fix
        if fix is not None:
            fix = replace(fix, edits=tuple(replace(edit, range=self._range(edit.range)[1]) for edit in fix.edits))
        return uri, replace(finding, range=span, fix=fix, related=())

    def location(self, finding: Diagnostic, note: RelatedLocation) -> types.DiagnosticRelatedInformation:
        """A note as LSP states it: in the cell it lies in, or in the other file it cites."""
        if note.path is not None and note.path != finding.path:
            return self._related.location(note)
        uri, span = self._range(note.range)
        lines = self.lines(uri)
        where = types.Location(uri=uri, range=_lsp_range(lines, (span.start.line, span.start.column),
                                                         (span.end.line, span.end.column)))
        return types.DiagnosticRelatedInformation(location=where, message=note.message)


class _RelatedFiles:
    """Locates the notes of one buffer's findings: in the buffer itself, or in another file (read once,
    for its UTF-16 columns; a file that cannot be read keeps code-point columns)."""

    def __init__(self, uri: str, lines: Sequence[str]) -> None:
        self.uri = uri
        self.lines = lines
        self._files: dict[str, tuple[str, Sequence[str]]] = {}

    def location(self, note: RelatedLocation) -> types.DiagnosticRelatedInformation:
        uri, lines = (self.uri, self.lines) if note.path is None else self._file(note.path)
        start, end = note.range.start, note.range.end
        where = types.Location(uri=uri, range=_lsp_range(lines, (start.line, start.column), (end.line, end.column)))
        return types.DiagnosticRelatedInformation(location=where, message=note.message)

    def _file(self, path: str) -> tuple[str, Sequence[str]]:
        known = self._files.get(path)
        if known is None:
            resolved = Path(path).resolve()
            try:
                lines: Sequence[str] = resolved.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                lines = ()
            known = self._files[path] = (resolved.as_uri(), lines)
        return known


def _overlaps(a: types.Range, b: types.Range) -> bool:
    def key(position: types.Position) -> tuple[int, int]:
        return position.line, position.character

    return key(a.start) <= key(b.end) and key(b.start) <= key(a.end)


def _fix_action(uri: str, fix: Fix, diagnostic: types.Diagnostic, lines: Sequence[str]) -> types.CodeAction:
    edits = [types.TextEdit(range=_lsp_range(lines, (e.range.start.line, e.range.start.column),
                                             (e.range.end.line, e.range.end.column)), new_text=e.content)
             for e in fix.edits]
    safe = fix.applicability == "safe"
    return types.CodeAction(
        title=fix.title if safe else f"{fix.title} (unsafe)", kind=types.CodeActionKind.QuickFix,
        diagnostics=[diagnostic], is_preferred=safe, edit=types.WorkspaceEdit(changes={uri: edits}),
    )


def _noqa_action(uri: str, finding: Diagnostic, diagnostic: types.Diagnostic,
                 lines: Sequence[str]) -> types.CodeAction:
    """Add the code to the `# noqa` comment of the finding's first line, or add one."""
    number = finding.range.start.line
    text = lines[number - 1].rstrip("\r\n") if 1 <= number <= len(lines) else ""
    match = _NOQA.search(text)
    if match is None:
        new = f"{text.rstrip()}  # noqa: {finding.code}"
    elif match.group("codes") is None:
        new = text  # a blanket noqa already suppresses everything
    else:
        codes = match.group("codes")
        new = text[: match.start("codes")] + f"{codes}, {finding.code}" + text[match.end("codes"):]
    end = _utf16_column(lines, number, len(text))
    edit = types.TextEdit(range=types.Range(start=types.Position(number - 1, 0), end=types.Position(number - 1, end)),
                          new_text=new)
    return types.CodeAction(
        title=f"Suppress with `# noqa: {finding.code}`", kind=types.CodeActionKind.QuickFix,
        diagnostics=[diagnostic], edit=types.WorkspaceEdit(changes={uri: [edit]}),
    )
