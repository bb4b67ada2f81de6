"""JAX203 out-of-bounds-index."""

from __future__ import annotations

import libcst as cst

from jaxcheck.analyzer import codegen
from jaxcheck.analyzer.rule import Invalid, Rule, RuleContext, Valid
from jaxcheck.analyzer.semantics import OutOfBounds
from jaxcheck.analyzer.semantics.jax_api import AT_METHODS

_DELIBERATE = frozenset({"mode", "fill_value"})
"""`.at[...]` keywords that choose what happens out of bounds: the author has decided."""


class OutOfBoundsIndex(Rule):
    """
    ## What it does
    Finds a constant index out of range on an array whose shape is certain: read (`x[7]`,
    `x[1, 9]`, `x.at[7].get()`, `jnp.take(x, 7)`) or updated with `.at[7].set(v)` (and `.add`,
    `.multiply`, ...) in the default mode. The shape is certain when the array is built from literals on every path to the index:
    `jnp.zeros((5,))`, `jnp.ones`/`empty`/`full`, `jnp.arange(5)`, `jnp.array([...])` of a literal list,
    `jnp.eye(3)`, `jax.random.normal(key, (5,))`, `.reshape(2, -1)` and `jnp.zeros_like` of those,
    elementwise arithmetic and `.at[]` updates of those. Negative indices count: JAX wraps them once, so
    `x[-6]` on 5 elements is out of range. An `.at[7:]` update whose slice start is at or past the end
    is reported too: it updates nothing.

    Parameters, call results, attributes, closures, names rebound on some path and NumPy arrays have no
    certain shape and are never reported. Slices in reads (`x[7:]`) are not reported: an empty slice is
    NumPy's and Python's rule too, and idioms such as `x[-10:]` rely on it. An update that passes
    `mode=` (`"drop"`, `"clip"`, `"fill"`, `"promise_in_bounds"`) or `fill_value=` has chosen what
    happens out of bounds and is left alone.

    ## Why is this bad?
    NumPy raises `IndexError`; JAX cannot raise from compiled code, so it clamps an out-of-range read to
    the last (or first) element and silently drops an out-of-range `.at[]` update, inside `jax.jit` or
    not. The program runs on with a wrong value.

    ## Example
    ```python
    import jax.numpy as jnp

    def last_two():
        x = jnp.arange(5)
        y = x.at[5].set(0)
        return x[5] + y
    ```

    ## Use instead
    ```python
    import jax.numpy as jnp

    def last_two():
        x = jnp.arange(5)
        y = x.at[4].set(0)
        return x[4] + y
    ```

    ## Fix safety
    There is no fix: the intended index cannot be known.
    """

    code = "JAX203"
    name = "out-of-bounds-index"
    summary = "a constant index out of range of an array of known shape: JAX clamps reads and drops `.at[]` writes"

    VALID = (
        # In range, or with the out-of-range behaviour chosen.
        Valid("import jax.numpy as jnp\ndef f():\n    y = jnp.zeros((2, 3))\n"
              "    return jnp.take(y, 5), jnp.take(y, -6), jnp.take(y, 7, mode='clip'), jnp.take(y, 9, fill_value=0)\n"),
        # Unknown shapes: a parameter, a shape from a variable, a call result.
        Valid("import jax\n@jax.jit\ndef f(x):\n    return x[7]\n"),
        Valid("import jax.numpy as jnp\ndef f(n):\n    x = jnp.zeros(n)\n    return x[7]\n"),
        Valid("import jax.numpy as jnp\ndef f(g):\n    x = g(jnp.zeros(5))\n    return x[7]\n"),
        # In range, negative indices included; an index on a later axis.
        Valid("import jax.numpy as jnp\nx = jnp.arange(5)\ny = x[4] + x[-5] + x[-1]\n"),
        Valid("import jax.numpy as jnp\nx = jnp.zeros((2, 9))\ny = x[1, 8] + x[..., -9] + x[:, 8] + x[None, 1]\n"),
        # Rebound on some path, in a loop, or through `global`: no certain shape.
        Valid("import jax.numpy as jnp\ndef f(flag):\n    x = jnp.zeros(5)\n    if flag:\n        x = jnp.zeros(10)\n"
              "    return x[7]\n"),
        Valid("import jax.numpy as jnp\ndef f(n):\n    x = jnp.zeros(5)\n    for _ in range(n):\n        y = x[7]\n"
              "        x = jnp.concatenate([x, x])\n    return y\n"),
        Valid("import jax.numpy as jnp\nx = jnp.zeros(5)\ndef grow():\n    global x\n    x = jnp.zeros(10)\n"
              "grow()\ny = x[7]\n"),
        Valid("import jax.numpy as jnp\ndef f():\n    x = jnp.zeros(5)\n    def g():\n        return x[7]\n"
              "    x = jnp.zeros(10)\n    return g()\n"),
        Valid("import jax.numpy as jnp\ndef f(x):\n    y = jnp.zeros(5)\n    y += x\n    return y[7]\n"),
        # The author chose what happens out of bounds.
        Valid("import jax.numpy as jnp\nx = jnp.zeros(5)\ny = x.at[7].set(1.0, mode='drop')\n"
              "z = x.at[7].get(mode='fill', fill_value=0.0)\n"),
        # NumPy arrays and lists raise IndexError themselves.
        Valid("import numpy as np\nx = np.zeros(5)\ny = x[7]\n"),
        Valid("xs = [0, 1, 2]\ny = xs[7]\n"),
        # Reads of an empty slice are NumPy's rule too; a negative start clamps.
        Valid("import jax.numpy as jnp\nx = jnp.arange(5)\ny = x[7:] + x[-10:].sum()\nz = x.at[-10:].set(0)\n"),
        # An index array, then a constant: the constant's axis is not known for certain.
        Valid("import jax.numpy as jnp\ndef f(i):\n    x = jnp.zeros((3, 4))\n    return x[i, 7]\n"),
        # More indices than axes raise an IndexError.
        Valid("import jax.numpy as jnp\nx = jnp.zeros(5)\ny = x[0, 7]\n"),
        # A store `x[7] = v` is JAX201's finding.
        Valid("import jax.numpy as jnp\nx = jnp.zeros(5)\nx[7] = 1\n"),
    )
    INVALID = (
        # `jnp.take` out of range fills with NaN by default, silently.
        Invalid("import jax\nimport jax.numpy as jnp\n@jax.jit\ndef f(x):\n    y = jnp.zeros(4)\n"
                "    return x + jnp.take(y, 7)\n", 6, 28, "`jnp.take` fills"),
        Invalid("import jax.numpy as jnp\ndef f():\n    y = jnp.ones((2, 3))\n    return jnp.take(y, 3, axis=1)\n",
                4, 24, "for axis 1"),
        Invalid("import jax.numpy as jnp\nx = jnp.zeros((5,))\ny = x[7]\n", 3, 7, "clamps"),
        Invalid("import jax.numpy as jnp\nx = jnp.arange(5)\ny = x[-6]\n", 3, 7, "reads index 0"),
        Invalid("import jax.numpy as jnp\nx = jnp.ones((2, 3))\ny = x[1, 9]\n", 3, 10, "axis 1"),
        Invalid("import jax.numpy as jnp\nx = jnp.zeros(5)\ny = x.at[7].set(1.0)\n", 3, 10, "drops"),
        Invalid("import jax\nimport jax.numpy as jnp\n@jax.jit\ndef f(v):\n    x = jnp.zeros(5)\n"
                "    return x.at[5].add(v)\n", 6, 17),
        Invalid("import jax.numpy as jnp\nx = jnp.array([[1, 2], [3, 4]])\ny = x.at[0, 2].get()\n", 3, 13),
        Invalid("import jax.numpy as jnp\nx = jnp.arange(6).reshape(2, -1)\ny = x[..., 3]\n", 3, 12),
        Invalid("import jax.numpy as jnp\nx = jnp.eye(3) * 2.0\ny = jnp.zeros_like(x)[3]\n", 3, 23),
        Invalid("import jax.numpy as jnp\ndef f(flag):\n    x = jnp.zeros(4)\n    if flag:\n        x = x.at[0].set(1)\n"
                "    return x[4]\n", 6, 14),
        Invalid("import jax.numpy as jnp\nx = jnp.zeros(5)\ny = x.at[5:].set(1.0)\n", 3, 10, "updates nothing"),
        Invalid("import jax\nkey = jax.random.key(0)\nx = jax.random.normal(key, (3, 4))\ny = x[2][4]\n", 4, 10),
    )

    def __init__(self, context: RuleContext) -> None:
        super().__init__(context)
        self._stores: set[int] = set()
        """Subscripts that are store targets (`x[7] = v`: JAX201's finding), by id."""

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._note_stores(target.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._note_stores(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._note_stores(node.target)

    def visit_Del(self, node: cst.Del) -> None:
        self._note_stores(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._note_stores(node.target)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if id(node) in self._stores:
            return
        if isinstance(node.value, cst.Attribute) and node.value.attr.value == "at":
            return  # `x.at[i]`: judged with the method called on it
        for entry in self.model.out_of_bounds(node.value, node.slice):
            if not entry.slice:
                self._report_read(entry, codegen.source(node.value), "")
                return

    def visit_Call(self, node: cst.Call) -> None:
        taken = self.model.taken_out_of_bounds(node)
        if taken is not None:
            where = "of the flattened array" if taken.flattened else f"for axis {taken.axis}"
            self.report(taken.node, f"index {taken.index} is out of bounds {where} with size {taken.length}: "
                                    "`jnp.take` fills the read with NaN (an extreme value for integers) and raises "
                                    "nothing; use an index in range, or pass `mode=`/`fill_value=` if out-of-range "
                                    "reads are intended")
            return
        array = self.model.functional_update(node)
        if array is None or not isinstance(node.func, cst.Attribute) or not isinstance(node.func.value, cst.Subscript):
            return
        method = node.func.attr.value
        if method not in AT_METHODS or any(arg.keyword is not None and arg.keyword.value in _DELIBERATE
                                           for arg in node.args):
            return
        for entry in self.model.out_of_bounds(array, node.func.value.slice):
            if method == "get":
                if not entry.slice:
                    self._report_read(entry, codegen.source(array), ".at[...].get()")
                    return
            else:
                self._report_update(entry, method)
                return

    def _note_stores(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Subscript):
            self._stores.add(id(target))
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._note_stores(element.value)
        elif isinstance(target, cst.StarredElement):
            self._note_stores(target.value)

    def _report_read(self, entry: OutOfBounds, array: str, how: str) -> None:
        wrapped = entry.index + entry.length if entry.index < 0 else entry.index
        clamped = min(max(wrapped, 0), entry.length - 1)
        read = f"reads index {clamped} instead" if entry.length else "reads a clamped value"
        where = f" of `{array}`{how and f' ({how})'}"
        self.report(entry.node, f"index {entry.index} is out of bounds for axis {entry.axis}{where} with size "
                                f"{entry.length}: JAX clamps it and silently {read} (NumPy raises IndexError); "
                                f"use an index in range, or `.at[i].get(mode=\"fill\", fill_value=...)` if "
                                f"out-of-range reads are intended")

    def _report_update(self, entry: OutOfBounds, method: str) -> None:
        if entry.slice:
            message = (f"slice start {entry.index} is at or past the end of axis {entry.axis} (size {entry.length}): "
                       f"`.at[...].{method}()` selects nothing and updates nothing")
        else:
            message = (f"index {entry.index} is out of bounds for axis {entry.axis} with size {entry.length}: JAX "
                       f"silently drops this `.at[...].{method}()` update and the array is unchanged; use an index "
                       f"in range, or pass `mode=\"drop\"` if dropping is intended")
        self.report(entry.node, message)
