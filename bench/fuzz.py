"""The long fuzzing run: grammar-generated programs (as they are and wrapped under jit) and mutations
of real files, checked against the contract in `tests/fuzzing.py`, counting every crash instead of
stopping at the first.

    ../shared/corpus/fetch.sh .corpus   # optional: real files to mutate (else this repository's own)
    python bench/fuzz.py --generated 10000 --mutated 10000 [--out fuzz-crashes]

Each crashing program is written to `--out` with its error; the summary line gives programs tried and
crashes found. Exits 1 when anything crashed.
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from fuzzing import check_program, corpus_files, grammar_programs, mutated, traced  # noqa: E402


class Tally:
    """Programs tried and crashes found, by kind; crashing programs are saved under `out`."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.tried: Counter[str] = Counter()
        self.crashes: Counter[str] = Counter()
        self.signatures: Counter[str] = Counter()

    def run(self, kind: str, program: str) -> None:
        self.tried[kind] += 1
        if self.tried[kind] % 1000 == 0:
            print(f"... {kind}: {self.tried[kind]} programs, {self.crashes[kind]} crashes", flush=True)
        try:
            check_program(program)
        except Exception as exc:  # noqa: BLE001 - counting every crash is the point
            self.crashes[kind] += 1
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            signature = f"{type(exc).__name__} at {Path(frame.filename).name}:{frame.lineno}"
            self.signatures[signature] += 1
            self.out.mkdir(parents=True, exist_ok=True)
            name = f"{kind}-{self.crashes[kind]:05d}"
            (self.out / f"{name}.py").write_text(program, encoding="utf-8", errors="surrogateescape", newline="")
            (self.out / f"{name}.txt").write_text("".join(traceback.format_exception(exc)))


def explore(strategy: st.SearchStrategy[str], count: int, check: Callable[[str], None]) -> None:
    """Draw `count` examples from `strategy` (generation only: no shrinking, no database)."""
    @settings(max_examples=count, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def each(program: str) -> None:
        check(program)

    each()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--generated", type=int, default=10_000, help="grammar-generated programs")
    parser.add_argument("--mutated", type=int, default=10_000, help="mutated real files")
    parser.add_argument("--out", type=Path, default=Path("fuzz-crashes"), help="where crashing programs go")
    args = parser.parse_args()
    tally = Tally(args.out)
    started = time.perf_counter()

    def both(program: str) -> None:
        tally.run("generated", program)
        tally.run("generated-under-jit", traced(program))

    explore(grammar_programs(), args.generated, both)
    files = corpus_files()
    explore(mutated(files), args.mutated, lambda program: tally.run("mutated", program))
    elapsed = time.perf_counter() - started
    for kind in tally.tried:
        print(f"{kind}: {tally.tried[kind]} programs, {tally.crashes[kind]} crashes")
    for signature, count in tally.signatures.most_common():
        print(f"  {count:6d}  {signature}")
    print(f"mutation sources: {len(files)} files; {elapsed:.0f} s in all")
    return 1 if tally.crashes else 0


if __name__ == "__main__":
    raise SystemExit(main())
