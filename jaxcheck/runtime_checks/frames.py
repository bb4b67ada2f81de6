"""Which source line is the user's: the innermost frame outside JAX, jaxcheck, installed packages and
the standard library."""

from __future__ import annotations

import functools
import os
import sys
import sysconfig
from types import CodeType, FrameType, TracebackType

import jax
import jaxlib
from jax._src import config as jax_config
from jax._src import source_info_util, traceback_util

_JAXCHECK_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_JAX_DIR = os.path.dirname(os.path.abspath(jax.__file__))
_LIBRARY_DIRS: tuple[str, ...] = tuple(
    sorted({_JAX_DIR, _JAXCHECK_DIR,
            *(os.path.abspath(sysconfig.get_paths()[key]) for key in ("stdlib", "platstdlib", "purelib", "platlib"))})
)


_INTERACTIVE = ("<stdin>", "<ipython-input-")

_RUNTIME_DIR = os.path.dirname(os.path.abspath(__file__))
FORWARDER_FILE = "<jaxcheck-forwarder>"
"""The file name of the generated call wrappers (see :mod:`forwarder`)."""

# JAX's traceback filtering hides its own frames from users; hide jaxcheck's runtime frames the same way,
# also from the frames JAX's messages list (where a leaked tracer was created).
for _path in (_RUNTIME_DIR, FORWARDER_FILE):
    traceback_util.register_exclusion(_path)
    source_info_util.register_exclusion(_path)


def _is_own(path: str) -> bool:
    return path == FORWARDER_FILE or path.startswith(_RUNTIME_DIR)


def caller_of_jaxcheck(frame: FrameType) -> FrameType:
    """The first frame at or above `frame` that is not jaxcheck's runtime code (the call site of a
    checked transform)."""
    while frame.f_back is not None and _is_own(frame.f_code.co_filename):
        frame = frame.f_back
    return frame


_JAX_AND_RUNTIME = tuple(os.path.join(folder, "") for folder in (
    _JAX_DIR, os.path.dirname(os.path.abspath(jaxlib.__file__)), _RUNTIME_DIR))


def called_through_forwarder(frame: FrameType | None) -> bool:
    """Whether the first frame at or above `frame` outside JAX and jaxcheck's runtime modules is a
    generated forwarder's (the call that led here came through one that was not quiet)."""
    while frame is not None:
        path = frame.f_code.co_filename
        if path == FORWARDER_FILE:
            return True
        if not path.startswith(_JAX_AND_RUNTIME):
            return False
        frame = frame.f_back
    return False


def without_own_frames(tb: TracebackType | None) -> TracebackType | None:
    """`tb` less jaxcheck's runtime frames, as JAX's traceback filtering drops JAX's own (unchanged when
    `JAX_TRACEBACK_FILTERING=off`). A handler that sets this on the exception it caught and re-raises with
    a bare `raise` leaves no frame of its own either."""
    if jax_config.traceback_filtering.value == "off":
        return tb
    kept: list[TracebackType] = []
    while tb is not None:
        if not _is_own(tb.tb_frame.f_code.co_filename):
            kept.append(tb)
        tb = tb.tb_next
    out: TracebackType | None = None
    for entry in reversed(kept):
        out = TracebackType(out, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return out


def is_library_file(path: str) -> bool:
    """True for files of JAX, jaxcheck, the standard library and installed packages, and for generated
    code (`<frozen ...>`, `<string>`, jaxcheck's forwarders): nothing a user would fix. Code typed at the
    prompt (`<stdin>`) or in IPython (`<ipython-input-...>`) is the user's."""
    if path.startswith("<"):
        return not path.startswith(_INTERACTIVE)
    return _is_library_path(path if os.path.isabs(path) else os.path.abspath(path))


@functools.lru_cache(maxsize=4096)
def _is_library_path(path: str) -> bool:
    """:func:`is_library_file` of an absolute path, remembered: checked calls look up their caller's frame
    on every call that tracks keys (a relative path is made absolute first, against the current folder)."""
    path = os.path.normpath(path)
    return path.startswith(_LIBRARY_DIRS) or "site-packages" in path or "dist-packages" in path


def is_user_code(code: CodeType) -> bool:
    """True when `code` was written by the user (see :func:`is_library_file`)."""
    return not is_library_file(code.co_filename)


def user_frame(frame: FrameType | None = None) -> tuple[str, int] | None:
    """`(path, line)` of the innermost user frame at or above `frame` (default: the caller's)."""
    frame = frame if frame is not None else sys._getframe(1)
    while frame is not None:
        if is_user_code(frame.f_code):
            return frame.f_code.co_filename, frame.f_lineno
        frame = frame.f_back
    return None


def traceback_user_frame(tb: TracebackType | None) -> tuple[str, int] | None:
    """`(path, line)` of the last (innermost) user frame of a traceback."""
    found = None
    while tb is not None:
        if is_user_code(tb.tb_frame.f_code):
            found = (tb.tb_frame.f_code.co_filename, tb.tb_lineno)
        tb = tb.tb_next
    return found
