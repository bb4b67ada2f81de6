"""JAX201 in-place-array-update."""

from __future__ import annotations

import libcst as cst

from jaxcheck.analyzer import codegen
from jaxcheck.analyzer.diagnostics import Applicability
from jaxcheck.analyzer.rule import Invalid, NodeFix, Rule, Valid

_AUG_METHODS: dict[type[cst.BaseAugOp], str] = {
    cst.AddAssign: "add",
    cst.SubtractAssign: "add",  # `.add(-(v))`: `.subtract` is missing from older JAX releases
    cst.MultiplyAssign: "multiply",
    cst.DivideAssign: "divide",
    cst.PowerAssign: "power",
}


class InPlaceArrayUpdate(Rule):
    """
    ## What it does
    Finds item assignment `x[i] = v` and augmented item assignment `x[i] += v` on a value known to be
    a JAX array: a `jax.numpy`/`jax.random`/`jax.lax`/`jax.nn` result, an `.at[...]` update, arithmetic
    on those, a parameter annotated as an array, or a parameter of traced code indexed with a traced
    value. NumPy arrays, lists, dicts, pytree carries and values of unknown type are left alone.

    ## Why is this bad?
    JAX arrays are immutable: the assignment raises `TypeError: JAX arrays are immutable and do not
    support in-place item assignment`, inside `jax.jit` or not. The functional `.at[...]` syntax returns
    an updated copy, which XLA performs in place when it can.

    ## Example
    ```python
    import jax.numpy as jnp

    def reset_first(n):
        x = jnp.ones(n)
        x[0] = 0.0
        return x
    ```

    ## Use instead
    ```python
    import jax.numpy as jnp

    def reset_first(n):
        x = jnp.ones(n)
        x = x.at[0].set(0.0)
        return x
    ```

    ## Fix safety
    The fix rewrites `x[i] = v` to `x = x.at[i].set(v)` and `+=`, `-=`, `*=`, `/=`, `**=` to `.add`,
    `.add(-(v))`, `.multiply`, `.divide`, `.power`. It is safe for a plain name. For a nested target
    (`x[i][j] = v` becomes `x = x.at[i, j].set(v)`) it is unsafe: the two differ for advanced indices.
    Other targets and operators get no fix.
    """

    code = "JAX201"
    name = "in-place-array-update"
    summary = "`x[i] = v` or `x[i] += v` on an immutable JAX array; use `x = x.at[i].set(v)`"

    VALID = (
        # Annotations NumPy arrays satisfy too: `ArrayLike`, jaxtyping over `np.ndarray` (or a torch tensor).
        Valid("import numpy as np\nfrom jaxtyping import Float\ndef fill(buf: Float[np.ndarray, 'n'], v: float):\n"
              "    buf[0] = v\n    return buf\nfill(np.zeros(2), 1.0)\n"),
        Valid("import numpy as np\nfrom jax.typing import ArrayLike\ndef clip_first(x: ArrayLike, v: float):\n"
              "    x[0] = min(x[0], v)\n    return x\nclip_first(np.array([5.0, 1.0]), 2.0)\n"),
        # A gradient of a pytree is a pytree; an attribute some method stores a NumPy array in may be one.
        Valid("import jax\ndef f(p):\n    return p[0] * p[1]\ng = jax.grad(f)([1.0, 2.0])\ng[0] = 0.0\n"),
        # `eigh` returns a tuple of arrays, not an array: `.at[]` advice would be wrong (Python's TypeError says it)
        Valid("import jax.numpy as jnp\nres = jnp.linalg.eigh(m)\nres[0] = jnp.abs(res[0])\n"),
        Valid("import jax.numpy as jnp\nimport numpy as np\nclass Buffer:\n    def __init__(self, n):\n"
              "        self.data = jnp.zeros(n)\n    def to_host(self):\n        self.data = np.asarray(self.data)\n"
              "    def push(self, i, v):\n        self.data[i] = v\n"),
        # A field annotated as an array, outside traced code, may hold a NumPy array.
        Valid("import jax\nfrom typing import NamedTuple\nclass State(NamedTuple):\n    vel: jax.Array\n"
              "def reset(state: State):\n    state.vel[0] = 0.0\n"),
        Valid("import jax\nimport numpy as np\n@jax.jit\ndef h(a):\n    return a\ndef fill(a):\n    a[0] = 1\n"
              "fill(np.zeros(3))\n"),
        # Pallas kernels (and what they pass their Refs to) write through mutable Refs.
        Valid("import jax\nfrom jax.experimental import pallas as pl\n"
              "def store(src_ref: jax.Array, dst_ref: jax.Array):\n    dst_ref[0] = src_ref[0]\n"
              "def kernel(x_ref: jax.Array, o_ref: jax.Array):\n    o_ref[...] = x_ref[...] + 1\n    o_ref[0] += 1\n"
              "    store(x_ref, o_ref)\n"
              "def inc(x):\n    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)\n"),
        Valid("import numpy as np\nx = np.zeros(3)\nx[0] = 1\n"),
        Valid("import numpy as np\ndef f():\n    x = np.zeros(3)\n    x[0] += 1\n    return x\n"),
        Valid("def f(n):\n    xs = [0] * n\n    xs[0] = 1\n    return xs\n"),
        Valid("import jax\n@jax.jit\ndef f(params, x):\n    params['w'] = x\n    return params\n"),
        Valid("import jax.numpy as jnp\nx = jnp.zeros(3)\nx = x.at[0].set(1)\n"),
        Valid("def f(x):\n    x[0] = 1\n    return x\n"),
        Valid("import jax.numpy as jnp\nimport numpy as np\nx = jnp.zeros(3)\nx = np.asarray(x)\nx[0] = 1\n"),
        Valid("import jax.numpy as jnp\ndef f(flag):\n    x = jnp.zeros(3) if flag else [0, 0, 0]\n    x[0] = 1\n"),
        Valid("import jax.numpy as jnp\nparts = jnp.split(jnp.arange(6), 3)\nparts[0] = jnp.zeros(2)\n"),
        Valid("import jax\n@jax.jit\ndef f(*xs):\n    xs = list(xs)\n    xs[0] = 1\n    return xs\n"),
        Valid("import jax.numpy as jnp\ncache = {}\ncache[0] = jnp.zeros(3)\n"),
        Valid("from jax import lax\ndef body(values):\n    values[0] = values[0] + 1\n    return values\n"
              "out = lax.while_loop(cond, body, [0, 1])\n"),
        Valid("import jax\n@jax.jit\ndef f(v):\n    v = v[:]\n    v[0] = v[0] + v[1]\n    return v\n"),
        Valid("import jax\nimport numpy as np\ndef init(key):\n    return {'w': jax.random.normal(key, (3,))}\n"
              "params = init(jax.random.key(0))\nparams['w'] = np.zeros(3)\nparams['w'][0] = 1.0\n"),
        Valid("import jax\ndef init(key, host):\n    if host:\n        return {'w': [0.0, 0.0]}\n"
              "    return {'w': jax.random.normal(key, (2,))}\nparams = init(jax.random.key(0), True)\nparams['w'][0] = 1.0\n"),
        Valid("import jax\nimport numpy as np\ndef init(key):\n    return {'w': np.zeros(3), 'k': key}\n"
              "params = init(jax.random.key(0))\nparams['w'][0] = 1.0\n"),
        Valid("import jax\ndef init(key):\n    return {'w': jax.random.normal(key, (3,))}\n"
              "def reset(params, name):\n    params[name][0] = 0.0\n"),
        Valid("import jax\nimport numpy as np\ndef init(key):\n    return {'b': jax.random.normal(key, (2,))}\n"
              "def a(k):\n    params = init(k)\n    p = params\n    p['b'] = np.zeros(2)\n    params['b'][0] = 1.0\n"),
        Valid("import jax\nimport numpy as np\ndef init(key):\n    return {'b': jax.random.normal(key, (2,))}\n"
              "def to_numpy(p):\n    p['b'] = np.asarray(p['b'])\n"
              "def a(k):\n    params = init(k)\n    to_numpy(params)\n    params['b'][0] = 1.0\n"),
        Valid("import jax.numpy as jnp\nimport numpy as np\nd = {'a': jnp.zeros(3), 'a': np.zeros(3)}\nd['a'][0] = 1\n"),
        Valid("import jax.numpy as jnp\nstate = {'w': jnp.zeros(3), 'steps': [0]}\nstate['steps'][0] = 1\n"),
    )
    INVALID = (
        # A row got by iterating a JAX array is a JAX array too (checked under JAX 0.10.2: TypeError).
        Invalid("import jax.numpy as jnp\nfields = jnp.ones((2, 4))\nfor u in fields:\n    u[-1] = u[0]\n", 4, 5),
        Invalid("import jax\nimport jax.numpy as jnp\ndef f(w):\n    return (w * w).sum()\n"
                "g = jax.grad(f)(jnp.ones(3))\ng[0] *= 0\n", 6, 1, ".multiply("),
        Invalid("import jax\nimport numpy as np\nx = jax.device_put(np.zeros(3))\nx[1] = 2\n", 4, 1),
        Invalid("import jax\nimport jax.numpy as jnp\n@jax.jit\ndef h(a):\n    a[0] = 1\n    return a\n"
                "h(jnp.zeros(3))\n", 5, 5),
        Invalid("import jax\nimport jax.numpy as jnp\ndef h(a):\n    a[0] = 1\n    return a\n"
                "y = jax.jit(h)(jnp.zeros(3))\n", 4, 5),
        Invalid("import jax.numpy as jnp\nclass Buffer:\n    def __init__(self, n):\n        self.data = jnp.zeros(n)\n"
                "    def push(self, i, v):\n        self.data[i] = v\n", 6, 9),
        Invalid("import jax\nfrom typing import NamedTuple\nclass State(NamedTuple):\n    vel: jax.Array\n"
                "@jax.jit\ndef step(state: State, dt):\n    state.vel[:, 1] -= dt\n    return state\n", 7, 5),
        Invalid("import jax\ndef kernel(x_ref: jax.Array, o_ref: jax.Array):\n    o_ref[0] += 1\n", 3, 5),
        Invalid("import jax.numpy as jnp\nx = jnp.zeros(3)\nx[0] = 1\n", 3, 1, "immutable",
                fix="import jax.numpy as jnp\nx = jnp.zeros(3)\nx = x.at[0].set(1)\n"),
        Invalid("import jax\n@jax.jit\ndef f(x, i):\n    x[i] += 2.0\n    return x\n", 4, 5, ".add(",
                fix="import jax\n@jax.jit\ndef f(x, i):\n    x = x.at[i].add(2.0)\n    return x\n"),
        Invalid("import jax.numpy as jnp\ndef f(a, b):\n    x = jnp.ones((3, 3))\n    x[1:, 0] -= a + b\n    return x\n",
                4, 5, fix="import jax.numpy as jnp\ndef f(a, b):\n    x = jnp.ones((3, 3))\n"
                          "    x = x.at[1:, 0].add(-(a + b))\n    return x\n"),
        Invalid("import jax.numpy as jnp\ndef f(j):\n    x = jnp.ones((3, 3))\n    x[1:, j] *= 2\n    return x\n",
                4, 5, fix="import jax.numpy as jnp\ndef f(j):\n    x = jnp.ones((3, 3))\n"
                          "    x = x.at[1:, j].multiply(2)\n    return x\n"),
        Invalid("import jax\ndef f(key, y):\n    x = jax.random.normal(key, (3,))\n    x[0] /= y\n    return x\n", 4, 5,
                fix="import jax\ndef f(key, y):\n    x = jax.random.normal(key, (3,))\n    x = x.at[0].divide(y)\n"
                    "    return x\n"),
        Invalid("import jax.numpy as jnp\nx = jnp.arange(4.0) * 2\nx[..., -1] **= 3\n", 3, 1,
                fix="import jax.numpy as jnp\nx = jnp.arange(4.0) * 2\nx = x.at[..., -1].power(3)\n"),
        Invalid("import jax.numpy as jnp\nx = jnp.zeros(3)\nx = x.at[0].set(1)\nx[1] = 2, 3\n", 4, 1,
                fix="import jax.numpy as jnp\nx = jnp.zeros(3)\nx = x.at[0].set(1)\nx = x.at[1].set((2, 3))\n"),
        Invalid("import jax.numpy as jnp\ngrid = jnp.zeros((4, 4))\ngrid[0][1] = 5\n", 3, 1, "nested",
                fix="import jax.numpy as jnp\ngrid = jnp.zeros((4, 4))\ngrid = grid.at[0, 1].set(5)\n"),
        Invalid("import jax\nfrom jax import lax\ndef body(i, acc):\n    acc[i] = i\n    return acc\n"
                "out = lax.fori_loop(0, 3, body, init)\n", 4, 5),
        Invalid("import jax.numpy as jnp\nx = -jnp.ones(3)\nx[0] -= -1\n", 3, 1,
                fix="import jax.numpy as jnp\nx = -jnp.ones(3)\nx = x.at[0].add(-(-1))\n"),
        Invalid("import jax.numpy as jnp\nx = jnp.zeros(3)\nx.T[0] = 1\n", 3, 1),
        Invalid("import jax\nimport jax.numpy as jnp\ndef init_layer(key, n):\n"
                "    return {'w': jax.random.normal(key, (n, n)), 'b': jnp.zeros(n)}\n"
                "def init_params(key):\n    k1, k2 = jax.random.split(key)\n"
                "    return {'enc': init_layer(k1, 4), 'dec': {'w': jax.random.normal(k2, (4, 4))}}\n"
                "params = init_params(jax.random.key(0))\nparams['enc']['w'][0, :] = 0.0\n", 9, 1, "immutable"),
        Invalid("import jax\ndef init(key):\n    return {'dec': {'w': jax.random.normal(key, (4, 4))}}\n"
                "def zero_row(key):\n    dec = init(key)['dec']\n    dec['w'][0] = 0.0\n    return dec\n", 6, 5),
        Invalid("import jax\ndef make_w(key):\n    return jax.random.normal(key, (3, 3))\n"
                "w = make_w(jax.random.key(1))\nw[0] = 1.0\n", 5, 1,
                fix="import jax\ndef make_w(key):\n    return jax.random.normal(key, (3, 3))\n"
                    "w = make_w(jax.random.key(1))\nw = w.at[0].set(1.0)\n"),
        Invalid("import jax\nimport jax.numpy as jnp\ndef init(key):\n    return {'w': jax.random.normal(key, (3,))}, jnp.zeros(2)\n"
                "params, state = init(jax.random.key(0))\nparams['w'][1] += 1.0\n", 6, 1),
        Invalid("import jax.numpy as jnp\nstate = {'w': jnp.zeros(3), 'steps': [0]}\nstate['w'][0] = 1.0\n", 3, 1),
        Invalid("import jax\ndef f(x: jax.Array):\n    x[0] = 1.0\n    return x\n", 3, 5,
                fix="import jax\ndef f(x: jax.Array):\n    x = x.at[0].set(1.0)\n    return x\n"),
        Invalid("from jaxtyping import Array, Float\ndef f(x: Float[Array, 'n']):\n    x[0] = 1.0\n    return x\n", 3, 5,
                fix="from jaxtyping import Array, Float\ndef f(x: Float[Array, 'n']):\n    x = x.at[0].set(1.0)\n"
                    "    return x\n"),
    )

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            for store in _item_stores(target.target):
                if self.model.is_array_item_store(store):
                    sole = len(node.targets) == 1 and store is target.target
                    fix = self._fix(store, "set", codegen.argument(node.value), node) if sole else None
                    self._report(store, "=", fix)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        target = node.target
        if not (isinstance(target, cst.Subscript) and self.model.is_array_item_store(target)):
            return
        method = _AUG_METHODS.get(type(node.operator))
        fix = None
        if method is not None:
            value = codegen.negated(node.value) if isinstance(node.operator, cst.SubtractAssign) \
                else codegen.argument(node.value)
            fix = self._fix(target, method, value, node)
        self._report(target, codegen.source(node.operator).strip(), fix)

    def _fix(self, target: cst.Subscript, method: str, value: str, statement: cst.BaseSmallStatement) -> NodeFix | None:
        """`x = x.at[i].method(value)` for a name `x`; `x = x.at[i, j]...` for `x[i][j]` when `x` itself is
        a JAX array (unsafe); none for an array inside a container (`params["w"][0]`)."""
        array, elements = target.value, list(target.slice)
        applicability: Applicability = "safe"
        if isinstance(array, cst.Subscript) and self.model.is_jax_array(array.value):
            outer = list(array.slice)
            if all(isinstance(e.slice, cst.Index) for e in outer):
                array, elements, applicability = array.value, [*outer, *elements], "unsafe"
        if not isinstance(array, cst.Name):
            return None
        name = array.value
        text = f"{name} = {name}.at[{codegen.index(elements)}].{method}({value})"
        return NodeFix(f"Use `.at[...].{method}()`", ((statement, text),), applicability)

    def _report(self, target: cst.Subscript, operator: str, fix: NodeFix | None) -> None:
        hint = f"use `{fix.replacements[0][1]}`" if fix is not None else "use `x = x.at[i].set(v)` and friends"
        outer = target.value
        nested = " (nested indexing)" if isinstance(outer, cst.Subscript) and self.model.is_jax_array(outer.value) else ""
        self.report(target, f"`{codegen.source(target)} {operator} ...` on a JAX array{nested} fails: JAX arrays "
                            f"are immutable; {hint}", fix)


def _item_stores(target: cst.BaseExpression) -> list[cst.Subscript]:
    """The subscripts assigned by a target: `x[i]`, or the items of `x[i], y[j] = ...`."""
    if isinstance(target, cst.Subscript):
        return [target]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [store for element in target.elements for store in _item_stores(element.value)]
    return []
