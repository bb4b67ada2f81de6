"""The long fuzzing run: grammar-generated programs (as they are and wrapped under jit) and mutations
of real files, checked against the contract in `tests/fuzzing.py`, counting every crash instead of
stopping at the first.

    ../shared/corpus/fetch.sh .corpus   # optional: real files to mutate (else this repository's own)
    python bench/fuzz.py --generated 10000 --mutated 10000 [--out fuzz-crashes]
    python bench/fuzz.py --cli --generated 5000 --mutated 3000   # through `jaxcheck check --fix`

In-process, each program goes through the engine and its safe fixes. With `--cli`, the programs are
written as files, `--batch` at a time, into a temporary folder that `python -m jaxcheck check --fix`
fixes twice (the under-jit variant carries a few statements with safe fixes, so fixes meet arbitrary
code); a batch that is slow or fails as a whole is run again one file at a time.

Each failing program is written to `--out` with its error; the summary gives programs tried and
failures found, by kind. Exits 1 when anything failed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from fuzzing import (  # noqa: E402
    check_program, check_through_cli, corpus_files, grammar_programs, mutated, startup_seconds, traced,
    with_fix_baits,
)


T = TypeVar("T")


class Tally:
    """Programs tried and crashes found, by kind; crashing programs are saved under `out`, and so are
    the one-line file errors and notes the command line printed (not failures), by their first words."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.tried: Counter[str] = Counter()
        self.crashes: Counter[str] = Counter()
        self.signatures: Counter[str] = Counter()
        self.messages: Counter[str] = Counter()
        self.singled_out = 0
        self.fixed = 0

    def count(self, kind: str) -> None:
        """One more program of `kind` tried."""
        self.tried[kind] += 1
        if self.tried[kind] % 1000 == 0:
            print(f"... {kind}: {self.tried[kind]} programs, {self.crashes[kind]} failures", flush=True)

    def run(self, kind: str, program: str) -> None:
        self.count(kind)
        try:
            check_program(program)
        except Exception as exc:  # noqa: BLE001 - counting every crash is the point
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            signature = f"{type(exc).__name__} at {Path(frame.filename).name}:{frame.lineno}"
            self.fail(kind, {"program": program}, signature, "".join(traceback.format_exception(exc)))

    def fail(self, kind: str, programs: dict[str, str], signature: str, detail: str) -> None:
        """Count a failure of `programs` (one, or a batch that fails only as a whole) and save them."""
        self.crashes[kind] += 1
        self.signatures[signature] += 1
        self.out.mkdir(parents=True, exist_ok=True)
        name = f"{kind}-{self.crashes[kind]:05d}"
        for stem, program in programs.items():
            path = self.out / (f"{name}.py" if len(programs) == 1 else f"{name}-{stem}.py")
            path.write_text(program, encoding="utf-8", errors="surrogateescape", newline="")
        (self.out / f"{name}.txt").write_text(detail)

    def batch(self, programs: dict[str, str], folder: Path) -> None:
        """Send `programs` (named `<kind>_<number>`) through the command line and count what broke."""
        outcome = check_through_cli(programs, folder)
        for stem in programs:
            self.count(stem.rpartition("_")[0])
        self.messages += outcome.messages
        self.singled_out += outcome.singled_out
        self.fixed += outcome.fixed
        for failure in outcome.failures:
            culprits = {failure.name: programs[failure.name]} if failure.name else programs
            kind = failure.name.rpartition("_")[0] if failure.name else "batch"
            self.fail(kind, culprits, f"cli: {failure.kind}", f"{failure.kind}\n{failure.detail}\n")


def explore(strategy: st.SearchStrategy[T], count: int, check: Callable[[T], None]) -> None:
    """Draw `count` examples from `strategy` (generation only: no shrinking, no database)."""
    if count < 1:
        return

    @settings(max_examples=count, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def each(example: T) -> None:
        check(example)

    each()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--generated", type=int, default=10_000, help="grammar-generated programs")
    parser.add_argument("--mutated", type=int, default=10_000, help="mutated real files")
    parser.add_argument("--out", type=Path, default=Path("fuzz-crashes"), help="where crashing programs go")
    parser.add_argument("--cli", action="store_true", help="through `python -m jaxcheck check --fix`, not in-process")
    parser.add_argument("--batch", type=int, default=50, help="grammar-generated files per command with --cli")
    parser.add_argument("--mutated-batch", type=int, default=20,
                        help="mutated files per command with --cli (real files: a batch of them takes longer)")
    args = parser.parse_args()
    tally = Tally(args.out)
    started = time.perf_counter()
    files = corpus_files()
    if args.cli:
        print(f"start-up of the command: {startup_seconds():.2f} s", flush=True)
        with tempfile.TemporaryDirectory() as folder:
            through_cli(tally, Path(folder), args.generated, args.mutated, files, (args.batch, args.mutated_batch))
    else:
        def both(program: str) -> None:
            tally.run("generated", program)
            tally.run("generated-under-jit", traced(program))

        explore(grammar_programs(), args.generated, both)
        explore(mutated(files), args.mutated, lambda program: tally.run("mutated", program))
    elapsed = time.perf_counter() - started
    for kind in tally.tried:
        print(f"{kind}: {tally.tried[kind]} programs, {tally.crashes[kind]} failures")
    for signature, count in tally.signatures.most_common():
        print(f"  {count:6d}  {signature}")
    if args.cli:
        print(f"files changed by --fix: {tally.fixed}; batches run again one file at a time: {tally.singled_out}")
        print("file errors and notes (not failures):" if tally.messages else "no file errors or notes")
        for message, count in tally.messages.most_common():
            print(f"  {count:6d}  {message}")
    print(f"mutation sources: {len(files)} files; {elapsed:.0f} s in all")
    return 1 if tally.crashes else 0


def through_cli(tally: Tally, folder: Path, generated: int, mutations: int, files: list[Path],
                sizes: tuple[int, int]) -> None:
    """Grammar-generated programs (as they are and under jit with fixable statements) and mutated real
    files through the command line, `sizes` files per batch (generated, mutated)."""
    pending: dict[str, str] = {}

    def add(kind: str, program: str, size: int) -> None:
        pending[f"{kind}_{len(pending):03d}"] = program
        if len(pending) >= size:
            flush()

    def flush() -> None:
        if pending:
            tally.batch(dict(pending), folder)
            pending.clear()

    def both(pair: tuple[str, str]) -> None:
        add("generated", pair[0], sizes[0])
        add("generated_under_jit", pair[1], sizes[0])

    explore(grammar_programs().flatmap(lambda program: st.tuples(st.just(program), with_fix_baits(program))),
            generated, both)
    flush()
    explore(mutated(files), mutations, lambda program: add("mutated", program, sizes[1]))
    flush()


if __name__ == "__main__":
    raise SystemExit(main())
