"""`jaxcheck run script.py [args...]` and `jaxcheck run -m module [args...]`: run a program like
`python` does, with the `jax` transforms checked; the program's exit status is kept.

Settings come from `[tool.jaxcheck.runtime]` in the nearest pyproject.toml. Findings print to stderr as
they happen (mode `warn`), and a summary grouped by code and line ends the run.
"""

from __future__ import annotations

import runpy
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

from jaxcheck.analyzer.config import RuntimeSettings
from jaxcheck.runtime_checks.patching import install, uninstall
from jaxcheck.runtime_checks.report import summary


def run_program(target: str, is_module: bool, argv: Sequence[str], settings: RuntimeSettings) -> int:
    """Run `target` (a script path, or a module name when `is_module`) with `argv` as its arguments;
    return its exit status (1 for an uncaught exception, printed like Python prints it)."""
    if not is_module and not Path(target).is_file():
        print(f"jaxcheck: error: {target}: no such file", file=sys.stderr)
        return 2
    saved_argv, saved_path0 = sys.argv, sys.path[0] if sys.path else None
    sys.argv = [target, *argv]
    if not is_module:
        sys.path.insert(0, str(Path(target).resolve().parent))
    status = 0
    install(settings)
    try:
        if is_module:
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(target, run_name="__main__")
    except SystemExit as exc:
        status = _exit_status(exc.code)
    except BaseException:  # noqa: BLE001 - print the program's own traceback, as python does
        traceback.print_exc()
        status = 1
    finally:
        try:
            findings = uninstall().reporter.findings
        except BaseException:  # noqa: BLE001 - a finding raised while reading pending NaN flags
            traceback.print_exc()
            findings, status = [], status or 1
        sys.argv = saved_argv
        if not is_module and saved_path0 is not None:
            sys.path.pop(0)
    sys.stdout.flush()
    sys.stderr.write(summary(findings))
    return status


def _exit_status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1
