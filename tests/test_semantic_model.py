"""The semantic model itself: which functions are traced, and which values are traced or static.

Snippets mark expressions with `traced(expr)` or `static(expr)` (unknown calls to the model, so the
marks change nothing); the test asks the model about each marked argument.
"""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from jaxcheck.analyzer.parsing import parse_source, run_with_deep_stack
from jaxcheck.analyzer.semantics import SemanticModel
from jaxcheck.analyzer.semantics.builder import ModelBuilder
from jaxcheck.analyzer.semantics.solver import solve


def model_of(source: str, extra_jit: tuple[str, ...] = ()) -> tuple[SemanticModel, cst.Module]:
    module = parse_source(textwrap.dedent(source))
    assert isinstance(module, cst.Module)
    records, summary = run_with_deep_stack(lambda: ModelBuilder("m", "m.py", extra_jit).build(module))
    return SemanticModel(module, records, summary, solve([summary])), module


class _Probes(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found: list[tuple[str, cst.BaseExpression]] = []

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value in ("traced", "static"):
            self.found.append((node.func.value, node.args[0].value))


VALUE_CASES = {
    "jit parameter": """
        import jax
        @jax.jit
        def f(x):
            traced(x)
    """,
    "alias import of jit": """
        from jax import jit as J
        @J
        def f(x):
            traced(x + 1)
    """,
    "numba.jit is not JAX": """
        import numba
        @numba.jit
        def f(x):
            static(x)
    """,
    "shape, ndim, dtype, len, isinstance are static": """
        import jax
        import jax.numpy as jnp
        @jax.jit
        def f(x):
            static(x.shape[0]); static(x.ndim); static(x.dtype); static(len(x)); static(jnp.shape(x))
            static(isinstance(x, int)); static(x is None); static(type(x))
    """,
    "static_argnums, negative index and static_argnames": """
        import jax
        from functools import partial
        @partial(jax.jit, static_argnums=(-1,), static_argnames="mode")
        def f(x, mode, n):
            traced(x); static(mode); static(n)
    """,
    "jax.jit(static_argnums=...) used as a decorator": """
        import jax
        @jax.jit(static_argnums=1)
        def f(x, n):
            traced(x); static(n)
    """,
    "call form g = jax.jit(f, static_argnames=...)": """
        import jax
        def f(x, n):
            traced(x); static(n)
        g = jax.jit(f, static_argnames=("n",))
    """,
    "jit of partial binds the first parameter": """
        import jax
        from functools import partial
        def f(cfg, x):
            static(cfg); traced(x)
        g = jax.jit(partial(f, {"lr": 0.1}))
    """,
    "grad alone keeps values concrete": """
        import jax
        def loss(w):
            static(w)
        g = jax.grad(loss)
    """,
    "jit of grad is staged": """
        import jax
        def loss(w):
            traced(w)
        g = jax.jit(jax.grad(loss))
    """,
    "vmap in_axes None leaves a parameter unbatched": """
        import jax
        def f(x, n):
            traced(x); static(n)
        g = jax.vmap(f, in_axes=(0, None))
    """,
    "vmap in_axes given positionally": """
        import jax
        def f(x, n):
            traced(x); static(n)
        g = jax.vmap(f, (0, None))
    """,
    "scan body gets carry and x, not extra defaults": """
        from jax import lax
        def body(carry, x, scale=2.0):
            traced(carry); traced(x); static(scale)
            return carry, x
        lax.scan(body, 0.0, xs)
    """,
    "fori_loop and while_loop bodies, lambdas too": """
        import jax
        def body(i, acc):
            traced(i); traced(acc)
            return acc
        jax.lax.fori_loop(0, 3, body, 0.0)
        jax.lax.while_loop(lambda s: traced(s), lambda s: s + 1, 0)
    """,
    "cond and switch branches": """
        from jax import lax
        def yes(v):
            traced(v)
        def no(v):
            traced(v)
        lax.cond(p, yes, no, 1.0)
        lax.switch(i, [yes, no], 1.0)
    """,
    "transitive helper with traced argument": """
        import jax
        def helper(a, b):
            traced(a); static(b)
        @jax.jit
        def f(x):
            helper(x, 3)
    """,
    "helper called only from untraced code": """
        def helper(a):
            static(a)
        def main(x):
            helper(x)
    """,
    "method helper through self": """
        import jax
        from functools import partial
        class Model:
            @partial(jax.jit, static_argnums=0)
            def step(self, x):
                static(self)
                self.helper(x)
            def helper(self, y):
                traced(y)
    """,
    "dataflow through assignment, unpacking and arithmetic": """
        import jax
        import jax.numpy as jnp
        @jax.jit
        def f(x, y):
            a, b = x * 2, 3
            traced(a); static(b)
            c = jnp.sum(a) + b
            traced(c)
            d = c.shape
            static(d)
    """,
    "array ops on constants are staged under jit": """
        import jax
        import jax.numpy as jnp
        @jax.jit
        def f(x):
            traced(jnp.zeros(3))
            static(jnp.zeros(3).shape)
    """,
    "loop-carried values become traced": """
        import jax
        @jax.jit
        def f(xs):
            total = 0.0
            for v in xs:
                traced(total)
                total = total + v
    """,
    "enumerate index is static": """
        import jax
        @jax.jit
        def f(xs):
            for i, v in enumerate(xs):
                static(i); traced(v)
    """,
    "isinstance narrowing": """
        import jax
        from jax import core
        @jax.jit
        def f(x):
            if isinstance(x, int):
                static(x)
            if not isinstance(x, core.Tracer):
                static(x)
            else:
                traced(x)
    """,
    "tuple return unpacked per element": """
        import jax
        def split(x):
            return x * 2, x.shape[0]
        @jax.jit
        def f(x):
            y, n = split(x)
            traced(y); static(n)
    """,
    "closure sees the enclosing function's tracer": """
        import jax
        @jax.jit
        def f(x):
            def inner():
                traced(x)
            inner()
    """,
    "Flax module: array-annotated parameters are traced": """
        import flax.linen as nn
        import jax
        class MLP(nn.Module):
            @nn.compact
            def __call__(self, x: jax.Array, train: bool):
                traced(x); static(train)
    """,
    "Equinox filter_jit: only array-annotated parameters are traced": """
        import equinox as eqx
        import jax
        @eqx.filter_jit
        def f(x: jax.Array, n):
            traced(x); static(n)
    """,
    "str and Callable annotations never hold tracers": """
        import jax
        from typing import Callable
        @jax.jit
        def f(x, name: str, fn: Callable[[int], int] | None = None):
            traced(x); static(name); static(fn)
    """,
    "extra-jit-decorators": """
        import mylib
        @mylib.compiled
        def f(x):
            traced(x)
    """,
}


@pytest.mark.parametrize("source", VALUE_CASES.values(), ids=list(VALUE_CASES))
def test_value_verdicts(source):
    model, module = model_of(source, extra_jit=("mylib.compiled",))
    probes = _Probes()
    module.visit(probes)
    assert probes.found, "snippet has no probes"
    for expected, node in probes.found:
        assert model.is_traced(node) == (expected == "traced"), f"{expected}({module.code_for_node(node)})"


def test_function_traces_name_their_transforms():
    model, _ = model_of(
        """
        import jax
        from jax import lax
        @jax.jit
        def step(x):
            return helper(x)
        def helper(y):
            return y
        def loss(w):
            return w
        g = jax.grad(loss)
        lax.scan(lambda c, x: (c, x), 0, xs)
        def unused(z):
            return z
        """
    )
    assert model.trace_of("m.step").transforms == {"jax.jit"} and model.trace_of("m.step").direct
    helper = model.trace_of("m.helper")
    assert helper.transforms == {"jax.jit"} and helper.staged and not helper.direct
    assert model.trace_of("m.loss").transforms == {"jax.grad"} and not model.trace_of("m.loss").staged
    assert model.trace_of("m.<lambda#1>").transforms == {"jax.lax.scan"}
    assert model.trace_of("m.unused") is None


def test_bool_masks_and_containers():
    model, module = model_of(
        """
        import jax
        import jax.numpy as jnp
        @jax.jit
        def f(x):
            m = (x > 0) & ~jnp.isnan(x)
            items = [x, x]
            return m, items
        """
    )
    returned = [n for n in _walk(module) if isinstance(n, cst.Return)][0].value
    mask, items = (element.value for element in returned.elements)
    assert model.is_bool_mask(mask)
    assert model.is_python_container(items) and not model.is_python_container(mask)


def _walk(node: cst.CSTNode):
    yield node
    for child in node.children:
        yield from _walk(child)


def _names(module: cst.Module, value: str) -> list[cst.Name]:
    return [n for n in _walk(module) if isinstance(n, cst.Name) and n.value == value]


def test_outer_names_and_binding_changes():
    model, module = model_of(
        """
        import jax
        import os
        SCALE = 2.0
        MODE = 1 if os.environ else 2
        if os.environ:
            LEVEL = 1
        else:
            LEVEL = 2
        RATE = 0.1
        items = []
        items.append(1)
        def bump():
            global RATE
            RATE = RATE * 2
            items.append(2)
        @jax.jit
        def f(x):
            local = 1
            return x * SCALE * MODE * LEVEL * RATE * local * len(items)
        """
    )
    reads = {name.value: name for name in _walk(module) if isinstance(name, cst.Name) and model.outer_name(name)}
    assert "local" not in reads and model.outer_name(reads["SCALE"]).module_level
    key = "m.f"
    assert model.change_of(model.outer_name(reads["SCALE"]), "SCALE", key) is None
    assert model.change_of(model.outer_name(reads["MODE"]), "MODE", key) is None
    assert model.change_of(model.outer_name(reads["LEVEL"]), "LEVEL", key) is None
    rate = model.change_of(model.outer_name(reads["RATE"]), "RATE", key)
    assert rate is not None and rate.kind.value.startswith("reassigned through")
    items = model.change_of(model.outer_name(reads["items"]), "items", key)
    assert items is not None and model.position(items.node).start.line == 16  # in bump(), not at import (line 12)


def test_enclosing_variables_change_only_after_the_closure_exists():
    model, module = model_of(
        """
        import jax
        def train(xs, scale, shift):
            shift = shift * 2
            @jax.jit
            def f(x):
                return x * scale + shift
            for x in xs:
                f(x)
                scale = scale * 0.9
        """
    )
    scale = next(n for n in _names(module, "scale") if model.outer_name(n))
    shift = next(n for n in _names(module, "shift") if model.outer_name(n))
    assert model.change_of(model.outer_name(scale), "scale", "m.train.<locals>.f") is not None
    assert model.change_of(model.outer_name(shift), "shift", "m.train.<locals>.f") is None


def test_transform_sites_know_where_callables_are_created():
    model, module = model_of(
        """
        import jax
        def f(x):
            return x
        def run(xs):
            g = jax.jit(f)
            for x in xs:
                h = jax.jit(lambda v: v + x)
                jax.jit(f)(x)
        """
    )
    calls = [n for n in _walk(module) if isinstance(n, cst.Call) and model.transform_site(n)]
    sites = [model.transform_site(c) for c in calls]
    assert [s.origin.kind if s.origin else None for s in sites] == [None, "lambda", None]
    assert sites[1].loops and sites[1].origin.loops == sites[1].loops
    assert [model.is_called_immediately(c) for c in calls] == [False, False, True]


def test_object_kinds_are_tracked_through_module_globals():
    model, module = model_of(
        """
        import logging
        import numpy as np
        from pathlib import Path
        log = logging.getLogger(__name__)
        rng = np.random.default_rng(0)
        out = Path("runs") / "latest"
        def f():
            return log, rng, out.parent
        """
    )
    returned = [n for n in _walk(module) if isinstance(n, cst.Return)][0].value
    log, rng, parent = (element.value for element in returned.elements)
    assert model.is_logger(log) and model.is_numpy_generator(rng) and model.is_filesystem_path(parent)
    assert not model.is_logger(rng)



def test_program_order_counts_changes_between_calls_only():
    model, module = model_of(
        """
        import jax
        lr = 0.1
        decay = 1.0
        decay = 0.5
        @jax.jit
        def update(w):
            return w * lr * decay
        w = update(1.0)
        lr = 0.01
        w = update(w)
        """
    )
    lr = next(n for n in _names(module, "lr") if model.outer_name(n))
    decay = next(n for n in _names(module, "decay") if model.outer_name(n))
    change = model.change_of(model.outer_name(lr), "lr", "m.update", lr)
    assert change is not None and model.position(change.node).start.line == 10
    assert model.change_of(model.outer_name(decay), "decay", "m.update", decay) is None  # before any call


def test_a_store_to_another_attribute_is_no_change_of_what_is_read():
    model, module = model_of(
        """
        import jax
        class Flags:
            a = 0
            b = 1
        FLAGS = Flags()
        @jax.jit
        def f(x):
            return x * FLAGS.b + FLAGS.a
        def setup():
            FLAGS.a = 1
        """
    )
    reads = [n for n in _names(module, "FLAGS") if model.outer_name(n)]
    b_read, a_read = reads[:2]  # the two reads in f (setup() reads FLAGS too)
    assert model.change_of(model.outer_name(b_read), "FLAGS", "m.f", b_read) is None
    assert model.change_of(model.outer_name(a_read), "FLAGS", "m.f", a_read) is not None


def test_repetition_is_evident_only_from_loops():
    model, _ = model_of(
        """
        import functools
        def once(x):
            return x
        def step(x):
            return helper(x)
        def helper(x):
            return x
        @functools.lru_cache
        def compiled(n):
            return n
        def main(xs):
            once(xs)
            for x in xs:
                step(x)
                compiled(3)
        """
    )
    assert model.runs_repeatedly("m.step") and model.runs_repeatedly("m.helper")
    assert not model.runs_repeatedly("m.once") and not model.runs_repeatedly("m.main")
    assert not model.runs_repeatedly("m.compiled")


def test_parameters_only_probed_are_inert_and_defaults_never_passed_stay_concrete():
    model, _ = model_of(
        """
        import jax
        def is_key(key, other):
            return key.shape == (2,) and isinstance(key, object) and key is not None and other + 1
        @jax.jit
        def f(x, debug=False, scale=1.0):
            return x
        y = f(1.0, scale=2.0)
        """
    )
    assert model.solution.functions["m.is_key"].inert_params == frozenset({"key"})
    trace = model.trace_of("m.f")
    assert trace is not None and trace.traced_params == frozenset({"x", "scale"})


def test_host_callbacks_and_pallas_kernels():
    model, module = model_of(
        """
        import jax
        from jax.experimental import pallas as pl
        @jax.jit
        def step(x):
            def log(v):
                print(v)
            jax.debug.callback(log, x)
            def kernel(x_ref, o_ref):
                o_ref[...] = x_ref[...]
            return pl.pallas_call(kernel, out_shape=x)(x)
        """
    )
    assert model.enclosing_trace("m.step.<locals>.log") is None
    assert model.enclosing_trace("m.step") is not None
    o_ref = next(n for n in _names(module, "o_ref") if model.value_of(n))
    assert model.is_ref(o_ref)


class _ShapeProbes(cst.CSTVisitor):
    """`shape(expr)` marks: the expressions whose certain shape the test asks for."""

    def __init__(self) -> None:
        self.found: list[cst.BaseExpression] = []

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "shape":
            self.found.append(node.args[0].value)


SHAPE_CASES = [
    ("import jax.numpy as jnp\nshape(jnp.zeros((2, 3)))\n", (2, 3)),
    ("import jax.numpy as jnp\nshape(jnp.full(4, 1.0))\n", (4,)),
    ("import jax.numpy as jnp\nshape(jnp.arange(2, 9, 3))\n", (3,)),
    ("import jax.numpy as jnp\nshape(jnp.arange(5, 1))\n", (0,)),
    ("import jax.numpy as jnp\nshape(jnp.array([[1, 2.0], [3, -4]]))\n", (2, 2)),
    ("import jax.numpy as jnp\nshape(jnp.eye(3, 4))\n", (3, 4)),
    ("import jax.numpy as jnp\nshape(jnp.arange(12).reshape(3, -1))\n", (3, 4)),
    ("import jax.numpy as jnp\nshape(jnp.reshape(jnp.ones(6), (-1, 2)))\n", (3, 2)),
    ("import jax.numpy as jnp\nx = jnp.ones((2, 5))\nshape(jnp.zeros_like(x) * 2 + x)\n", (2, 5)),
    ("import jax.numpy as jnp\nx = jnp.ones((2, 5))\nshape(x[1])\nshape(x[:, 0])\n", [(5,), (2,)]),
    ("import jax.numpy as jnp\nx = jnp.ones(4)\nshape(x.at[0].set(1).astype(int))\n", (4,)),
    ("import jax\nshape(jax.random.normal(jax.random.key(0), (2,)))\n", (2,)),
    # Not certain: a variable, a float, a ragged list, a size that does not divide, NumPy, a parameter.
    ("import jax.numpy as jnp\ndef f(n):\n    shape(jnp.zeros(n))\n", None),
    ("import jax.numpy as jnp\nshape(jnp.arange(5.0))\n", None),
    ("import jax.numpy as jnp\nshape(jnp.array([[1, 2], [3]]))\n", None),
    ("import jax.numpy as jnp\nshape(jnp.arange(5).reshape(2, -1))\n", None),
    ("import numpy as np\nshape(np.zeros(5))\n", None),
    ("import jax.numpy as jnp\nx = jnp.ones(3)\nshape(x @ x)\n", None),
    # Flow: a branch that rebinds, a loop, a closure, a `global` write, a `case` capture.
    ("import jax.numpy as jnp\ndef f(c):\n    x = jnp.ones(3)\n    if c:\n        x = jnp.ones(4)\n    shape(x)\n", None),
    ("import jax.numpy as jnp\ndef f(c):\n    x = jnp.ones(3)\n    if c:\n        x = jnp.zeros(3)\n    shape(x)\n",
     (3,)),
    ("import jax.numpy as jnp\ndef f(c, g):\n    x = jnp.ones(3)\n    if c:\n        x = g()\n    shape(x)\n", None),
    ("import jax.numpy as jnp\ndef f(n):\n    x = jnp.ones(3)\n    for _ in range(n):\n        shape(x)\n"
     "        x = jnp.ones(4)\n", None),
    ("import jax.numpy as jnp\ndef f():\n    x = jnp.ones(3)\n    def g():\n        shape(x)\n    return g\n", None),
    ("import jax.numpy as jnp\nx = jnp.ones(3)\ndef reset():\n    global x\n    x = jnp.ones(9)\nshape(x)\n", None),
    ("import jax.numpy as jnp\ndef f(v):\n    x = jnp.ones(3)\n    match v:\n        case [*x]:\n"
     "            shape(x)\n", None),
]


@pytest.mark.parametrize(("source", "expected"), SHAPE_CASES)
def test_certain_shapes(source: str, expected: tuple[int, ...] | list[tuple[int, ...]] | None):
    """`expected`: the certain shape of the one marked expression (None: no certain shape), or a list for
    several marks."""
    model, module = model_of(source)
    probes = _ShapeProbes()
    module.visit(probes)
    found = [model.array_shape(node) for node in probes.found]
    assert found == (expected if isinstance(expected, list) else [expected])


@pytest.mark.parametrize(("literal", "wide"), [
    ('"float64"', True), ("b'float64'", True), ("r'F8'", True), ('"""int64"""', True), ('"float32"', False),
    ('"a long sentence that merely mentions float64 somewhere"', False),
])
def test_wide_dtype_strings_are_read_without_prefix_or_quotes(literal, wide):
    model, _ = model_of(f"x = {literal}\n")
    assert model.summary.wide_dtypes is wide


@pytest.mark.parametrize("literal", ["'jax_enable_x64'", "b'JAX_ENABLE_X64'", f"'{'padding ' * 8}jax_enable_x64'"])
def test_x64_flag_strings_are_found_in_any_literal(literal):
    model, _ = model_of(f"x = {literal}\n")
    assert model.summary.enables_x64


def test_value_flags_are_distinct_bits_named_by_the_int_flag():
    from jaxcheck.analyzer.semantics import values

    members = list(values.ValueFlag)
    assert all(member.value & (member.value - 1) == 0 for member in members)  # one bit each
    assert len({member.value for member in members}) == len(members)
    assert all(getattr(values, member.name) == member.value and type(getattr(values, member.name)) is int
               for member in members)
    assert repr(values.ValueFlag(values.JAX_ARRAY | values.ARRAY_VALUED)).startswith("<ValueFlag.")


def test_a_jit_wrapper_the_model_cannot_follow_is_named_in_the_summary() -> None:
    """`jax.jit(decorate(fn))` in a wrapper: what callers pass is not known traced, and the summary says
    which wrapper that is; a wrapper it follows (a parameter, a partial of it) is not named."""
    source = """
        import functools
        import jax
        def decorate(f):
            return f
        def opaque(fn):
            return jax.jit(decorate(fn))
        def partial_of(fn, cfg):
            return jax.jit(functools.partial(fn, cfg))
        def direct(fn):
            return jax.jit(fn)
        def unrelated(fn):
            return jax.jit(decorate(len))
    """
    module = parse_source(textwrap.dedent(source))
    assert isinstance(module, cst.Module)
    _, summary = run_with_deep_stack(lambda: ModelBuilder("m", "m.py").build(module))
    assert summary.unfollowed == ("m.opaque",)
