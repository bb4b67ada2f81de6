"""The active runtime session: settings plus the reporter every checked transform reports to.

There is always one: the defaults (mode `warn`) until :func:`activate` installs another, for example
from `checking(...)`, `jaxcheck run` or `pytest --jaxcheck`. Checked transforms read it at call time,
so a function decorated at import time follows the session active when it runs.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Any

from jaxcheck.analyzer.config import RuntimeSettings
from jaxcheck.runtime_checks.key_reuse import KeyTracker
from jaxcheck.runtime_checks.report import Reporter
from jaxcheck.runtime_checks.retrace import TraceHistory, TraceLog
from jaxcheck.runtime_checks.stale_globals import user_function


@dataclass
class Session:
    """Settings, the reporter and the state shared by every checked function of one session."""

    settings: RuntimeSettings
    reporter: Reporter
    trace_log: TraceLog = field(default_factory=TraceLog)
    keys: KeyTracker = field(default_factory=KeyTracker)


class _Active:
    """Holder of the active session; `instrumented` (NaN or index checks on) is copied out because the
    per-call path reads it."""

    session: Session = Session(RuntimeSettings(), Reporter())
    instrumented: bool = False
    ended: Session | None = None  # the last session replaced: `traces()` reads it after a block


ACTIVE = _Active()
QUIET: weakref.WeakSet[Any] = weakref.WeakSet()
"""The quiet forwarders (see :mod:`forwarder`): they call the bare object with no check per call, and
wake when a session turns NaN or index checks on."""


def current() -> Session:
    """The active session."""
    return ACTIVE.session


def activate(session: Session) -> Session:
    """Make `session` the active one (waking the quiet forwarders when it checks NaNs or indices, which
    quiet ones cannot); return the one it replaces."""
    previous = ACTIVE.ended = ACTIVE.session
    ACTIVE.session = session
    ACTIVE.instrumented = session.settings.nans or session.settings.index_checks
    if ACTIVE.instrumented:
        for forwarder in list(QUIET):
            forwarder.wake()
    return previous


def new_session(settings: RuntimeSettings) -> Session:
    """A fresh session for `settings` (no findings, no trace history, no consumed keys)."""
    return Session(settings, Reporter(settings.mode))


def history_of(fun: Any) -> TraceHistory:
    """The trace history of the user's function behind `fun` in the active session, else in the session
    that ended last (empty when neither traced it)."""
    code = getattr(user_function(fun), "__code__", None)
    if code is None:
        return TraceHistory()
    for session in (ACTIVE.session, ACTIVE.ended):
        if session is not None and (history := session.trace_log.history(code)).count:
            return history
    return TraceHistory()
