"""JAX303 value-dependent-shape."""

from __future__ import annotations

import libcst as cst

from jaxcheck.analyzer.rule import Invalid, Rule, Valid, static_hint

# Functions whose output shape depends on the data unless `size=` fixes it.
_SIZED = frozenset(
    f"jax.numpy.{name}"
    for name in (
        "nonzero", "argwhere", "flatnonzero", "unique", "unique_values", "unique_counts", "unique_inverse",
        "unique_all", "setdiff1d", "union1d", "intersect1d", "extract",
    )
)
# Functions whose arguments (positions, keywords) give an output shape or length.
_SHAPE_ARGUMENTS: dict[str, tuple[tuple[int, ...], tuple[str, ...]]] = {
    "jax.numpy.arange": ((0, 1, 2), ("start", "stop", "step")),
    "jax.numpy.zeros": ((0,), ("shape",)),
    "jax.numpy.ones": ((0,), ("shape",)),
    "jax.numpy.empty": ((0,), ("shape",)),
    "jax.numpy.full": ((0,), ("shape",)),
    "jax.numpy.eye": ((0, 1), ("N", "M")),
    "jax.numpy.identity": ((0,), ("n",)),
    "jax.numpy.linspace": ((2,), ("num",)),
    "jax.numpy.reshape": ((1,), ("shape", "newshape")),
    "jax.numpy.broadcast_to": ((1,), ("shape",)),
    "jax.numpy.tile": ((1,), ("reps",)),
    "jax.numpy.repeat": ((1,), ("repeats",)),
    "jax.lax.full": ((0,), ("shape",)),
    "jax.random.split": ((1,), ("num",)),
}
_SHAPE_METHODS = frozenset({"reshape"})
# Keywords that fix the output shape whatever the shape arguments are.
_STATIC_SHAPE_KEYWORDS = {"jax.numpy.repeat": "total_repeat_length"}


class ValueDependentShape(Rule):
    """
    ## What it does
    Finds operations whose result shape would depend on traced values under `jax.jit`, `vmap`,
    `pmap` or a `lax` body: boolean-mask indexing (`x[x > 0]`, `x.at[mask]`), `jnp.nonzero`,
    `argwhere`, `flatnonzero`, `unique` and one-argument `jnp.where` without `size=`, array
    constructors and `reshape` with a traced size, and slices with traced bounds.

    ## Why is this bad?
    XLA compiles programs with static shapes. When a shape depends on array values, JAX cannot
    trace the function: it raises `NonConcreteBooleanIndexError` or `ConcretizationTypeError`.

    ## Example
    ```python
    import jax

    @jax.jit
    def positive_sum(x):
        return x[x > 0].sum()
    ```

    ## Use instead
    ```python
    import jax
    import jax.numpy as jnp

    @jax.jit
    def positive_sum(x):
        return jnp.where(x > 0, x, 0).sum()
    ```
    Mask with `jnp.where`, pass `size=` (and `fill_value=`) to `nonzero`/`unique`, and use
    `lax.dynamic_slice(x, (start,), (length,))` for slices that start at a traced offset.

    ## Fix safety
    No fix is offered: the replacement needs a fill value or a maximum size only the author knows.

    ## Runtime check
    At run time, JAX's `NonConcreteBooleanIndexError` and shape `ConcretizationTypeError`s are re-raised
    with their own type and a note carrying this code, the argument and the user's line.
    """

    code = "JAX303"
    explains_trace = True
    name = "value-dependent-shape"
    summary = "Boolean masks, `nonzero`/`unique` without `size=`, traced sizes and slice bounds under jit"

    VALID = (
        # A dict holding a traced value and a static size: storing one field keeps the others what they were.
        Valid("import jax\nimport jax.numpy as jnp\n@jax.jit\ndef stats(x):\n    out = {'mean': x.mean(), 'n': x.shape[0]}\n"
              "    out['mean'] = out['mean'] * 2\n    return jnp.zeros(out['n']) + out['mean']\n"),
        Valid("import jax\n@jax.jit\ndef f(key, x):\n    return jax.random.split(key, x.shape[0])\n"),
        # `lax.cond`/`lax.switch` pass their branches only the operands given: defaults stay Python values.
        Valid("import jax\nimport jax.numpy as jnp\nfrom jax import lax\ndef done(r, shape=()):\n    return jnp.zeros(shape) + r\n"
              "def going(r, shape=()):\n    return jnp.ones(shape) * r\n@jax.jit\ndef step(p, r):\n"
              "    return lax.cond(p, done, going, r)\n"),
        Valid("import jax\nimport jax.numpy as jnp\n@jax.jit\ndef f(x, r):\n"
              "    return jnp.repeat(x, r, total_repeat_length=8)\n"),
        # `if size is None:` never runs when every traced call passes a size.
        Valid("import jax\nimport jax.numpy as jnp\ndef unique(x, size=None):\n    if size is None:\n"
              "        return jnp.unique(x)\n    return jnp.unique(x, size=size)\n@jax.jit\ndef f(x):\n"
              "    return unique(x, size=x.size) + unique(x, 3)\n"),
        # ...which holds for arrays computed before the branch too: the branch never runs staged.
        Valid("import jax\nimport jax.numpy as jnp\ndef unique(x, size=None):\n    mask = jnp.sort(x) > 0\n"
              "    if size is None:\n        return jnp.nonzero(mask)\n    return jnp.nonzero(mask, size=size)\n"
              "@jax.jit\ndef f(x):\n    return unique(x, size=x.size)\n"),
        # A branch under `if verbose:` never runs in a call that passes `verbose=False`.
        Valid("import jax\nimport jax.numpy as jnp\ndef nonzero(x, verbose=True):\n    if verbose:\n"
              "        print(jnp.nonzero(x))\n    return x\n@jax.jit\ndef f(x):\n    return nonzero(x, verbose=False)\n"),
        # A tracer is never None: an array passed from traced code never reaches `if w is None:`.
        Valid("import jax\nimport jax.numpy as jnp\ndef helper(x, w=None):\n    if w is None:\n"
              "        return jnp.nonzero(x)\n    return x * w\n@jax.jit\ndef f(x):\n    return helper(x, jnp.ones(3))\n"),
        Valid("import jax.numpy as jnp\nfrom jax import lax\ndef going(r, d=None, shape=()):\n"
              "    d = d if d is not None else jnp.ones(shape)\n    return r * d\n"
              "def step(i, r, done):\n    return lax.switch(i, [going, going], r, (1 - done) * 0.9, (3,))\n"),
        Valid("import jax\nfrom jax import lax\nimport jax.numpy as jnp\ndef f(x):\n    n = lax.psum(1, 'i')\n"
              "    return jnp.zeros((n, 3)) + x\ng = jax.pmap(f, axis_name='i')\n"),
        # `in_axes=None` leaves a Python int unmapped, also for a staticmethod (no `self` is bound).
        Valid("import jax\nimport jax.numpy as jnp\nclass D:\n    def sample(self, keys, n):\n"
              "        return jax.vmap(self._one, in_axes=(0, None))(keys, n)\n    @staticmethod\n"
              "    def _one(key, n):\n        return jnp.zeros((n, 3))\n"),
        Valid("import jax\nimport jax.numpy as jnp\n@jax.jit\ndef f(x):\n    return jnp.nonzero(x, size=3)\n"),
        Valid("import jax\nimport jax.numpy as jnp\n@jax.jit\ndef f(x):\n    return jnp.where(x > 0, x, 0).sum()\n"),
        Valid("import jax\nimport jax.numpy as jnp\n@jax.jit\ndef f(x):\n    return jnp.zeros(x.shape[0])\n"),
        Valid("import jax\nimport numpy as np\nimport jax.numpy as jnp\n@jax.jit\ndef f(x):\n"
              "    return jnp.reshape(x, (np.prod(x.shape),))\n"),
        Valid("import jax\nfrom functools import partial\nimport jax.numpy as jnp\n"
              "@partial(jax.jit, static_argnames=('n',))\ndef f(x, n):\n    return x[:n] + jnp.arange(n)\n"),
        Valid("import jax.numpy as jnp\ndef f(x):\n    return x[x > 0]\n"),
        # vmap alone stages only what it maps: a mask built from an unmapped table is concrete.
        Valid("import jax\nimport jax.numpy as jnp\nTABLE = jnp.arange(8)\ndef live():\n"
              "    c = jnp.cumsum(TABLE)\n    return c[c > 3]\n@jax.vmap\ndef f(x):\n    return x * live().sum()\n"),
        Valid("import jax\n@jax.jit\ndef f(x, i):\n    return x[i]\n"),
        Valid("import jax\nimport jax.numpy as jnp\n@jax.jit\ndef f(x):\n    return jnp.unique(x, size=4, fill_value=0)\n"),
        Valid("import jax\n@jax.jit\ndef f(x):\n    return x[1:-1] * 2\n"),
        Valid("import jax\nimport jax.numpy as jnp\n@jax.jit\ndef f(x):\n    return x.reshape(-1, x.shape[-1])\n"),
    )
    INVALID = (
        # A copy with fields replaced keeps its class: its array fields are still traced.
        Invalid("import jax\nfrom flax import struct\n@struct.dataclass\nclass State:\n    x: jax.Array\n@jax.jit\n"
                "def step(state: State):\n    state = state.replace(x=state.x + 1)\n    return state.x[state.x > 0]\n",
                9, 20, "boolean mask"),
        Invalid("import jax\nimport jax.numpy as jnp\n@jax.jit\ndef f(x):\n    d = {'n': 3, 'h': x}\n"
                "    d['n'] = jnp.sum(x).astype(int)\n    return jnp.zeros(d['n'])\n", 7, 22),
        Invalid("import jax\nimport jax.numpy as jnp\nTABLE = jnp.arange(8)\ndef live():\n"
                "    c = jnp.cumsum(TABLE)\n    return c[c > 3]\n@jax.jit\ndef f(x):\n    return x * live().sum()\n", 6, 14),
        Invalid("import jax\nfrom jax import lax\n@jax.jit\ndef f(n):\n    return lax.full((n, 3), 0.0)\n", 5, 22),
        Invalid("import jax\nimport jax.numpy as jnp\ndef nonzero(x, verbose=True):\n    if verbose:\n"
                "        print(jnp.nonzero(x))\n    return x\n@jax.jit\ndef f(x):\n    return nonzero(x)\n", 5, 15),
        # ...but a None operand stays None, and `if mask is None:` runs under jit when a call omits it.
        Invalid("import jax\nimport jax.numpy as jnp\ndef unique(x, size=None):\n    if size is None:\n"
                "        return jnp.unique(x)\n    return jnp.unique(x, size=size)\n@jax.jit\ndef f(x):\n"
                "    return unique(x, size=3) + unique(x)\n", 5, 16),
        Invalid("import jax\nimport jax.numpy as jnp\ndef helper(x, w=None):\n    if w is None:\n"
                "        return jnp.nonzero(x)\n    return x * w\n@jax.jit\ndef f(x):\n"
                "    return helper(x, jnp.ones(3)) + helper(x)\n", 5, 16),
        Invalid("import jax\nimport jax.numpy as jnp\ndef unique(x, size=None):\n    mask = jnp.arange(8) > 3\n"
                "    if size is None:\n        return jnp.nonzero(mask)\n    return jnp.nonzero(mask, size=size)\n"
                "@jax.jit\ndef f(x):\n    return unique(x)\n", 6, 16),
        Invalid("import jax.numpy as jnp\nfrom jax import lax\ndef going(r, d=None, shape=()):\n"
                "    d = d if d is not None else jnp.ones(shape)\n    return r * d\n"
                "def step(i, r):\n    return lax.switch(i, [going, going], r, None, (3,))\n", 4, 42),
        Invalid("import jax\nimport jax.numpy as jnp\n@jax.jit\ndef f(x, mask=None):\n    if mask is None:\n"
                "        return jnp.nonzero(x)\n    return x * mask\ny = f(jnp.ones(3)) + f(jnp.ones(3), jnp.ones(3))\n",
                6, 16),
        Invalid("import jax\n@jax.jit\ndef f(key, m):\n    return jax.random.split(key, m)\n", 4, 34),
        Invalid("import jax\nimport jax.numpy as jnp\nfrom jax import lax\ndef done(r, shape=()):\n    return jnp.zeros(shape) + r\n"
                "def going(r, shape=()):\n    return jnp.ones(shape) * r\n@jax.jit\ndef step(p, r, n):\n"
                "    return lax.cond(p, done, going, r, n)\n", 5, 22, also=((7, 21),)),
        Invalid("import jax\nimport jax.numpy as jnp\n@jax.jit\ndef f(x, r):\n    return jnp.repeat(x, r)\n", 5, 26),
        Invalid("import jax\nfrom jax import lax\nimport jax.numpy as jnp\ndef f(x):\n    n = lax.psum(x, 'i')\n"
                "    return jnp.zeros((n, 3)) + x\ng = jax.pmap(f, axis_name='i')\n", 6, 23),
        Invalid("import jax\nimport jax.numpy as jnp\nclass D:\n    def sample(self, keys, n):\n"
                "        return jax.vmap(self._one, in_axes=(None, 0))(keys, n)\n    @staticmethod\n"
                "    def _one(key, n):\n        return jnp.zeros((n, 3))\n", 8, 27),
        Invalid("import jax\n@jax.jit\ndef f(x):\n    return x[x > 0].sum()\n", 4, 14, "jnp.where"),
        Invalid("import jax\nimport jax.numpy as jnp\n@jax.jit\ndef f(x):\n    return jnp.nonzero(x)\n", 5, 12, "size="),
        Invalid("import jax\nimport jax.numpy as jnp\n@jax.jit\ndef f(x):\n    return jnp.where(x > 0)\n", 5, 12, "size="),
        Invalid("import jax\nimport jax.numpy as jnp\n@jax.jit\ndef f(x, n):\n    return jnp.arange(n) * x\n", 5, 23),
        Invalid("import jax\nimport jax.numpy as jnp\n@jax.jit\ndef f(x):\n    n = jnp.sum(x > 0)\n"
                "    return jnp.zeros(n)\n", 6, 22),
        Invalid("import jax\n@jax.jit\ndef f(x, i):\n    return x[i:i + 3]\n", 4, 14, "dynamic_slice"),
        Invalid("import jax\nimport jax.numpy as jnp\n@jax.jit\ndef f(x, y):\n    mask = jnp.isnan(x)\n"
                "    return y.at[mask].set(0.0)\n", 6, 17),
        Invalid("import jax\nimport jax.numpy as jnp\n@jax.vmap\ndef f(x):\n    return jnp.unique(x)\n", 5, 12),
        Invalid("import jax\n@jax.jit\ndef f(x, rows):\n    return x.reshape(rows, -1)\n", 4, 22),
        Invalid("import jax\nimport jax.numpy as jnp\n@jax.jit\ndef f(x):\n    keep = (x > 0) & ~jnp.isnan(x)\n"
                "    return x[keep]\n", 6, 14),
    )

    def visit_Subscript(self, node: cst.Subscript) -> None:
        for element in node.slice:
            index = element.slice
            if isinstance(index, cst.Index) and self.model.is_bool_mask(index.value):
                self.report(index.value, f"boolean mask indexing gives a value-dependent shape under "
                                         f"{self.transform_name()}; use `jnp.where(mask, x, fill)` instead")
            elif isinstance(index, cst.Slice):
                for bound in (index.lower, index.upper, index.step):
                    if bound is not None and self.model.is_traced(bound):
                        self.report(bound, f"slice bounds must be static but this one is traced under "
                                           f"{self.transform_name()}; use `lax.dynamic_slice` with a static "
                                           "length, or make the bound static")
                        break

    def visit_Call(self, node: cst.Call) -> None:
        name = self.model.call_name(node)
        if name is None:
            self._check_method(node)
        elif name in _SIZED or (name == "jax.numpy.where" and _positional_count(node) == 1):
            if not _has_keyword(node, "size") and any(self.model.is_traced(a.value) for a in node.args):
                function = name.rpartition(".")[2]
                self.report(node, f"`jnp.{function}` without `size=` has a value-dependent output shape under "
                                  f"{self.transform_name()}; pass `size=` (and `fill_value=`)")
        elif name in _SHAPE_ARGUMENTS:
            if not _has_keyword(node, _STATIC_SHAPE_KEYWORDS.get(name, "")):
                self._check_shape_arguments(node, *_SHAPE_ARGUMENTS[name])
        elif name.startswith("jax.random."):
            self._check_shape_arguments(node, (), ("shape",))

    def _check_method(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and self.model.is_traced(func.value)):
            return
        if func.attr.value in _SHAPE_METHODS:
            self._check_shape_arguments(node, tuple(range(len(node.args))), ("shape",))
        elif func.attr.value == "nonzero" and not _has_keyword(node, "size"):
            self.report(node, f"`.nonzero()` without `size=` has a value-dependent output shape under "
                              f"{self.transform_name()}; pass `size=` (and `fill_value=`)")

    def _check_shape_arguments(self, node: cst.Call, positions: tuple[int, ...], keywords: tuple[str, ...]) -> None:
        index = 0
        for arg in node.args:
            if arg.star:
                return
            if arg.keyword is None:
                selected = index in positions
                index += 1
            else:
                selected = arg.keyword.value in keywords
            if selected and self._traced_shape(arg.value):
                hint = static_hint(self.model, arg.value, self.context.function)
                self.report(arg.value, f"a shape or size must be static but this one is traced under "
                                       f"{self.transform_name()}; derive it from `x.shape`{hint}")
                return

    def _traced_shape(self, node: cst.BaseExpression) -> bool:
        if isinstance(node, (cst.Tuple, cst.List)):
            return any(self.model.is_traced(element.value) for element in node.elements)
        return self.model.is_traced(node)


def _positional_count(node: cst.Call) -> int:
    return sum(1 for arg in node.args if arg.keyword is None and not arg.star)


def _has_keyword(node: cst.Call, keyword: str) -> bool:
    return any(arg.keyword is not None and arg.keyword.value == keyword for arg in node.args)
