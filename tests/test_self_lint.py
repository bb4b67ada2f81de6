"""jaxcheck checks its own source cleanly, and in bounded time.

The package is a large, realistic input with an interpreter's shape (helpers calling each other
through their return values); a solver without memoized call results took exponential time on
`semantics/prng.py`, so this also guards termination (the subprocess timeout fails the test).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_jaxcheck_source_is_clean():
    result = subprocess.run(
        [sys.executable, "-m", "jaxcheck", "check", "jaxcheck", "bench", "--no-cache", "-j", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, "All checks passed!\n", "")
