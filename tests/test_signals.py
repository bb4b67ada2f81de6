"""SIGINT and SIGTERM end the whole process tree at once: exit 130/143, no traceback, no orphans."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import checkout_environment

BODY = "".join(f"@jax.jit\ndef f{i}(x):\n    if x > {i}:\n        return x\n    return -x\n\n" for i in range(300))


def _children(pid: int) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rpartition(")")[2].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.add(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_ends_the_run_and_its_workers(tmp_path: Path, signum: int, code: int):
    for index in range(100):  # far more work than the test waits for: the signal always comes mid-run
        (tmp_path / f"m{index}.py").write_text("import jax\n\n" + BODY)
    run = subprocess.Popen(
        [sys.executable, "-m", "jaxcheck", "check", "--no-cache", "-j", "2", str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=checkout_environment(),
    )
    deadline = time.monotonic() + 60
    workers: set[int] = set()
    while len(workers) < 2 and time.monotonic() < deadline and run.poll() is None:
        time.sleep(0.05)
        workers = _children(run.pid)  # the workers and multiprocessing's resource tracker
    assert run.poll() is None and len(workers) >= 2, "the workers never started"
    time.sleep(0.5)
    os.kill(run.pid, signum)
    _, err = run.communicate(timeout=30)
    assert run.returncode == code, err
    assert err == ("jaxcheck: interrupted\n" if signum == signal.SIGINT else "jaxcheck: terminated\n")
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in workers)
