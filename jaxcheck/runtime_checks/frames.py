"""Which source line is the user's: the innermost frame outside JAX, jaxcheck, installed packages and
the standard library."""

from __future__ import annotations

import os
import sys
import sysconfig
from types import CodeType, FrameType, TracebackType

import jax
from jax._src import traceback_util

_JAXCHECK_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_LIBRARY_DIRS: tuple[str, ...] = tuple(
    sorted({os.path.dirname(os.path.abspath(jax.__file__)), _JAXCHECK_DIR,
            *(os.path.abspath(sysconfig.get_paths()[key]) for key in ("stdlib", "platstdlib", "purelib", "platlib"))})
)


_INTERACTIVE = ("<stdin>", "<ipython-input-")

# JAX's traceback filtering hides its own frames from users; hide jaxcheck's runtime frames the same way.
traceback_util.register_exclusion(os.path.dirname(os.path.abspath(__file__)))
traceback_util.register_exclusion("<jaxcheck-forwarder>")


def is_library_file(path: str) -> bool:
    """True for files of JAX, jaxcheck, the standard library and installed packages, and for generated
    code (`<frozen ...>`, `<string>`, jaxcheck's forwarders): nothing a user would fix. Code typed at the
    prompt (`<stdin>`) or in IPython (`<ipython-input-...>`) is the user's."""
    if path.startswith("<"):
        return not path.startswith(_INTERACTIVE)
    path = os.path.abspath(path)
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
