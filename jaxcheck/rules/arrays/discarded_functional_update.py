"""JAX202 discarded-functional-update."""

from __future__ import annotations

import libcst as cst

from jaxcheck.analyzer import codegen
from jaxcheck.analyzer.diagnostics import Applicability
from jaxcheck.analyzer.rule import Invalid, NodeFix, Rule, Valid


class DiscardedFunctionalUpdate(Rule):
    """
    ## What it does
    Finds a functional update `x.at[i].set(v)` (or `.add`, `.multiply`, ... any `.at` update method)
    used as a statement on its own, so that the updated array it returns is thrown away.

    ## Why is this bad?
    `.at[...]` never modifies `x`: it returns a new array. As a bare statement the update does
    nothing, and the code silently keeps using the old values.

    ## Example
    ```python
    import jax.numpy as jnp

    def mask_first(x):
        x.at[0].set(0.0)
        return x
    ```

    ## Use instead
    ```python
    import jax.numpy as jnp

    def mask_first(x):
        x = x.at[0].set(0.0)
        return x
    ```

    ## Fix safety
    The fix assigns the result back, `x = x.at[i].set(v)`. It is safe when `x` is a plain name and
    unsafe for an attribute (`self.x = self.x.at[i].set(v)` may hit a frozen dataclass or a
    property). Other receivers get no fix. A bare `.at[i].get()` is not reported: it updates nothing.
    """

    code = "JAX202"
    name = "discarded-functional-update"
    summary = "`x.at[i].set(v)` as a bare statement: the updated array is thrown away"

    VALID = (
        Valid("import jax\nimport jax.numpy as jnp\nfrom jax.experimental import pallas as pl\ndef kernel(*refs):\n"
              "    x_ref, o_ref = refs\n    o_ref[...] = x_ref[...]\n    o_ref.at[0:2].set(jnp.zeros(2))\n"
              "out = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((4,), jnp.float32))(jnp.ones(4))\n"),
        # A Pallas Ref's `.at[...]` is a view of the Ref: `.set(v)` on it writes in place (checked under JAX
        # 0.10.2, interpret mode: the output holds the written values).
        Valid("import jax\nimport jax.numpy as jnp\nfrom jax.experimental import pallas as pl\ndef kernel(x_ref, o_ref):\n"
              "    o_ref[...] = x_ref[...]\n    o_ref.at[0:2].set(jnp.zeros(2))\n"
              "out = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((4,), jnp.float32))(jnp.ones(4))\n"),
        Valid("def f(x):\n    x = x.at[0].set(1)\n    return x\n"),
        Valid("def f(x):\n    return x.at[0].add(1)\n"),
        Valid("def f(x):\n    y = x.at[0].multiply(2)\n    return y\n"),
        Valid("def f(x):\n    x.at[0].get()\n"),
        Valid("def f(df):\n    df.at[0, 'a'] = 1\n"),
        Valid("def f(x, s):\n    s.set(x)\n"),
        Valid("def f(x, out):\n    out.append(x.at[0].set(1))\n"),
        Valid("def f(x):\n    x.at.set(1)\n"),
        Valid("def f(x):\n    print(x.at[0].set(1))\n"),
        Valid("def f(x, i):\n    x = x.at[i].apply(lambda v: v * 2)\n    return x\n"),
    )
    INVALID = (
        # A value loaded from a Ref is an array: its `.at[...].set()` returns a new one.
        Invalid("import jax\nimport jax.numpy as jnp\nfrom jax.experimental import pallas as pl\ndef kernel(x_ref, o_ref):\n"
                "    x = x_ref[...]\n    x.at[0:2].set(jnp.zeros(2))\n    o_ref[...] = x\n"
                "out = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((4,), jnp.float32))(jnp.ones(4))\n", 6, 5),
        Invalid("def f(x):\n    x.at[0].set(1)\n    return x\n", 2, 5, "thrown away",
                fix="def f(x):\n    x = x.at[0].set(1)\n    return x\n"),
        Invalid("import jax.numpy as jnp\nx = jnp.zeros(3)\nx.at[1].add(2)\n", 3, 1,
                fix="import jax.numpy as jnp\nx = jnp.zeros(3)\nx = x.at[1].add(2)\n"),
        Invalid("def f(x, i, j):\n    x.at[i, j:].multiply(2)\n    return x\n", 2, 5,
                fix="def f(x, i, j):\n    x = x.at[i, j:].multiply(2)\n    return x\n"),
        Invalid("def f(x):\n    x.at[0].divide(2); return x\n", 2, 5,
                fix="def f(x):\n    x = x.at[0].divide(2); return x\n"),
        Invalid("class M:\n    def f(self):\n        self.w.at[0].set(0.0)\n", 3, 9,
                fix="class M:\n    def f(self):\n        self.w = self.w.at[0].set(0.0)\n"),
        Invalid("def f(x, m):\n    x.at[m].power(2)\n    return x\n", 2, 5,
                fix="def f(x, m):\n    x = x.at[m].power(2)\n    return x\n"),
        Invalid("def f(x):\n    x.at[0].min(0)\n    x.at[1].max(1)\n    return x\n", 2, 5,
                fix="def f(x):\n    x = x.at[0].min(0)\n    x = x.at[1].max(1)\n    return x\n", also=((3, 5),)),
        Invalid("def f(x):\n    (x.at[0].set(1))\n    return x\n", 2, 5,
                fix="def f(x):\n    x = (x.at[0].set(1))\n    return x\n"),
        Invalid("def f(x):\n    x.at[0].set(1).at[1].set(2)\n    return x\n", 2, 5,
                fix="def f(x):\n    x = x.at[0].set(1).at[1].set(2)\n    return x\n"),
        Invalid("def f(xs):\n    xs[0].at[0].apply(abs)\n    return xs\n", 2, 5),
        Invalid("def f(x):\n    for i in range(3):\n        x.at[i].subtract(1)\n    return x\n", 3, 9),
    )

    def visit_Expr(self, node: cst.Expr) -> None:
        if not isinstance(node.value, cst.Call):
            return
        array = self.model.functional_update(node.value)
        method = node.value.func.attr.value if isinstance(node.value.func, cst.Attribute) else ""
        if array is None or method == "get":
            return
        while isinstance(array, cst.Call) and (inner := self.model.functional_update(array)) is not None:
            array = inner  # `x.at[0].set(1).at[1].set(2)` updates `x`
        fix = None
        if isinstance(array, cst.Name | cst.Attribute):
            target = codegen.source(array)
            applicability: Applicability = "safe" if isinstance(array, cst.Name) else "unsafe"
            fix = NodeFix("Assign the result back", ((node, f"{target} = {codegen.source(node.value)}"),),
                          applicability)
        hint = f"assign it back: `{fix.replacements[0][1]}`" if fix is not None else "assign it back"
        self.report(node, f"the result of `.at[...].{method}()` is thrown away and the array is unchanged; {hint}", fix)
