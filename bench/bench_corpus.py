"""Time jaxcheck on the real-world corpus against bare LibCST parsing of the same files, in one run.

    ../shared/corpus/fetch.sh .corpus && python bench/bench_corpus.py .corpus

Prints seconds and the ratio check/parse (the target is at most 1.5). Machines are shared and noisy:
compare ratios from one run, not seconds across runs.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import libcst

from jaxcheck import check_paths
from jaxcheck.analyzer.parsing import run_with_deep_stack


def bare_parse(files: list[Path]) -> float:
    sources = [f.read_text(encoding="utf-8") for f in files]
    start = time.perf_counter()
    for source in sources:
        libcst.parse_module(source)
    return time.perf_counter() - start


def full_check(root: Path) -> tuple[float, int, int]:
    start = time.perf_counter()
    report = check_paths([root])
    return time.perf_counter() - start, report.files_checked, len(report.diagnostics)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    args = parser.parse_args()
    files = sorted(args.corpus.rglob("*.py"))
    parse_seconds = run_with_deep_stack(lambda: bare_parse(files))
    check_seconds, checked, findings = full_check(args.corpus)
    lines = sum(f.read_bytes().count(b"\n") for f in files)
    print(f"corpus: {len(files)} files, {lines} lines; jaxcheck checked {checked} files, {findings} findings")
    print(f"bare LibCST parse: {parse_seconds:6.1f} s")
    print(f"jaxcheck check:    {check_seconds:6.1f} s")
    print(f"ratio check/parse: {check_seconds / parse_seconds:6.2f}x (target <= 1.5x)")


if __name__ == "__main__":
    main()
