"""The active runtime session: settings plus the reporter every checked transform reports to.

There is always one: the defaults (mode `warn`) until :func:`activate` installs another, for example
from `checking(...)`, `jaxcheck run` or `pytest --jaxcheck`. Checked transforms read it at call time,
so a function decorated at import time follows the session active when it runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import CodeType
from typing import Any

from jaxcheck.analyzer.config import RuntimeSettings
from jaxcheck.runtime_checks.key_reuse import KeyTracker
from jaxcheck.runtime_checks.report import Reporter


@dataclass
class Session:
    """Settings, the reporter and the state shared by every checked function of one session."""

    settings: RuntimeSettings
    reporter: Reporter
    trace_log: dict[CodeType, tuple[int, Any]] = field(default_factory=dict)  # count, last signature: retrace.py
    keys: KeyTracker = field(default_factory=KeyTracker)


class _Active:
    """Holder of the active session; `instrumented` (NaN or index checks on) is copied out because the
    per-call path reads it."""

    session: Session = Session(RuntimeSettings(), Reporter())
    instrumented: bool = False


ACTIVE = _Active()


def current() -> Session:
    """The active session."""
    return ACTIVE.session


def activate(session: Session) -> Session:
    """Make `session` the active one; return the one it replaces."""
    previous = ACTIVE.session
    ACTIVE.session = session
    ACTIVE.instrumented = session.settings.nans or session.settings.index_checks
    return previous


def new_session(settings: RuntimeSettings) -> Session:
    """A fresh session for `settings` (no findings, no trace history, no consumed keys)."""
    return Session(settings, Reporter(settings.mode))
