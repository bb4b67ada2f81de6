"""`pytest --jaxcheck`: run the whole test session with the `jax` transforms checked, and end with the
findings grouped by code and source line. Registered through the `pytest11` entry point; it does nothing
(and imports no JAX) unless `--jaxcheck` is given. Settings come from `[tool.jaxcheck.runtime]`; in mode
`warn` the findings are collected for the summary (pytest shows warnings of its own), in mode `raise` a
finding fails the test that caused it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

_SESSION_KEY = pytest.StashKey[Any]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("jaxcheck", "jaxcheck runtime checks")
    group.addoption("--jaxcheck", action="store_true", default=False,
                    help="check jit/grad/vmap/pmap at run time and summarize the findings (needs JAX)")
    group.addoption("--jaxcheck-mode", choices=("warn", "raise", "collect"), default=None,
                    help="override [tool.jaxcheck.runtime] mode")


def pytest_configure(config: pytest.Config) -> None:
    if not config.getoption("jaxcheck"):
        return
    from jaxcheck.analyzer.config import ConfigError, load_configuration

    try:
        settings = load_configuration(None, Path(str(config.rootpath))).settings.runtime
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None
    mode = config.getoption("jaxcheck_mode") or settings.mode
    try:
        from jaxcheck.runtime_checks.patching import install
    except ImportError as exc:
        from jaxcheck.extras import install_hint

        raise pytest.UsageError(f"--jaxcheck needs JAX ({exc}): {install_hint('runtime')}") from None
    config.stash[_SESSION_KEY] = install(settings.model_copy(update={"mode": "collect" if mode == "warn" else mode}))


def pytest_unconfigure(config: pytest.Config) -> None:
    if _SESSION_KEY in config.stash:
        from jaxcheck.runtime_checks.patching import uninstall

        del config.stash[_SESSION_KEY]
        uninstall()


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    session = config.stash.get(_SESSION_KEY, None)
    if session is None:
        return
    from jaxcheck.runtime_checks.checked import flush
    from jaxcheck.runtime_checks.report import summary

    try:
        flush()
    except Exception as exc:  # noqa: BLE001 - in raise mode a late NaN finding raises here
        terminalreporter.write_line(f"jaxcheck: {exc}")
    terminalreporter.section("jaxcheck runtime findings")
    text = summary(session.reporter.findings, session.reporter.counts)
    terminalreporter.write(text or "no findings\n")
