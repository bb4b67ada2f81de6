"""Tracer leaks (JAX102) reported at the line that stored the traced value, when the trace that made it
ends: in a global list, a class attribute, an attribute of `self`, a stored closure, a list on `self`,
through `jax.remat`, under `grad` or `vmap` outside `jit`, or with the object holding it. Clean twins, and stores that cannot be told apart,
give no finding; the error JAX raises later is unchanged."""

from __future__ import annotations

import runpy
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

import jaxcheck.runtime as rt
from tests.runtime.programs import Program

POSITIVE = [
    Program("appended_to_a_global_list", """
leaked = []
@jax.jit
def f(x):
    y = x * 2
    leaked.append(y)  # JAX102
    return x
f(jnp.ones(2))
"""),
    Program("class_attribute", """
class Model:
    @staticmethod
    @jax.jit
    def f(x):
        Model.last = x + 1  # JAX102
        return x
Model.f(jnp.ones(2))
"""),
    Program("attribute_of_self", """
class Model:
    def __init__(self):
        self.cache = None
    def apply(self, x):
        h = jnp.sin(x)
        self.cache = h  # JAX102
        return h * 2
model = Model()
jax.jit(model.apply)(jnp.ones(2))
"""),
    Program("stored_closure", """
store = {}
@jax.jit
def f(x):
    scale = x.sum()
    store["fn"] = lambda y: y * scale  # JAX102
    return x
f(jnp.ones(2))
"""),
    Program("list_on_self", """
class Tracker:
    def __init__(self):
        self.history = []
    def step(self, x):
        loss = (x ** 2).sum()
        self.history.append(loss)  # JAX102
        return x - 0.1
tracker = Tracker()
jax.jit(tracker.step)(jnp.ones(2))
"""),
    Program("through_remat", """
saved = []
def block(x):
    h = jnp.tanh(x)
    saved.append(h)  # JAX102
    return h * 2
@jax.jit
def f(x):
    return jax.remat(block)(x).sum()
f(jnp.ones(2))
"""),
    Program("under_grad_outside_jit", """
saved = []
def loss(w):
    p = w * 3
    saved.append(p)  # JAX102
    return p.sum()
jax.grad(loss)(jnp.ones(2))
"""),
    Program("in_a_helper_under_grad_outside_jit", """
history = []
def record(value):
    history.append(value)  # JAX102
def loss(w):
    p = w * 3
    record(p)
    return p.sum()
jax.grad(loss)(jnp.ones(2))
"""),
    Program("under_vmap_outside_jit", """
class Stats:
    def __init__(self):
        self.rows = []
    def row(self, x):
        self.rows.append(x * 2)  # JAX102
        return x
stats = Stats()
jax.vmap(stats.row)(jnp.ones((3, 2)))
"""),
    Program("object_holding_the_tracer_stored", """
import dataclasses
@dataclasses.dataclass
class Box:
    value: object
class Cache:
    last = None
@jax.jit
def f(x):
    Cache.last = Box(x * 2)  # JAX102
    return x
f(jnp.ones(2))
"""),
]

NEGATIVE = [
    Program("pushed_and_popped_while_tracing", """
stack = []
@jax.jit
def f(x):
    stack.append(x * 2)
    y = stack.pop()
    return y
f(jnp.ones(2))
"""),
    Program("outputs_and_python_values_stored", """
class Counter:
    def __init__(self):
        self.calls = 0
        self.history = []
    def step(self, x):
        self.calls += 1
        return x * 2
counter = Counter()
step = jax.jit(counter.step)
for _ in range(3):
    counter.history.append(step(jnp.ones(2)))
"""),
    Program("local_list", """
@jax.jit
def f(x):
    parts = []
    for k in range(3):
        parts.append(x * k)
    return jnp.stack(parts)
f(jnp.ones(2))
"""),
    Program("pytree_argument_beside_an_attribute_of_the_same_name", """
import dataclasses
@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Params:
    w: jax.Array
class Logger:
    w = None
log = Logger()
@jax.jit
def f(p):
    log.w = 1.0
    return p.w * 2
f(Params(jnp.ones(2)))
"""),
    Program("helper_under_grad_outside_jit_storing_shapes", """
shapes = []
def record(value):
    shapes.append(value.shape)
def loss(w):
    p = w * 3
    record(p)
    return p.sum()
for _ in range(2):
    jax.grad(loss)(jnp.ones(2))
"""),
    Program("grad_outside_jit_counting_calls", """
calls = []
losses = []
def loss(w):
    calls.append(1)
    return (w ** 2).sum()
for _ in range(3):
    jax.grad(loss)(jnp.ones(2))
    losses.append(loss(jnp.ones(2)))
"""),
    Program("two_stores_cannot_be_told_apart", """
seen = []
@jax.jit
def f(x):
    seen.append(0)
    seen.append(x * 2)
    return x
f(jnp.ones(2))
"""),
]
ALL = POSITIVE + NEGATIVE


@pytest.mark.parametrize("program", ALL, ids=[p.name for p in ALL])
def test_found_at_the_store_and_clean_twins_silent(tmp_path: Path, program: Program):
    script = tmp_path / f"{program.name}.py"
    script.write_text(program.text)
    with rt.checking(mode="collect") as findings:
        runpy.run_path(str(script), run_name="__main__")
    found = {(d.code, d.range.start.line) for d in findings if Path(d.path).name == script.name}
    assert found == program.expected, findings
    assert len(findings) == len(found), findings


def _leak_and_use() -> BaseException:
    saved = []

    @jax.jit
    def f(x):
        saved.append(x + 1)  # noqa: JAX102 (the bug under test)
        return x

    f(jnp.ones(2))
    with pytest.raises(jax.errors.UnexpectedTracerError) as caught:
        jnp.sin(saved[0])
    return caught.value


def test_the_error_raised_later_is_jaxs_own():
    bare = _leak_and_use()
    with rt.checking(mode="collect") as findings:
        checked = _leak_and_use()
    assert type(checked) is type(bare) and str(checked) == str(bare)
    assert getattr(checked, "__notes__", None) == getattr(bare, "__notes__", None)
    assert [d.code for d in findings] == ["JAX102"] and "`saved[0]`" in findings[0].message


def test_a_note_on_the_error_names_the_store():
    saved = []

    def f(x):
        saved.append(x + 1)  # noqa: JAX102 (the bug under test)
        return x

    with rt.checking(mode="collect"):
        jax.jit(f)(jnp.ones(2))
        with pytest.raises(jax.errors.UnexpectedTracerError) as caught:
            jax.jit(lambda y: y * saved[0])(jnp.ones(2))  # noqa: JAX101 (the bug under test)
    line = f.__code__.co_firstlineno + 1
    assert f"stored on line {line} of" in caught.value.__notes__[-1]
