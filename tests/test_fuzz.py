"""Bounded fuzzing in the normal suite (the long run is `bench/fuzz.py`): grammar-generated programs,
as they are and under jit, and mutations of real files never crash jaxcheck (see `fuzzing.py`), and the
long run's command-line half works and sees each kind of failure.
`JAXCHECK_FUZZ_EXAMPLES` sets the number of examples per test (default 150)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

pytest.importorskip("hypothesmith")

from hypothesis import HealthCheck, given, settings  # noqa: E402

import fuzzing  # noqa: E402
from fuzzing import (  # noqa: E402
    FIX_BAITS, TRACED_PRELUDE, check_program, check_through_cli, corpus_files, grammar_programs, mutated, traced,
)

FUZZ = settings(
    max_examples=int(os.environ.get("JAXCHECK_FUZZ_EXAMPLES", "150")), deadline=None, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


@FUZZ
@given(grammar_programs())
def test_generated_programs_as_they_are_and_under_jit(program: str):
    check_program(program)
    check_program(traced(program))


@FUZZ
@given(mutated(corpus_files()))
def test_mutated_real_files(program: str):
    check_program(program)


@pytest.mark.parametrize("program", [
    "x = (" + " ".join(['"a"'] * 5000) + ")\n",
    "def f(x):\n    return " + " and ".join(["x"] * 3000) + "\n",
    "\ufeffx = 1\n",
    "x = 1\r\ny = 2\rz = 3\n",
    "if x:\n\x0c    y = 1\n",
    "if x:\n  if y:\n\t    z = 1\n  w = 2\n",
    "x = 1\n\\\nclass C:\n  \\\n  y = 2\n",
    "x = 1\nMv\U00013767\u00ed\u00f1\n",  # U+13767 is no identifier character: LibCST's validation raises
    "\\\n",
    "x = 1\n \t\\\r\n",
    "",
])
def test_known_edge_cases(program: str):
    check_program(program)
    check_program(traced(program))


def test_programs_through_the_command_line_and_fix(tmp_path: Path):
    baited = traced("y = x + 1\nif y:\n    z = 2\n").replace(TRACED_PRELUDE, TRACED_PRELUDE + "".join(
        f"    {bait}\n" for bait in FIX_BAITS))
    mutation = corpus_files()[0].read_text(encoding="utf-8").replace(":", "", 1)
    outcome = check_through_cli({"generated_0": "x = 1\n", "generated_under_jit_0": baited, "mutated_0": mutation},
                                tmp_path)
    assert outcome.failures == [] and not outcome.singled_out
    assert outcome.fixed == 1


APPEND = "import pathlib, sys\nfor p in pathlib.Path(sys.argv[1]).glob('*.py'): p.write_text(p.read_text() + {!r})"


@pytest.mark.parametrize(("command", "kind", "culprit"), [
    ("raise RuntimeError('boom')", "traceback", "fast_0"),
    ("raise SystemExit(3)", "exit", "fast_0"),
    ("import sys; print(sys.argv[1] + '/slow_0.py: error: internal error: KeyError: 1', file=sys.stderr); "
     "raise SystemExit(2)", "internal-error", "slow_0"),
    ("import sys; print('an unexpected line', file=sys.stderr)", "stderr", "fast_0"),
    (APPEND.format("x = 1\n"), "not-idempotent", "fast_0"),
    (APPEND.format("(\n"), "unparsable-fix", "fast_0"),
    ("import pathlib, sys, time; time.sleep(1.5 if (pathlib.Path(sys.argv[1]) / 'slow_0.py').exists() else 0)",
     "hang", "slow_0"),
])
def test_the_command_line_harness_sees_each_failure(monkeypatch, tmp_path: Path, command: str, kind: str,
                                                    culprit: str):
    """A stand-in for the command that fails one way: the failure is found and pinned on its file."""
    monkeypatch.setattr(fuzzing, "CLI", (sys.executable, "-c", command))
    monkeypatch.setattr(fuzzing, "startup_seconds", lambda: 0.0)
    monkeypatch.setattr(fuzzing, "HANG_SECONDS", 1.0)
    outcome = check_through_cli({"fast_0": "x = 1\n", "slow_0": "y = 2\n"}, tmp_path)
    assert (culprit, kind) in {(failure.name, failure.kind) for failure in outcome.failures}
