"""Key reuse (JAX401) inside loop bodies and branches, through keys closed over by a loop body, and under
`eqx.filter_jit` and `nnx.jit`, counted as `jax_debug_key_reuse` counts it; retracing under
`eqx.filter_jit` with what changed (a static field). Each planted bug is reported at its line (marked
`# <CODE>`), each clean twin gives no finding."""

from __future__ import annotations

import runpy
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

import jaxcheck.runtime as rt
from tests.runtime.programs import Program

eqx = pytest.importorskip("equinox")
nnx = pytest.importorskip("flax.nnx")

POSITIVE = [
    Program("key_consumed_twice_in_a_scan_body", """
@jax.jit
def f(key):
    def body(k, _):
        k, sub = jax.random.split(k)
        return k, jax.random.normal(sub) + jax.random.uniform(sub)  # JAX401
    return jax.lax.scan(body, key, None, length=3)[1]
f(jax.random.key(0))
"""),
    Program("key_consumed_twice_in_one_branch", """
@jax.jit
def f(key, p):
    def noisy(k):
        a = jax.random.normal(k)
        return a + jax.random.uniform(k)  # JAX401
    return jax.lax.cond(p, noisy, jax.random.uniform, key)
f(jax.random.key(0), True)
"""),
    Program("filter_jit_key_consumed_twice", """
import equinox as eqx
@eqx.filter_jit
def f(key, x):
    a = jax.random.normal(key, ())
    return x + a + jax.random.uniform(key, ())  # JAX401
f(jax.random.key(0), jnp.ones(2))
"""),
    Program("filter_jit_key_reused_across_calls", """
import equinox as eqx
@eqx.filter_jit
def f(key, x, scale):
    return x + scale * jax.random.normal(key, ())
key = jax.random.key(0)
f(key, jnp.ones(2), 1.0)
f(key, jnp.ones(2), 2.0)  # JAX401
"""),
    Program("filter_jit_key_in_a_module_reused_across_calls", """
import equinox as eqx
class Noise(eqx.Module):
    key: jax.Array
    def __call__(self, x):
        return x + jax.random.normal(self.key, ())
apply = eqx.filter_jit(lambda model, x: model(x))
model = Noise(jax.random.key(0))
apply(model, jnp.ones(2))
apply(model, jnp.ones(2))  # JAX401
"""),
    Program("filter_jit_key_closed_over_by_a_fori_loop_body", """
import equinox as eqx
@eqx.filter_jit
def f(key):
    def body(i, total):
        return total + jax.random.normal(key, ())  # JAX401
    return jax.lax.fori_loop(0, 3, body, 0.0)
f(jax.random.key(0))
"""),
    Program("nnx_jit_key_reused_across_calls", """
from flax import nnx
@nnx.jit
def f(key, x):
    return x + jax.random.normal(key, ())
key = jax.random.key(0)
f(key, jnp.ones(2))
f(key, jnp.ones(2))  # JAX401
"""),
    Program("filter_jit_retraces_on_a_changing_static_field", """
import equinox as eqx
class Scaled(eqx.Module):
    w: jax.Array
    power: int = eqx.field(static=True)
@eqx.filter_jit
def f(model, x):
    return (model.w * x) ** model.power
for power in range(12):
    f(Scaled(jnp.ones(2), power), jnp.ones(2))  # JAX501
"""),
]

NEGATIVE = [
    Program("key_consumed_in_either_branch", """
@jax.jit
def f(key, p):
    return jax.lax.cond(p, lambda k: jax.random.normal(k), lambda k: jax.random.uniform(k), key)
f(jax.random.key(0), True)
"""),
    Program("key_folded_in_by_a_loop_body", """
@jax.jit
def f(key):
    return jax.lax.fori_loop(0, 3, lambda i, c: c + jax.random.normal(jax.random.fold_in(key, i)), 0.0)
f(jax.random.key(0))
"""),
    Program("filter_jit_key_split_each_call_and_each_iteration", """
import equinox as eqx
@eqx.filter_jit
def f(key, x):
    def body(carry, _):
        k, total = carry
        k, sub = jax.random.split(k)
        return (k, total + jax.random.normal(sub, ())), None
    return jax.lax.scan(body, (key, x), None, length=3)[0][1]
key = jax.random.key(0)
for _ in range(3):
    key, sub = jax.random.split(key)
    f(sub, 0.0)
"""),
    Program("filter_jit_module_key_replaced_each_call", """
import equinox as eqx
class Noise(eqx.Module):
    key: jax.Array
    def __call__(self, x):
        return x + jax.random.normal(self.key, ())
apply = eqx.filter_jit(lambda model, x: model(x))
key = jax.random.key(0)
for _ in range(3):
    key, sub = jax.random.split(key)
    apply(Noise(sub), jnp.ones(2))
"""),
    Program("nnx_jit_key_split_each_call", """
from flax import nnx
@nnx.jit
def f(key, x):
    return x + jax.random.normal(key, ())
key = jax.random.key(0)
for _ in range(3):
    key, sub = jax.random.split(key)
    f(sub, jnp.ones(2))
"""),
    Program("filter_jit_static_field_kept_arrays_changed", """
import equinox as eqx
class Scaled(eqx.Module):
    w: jax.Array
    power: int = eqx.field(static=True)
@eqx.filter_jit
def f(model, x):
    return (model.w * x) ** model.power
for step in range(12):
    f(Scaled(jnp.ones(2) * step, 2), jnp.ones(2) + step)
"""),
]
ALL = POSITIVE + NEGATIVE


@pytest.mark.parametrize("program", ALL, ids=[p.name for p in ALL])
def test_found_at_its_line_and_clean_twins_silent(tmp_path: Path, program: Program):
    script = tmp_path / f"{program.name}.py"
    script.write_text(program.text)
    with rt.checking(mode="collect") as findings:
        runpy.run_path(str(script), run_name="__main__")
    found = {(d.code, d.range.start.line) for d in findings if Path(d.path).name == script.name}
    assert found == program.expected, findings
    assert len(findings) == len(found), findings


def test_a_reused_key_is_named_by_its_place_in_the_users_call():
    class Noise(eqx.Module):
        key: jax.Array

        def __call__(self, x):
            return x + jax.random.normal(self.key, ())

    with rt.checking(mode="collect") as findings:
        apply = eqx.filter_jit(lambda model, x: model(x))
        model = Noise(jax.random.key(0))
        apply(model, jnp.ones(2))
        apply(model, jnp.ones(2))  # noqa: JAX401 (the reuse under test)
    assert len(findings) == 1 and "as 'model.key'" in findings[0].message


def test_filter_jit_traces_are_counted_with_the_static_field_that_changed():
    class Scaled(eqx.Module):
        w: jax.Array
        power: int = eqx.field(static=True)

    def f(model, x, scale):
        return (model.w * x) ** model.power * scale

    with rt.checking(mode="collect"):
        step = eqx.filter_jit(f)
        for power in (1, 1, 2):
            step(Scaled(jnp.ones(2), power), jnp.ones(2), 1.0)
        step(Scaled(jnp.ones(2), 2), jnp.ones(2), 2.0)  # a Python float is static under filter_jit
        history = rt.traces(step)
    assert history.count == 3 and rt.traces(f).count == 3
    assert history.changes == ["model.power: static int 1 -> static int 2",
                               "scale: static float 1.0 -> static float 2.0"]


def test_nnx_jit_traces_are_counted():
    def f(model, x):
        return model(x)

    with rt.checking(mode="collect"):
        step = nnx.jit(f)
        model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
        step(model, jnp.ones((1, 2)))
        step(model, jnp.ones((1, 2)))
        step(model, jnp.ones((3, 2)))
        history = rt.traces(step)
    assert history.count == 2 and "float32[1, 2] -> float32[3, 2]" in history.changes[0]
