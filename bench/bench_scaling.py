"""How the model's cost grows with the code: each generated family at n, 2n and 4n (issue 30).

    PYTHONPATH=. python bench/bench_scaling.py                # every family at its default n
    PYTHONPATH=. python bench/bench_scaling.py --scale 2      # every n doubled
    PYTHONPATH=. python bench/bench_scaling.py --family module_chain --family long_jitted

The families are in `tests/scaling_programs.py` (the step-count test, `tests/test_scaling.py`, runs them
too, deterministically). Each size is written to a temporary project and checked by a fresh
`jaxcheck check --no-cache -j 1` process; its CPU time (user + system) and peak resident memory are read
from the operating system when it exits, and the same measure of a one-file project is subtracted from
the CPU time (start-up: imports, configuration). Each size is checked three times and its median CPU time
kept (start-up: the median of five). Reported per family: the CPU time and peak memory at each
size, the cost per doubling (the larger of 2n/n and 4n/2n) and whether each run still found the bug the
family plants at its far end. Targets: at most 2.3x per doubling, no run over 10 s or 500 MB. The exit
status is 1 when a target is missed. Machines are shared and noisy: compare ratios from one run.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from scaling_programs import FAMILIES, Project  # noqa: E402

DEFAULT_N = {
    "helper_chain_conditional": 200, "threaded_state_guarded": 300, "nested_branches": 150,
    "long_jitted": 300, "key_split_loops": 200, "nested_loops": 24, "module_chain": 150, "wide_modules": 150,
    "many_small_files": 150, "big_literals": 3000,
}
"""Sizes at which the smallest run costs about a second beyond start-up (so that noise of a tenth of a
second does not decide a ratio) and the largest stays within the targets."""
STARTUP_RUNS = 5
REPEATS = 3
"""Each size is checked this many times; its CPU time is the median run's."""
MAX_PER_DOUBLING = 2.3
MAX_SECONDS = 10.0
MAX_MEGABYTES = 500.0


def measure(project: Project) -> tuple[float, float, bool]:
    """CPU seconds, peak resident megabytes and whether a finding (not a syntax error) was reported, for one
    checked project."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "pyproject.toml").write_text("[tool.jaxcheck]\n", encoding="utf-8")
        for relative, text in project.items():
            path = root / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        command = [sys.executable, "-m", "jaxcheck", "check", "--no-cache", "-j", "1", "--quiet", "--format", "concise",
                   str(root)]
        with tempfile.TemporaryFile() as output:
            process = subprocess.Popen(command, stdout=output, stderr=subprocess.DEVNULL)
            _, status, usage = os.wait4(process.pid, 0)
            output.seek(0)
            codes = {line.split()[1] for line in output.read().decode().splitlines() if len(line.split()) > 1}
    found = os.waitstatus_to_exitcode(status) == 1 and bool(codes) and "JAX001" not in codes
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", action="append", choices=sorted(FAMILIES), help="only these (repeatable)")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every default n by this")
    args = parser.parse_args()
    startup = sorted(measure({"one.py": "x = 1\n"})[0] for _ in range(STARTUP_RUNS))[STARTUP_RUNS // 2]
    print(f"start-up (subtracted): {startup:.2f} s CPU, the median of {STARTUP_RUNS} runs\n")
    print(f"{'family':<26} {'n':>6} {'CPU s':>8} {'MB':>7} {'found':>6} {'per doubling':>13}")
    failed = False
    for name in args.family or list(FAMILIES):
        n = max(1, int(DEFAULT_N[name] * args.scale))
        rows = []
        for size in (n, 2 * n, 4 * n):
            project = FAMILIES[name](size)
            runs = sorted(measure(project) for _ in range(REPEATS))
            cpu, megabytes, found = runs[REPEATS // 2]
            rows.append((size, max(cpu - startup, 0.01), max(run[1] for run in runs), all(run[2] for run in runs)))
        ratio = max(rows[1][1] / rows[0][1], rows[2][1] / rows[1][1])
        for size, cpu, megabytes, found in rows:
            print(f"{name:<26} {size:>6} {cpu:>8.2f} {megabytes:>7.0f} {'yes' if found else 'NO':>6}", end="")
            print(f" {ratio:>12.2f}x" if size == 4 * n else "")
        missed = ratio > MAX_PER_DOUBLING or any(cpu > MAX_SECONDS or mb > MAX_MEGABYTES or not found
                                                 for _, cpu, mb, found in rows)
        failed |= missed
        if missed:
            print(f"{name:<26} MISSED a target")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
