"""`%load_ext jaxcheck`: the runtime companion for an IPython shell or a Jupyter kernel.

Loading the extension installs the checks for the session, with the settings of `[tool.jaxcheck.runtime]` in
the nearest pyproject.toml (as `jaxcheck run` does). After each cell, the findings it produced are displayed
under it, as HTML where the front end renders it and as text otherwise, each placed at its cell and line
(`Cell In[5], line 3`, as IPython's tracebacks name cells).

In mode `warn` the checks run in mode `collect` and that display replaces the warning: a finding is shown
once, in the cell's output, instead of as a warning on stderr naming `<ipython-input-5-9f8e...>` (as the
pytest plugin collects findings for its own report). Mode `raise` raises as anywhere else; mode `collect`
displays nothing (`%jaxcheck status` counts the findings). A finding the cell's traceback already shows
(the raised :class:`RuntimeCheckError`, or a note where the shell shows exception notes) is not repeated.

`%jaxcheck on [--option[=value] ...]`, `%jaxcheck off` and `%jaxcheck status` switch and inspect the checks.
Functions jitted while the checks were on stay checked wrappers, which follow the session active when they
are called (see :mod:`jaxcheck.runtime_checks.session`): while off, that is a quiet session (mode `collect`,
every optional check off), so `%jaxcheck off` stops their reports too. `%jaxcheck on` watches their globals
for the values their traces read again, so a global changed while off is reported at the next stale call.
"""

from __future__ import annotations

import html
import linecache
import os
import re
import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import jax
from IPython.core.error import UsageError
from IPython.display import display
from pydantic import ValidationError

from jaxcheck import runtime
from jaxcheck.analyzer.config import ConfigError, RuntimeSettings, load_configuration
from jaxcheck.analyzer.diagnostics import Diagnostic
from jaxcheck.runtime_checks import originals
from jaxcheck.runtime_checks.checked import LIVE, flush
from jaxcheck.runtime_checks.report import RuntimeCheckError, headline, url_of
from jaxcheck.runtime_checks.session import Session, activate, current, new_session

MAGIC = "jaxcheck"
QUIET = RuntimeSettings(mode="collect", stale_globals=False, side_effects=False, hidden_state=False, key_reuse=False)
"""The settings of the session active while the checks are off (see the module docstring)."""
_FILE_NAMES = re.compile(r"<ipython-input-[^<>\s]*>|[^\s'\"`()]+\.py\b")
"""What may name a cell's code in a message: IPython's `<ipython-input-5-...>`, a kernel's `/tmp/.../123.py`."""


def _usage() -> str:
    """The magic's synopsis, one line, built from the settings' fields."""
    options = []
    for name, info in RuntimeSettings.model_fields.items():
        flag = name.replace("_", "-")
        if info.annotation is bool:
            options.append(f"[--{'no-' if info.default else ''}{flag}]")
        elif name == "mode":
            options.append("[--mode warn|raise|collect]")
        else:
            options.append(f"[--{flag} N]")
    return f"usage: %{MAGIC} on {' '.join(options)} | %{MAGIC} off | %{MAGIC} status"


def parse_options(words: list[str], base: RuntimeSettings) -> RuntimeSettings:
    """`base` updated with `--key value`, `--key=value`, `--flag` and `--no-flag` words (keys as in
    `[tool.jaxcheck.runtime]`). Raises UsageError, with a one-line message, on anything else."""
    fields = RuntimeSettings.model_fields
    values: dict[str, Any] = {}
    words = list(words)
    while words:
        word = words.pop(0)
        flag, has_value, value = word.removeprefix("--").partition("=")
        key = flag.replace("-", "_")
        negated = key.removeprefix("no_")
        if not word.startswith("--"):
            raise UsageError(f"{MAGIC}: unexpected {word!r}; {_usage()}")
        if key not in fields and negated in fields and fields[negated].annotation is bool and not has_value:
            values[negated] = False
        elif key not in fields:
            raise UsageError(f"{MAGIC}: unknown option --{flag}; {_usage()}")
        elif fields[key].annotation is bool and not has_value:
            values[key] = True
        elif has_value:
            values[key] = value
        elif words:
            values[key] = words.pop(0)
        else:
            raise UsageError(f"{MAGIC}: --{flag} needs a value; {_usage()}")
    try:
        return RuntimeSettings.model_validate({**base.model_dump(), **values})
    except ValidationError as exc:
        error = exc.errors()[0]
        place = str(error["loc"][0]).replace("_", "-") if error["loc"] else "options"
        raise UsageError(f"{MAGIC}: --{place}: {error['msg']}") from None


def describe(settings: RuntimeSettings) -> str:
    """`settings` as the options that give them: the mode, then every setting that is not its default."""
    words = [f"--mode={settings.mode}"]
    for name, info in RuntimeSettings.model_fields.items():
        value = getattr(settings, name)
        if name != "mode" and value != info.default:
            flag = name.replace("_", "-")
            words.append(f"--{'' if value else 'no-'}{flag}" if isinstance(value, bool) else f"--{flag}={value}")
    return " ".join(words)


@dataclass(frozen=True)
class Shown:
    """One finding as displayed: `place` names its cell and line (or its file and line outside cells),
    `source` is the text of that line ("" when unknown)."""

    diagnostic: Diagnostic
    place: str
    source: str


@dataclass(frozen=True)
class Findings:
    """The findings of one cell, displayed under it: `_repr_html_` for front ends that render HTML, the
    text (``repr``) for the others."""

    shown: tuple[Shown, ...]

    def __repr__(self) -> str:
        lines = []
        for item in self.shown:
            diag = item.diagnostic
            lines.append(f"jaxcheck: {item.place}: {diag.code} {diag.message}")
            if item.source:
                lines.append(f"    {item.source}")
            if diag.fix is not None:
                lines.append(f"  Fix: {diag.fix.title}")
            lines.append(f"  {url_of(diag)}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        items = []
        for item in self.shown:
            diag = item.diagnostic
            source = f"<pre style='margin:2px 0'>{html.escape(item.source)}</pre>" if item.source else ""
            fix = f"<div>Fix: {html.escape(diag.fix.title)}</div>" if diag.fix is not None else ""
            items.append(
                f"<div style='border-left:3px solid #e6a700;padding:2px 8px;margin:4px 0'>"
                f"<b>jaxcheck</b> {html.escape(item.place)}: "
                f"<a href='{html.escape(url_of(diag))}' target='_blank'><code>{diag.code}</code> {diag.name}</a>"
                f"<div>{html.escape(diag.message)}</div>{source}{fix}</div>"
            )
        return "".join(items)


def _told_by(error: BaseException | None, notes_shown: bool) -> tuple[set[Diagnostic], set[str]]:
    """The findings the traceback of `error` (and of the exceptions it chains) shows already: raised ones,
    and the texts of its notes when the shell shows notes."""
    raised: set[Diagnostic] = set()
    notes: set[str] = set()
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, RuntimeCheckError):
            raised.add(error.diagnostic)
        if notes_shown:
            notes.update(getattr(error, "__notes__", ()))
        error = error.__cause__ or error.__context__
    return raised, notes


def traceback_shows_notes(shell: Any) -> bool:
    """True when the shell's tracebacks show exception notes (IPython 8.12 does not; later versions do)."""
    try:
        raise ValueError("probe")
    except ValueError as probe:
        probe.add_note("jaxcheck-note-probe")
        try:
            lines = shell.InteractiveTB.structured_traceback(ValueError, probe, probe.__traceback__)
        except Exception:  # noqa: BLE001 - a front end whose formatter fails here is taken not to show notes
            return False
    return any("jaxcheck-note-probe" in line for line in lines)


@dataclass
class KernelChecks:
    """The extension's state in one shell: the settings while the checks are on (None when off), the
    findings list of the current install, how many of it are handled, the findings of earlier ones, and
    the session the quiet one replaced while that is active (see the module docstring)."""

    shell: Any
    notes_shown: bool
    settings: RuntimeSettings | None = None
    findings: list[Diagnostic] = field(default_factory=list)
    handled: int = 0
    earlier: int = 0
    outside: Session | None = None

    def start(self, settings: RuntimeSettings) -> None:
        """Install the checks with `settings` (mode `warn` collects; see the module docstring)."""
        mode = "collect" if settings.mode == "warn" else settings.mode
        self.findings = runtime.install(settings.model_copy(update={"mode": mode}))
        self.settings, self.handled = settings, 0

    def stop(self) -> None:
        """Read pending findings, display them, and uninstall the checks. Raises UsageError when another
        install (`jaxcheck.runtime.install()` in a cell) is still active above this one."""
        if current().reporter.findings is not self.findings:
            raise UsageError(f"{MAGIC}: a jaxcheck.runtime.install() made in a cell is still active: "
                             "call jaxcheck.runtime.uninstall() first")
        self.show_new(None)
        runtime.uninstall()
        if jax.jit is originals.jit and self.outside is None:  # no install is left
            self.outside = activate(new_session(QUIET))
        self.earlier += len(self.findings)
        self.settings, self.findings, self.handled = None, [], 0

    def leave(self) -> None:
        """Switch the checks off and make the session active before :func:`load` active again."""
        if self.settings is not None:
            self.stop()
        if self.outside is not None:
            activate(self.outside)
            self.outside = None

    def show_new(self, error: BaseException | None) -> None:
        """Read pending NaN flags and bounds tables, then display the findings not handled yet, less the
        ones the traceback of `error` (the cell's exception) shows; nothing in mode `collect`."""
        try:
            flush()
        except RuntimeCheckError:
            pass  # mode raise: the finding is in `self.findings`, and no traceback shows it
        new, self.handled = self.findings[self.handled:], len(self.findings)
        if self.settings is None or self.settings.mode == "collect":
            return
        raised, notes = _told_by(error, self.notes_shown)
        shown = tuple(self.shown(diag) for diag in new
                      if diag not in raised and "jaxcheck: " + headline(diag) not in notes)
        if shown:
            display(Findings(shown))  # type: ignore[no-untyped-call]  # IPython ships no type hints

    def shown(self, diag: Diagnostic) -> Shown:
        """`diag` placed at its cell (`Cell In[5], line 3`) when its path is a cell's, else at its file; the
        cells its message names are named so too."""
        line, cell = diag.range.start.line, self.cell_name(diag.path)
        place = f"{cell}, line {line}" if cell else f"{diag.path}:{line}"
        path = diag.path if diag.path.startswith("<") else os.path.abspath(diag.path)
        message = _FILE_NAMES.sub(lambda found: self.cell_name(found.group()) or found.group(), diag.message)
        return Shown(replace(diag, message=message), place, linecache.getline(path, line).strip())

    def cell_name(self, path: str) -> str | None:
        """`Cell In[5]` when `path` names the code of a cell, else None."""
        named = self.shell.compile.format_code_name(path if path.startswith("<") else os.path.abspath(path))
        return f"{named[0]} {named[1]}" if named else None

    def after_cell(self, result: Any) -> None:
        """The `post_run_cell` event: display what the cell found (see :meth:`show_new`)."""
        if self.settings is not None:
            self.show_new(result.error_in_exec)

    def magic(self, line: str) -> None:
        """`%jaxcheck on [--option ...] | off | status`; a one-line UsageError on anything else."""
        try:
            words = shlex.split(line)
        except ValueError as exc:
            raise UsageError(f"{MAGIC}: {exc}; {_usage()}") from None
        command, options = (words[0], words[1:]) if words else ("", [])
        if command == "on":
            settings = parse_options(options, project_settings())
            was_off = self.settings is None
            if not was_off:
                self.stop()
            self.start(settings)
            if was_off and settings.stale_globals:
                _watch_traced_values()
            print(f"jaxcheck: on ({describe(settings)})")
        elif command == "off" and not options:
            if self.settings is not None:
                self.stop()
            print("jaxcheck: off")
        elif command == "status" and not options:
            count = self.earlier + len(self.findings)
            state = f"on ({describe(self.settings)})" if self.settings is not None else "off"
            print(f"jaxcheck: {state}; {count} finding{'' if count == 1 else 's'} in this session")
        else:
            raise UsageError(f"{MAGIC}: unexpected {line.strip()!r}; {_usage()}")


def _watch_traced_values() -> None:
    """Watch the globals of every live checked function for the values its trace read again: a global
    changed while the checks were off (the quiet session took that change in silence) is reported at the
    function's next call, as it would have been while on."""
    bodies = {id(checked.body): checked.body for checked in list(LIVE)}
    for body in bodies.values():
        if body.reads:
            body.reads = [replace(read, value=read.value_traced()) for read in body.reads]
            body.watch_reads()


def project_settings() -> RuntimeSettings:
    """`[tool.jaxcheck.runtime]` of the nearest configuration file above the working directory (the
    defaults when there is none); a broken one is a UsageError."""
    try:
        return load_configuration(None, Path.cwd()).settings.runtime
    except ConfigError as exc:
        raise UsageError(f"{MAGIC}: {exc}") from None


_LOADED: dict[int, KernelChecks] = {}
"""The extension's state per shell (by `id`), while loaded."""


def load(shell: Any) -> None:
    """Switch the checks on for `shell`: install them, display findings after each cell, and register
    `%jaxcheck`. Loading it again while loaded changes nothing."""
    if id(shell) in _LOADED:
        return
    checks = KernelChecks(shell, traceback_shows_notes(shell))
    checks.start(project_settings())
    _LOADED[id(shell)] = checks
    shell.events.register("post_run_cell", checks.after_cell)
    shell.register_magic_function(checks.magic, "line", MAGIC)


def unload(shell: Any) -> None:
    """Switch the checks off for `shell` and remove the event and `%jaxcheck` (nothing when not loaded)."""
    checks = _LOADED.get(id(shell))
    if checks is None:
        return
    checks.leave()
    del _LOADED[id(shell)]
    shell.events.unregister("post_run_cell", checks.after_cell)
    shell.magics_manager.magics["line"].pop(MAGIC, None)
