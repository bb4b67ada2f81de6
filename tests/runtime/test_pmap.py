"""pmap on 4 host devices (`XLA_FLAGS=--xla_force_host_platform_device_count=4`, set in a subprocess
before JAX starts): a mapped axis larger than the device count gets a clear note naming the argument,
through each switch; a mapped axis that fits runs unchanged."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.runtime.conftest import run_jaxcheck, run_pytest, run_python

FOUR_DEVICES = {"XLA_FLAGS": "--xla_force_host_platform_device_count=4"}
PROGRAM = """\
import jax, jax.numpy as jnp
double = jax.pmap(lambda x: x * 2)
assert double(jnp.ones((4, 3))).shape == (4, 3)
assert double(jnp.ones((2, 3))).shape == (2, 3)
try:
    double(jnp.ones((8, 3)))
except Exception as error:
    note = error.__notes__[-1]
    assert "JAX702 pmap maps argument 'x' over its axis 0 of size 8, but only 4 cpu device(s) exist" in note, note
    assert "prog.py:" in note.split(" JAX702")[0], note  # at the user's call, not in a JAX frame
    assert "reshape it to (4, 2, ...)" in note, note
    print("NOTED")
"""
SWITCHES = {
    "jaxcheck run": ("prog.py", PROGRAM),
    "checking()": ("prog.py", "import jaxcheck.runtime\nwith jaxcheck.runtime.checking(mode='raise'):\n"
                   + textwrap.indent(PROGRAM, "    ")),
    "pytest --jaxcheck": ("test_prog.py", "def test_pmap():\n" + textwrap.indent(PROGRAM, "    ")),
}


@pytest.mark.parametrize("switch", list(SWITCHES))
def test_pmap_axis_larger_than_the_device_count(tmp_path: Path, switch: str):
    name, source = SWITCHES[switch]
    (tmp_path / name).write_text(source)
    if switch == "pytest --jaxcheck":
        result = run_pytest(["--jaxcheck", "-q", "-s", "-p", "no:cacheprovider"], tmp_path, env=FOUR_DEVICES)
    elif switch == "jaxcheck run":
        result = run_jaxcheck(["run", name], tmp_path, env=FOUR_DEVICES)
    else:
        result = run_python([name], tmp_path, env=FOUR_DEVICES)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "NOTED" in result.stdout
