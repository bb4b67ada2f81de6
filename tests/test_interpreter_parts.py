"""The interpreter's parts as contracts: the call table, the collectors' events and the framework adapters."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

import libcst as cst
import pytest

from jaxcheck.analyzer.semantics.builder import ModelBuilder
from jaxcheck.analyzer.semantics.call_table import Returns, call_semantics
from jaxcheck.analyzer.semantics.collectors import Collector
from jaxcheck.analyzer.semantics.frameworks import EQUINOX, FLAX_LINEN, FLAX_NNX, frameworks_of
from jaxcheck.analyzer.semantics.scopes import Scope
from jaxcheck.analyzer.semantics.summary import FunctionSummary
from jaxcheck.analyzer.semantics.values import (
    BOOL_MASK, JAX_ARRAY, LOGGER, NUMPY_GENERATOR, PYTHON_CONTAINER, PYTHON_SET, Value,
)


@pytest.mark.parametrize(("name", "returns", "flags"), [
    ("jax.numpy.sum", Returns.ARRAY_OPERATION, JAX_ARRAY),
    ("jax.numpy.isnan", Returns.ARRAY_OPERATION, BOOL_MASK | JAX_ARRAY),
    ("jax.numpy.linalg.eigh", Returns.ARRAY_OPERATION, PYTHON_CONTAINER),
    ("jax.lax.axis_index_size", Returns.PYTHON_VALUE, 0),  # a Python value before an array operation
    ("jax.lax.stop_gradient", Returns.STOPS_GRADIENT, 0),  # before an array operation too
    ("jax.lax.scan", Returns.TRACED_BODIES, 0),
    ("jax.device_put", Returns.PASSES_ARRAY, 0),
    ("builtins.sorted", Returns.ELEMENTWISE, 0),  # an elementwise builtin before a container
    ("builtins.set", Returns.CONTAINER, PYTHON_CONTAINER | PYTHON_SET),
    ("logging.getLogger", Returns.OBJECT, LOGGER),
    ("numpy.random.default_rng", Returns.OBJECT, NUMPY_GENERATOR),
    ("equinox.nn.Dropout", Returns.KEY_TAKING_LAYER, 0),
    ("numpy.eye", Returns.NUMPY_ARRAY, 0),
])
def test_the_call_table_reads_each_name_once_most_specific_first(name: str, returns: Returns, flags: int) -> None:
    semantics = call_semantics(name)
    assert semantics is not None and (semantics.returns, semantics.flags) == (returns, flags)


@pytest.mark.parametrize(("name", "draws"), [
    ("jax.random.normal", True), ("jax.random.split", True), ("jax.random.fold_in", False),
    ("jax.random.key", False), ("jax.numpy.sum", False),
])
def test_the_call_table_says_which_calls_draw_from_their_key(name: str, draws: bool) -> None:
    semantics = call_semantics(name)
    assert semantics is not None and semantics.draws is draws


@pytest.mark.parametrize("name", ["mypkg.train.step", "jax._src.random.normal", "flax.linen.dense_helper", "os.path.join"])
def test_names_the_table_does_not_know_are_left_to_the_project_solve(name: str) -> None:
    assert call_semantics(name) is None


class _Recorder(Collector):
    """Records the events it hears, in order."""

    def __init__(self, builder: ModelBuilder) -> None:
        super().__init__(builder)
        self.events: list[str] = []

    def call_entered(self, node: cst.Call, name: str | None) -> None:
        self.events.append(f"enter {name}")

    def call_read(self, node: cst.Call, name: str | None, args: Sequence[Value], called: Value) -> None:
        self.events.append(f"read {name} {len(args)}")

    def name_read(self, node: cst.Name, owner: Scope) -> None:
        self.events.append(f"name {node.value}")

    def probed(self, node: cst.BaseExpression) -> None:
        self.events.append("probe")

    def bound(self, value_node: cst.BaseExpression, value: Value) -> None:
        self.events.append("bind")

    def function_facts(self, summary: FunctionSummary) -> FunctionSummary:
        self.events.append(f"facts {summary.key}")
        return summary


def test_collectors_hear_the_interpreters_events_in_program_order_and_add_facts_at_the_end() -> None:
    source = textwrap.dedent("""
        import jax

        def f(key, x):
            y = jax.random.normal(key, x.shape)
            return y
    """)
    builder = ModelBuilder("m", "m.py")
    recorder = _Recorder(builder)
    builder.collectors = (*builder.collectors, recorder)
    _, summary = builder.build(cst.parse_module(source))
    assert recorder.events == [  # `x.shape` reads `x` (a name), then probes it; the callee's root `jax` is read first
        "name jax", "enter jax.random.normal", "name key", "name x", "probe", "read jax.random.normal 2", "bind",
        "name y", "facts m.f",
    ]
    assert summary.functions["m.f"].draws == frozenset({"key"})  # the PRNG collector's fact, added at the end
    assert builder.collectors == ()  # they refer back to the builder: dropped after the build


def test_framework_classes_inherit_their_frameworks_through_the_modules_own_classes() -> None:
    assert frameworks_of(["flax.linen.Module"], {}) == {FLAX_LINEN}
    assert frameworks_of(["m.Base", "flax.nnx.Module"], {"m.Base": frozenset({EQUINOX})}) == {EQUINOX, FLAX_NNX}
    assert frameworks_of([None, "object"], {}) == frozenset()
    assert FLAX_LINEN.self_is_scope and FLAX_NNX.lifts_variables and not EQUINOX.traced_methods
