"""JAX104 at run time: hidden Python state read while tracing, seen during JAX's own trace.

A value drawn from `np.random`'s or `random`'s global generator, or read from the clock, while a function
traces is frozen into the compiled program: every cached call reuses it. While a checked function
traces, a profile hook notes the calls the user's code makes to those sources (directly, or through the
`random` module's Python helpers), with the user's line; `np.random`'s functions (compiled methods of its
global generator, invisible to a profile hook) are replaced for the trace's duration by recorders that
call them unchanged. Nothing is traced again: a counter or another
mutable global that only changes the program from one trace to the next is not seen here (JAX101 reports
a global changed after the trace). The hook is not installed when another profiler is active.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import random
import sys
import threading
import time
from collections.abc import Iterator
from types import FrameType
from typing import Any

import numpy as np
from jax._src import source_info_util

from jaxcheck.runtime_checks.frames import is_library_file, is_user_code

_CLOCKS = (time.time, time.time_ns, time.perf_counter, time.perf_counter_ns, time.monotonic, time.monotonic_ns,
           time.process_time)
_RANDOM_FILE = random.__file__


def source_name(function: Any) -> str | None:
    """`np.random.<name>`, `random.<name>`, `time.<name>` or `datetime.<class>.<name>` when calling the
    builtin `function` reads hidden state, else None (compared by identity: nothing of `function` runs)."""
    owner = getattr(function, "__self__", None)
    name = getattr(function, "__name__", "?")
    if owner is not None and owner is getattr(np.random.mtrand, "_rand", None):
        return f"np.random.{name}"
    if owner is not None and owner is getattr(random, "_inst", None):
        return f"random.{name}"
    if (owner is datetime.datetime or owner is datetime.date) and name in ("now", "today", "utcnow"):
        return f"datetime.{owner.__name__}.{name}"
    return f"time.{name}" if any(function is clock for clock in _CLOCKS) else None


def _user_caller(frame: FrameType | None) -> FrameType | None:
    """`frame` when it is the user's, or the user's frame that called the `random` module's helpers."""
    while frame is not None and frame.f_code.co_filename == _RANDOM_FILE:
        frame = frame.f_back
    return frame if frame is not None and is_user_code(frame.f_code) else None


def _global_generator_functions() -> dict[str, Any]:
    """`np.random`'s module functions that draw from its global generator, by name."""
    generator = getattr(np.random.mtrand, "_rand", None)
    return {name: value for name, value in vars(np.random).items()
            if generator is not None and getattr(value, "__self__", None) is generator}


def _recorder(name: str, function: Any, found: list[tuple[str, int, str]], thread: int) -> Any:
    @functools.wraps(function)
    def recording(*args: Any, **kwargs: Any) -> Any:
        if threading.get_ident() == thread and (user := _user_caller(sys._getframe(1))) is not None:
            found.append((user.f_code.co_filename, user.f_lineno, f"np.random.{name}"))
        return function(*args, **kwargs)

    return recording


@contextlib.contextmanager
def watching() -> Iterator[list[tuple[str, int, str]]]:
    """Note `(path, line, source)` of each hidden-state read made by user code inside the block (see the
    module docstring); inside an outer watch, or under another profiler, notes nothing."""
    found: list[tuple[str, int, str]] = []
    if sys.getprofile() is not None:
        yield found
        return

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "c_call" and (name := source_name(arg)) is not None and (user := _user_caller(frame)):
            found.append((user.f_code.co_filename, user.f_lineno, name))

    originals = _global_generator_functions()
    thread = threading.get_ident()
    for name, function in originals.items():
        setattr(np.random, name, _recorder(name, function, found, thread))
    sys.setprofile(profile)
    try:
        yield found
    finally:
        sys.setprofile(None)
        for name, function in originals.items():
            setattr(np.random, name, function)


def hidden_state_message(function: str, source: str) -> tuple[str, str]:
    """Message and fix of a JAX104 finding for a read of `source`."""
    return (f"`{function}` called `{source}` while tracing: the value is frozen into the compiled program, "
            "and every cached call reuses it",
            "compute the value with JAX from an argument (e.g. `jax.random` with a key), or pass it in")


def eqn_line(eqn: Any) -> tuple[str, int] | None:
    """The user's `(path, line)` that created a jaxpr equation."""
    frame = source_info_util.user_frame(eqn.source_info.traceback)
    if frame is None or is_library_file(frame.file_name):
        return None
    return frame.file_name, frame.start_line
