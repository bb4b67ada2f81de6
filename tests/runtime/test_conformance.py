"""Conformance (issue 33): the programs of `conformance_programs.py` show the same outputs (bit for bit),
trace counts, exceptions, callbacks fired and donated buffers bare and under every switch: `checking()`
(defaults, and NaN plus index checks), `jaxcheck run` and `pytest --jaxcheck`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.runtime.conftest import run_jaxcheck, run_pytest, run_python

PROGRAMS = Path(__file__).with_name("conformance_programs.py")
SWITCHES = ["checking()", "checking(nans, index_checks)", "jaxcheck run", "pytest --jaxcheck"]
CHECKING = """\
import runpy, sys
import jaxcheck.runtime as rt
with rt.checking(mode="collect"{options}):
    runpy.run_path("conformance_programs.py", run_name="__main__")
"""
PYTEST = """\
import os, conformance_programs
def test_programs():
    conformance_programs.observe(os.environ["CONFORMANCE_OUT"])
"""


def _observed(folder: Path, switch: str | None) -> list[dict[str, Any]]:
    """Run the programs bare (`switch` None) or under `switch` in `folder`; what they showed, by program."""
    shutil.copy(PROGRAMS, folder / PROGRAMS.name)
    out = folder / f"{switch or 'bare'}.jsonl".replace(" ", "_")
    env = {"CONFORMANCE_OUT": str(out)}
    if switch is None:
        result = run_python([PROGRAMS.name], folder, env)
    elif switch.startswith("checking"):
        options = ", nans=True, index_checks=True" if "nans" in switch else ""
        (folder / "main.py").write_text(CHECKING.format(options=options))
        result = run_python(["main.py"], folder, env)
    elif switch == "jaxcheck run":
        result = run_jaxcheck(["run", "--mode", "collect", PROGRAMS.name], folder, env)
    else:
        (folder / "test_conformance_run.py").write_text(PYTEST)
        result = run_pytest(["--jaxcheck", "-q", "-p", "no:cacheprovider", "test_conformance_run.py"], folder, env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return [json.loads(line) for line in out.read_text().splitlines()]


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    return _observed(tmp_path_factory.mktemp("bare"), None)


@pytest.mark.parametrize("switch", SWITCHES)
def test_every_program_behaves_as_bare(bare: list[dict[str, Any]], switch: str, tmp_path: Path):
    observed = _observed(tmp_path, switch)
    assert [entry["program"] for entry in observed] == [entry["program"] for entry in bare]
    for expected, got in zip(bare, observed):
        assert got == expected, expected["program"]


def test_the_programs_observe_what_they_should(bare: list[dict[str, Any]]):
    by_name = {entry["program"]: entry for entry in bare}
    assert by_name["jit_created_in_a_loop"]["traces"] == 1
    assert by_name["donated_buffers"]["deleted"] is True
    assert by_name["runtime_error_with_donated_arguments"]["out"][0] == "error"
    assert by_name["callbacks"]["fired"] == 5
    assert [entry[0] for entry in by_name["trace_errors"]["out"]] == ["error"] * 3
    assert by_name["equinox_filter_jit"].get("traces", 2) == 2
    assert by_name["equinox_keys_and_static_fields"].get("traces", 2) == 2
    assert by_name["nnx_rngs_under_jit"].get("traces", 1) == 1
    assert "skipped" in by_name["chex_max_traces"] or by_name["chex_max_traces"]["out"][-1][0] == "error"
