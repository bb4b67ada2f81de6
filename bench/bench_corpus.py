"""Time jaxcheck on the real-world corpus against bare LibCST parsing of the same files, in one run.

    ../shared/corpus/fetch.sh .corpus && python bench/bench_corpus.py .corpus

Times bare parsing, a cold single-process check (`-j 1`), a cold check with two workers (`-j 2`), and
a warm re-run with a filled cache, and prints each against the bare parse (targets: `-j 1` at most
1.5x, `-j 2` at most 0.8x, the warm re-run under 1.5 s). Machines are shared and noisy: compare ratios
from one run, not seconds across runs.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import libcst

from jaxcheck.analyzer.config import Configuration
from jaxcheck.analyzer.engine import CheckReport, Linter
from jaxcheck.analyzer.parsing import run_with_deep_stack


def bare_parse(files: list[Path]) -> float:
    sources = [f.read_text(encoding="utf-8") for f in files]
    start = time.perf_counter()
    for source in sources:
        libcst.parse_module(source)
    return time.perf_counter() - start


def timed_check(root: Path, jobs: int, cache_dir: Path | None = None) -> tuple[float, CheckReport]:
    start = time.perf_counter()
    report = Linter(Configuration()).check_paths([root], jobs=jobs, cache_dir=cache_dir)
    return time.perf_counter() - start, report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    args = parser.parse_args()
    files = sorted(args.corpus.rglob("*.py"))
    parse_seconds = run_with_deep_stack(lambda: bare_parse(files))
    single_seconds, single = timed_check(args.corpus, jobs=1)
    double_seconds, double = timed_check(args.corpus, jobs=2)
    with tempfile.TemporaryDirectory() as cache:
        timed_check(args.corpus, jobs=2, cache_dir=Path(cache))
        warm_seconds, warm = timed_check(args.corpus, jobs=2, cache_dir=Path(cache))
    same = single.diagnostics == double.diagnostics == warm.diagnostics and single.errors == double.errors == warm.errors
    lines = sum(f.read_bytes().count(b"\n") for f in files)
    print(f"corpus: {len(files)} files, {lines} lines; jaxcheck checked {single.files_checked} files, "
          f"{len(single.diagnostics)} findings; -j 2 and cached results {'identical' if same else 'DIFFER'}")
    print(f"bare LibCST parse:     {parse_seconds:6.1f} s")
    print(f"check -j 1 (cold):     {single_seconds:6.1f} s  {single_seconds / parse_seconds:5.2f}x  (target <= 1.5x)")
    print(f"check -j 2 (cold):     {double_seconds:6.1f} s  {double_seconds / parse_seconds:5.2f}x  (target <= 0.8x)")
    print(f"check -j 2 (warm):     {warm_seconds:6.2f} s  {warm_seconds / parse_seconds:5.2f}x  (target < 1.5 s)")


if __name__ == "__main__":
    main()
