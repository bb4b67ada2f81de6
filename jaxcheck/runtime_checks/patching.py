"""`install()`/`uninstall()`: put the checked transforms in place of `jax.jit`, `jax.pmap`, `jax.grad`,
`jax.value_and_grad` and `jax.vmap`, and take them out again. Code that imported a transform by name
before `install()` keeps JAX's."""

from __future__ import annotations

import jax

from jaxcheck.analyzer.config import RuntimeSettings
from jaxcheck.runtime_checks import originals, wrappers
from jaxcheck.runtime_checks.checked import flush
from jaxcheck.runtime_checks.session import Session, activate, new_session

_NAMES = ("jit", "pmap", "grad", "value_and_grad", "vmap")
_stack: list[Session] = []


def install(settings: RuntimeSettings | None = None) -> Session:
    """Patch the transforms and start a session with `settings` (default: the defaults); return it.
    Installs nest: each `uninstall()` ends the innermost one."""
    session = new_session(settings or RuntimeSettings())
    _stack.append(activate(session))
    for name in _NAMES:
        setattr(jax, name, getattr(wrappers, name))
    return session


def uninstall() -> Session:
    """Read pending NaN flags, end the innermost session, and restore JAX's transforms when it was the
    outermost; return the session that ended."""
    if not _stack:
        raise RuntimeError("jaxcheck.runtime.uninstall() called without install()")
    try:
        flush()
    finally:
        ended = activate(_stack.pop())
        if not _stack:
            for name in _NAMES:
                setattr(jax, name, getattr(originals, name))
    return ended
