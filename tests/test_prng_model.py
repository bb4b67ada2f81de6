"""The semantic model's PRNG key pass and JAX-array facts, asked directly.

Each PRNG snippet lists the reuses expected as (line of the second consumption, key, kind, line of the
first consumption or of the re-seeding call)."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from test_semantic_model import model_of

KEY_CASES: dict[str, tuple[str, list[tuple[int, str, str, int]]]] = {
    "two samplers": ("""
        import jax
        def f(key):
            a = jax.random.normal(key)
            return jax.random.uniform(key)
    """, [(5, "key", "again", 4)]),
    "rebinding split is fine": ("""
        import jax
        def f(key):
            key, sub = jax.random.split(key)
            a = jax.random.normal(sub)
            key, sub = jax.random.split(key)
            return jax.random.normal(sub)
    """, []),
    "use after split": ("""
        import jax
        def f(key):
            subs = jax.random.split(key, 3)
            return jax.random.normal(key)
    """, [(5, "key", "again", 4)]),
    "if/else consume once each": ("""
        import jax
        def f(key, c):
            if c:
                x = jax.random.normal(key)
            else:
                x = jax.random.uniform(key)
            return x
    """, []),
    "return ends a path": ("""
        import jax
        def f(key, c):
            if c:
                return jax.random.normal(key)
            return jax.random.uniform(key)
    """, []),
    "loop without re-split": ("""
        import jax
        def f(key, n):
            for _ in range(n):
                print(jax.random.normal(key))
    """, [(5, "key", "loop", 5)]),
    "loop that re-splits": ("""
        import jax
        def f(key, n):
            for _ in range(n):
                key, sub = jax.random.split(key)
                print(jax.random.normal(sub))
    """, []),
    "break after the only use": ("""
        import jax
        def f(key, xs):
            for x in xs:
                print(jax.random.normal(key))
                break
    """, []),
    "fold_in with the loop index": ("""
        import jax
        def f(key, n):
            for i in range(n):
                print(jax.random.normal(jax.random.fold_in(key, i)))
    """, []),
    "re-seeded in a loop": ("""
        import jax
        def f(seed, n):
            for i in range(n):
                key = jax.random.PRNGKey(seed)
                print(jax.random.normal(key))
    """, [(6, "key", "reseeded", 5)]),
    "passed to a model after sampling": ("""
        import jax
        def f(model, x):
            key = jax.random.key(0)
            x = x + jax.random.normal(key, x.shape)
            return model.init(key, x)
    """, [(6, "key", "again", 5)]),
    "print, isinstance and key_data do not consume": ("""
        import jax
        def f(key):
            print(key, isinstance(key, jax.Array))
            data = jax.random.key_data(key)
            return jax.random.normal(key)
    """, []),
    "numpy.random is not JAX": ("""
        import numpy as np
        def f(key):
            a = np.random.permutation(key)
            return np.random.permutation(key)
    """, []),
    "module-level script": ("""
        from jax import random
        key = random.PRNGKey(0)
        a = random.normal(key, (3,))
        b = random.normal(key, (3,))
    """, [(5, "key", "again", 4)]),
    "a dict key named key": ("""
        import jax
        def f(table, key):
            noise = jax.random.normal(jax.random.PRNGKey(0))
            return g(table[key]), h(key)
    """, []),
    "comprehension draws with one key": ("""
        import jax
        def f(key, n):
            return [jax.random.normal(key) for _ in range(n)]
    """, [(4, "key", "loop", 4)]),
}


def _line(module: cst.Module, node: cst.CSTNode) -> int:
    return MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)[node].start.line


@pytest.mark.parametrize("name", sorted(KEY_CASES))
def test_key_reuses(name: str) -> None:
    source, expected = KEY_CASES[name]
    model, module = model_of(source)
    bodies: list[cst.FunctionDef | cst.Module] = [module]
    bodies += [n for n in module.body if isinstance(n, cst.FunctionDef)]
    found = [
        (_line(module, r.node), r.key, r.kind, _line(module, r.first))
        for body in bodies
        for r in model.key_reuses(body)
    ]
    assert found == expected


def test_functions_without_jax_random_are_not_analysed() -> None:
    model, module = model_of("""
        def f(key):
            a = g(key)
            return h(key)
    """)
    function = module.body[0]
    assert isinstance(function, cst.FunctionDef)
    assert model.key_reuses(function) == []


ARRAY_SOURCE = """
    import jax
    import jax.numpy as jnp
    import numpy as np
    x = jnp.zeros(3)
    y = x * 2 + 1
    z = -y.T
    u = x.at[0].set(1)
    w = x.reshape(3)[0]
    n = np.zeros(3)
    m = np.asarray(x)
    parts = jnp.split(x, 3)
    s = "%s" % x
    def f(a: jax.Array, b):
        return a, b
"""


@pytest.mark.parametrize(("name", "expected"), [
    ("x", True), ("y", True), ("z", True), ("u", True), ("w", True),
    ("n", False), ("m", False), ("parts", False), ("s", False),
])
def test_jax_array_facts(name: str, expected: bool) -> None:
    model, module = model_of(textwrap.dedent(ARRAY_SOURCE) + f"{name}\n")
    probe = module.body[-1]
    assert isinstance(probe, cst.SimpleStatementLine) and isinstance(probe.body[0], cst.Expr)
    assert model.is_jax_array(probe.body[0].value) is expected


def test_array_annotated_parameter_is_an_array() -> None:
    model, module = model_of(ARRAY_SOURCE)
    function = module.body[-1]
    assert isinstance(function, cst.FunctionDef)
    statement = function.body.body[0]
    assert isinstance(statement, cst.SimpleStatementLine) and isinstance(statement.body[0], cst.Return)
    returned = statement.body[0].value
    assert isinstance(returned, cst.Tuple)
    a, b = (element.value for element in returned.elements)
    assert model.is_jax_array(a) and not model.is_jax_array(b)
