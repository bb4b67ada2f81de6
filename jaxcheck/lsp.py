"""`jaxcheck server`: a language server over stdio (pygls and lsprotocol, the `server` extra).

Diagnostics are published when a document is opened, changed and saved, each with its rule's page as
`codeDescription.href` and, for a client that takes them, its notes (why the code is traced, where a
value changes) as `relatedInformation`. Code actions offer every fix of a diagnostic (safe ones as preferred quick
fixes, unsafe ones marked so), "suppress with `# noqa: JAXnnn`" and "show rule documentation" (the
server asks the client to open the rule's page). Settings come from the nearest `[tool.jaxcheck]`
above each document, read again when that file changes.

The process keeps the project warm: the texts and summaries of the modules that import an open file
are kept per process while those files are unchanged (see `Linter.check_file_in_project`), so an edit
re-parses the edited buffer only. Handlers never let an exception reach pygls: a buffer that does not
parse gives the JAX001 diagnostic, and an internal error is logged to the client and clears nothing.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from jaxcheck.analyzer.config import ConfigError, Configuration, load_configuration
from jaxcheck.analyzer.diagnostics import Diagnostic, Fix, RelatedLocation
from jaxcheck.analyzer.engine import Linter, check_source
from jaxcheck.analyzer.source import encode_source
from jaxcheck.version import __version__

LOG = logging.getLogger(__name__)

SHOW_DOCUMENTATION = "jaxcheck.showRuleDocumentation"
SOURCE = "jaxcheck"
WALK_MAX_AGE = 10.0
"""Seconds the listing of the project's files is reused between checks (walking a large project with
its `.gitignore` files costs more than linting the edited buffer); a new file is seen after that."""
_NOQA = re.compile(r"#\s*noqa(?::\s?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)


@dataclass
class _State:
    """What the server remembers between requests: the last findings per document, and a linter per
    configuration file (rebuilt when that file's stamp changes)."""

    findings: dict[str, list[Diagnostic]] = field(default_factory=dict)
    linters: dict[tuple[str, int, int], Linter] = field(default_factory=dict)


class JaxcheckServer(LanguageServer):
    """The language server; see the module docstring."""

    def __init__(self) -> None:
        super().__init__("jaxcheck", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.state = _State()

    # ------------------------------------------------------------------------------ checking
    def linter_for_document(self, path: Path) -> Linter:
        """:meth:`linter_for`, or default settings (and a message) when the configuration is broken."""
        try:
            return self.linter_for(path)
        except ConfigError as exc:
            self.window_show_message(types.ShowMessageParams(types.MessageType.Error, f"jaxcheck: {exc}"))
            return Linter(Configuration())

    def linter_for(self, path: Path) -> Linter:
        """The linter with the settings of the nearest configuration above `path` (ConfigError when
        that file is broken)."""
        configuration = load_configuration(None, path if path.exists() else path.parent)
        source = configuration.source
        stamp = (str(source), 0, 0)
        if source is not None:
            status = source.stat()
            stamp = (str(source), status.st_size, status.st_mtime_ns)
        linter = self.state.linters.get(stamp)
        if linter is None:
            linter = self.state.linters[stamp] = Linter(configuration)
        return linter

    def check(self, uri: str) -> None:
        """Check the document at `uri` as it is in the editor and publish its diagnostics."""
        document = self.workspace.get_text_document(uri)
        fs_path = to_fs_path(uri) if uri.startswith("file:") else None
        try:
            if fs_path is None:  # an unsaved buffer (`untitled:`): default settings, no project around it
                report = check_source(document.source, uri)
            else:
                report = self.linter_for_document(Path(fs_path)).check_file_in_project(
                    Path(fs_path), encode_source(document.source), walk_max_age=WALK_MAX_AGE)
        except Exception as exc:  # the server must outlive any bug in a rule or the engine
            LOG.exception("checking %s failed", uri)
            self.window_log_message(types.LogMessageParams(types.MessageType.Error,
                                                           f"jaxcheck: checking {uri} failed: {exc!r}"))
            return
        for error in report.errors:
            self.window_log_message(types.LogMessageParams(types.MessageType.Warning, f"jaxcheck: {error}"))
        lines = document.lines
        self.state.findings[uri] = report.diagnostics
        related = _RelatedFiles(uri, lines) if self._accepts_related_information() else None
        published = [_lsp_diagnostic(d, lines, related) for d in report.diagnostics]
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=published, version=document.version))

    def _accepts_related_information(self) -> bool:
        """Whether the client takes `relatedInformation` (the notes that say why code is traced)."""
        text_document = self.client_capabilities.text_document
        publishing = text_document.publish_diagnostics if text_document is not None else None
        return bool(publishing is not None and publishing.related_information)

    def forget(self, uri: str) -> None:
        """Clear a closed document's diagnostics."""
        self.state.findings.pop(uri, None)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    # --------------------------------------------------------------------------- code actions
    def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        """Fixes, noqa and documentation actions for the findings that touch the requested range."""
        uri = params.text_document.uri
        document = self.workspace.get_text_document(uri)
        lines = document.lines
        actions: list[types.CodeAction] = []
        for finding in self.state.findings.get(uri, []):
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
        ls.check(params.text_document.uri)

    def did_change(ls: JaxcheckServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.check(params.text_document.uri)

    def did_save(ls: JaxcheckServer, params: types.DidSaveTextDocumentParams) -> None:
        ls.check(params.text_document.uri)

    def did_close(ls: JaxcheckServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.forget(params.text_document.uri)

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

    server.feature(types.TEXT_DOCUMENT_DID_OPEN)(_guarded(did_open))
    server.feature(types.TEXT_DOCUMENT_DID_CHANGE)(_guarded(did_change))
    server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))(_guarded(did_save))
    server.feature(types.TEXT_DOCUMENT_DID_CLOSE)(_guarded(did_close))
    server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix]))(code_action)
    server.command(SHOW_DOCUMENTATION)(show_documentation)
    return server


def serve() -> int:
    """Run the server over stdio until the client exits; the process's exit status."""
    build_server().start_io()
    return 0


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


def _lsp_diagnostic(finding: Diagnostic, lines: Sequence[str], related: _RelatedFiles | None = None) -> types.Diagnostic:
    """`finding` as LSP states it; with `related`, its notes (the trace chain, where a value changes) as
    `relatedInformation`, in this buffer or in the files they cite."""
    start, end = finding.range.start, finding.range.end
    return types.Diagnostic(
        range=_lsp_range(lines, (start.line, start.column), (end.line, end.column)),
        message=finding.message, severity=types.DiagnosticSeverity.Warning, code=finding.code,
        code_description=types.CodeDescription(href=finding.url), source=SOURCE,
        related_information=[related.location(note) for note in finding.related] if related and finding.related else None,
    )


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
