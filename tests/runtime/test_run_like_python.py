"""`jaxcheck run prog.py` is `python prog.py` (issue 31): the same exit status, stdout and stderr (argv,
stdin, SystemExit, tracebacks with the program's frames only), and the same death by SIGINT or SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.runtime.conftest import ROOT, TEST_PLATFORMS

PROGRAMS = {
    "argv_and_stdin": "import sys\nprint(sys.argv, __name__, __file__, sys.path[0])\nprint(sys.stdin.read().upper())\n",
    "exit_status": "import sys\nsys.exit(int(sys.argv[1]))\n",
    "exit_message": "import sys\nsys.exit('cannot go on')\n",
    "error": "def inner():\n    raise KeyError('boom')\n\ndef outer():\n    inner()\n\nouter()\n",
    "chained": "try:\n    {}['a']\nexcept KeyError as exc:\n    raise ValueError('bad') from exc\n",
    "syntax_error": "x = (\n",
    "through_jit": "import jax, jax.numpy as jnp\n\n@jax.jit\ndef f(x):\n    raise ValueError('inside')\n\n"
                   "f(jnp.ones(2))\n",  # through jaxcheck's wrapper of `jax.jit`: no jaxcheck frame shown
    "keyboard_interrupt": "def stop():\n    raise KeyboardInterrupt\n\nstop()\n",
    "own_sigterm_handler": "import os, signal, sys\nsignal.signal(signal.SIGTERM, lambda *a: sys.exit(7))\n"
                           "os.kill(os.getpid(), signal.SIGTERM)\n",
}
"""Programs whose every output `jaxcheck run` must reproduce exactly."""

WAITING = "import sys, time\nprint('ready', flush=True)\ntry:\n    time.sleep(60)\nfinally:\n    print('cleanup')\n"
"""A program that waits for a signal."""


def command(runner: str, name: str) -> list[str]:
    """`python prog.py` or `python -m jaxcheck run prog.py`, with the arguments `3 --flag`."""
    program = [f"{name}.py", "3", "--flag"]
    return [sys.executable, *program] if runner == "python" else [sys.executable, "-m", "jaxcheck", "run", *program]


def environment() -> dict[str, str]:
    """This checkout's jaxcheck, JAX on the test platform."""
    return {**os.environ, "PYTHONPATH": str(ROOT), "JAX_PLATFORMS": TEST_PLATFORMS}


@pytest.mark.parametrize("name", PROGRAMS)
def test_the_program_ends_as_under_python(tmp_path: Path, name: str) -> None:
    (tmp_path / f"{name}.py").write_text(PROGRAMS[name])
    python, jaxcheck = (subprocess.run(command(runner, name), cwd=tmp_path, env=environment(), input="some input",
                                       capture_output=True, text=True, timeout=300)
                        for runner in ("python", "jaxcheck"))
    assert (jaxcheck.returncode, jaxcheck.stdout, jaxcheck.stderr) == (python.returncode, python.stdout, python.stderr)
    assert "jaxcheck" not in jaxcheck.stderr


def test_the_table_covers_each_ending(tmp_path: Path) -> None:
    endings = set()
    for name, source in PROGRAMS.items():
        (tmp_path / f"{name}.py").write_text(source)
        result = subprocess.run(command("python", name), cwd=tmp_path, env=environment(), input="",
                                capture_output=True, text=True, timeout=60)
        endings.add((result.returncode, "Traceback" in result.stderr))
    assert endings == {(0, False), (3, False), (1, False), (1, True), (-signal.SIGINT, True), (7, False)}


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_ends_the_program_as_under_python(tmp_path: Path, signum: int) -> None:
    (tmp_path / "waiting.py").write_text(WAITING)
    results = []
    for runner in ("python", "jaxcheck"):
        process = subprocess.Popen(command(runner, "waiting"), cwd=tmp_path, env=environment(),
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert process.stdout is not None and process.stdout.readline() == "ready\n"
        time.sleep(0.2)
        process.send_signal(signum)
        out, err = process.communicate(timeout=60)
        results.append((process.returncode, out, err))
    assert results[1] == results[0]
    assert results[0][0] == -signum  # died by the signal: a shell shows 130 or 143
    assert ("cleanup" in results[0][1]) == (signum == signal.SIGINT)  # SIGTERM runs no `finally`, as ever

