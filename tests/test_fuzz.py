"""Bounded fuzzing in the normal suite (the long run is `bench/fuzz.py`): grammar-generated programs,
as they are and under jit, and mutations of real files never crash jaxcheck (see `fuzzing.py`).
`JAXCHECK_FUZZ_EXAMPLES` sets the number of examples per test (default 150)."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("hypothesmith")

from hypothesis import HealthCheck, given, settings  # noqa: E402

from fuzzing import check_program, corpus_files, grammar_programs, mutated, traced  # noqa: E402

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
