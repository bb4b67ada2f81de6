"""Stale attributes (JAX101): an attribute of `self` (a jitted bound method, or `self` passed static) or
of another object read while tracing and changed later is reported on the stale call, with both values,
at the line that read it. Clean twins give no finding."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

import jaxcheck.runtime as rt
from tests.runtime.programs import Program

POSITIVE = [
    Program("attribute_of_a_bound_method", """
class Trainer:
    def __init__(self):
        self.lr = 0.1
    def step(self, w):
        return w - self.lr * w  # JAX101
trainer = Trainer()
step = jax.jit(trainer.step)
step(jnp.ones(2))
trainer.lr = 0.01
step(jnp.ones(2))
"""),
    Program("attribute_of_a_static_self_through_a_replaced_object", """
from functools import partial
class Schedule:
    def __init__(self, decay):
        self.decay = decay
class Trainer:
    def __init__(self):
        self.schedule = Schedule(0.9)
    @partial(jax.jit, static_argnums=0)
    def step(self, w):
        return w * self.schedule.decay  # JAX101
trainer = Trainer()
trainer.step(jnp.ones(2))
trainer.schedule = Schedule(0.5)
trainer.step(jnp.ones(2))
"""),
    Program("attribute_of_a_global_object", """
class Config:
    lr = 0.1
config = Config()
config.lr = 0.1
@jax.jit
def step(w):
    return w - config.lr * w  # JAX101
step(jnp.ones(2))
config.lr = 0.2
step(jnp.ones(2))
"""),
    Program("class_attribute", """
class Settings:
    SCALE = 2.0
@jax.jit
def f(x):
    return x * Settings.SCALE  # JAX101
f(jnp.ones(2))
Settings.SCALE = 3.0
f(jnp.ones(2))
"""),
    Program("class_default_shadowed_on_the_object_later", """
class Trainer:
    lr = 0.1
    def step(self, w):
        return w - self.lr * w  # JAX101
trainer = Trainer()
step = jax.jit(trainer.step)
step(jnp.ones(2))
trainer.lr = 0.01
step(jnp.ones(2))
"""),
    Program("attribute_inherited_from_a_base_class_changed_there", """
class Base:
    scale = 2.0
class Model(Base):
    def __init__(self):
        self.bias = 1.0
    def apply(self, x):
        return x * self.scale + self.bias  # JAX101
model = Model()
apply = jax.jit(model.apply)
apply(jnp.ones(2))
Base.scale = 3.0
apply(jnp.ones(2))
"""),
    Program("attribute_changed_in_place", """
class Model:
    def __init__(self):
        self.hparams = {"lr": 0.1}
    def step(self, w):
        return w * self.hparams["lr"]  # JAX101
model = Model()
step = jax.jit(model.step)
step(jnp.ones(2))
model.hparams["lr"] = 0.01
step(jnp.ones(2))
"""),
]

NEGATIVE = [
    Program("attribute_read_never_changed", """
class Trainer:
    def __init__(self):
        self.lr = 0.1
    def step(self, w):
        return w - self.lr * w
trainer = Trainer()
step = jax.jit(trainer.step)
for _ in range(5):
    step(jnp.ones(2))
"""),
    Program("attribute_changed_but_passed_as_an_argument", """
class Trainer:
    def __init__(self):
        self.lr = 0.1
    def step(self, w, lr):
        return w - lr * w
trainer = Trainer()
step = jax.jit(trainer.step)
for lr in (0.1, 0.01, 0.001):
    trainer.lr = lr
    step(jnp.ones(2), trainer.lr)
"""),
    Program("class_default_never_changed_or_set_to_an_equal_value", """
class Base:
    scale = 2.0
class Model(Base):
    lr = 0.1
    def apply(self, x):
        return x * self.scale * self.lr
model = Model()
apply = jax.jit(model.apply)
apply(jnp.ones(2))
model.lr = 0.1
Model.scale = 2.0
for _ in range(3):
    apply(jnp.ones(2))
"""),
    Program("attribute_assigned_while_tracing", """
class Counter:
    def __init__(self):
        self.traces = 0
    def step(self, w):
        self.traces += 1
        return w * 2
counter = Counter()
step = jax.jit(counter.step)
step(jnp.ones(2)); step(jnp.ones(2))
counter.traces = 100
step(jnp.ones(2))
"""),
    Program("static_self_hashed_by_its_value", """
import dataclasses
from functools import partial
@dataclasses.dataclass(frozen=True)
class Trainer:
    lr: float
    @partial(jax.jit, static_argnums=0)
    def step(self, w):
        return w - self.lr * w
trainer = Trainer(0.1)
trainer.step(jnp.ones(2))
trainer = dataclasses.replace(trainer, lr=0.01)  # another static value: a new trace
trainer.step(jnp.ones(2))
"""),
    Program("attribute_rebound_to_an_equal_value_or_only_probed", """
class Model:
    def __init__(self):
        self.lr = 0.1
        self.buffer = np.zeros(3)
    def step(self, w):
        return w * self.lr + jnp.zeros(self.buffer.shape)
model = Model()
step = jax.jit(model.step)
step(jnp.ones(3))
model.lr = float("0.1")
model.buffer = np.ones(3)
step(jnp.ones(3))
"""),
    Program("pytree_argument_fields_change", """
import dataclasses
@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Params:
    w: jax.Array
@jax.jit
def f(p, x):
    return p.w * x
params = Params(jnp.ones(2))
f(params, jnp.ones(2))
params.w = jnp.zeros(2)
f(params, jnp.ones(2))
"""),
]
ALL = POSITIVE + NEGATIVE


@pytest.mark.parametrize("program", ALL, ids=[p.name for p in ALL])
def test_found_on_the_stale_call_and_clean_twins_silent(tmp_path: Path, program: Program):
    script = tmp_path / f"{program.name}.py"
    script.write_text(program.text)
    with rt.checking(mode="collect") as findings:
        runpy.run_path(str(script), run_name="__main__")
    found = {(d.code, d.range.start.line) for d in findings if Path(d.path).name == script.name}
    assert found == program.expected, findings
    assert len(findings) == len(found), findings


def test_both_values_are_named(tmp_path: Path):
    program = POSITIVE[1]
    script = tmp_path / "schedule.py"
    script.write_text(program.text)
    with rt.checking(mode="collect") as findings:
        runpy.run_path(str(script), run_name="__main__")
    assert [d.message for d in findings] == [
        "`Trainer.step` read `self.schedule.decay` while tracing (0.9); it is now 0.5, but the cached program "
        "still uses the old value"]
    assert "pass `self.schedule.decay` as an argument" in findings[0].fix.title
