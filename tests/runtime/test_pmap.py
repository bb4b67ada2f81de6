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


NAN_PROGRAM = """\
import json, jax, jax.numpy as jnp
import jaxcheck.runtime as rt
traced = []
def f(x, y):
    traced.append(1)
    return jnp.sqrt(x) * y  # the NaN
def safe(x, y):
    traced.append(1)
    return jnp.sqrt(jnp.maximum(x, 0.0)) * y
def exchanged(x):
    return jnp.log(x) + jax.lax.psum(x, "i")
x = jnp.array([[1.0, 2.0], [3.0, -1.0], [1.0, 1.0], [2.0, 2.0]])
bare = [jax.pmap(f, in_axes=(0, None))(x, 2.0) for _ in range(2)]
bare_traces, traced[:] = len(traced), []
with rt.checking(mode="collect", nans=True) as found:
    checked = [jax.pmap(f, in_axes=(0, None))(x, 2.0) for _ in range(2)]
    jax.pmap(safe, in_axes=(0, None))(x, 2.0)
    jax.pmap(exchanged, axis_name="i")(x[:, 1])
    try:
        jax.pmap(lambda v: v if v.sum() > 0 else -v)(x)
    except jax.errors.TracerBoolConversionError as error:
        note = error.__notes__[-1]
print(json.dumps({"note": note, "same": all((a == b).tolist() == (b == b).tolist() for a, b in zip(bare, checked)),
                  "traces": [bare_traces, len(traced)],
                  "found": [(d.range.start.line, d.message) for d in found if d.code == "JAX701"]}))
"""


def test_pmap_nan_is_located_shard_by_shard_in_nan_mode(tmp_path: Path):
    import json

    (tmp_path / "prog.py").write_text(NAN_PROGRAM)
    result = run_python(["prog.py"], tmp_path, env=FOUR_DEVICES)
    assert result.returncode == 0, result.stdout + result.stderr
    seen = json.loads(result.stdout.splitlines()[-1])
    assert seen["same"] and seen["traces"] == [1, 2]  # f traced once, as bare; safe once
    found = sorted(seen["found"])  # flags are read when ready: in any order
    assert [line for line, _ in found] == [6, 10]
    assert "NaN first produced by `sqrt` in the forward pass of `f`" in found[0][1]
    assert "`exchanged` (not located" in found[1][1]
    # no argument named: JAX names its own wrapper's (`flat_args`), not the user's
    assert "prog.py:20: JAX301 TracerBoolConversionError in `<lambda>` under jax.pmap Fix" in seen["note"]
