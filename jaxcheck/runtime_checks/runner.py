"""`jaxcheck run script.py [args...]` and `jaxcheck run -m module [args...]`: run a program like
`python` does, with the `jax` transforms checked: its exit status, signals, stdin, argv and
uncaught exceptions are the program's (see :mod:`jaxcheck.runtime_checks.program_exit`).

Settings come from `[tool.jaxcheck.runtime]` in the nearest pyproject.toml. Findings print to stderr as
they happen (mode `warn`), and a summary grouped by code and line ends the run.
"""

from __future__ import annotations

import builtins
import io
import os
import runpy
import sys
import traceback
import types
from importlib.machinery import SourceFileLoader
from collections.abc import Sequence
from pathlib import Path

from jaxcheck.analyzer.config import RuntimeSettings
from jaxcheck.runtime_checks.patching import install, uninstall
from jaxcheck.runtime_checks.program_exit import ProgramEnded
from jaxcheck.runtime_checks.report import summary


def run_program(target: str, is_module: bool, argv: Sequence[str], settings: RuntimeSettings) -> int:
    """Run `target` (a script path, or a module name when `is_module`) with `argv` as its arguments, and
    print the summary of the findings. Return 0 when it ran to its end, 2 when there is no such script;
    raise ProgramEnded with the exception that ended it otherwise (SystemExit included), for the entry
    point to raise again as python would (see :mod:`jaxcheck.runtime_checks.program_exit`)."""
    if not is_module and not Path(target).is_file():
        print(f"jaxcheck: error: {target}: no such file", file=sys.stderr)
        return 2
    saved_argv = sys.argv
    sys.argv = [target, *argv]
    if not is_module:
        sys.path.insert(0, str(Path(target).resolve().parent))
    install(settings)
    try:
        if is_module:
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            _run_script(target)
    except BaseException as exc:  # noqa: BLE001 - the program's own ending, handed to the entry point
        _stop_checks(unwinding=True)
        raise ProgramEnded(exc) from None
    finally:
        sys.argv = saved_argv
        if not is_module:
            sys.path.pop(0)
    try:
        _stop_checks(unwinding=False)
    except BaseException as exc:  # noqa: BLE001 - a check's exception in raise mode is the program's
        raise ProgramEnded(exc) from None
    return 0


def _stop_checks(unwinding: bool) -> None:
    """Uninstall the checks and print the summary of their findings. A check may raise while its pending
    findings are read (NaN flags, in raise mode): that propagates, unless the program is already
    `unwinding` from its own exception (then it is printed and the program's exception goes on)."""
    try:
        reporter = uninstall().reporter
    except BaseException:  # noqa: BLE001 - see the docstring
        if not unwinding:
            raise
        traceback.print_exc()
        return
    sys.stdout.flush()
    sys.stderr.write(summary(reporter.findings, reporter.counts))


def _run_script(path: str) -> None:
    """Run the script file at `path` as `python path` does: its code named by its absolute path (which
    tracebacks show), in a fresh `__main__` module; `sys.argv[0]` stays `path` as given."""
    filename = os.path.abspath(path)
    with io.open_code(filename) as file:
        code = compile(file.read(), filename, "exec", dont_inherit=True)
    module = types.ModuleType("__main__")
    module.__dict__.update(__file__=filename, __cached__=None, __builtins__=builtins,
                           __loader__=SourceFileLoader("__main__", filename))
    saved = sys.modules["__main__"]
    sys.modules["__main__"] = module
    try:
        exec(code, module.__dict__)  # noqa: S102 - running the user's program is the command's purpose
    finally:
        sys.modules["__main__"] = saved
