"""How a program run by `jaxcheck run` ends: as under `python`. The exception that ended it (SystemExit,
KeyboardInterrupt, an error) is raised again from the entry point, outside jaxcheck's code, so that the
interpreter itself ends the process as `python script.py` would: SystemExit's status or message, a
traceback and status 1, death by SIGINT after an uncaught KeyboardInterrupt. The traceback shows the
program's frames only. No JAX here: the entry point imports this module.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import TracebackType

_RUNNER = "jaxcheck.runtime_checks.runner"
"""The module whose frame runs the program (through runpy)."""


class ProgramEnded(BaseException):
    """The program run by `jaxcheck run` ended with `exception` (a BaseException: no `except Exception` in
    jaxcheck stops it on its way to the entry point)."""

    def __init__(self, exception: BaseException) -> None:
        super().__init__(exception)
        self.exception = exception


Excepthook = Callable[[type[BaseException], BaseException, TracebackType | None], object]


def program_excepthook(hook: Excepthook) -> Excepthook:
    """`hook` (`sys.excepthook`, the program's own if it set one) given the program's frames only."""

    def excepthook(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> object:
        _hide_jaxcheck_frames(value)
        return hook(kind, value, value.__traceback__)

    return excepthook


def raise_as_python(exception: BaseException) -> None:
    """Raise `exception` (which ended the program) for the interpreter to handle, its traceback printed
    with the program's frames only. Call it outside any `except` block, so that the exception's own
    context is kept."""
    sys.excepthook = program_excepthook(sys.excepthook)
    raise exception


def _hide_jaxcheck_frames(exception: BaseException) -> None:
    """Cut the tracebacks of `exception`, its causes, contexts and group members to the program's frames:
    those after the runpy frames that `jaxcheck run` started the program with, less jaxcheck's own (its
    wrappers around the `jax` transforms); a traceback that never entered the program is kept."""
    pending, seen = [exception], set()
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        current.__traceback__ = _program_frames(current.__traceback__)
        pending += [chained for chained in (current.__cause__, current.__context__) if chained is not None]
        if sys.version_info >= (3, 11) and isinstance(current, BaseExceptionGroup):
            pending += current.exceptions


def _program_frames(tb: TracebackType | None) -> TracebackType | None:
    """`tb` from the program's first frame on, without jaxcheck's frames; `tb` when it holds none."""
    entries: list[TracebackType] = []
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    names = [entry.tb_frame.f_globals.get("__name__") for entry in entries]
    if _RUNNER not in names:
        return entries[0] if entries else None
    start = names.index(_RUNNER) + 1
    while start < len(entries) and names[start] == "runpy":
        start += 1
    kept = [entry for entry in entries[start:] if not _is_jaxcheck(entry)]
    program: TracebackType | None = None
    for entry in reversed(kept):
        program = TracebackType(program, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return program


def _is_jaxcheck(entry: TracebackType) -> bool:
    """Whether the traceback entry is in jaxcheck's code (a module, or a generated forwarder)."""
    name = entry.tb_frame.f_globals.get("__name__")
    return isinstance(name, str) and (name == "jaxcheck" or name.startswith("jaxcheck.")) \
        or entry.tb_frame.f_code.co_filename.startswith("<jaxcheck")
