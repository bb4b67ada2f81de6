"""JAX103 at run time: output written while tracing (print, `sys.stdout/stderr.write`, logging).

While a checked function traces, stdout and stderr are replaced by tees that note writes made directly
by user code (still passing them through) and a handler on the root logger notes records logged from
user files. Such output happens once per trace, never on cached calls.
"""

from __future__ import annotations

import contextlib
import io
import logging
import sys
import threading
from collections.abc import Iterator
from typing import Any, TextIO

from jaxcheck.runtime_checks.frames import is_library_file, is_user_code


class _Tee(io.TextIOBase):
    """A text stream that notes the user line of each write and forwards (or drops) the text."""

    def __init__(self, target: TextIO, sites: list[tuple[str, int, str]], forward: bool) -> None:
        self._target, self._sites, self._forward = target, sites, forward
        self._thread = threading.get_ident()  # output of other threads is not the trace's

    def write(self, text: str) -> int:
        caller = sys._getframe(1)
        if threading.get_ident() == self._thread and is_user_code(caller.f_code) and text.strip():
            self._sites.append((caller.f_code.co_filename, caller.f_lineno, "print"))
        return self._target.write(text) if self._forward else len(text)

    def flush(self) -> None:
        self._target.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target, name)


class _Handler(logging.Handler):
    def __init__(self, sites: list[tuple[str, int, str]]) -> None:
        super().__init__(logging.NOTSET)
        self._sites = sites
        self._thread = threading.get_ident()

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread == self._thread and not is_library_file(record.pathname):
            self._sites.append((record.pathname, record.lineno, "logging"))


@contextlib.contextmanager
def capture_output(forward: bool = True) -> Iterator[list[tuple[str, int, str]]]:
    """Note `(path, line, kind)` of every write made by user code inside the block; `forward=False`
    swallows the output (used by the extra traces jaxcheck makes itself)."""
    sites: list[tuple[str, int, str]] = []
    stdout, stderr = sys.stdout, sys.stderr
    handler = _Handler(sites)
    root = logging.getLogger()
    sys.stdout, sys.stderr = _Tee(stdout, sites, forward), _Tee(stderr, sites, forward)
    root.addHandler(handler)
    try:
        yield sites
    finally:
        sys.stdout, sys.stderr = stdout, stderr
        root.removeHandler(handler)


def trace_output_message(function: str, kind: str) -> tuple[str, str]:
    """Message and fix of a JAX103 finding for output of `kind` ("print" or "logging")."""
    what = "logged" if kind == "logging" else "printed"
    return (f"`{function}` {what} while tracing: this runs once per trace, never on the cached calls that follow",
            "use `jax.debug.print(...)` (or `jax.debug.callback`) to see values on every call")
