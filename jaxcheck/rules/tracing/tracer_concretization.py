"""JAX302 tracer-concretization."""

from __future__ import annotations

import libcst as cst

from jaxcheck.analyzer import codegen
from jaxcheck.analyzer.rule import Invalid, Rule, Valid, static_hint
from jaxcheck.analyzer.semantics.jax_api import AXIS_FIRST_METHODS, CONCRETE_METHODS, is_array_call
from jaxcheck.analyzer.semantics.syntax import at_receiver

_CONVERTERS = {
    "builtins.int": "`x.astype(jnp.int32)`",
    "builtins.float": "`x.astype(jnp.float32)`",
    "builtins.complex": "`x.astype(jnp.complex64)`",
    "builtins.bool": "`x.astype(bool)` or `jnp.where`",
    "builtins.range": "`lax.fori_loop` (or a static bound)",
}
_FAIL_ON_DIFFERENTIATION = frozenset({"builtins.float", "builtins.complex"})
"""Converters that raise on a value being differentiated (`jax.grad`), where `int()` and `bool()` work."""
# JAX functions whose arguments at these positions (or keywords) must be Python ints.
_INT_ARGUMENTS: dict[str, tuple[int, str]] = {
    "jax.numpy.linalg.matrix_power": (1, "n"),
    "jax.nn.one_hot": (1, "num_classes"),
}
# NumPy functions that only read metadata or forward to the array's own method (`np.sum(x)` calls
# `x.sum()`), so they work on tracers.
_NUMPY_SAFE = frozenset(
    f"numpy.{name}"
    for name in (
        "shape", "ndim", "size", "result_type", "dtype", "issubdtype", "iinfo", "finfo", "isscalar",
        "iscomplexobj", "isrealobj", "can_cast", "promote_types", "sum", "mean", "prod", "max", "min", "amax",
        "amin", "any", "all", "argmax", "argmin", "cumsum", "cumprod", "std", "var", "ptp", "round", "around",
        "clip", "reshape", "transpose", "squeeze", "swapaxes", "take", "repeat", "trace", "diagonal",
        "searchsorted", "argsort", "nonzero", "ravel",
    )
)


class TracerConcretization(Rule):
    """
    ## What it does
    Finds code that needs the concrete value of a traced array under `jax.jit`, `vmap`, `pmap` or a
    `lax` body: `int()`/`float()`/`bool()`/`complex()`, `.item()`/`.tolist()`, NumPy and `math`
    functions, `range(n)`, indexing a Python list or tuple, and `axis=` arguments (also of array
    methods: `x.mean(axis=a)`). Under a differentiating transform alone (`jax.grad`, `jvp`), where `if`,
    `int()` and `.item()` still work, it finds `float()`/`complex()`, `.tolist()`, NumPy and `math` on
    values computed from the differentiated arguments (not through `jax.lax.stop_gradient`).
    Code in a `try` whose handler names the error JAX raises (`except TypeError:`, or its `jax.errors`
    subclass) without re-raising it has a fallback for tracers and is not reported (a broad
    `except Exception:` is not such a fallback).

    ## Why is this bad?
    A tracer has a shape and dtype but no value while the function is being traced, so converting it
    to a Python number or a NumPy array fails with `ConcretizationTypeError`,
    `TracerIntegerConversionError` or `TracerArrayConversionError`.

    ## Example
    ```python
    import jax
    import numpy as np

    @jax.jit
    def normalize(x):
        return x / np.linalg.norm(x)
    ```

    ## Use instead
    ```python
    import jax
    import jax.numpy as jnp

    @jax.jit
    def normalize(x):
        return x / jnp.linalg.norm(x)
    ```
    Keep values as arrays (`x.astype(jnp.int32)`), use `jax.numpy` instead of NumPy, `lax.fori_loop`
    for traced loop bounds, or make the argument static with `static_argnames=...`.

    ## Fix safety
    No fix is offered: whether the value should become static or stay traced is a design choice.

    ## Runtime check
    At run time, JAX's `ConcretizationTypeError`, `TracerIntegerConversionError` and
    `TracerArrayConversionError` are re-raised with their own type and a note carrying this code, the
    argument the traced value came from and the user's line; `static_argnames` is suggested only after a re-
    trace with it static succeeded.
    """

    code = "JAX302"
    explains_trace = True
    concretizes = True
    name = "tracer-concretization"
    summary = "`int()`/`float()`/`.item()`/NumPy/`math`/`range()`/list indexing/`axis=` on a traced value"

    VALID = (
        # A function may replace the table's entry with a JAX array: what it holds when traced is unknown.
        Valid("import jax\nimport jax.numpy as jnp\nimport numpy as np\nTABLES = {'a': np.arange(10)}\n"
              "def to_device():\n    TABLES['a'] = jnp.asarray(TABLES['a'])\n@jax.jit\ndef lookup(i):\n"
              "    return TABLES['a'][i]\n"),
        # A helper predicate that tests for a tracer narrows like the test it returns.
        Valid("import jax\nimport numpy as np\ndef _is_traced(value):\n    return isinstance(value, jax.core.Tracer)\n"
              "def fmt(value):\n    if _is_traced(value):\n        return '<traced>'\n    return str(np.asarray(value))\n"
              "@jax.jit\ndef f(x):\n    return x, fmt(x)\n"),
        # A custom derivative's function and rules run on primal values under `jax.grad` alone.
        Valid("import jax\n@jax.custom_vjp\ndef f(x):\n    return x * float(x)\ndef f_fwd(x):\n"
              "    print('fwd sees', float(x))\n    return f(x), x\ndef f_bwd(x, g):\n    return (g * 2 * x,)\n"
              "f.defvjp(f_fwd, f_bwd)\nprint(jax.grad(f)(2.0))\n"),
        # Under `jax.grad` alone: `int()`, `if` and `.item()` work on the differentiated value, and anything
        # works on `stop_gradient` of it or on arguments not differentiated (checked under JAX 0.10.2).
        Valid("import jax\ndef loss(w, x):\n    n = int(w[0])\n    if w[0] > 0:\n        w = w * 2\n"
              "    print(float(jax.lax.stop_gradient(w.sum())), float(x.sum()), w.sum().item())\n    return (w * x).sum() + n\n"
              "g = jax.grad(loss)(w0, x0)\n"),
        # A fallback for traced values: the handler catches the error JAX raises (checked under JAX 0.10.2).
        Valid("import jax\n@jax.jit\ndef f(x, n):\n    try:\n        steps = int(n)\n"
              "    except (jax.errors.ConcretizationTypeError, TypeError):\n        steps = None\n    return x\n"),
        # Under `jax.ensure_compile_time_eval()`, operations on constants are computed at once.
        Valid("import jax\nimport jax.numpy as jnp\n@jax.jit\ndef f(x):\n    with jax.ensure_compile_time_eval():\n"
              "        n = int((jnp.arange(8) ** 2).sum())\n    return x * n\n"),
        # A helper that raises on a tracer (`if isinstance(v, Tracer): raise`) ends the traced path.
        Valid("import jax\nimport jax.numpy as jnp\nimport numpy as np\ndef concrete(v):\n"
              "    if isinstance(v, jax.core.Tracer):\n        raise TypeError('v must be concrete')\n    return float(v)\n"
              "def validate(m, step):\n    if concrete(step) <= 0:\n        raise ValueError\n    return np.asarray(m)\n"
              "def run(v):\n    return validate(jnp.ones(3), v)\njax.jit(run)(jnp.asarray(0.1))\n"),
        Valid("import jax\nimport jax.numpy as jnp\n@jax.jit\ndef f(m):\n    return jnp.linalg.matrix_power(m, 3)\n"),
        Valid("import jax\n@jax.jit\ndef f(labels):\n    return jax.nn.one_hot(labels, num_classes=10)\n"),
        # A `shard_map` argument whose `in_specs` entry is None is passed through unmapped and concrete.
        Valid("import jax\nfrom jax.sharding import PartitionSpec as P\nfrom jax import shard_map\ndef f(x, n):\n"
              "    for _ in range(n):\n        x = x + 1\n    return x\n@jax.jit\ndef run(x, mesh):\n"
              "    return shard_map(f, mesh=mesh, in_specs=(P('x'), None), out_specs=P('x'))(x, 3)\n"),
        # After `if isinstance(v, jax.core.Tracer): raise ...`, `v` is concrete.
        Valid("import jax\nimport numpy as np\n@jax.jit\ndef f(x, v):\n    if isinstance(v, jax.core.Tracer):\n"
              "        raise TypeError('v must be concrete')\n    return x * float(np.asarray(v))\n"),
        Valid("import jax\n@jax.jit\ndef f(x):\n    n = int(x.shape[0])\n    return x * n\n"),
        Valid("import jax\nimport numpy as np\n@jax.jit\ndef f(x):\n    return x.reshape(np.prod(x.shape))\n"),
        Valid("import jax\nfrom functools import partial\n@partial(jax.jit, static_argnums=(1,))\n"
              "def f(x, n):\n    for i in range(n):\n        x = x + i\n    return x\n"),
        Valid("import jax\ndef f(x):\n    return x * int(x)\ng = jax.grad(f)\n"),
        Valid("import jax\n@jax.jit\ndef f(x):\n    return x.astype(int)\n"),
        Valid("import jax\nimport jax.numpy as jnp\n@jax.jit\ndef f(x):\n    return jnp.sum(x, axis=0)\n"),
        Valid("import jax\nfrom functools import partial\n@partial(jax.jit, static_argnames='axis')\ndef pool(x, axis):\n"
              "    return x.mean(axis=axis)\n"),
        Valid("import jax\n@jax.jit\ndef f(costs, j, r):\n    return costs.at[j].min(r)\n"),
        Valid("import jax\nweights = [1.0, 2.0]\n@jax.jit\ndef f(x):\n    return x * weights[0]\n"),
        Valid("import jax\nimport math\n@jax.jit\ndef f(x):\n    return x * math.sqrt(x.ndim)\n"),
        Valid("import jax\nimport numpy as np\n@jax.jit\ndef f(x):\n    return np.sum(x)\n"),
        Valid("import jax\nimport jax.numpy as jnp\nimport numpy as np\nTABLE = np.eye(4)\ndef setup():\n"
              "    global TABLE\n    TABLE = jnp.asarray(TABLE)\n@jax.jit\ndef f(i):\n    return TABLE[i].sum()\n"),
        Valid("import jax\nimport numpy as np\nSQUARES = np.arange(10)\n@jax.jit\ndef f(x):\n    return x * SQUARES[3]\n"),
        Valid("import jax\nimport jax.numpy as jnp\nimport numpy as np\nSQUARES = jnp.asarray(np.arange(10))\n"
              "@jax.jit\ndef f(i):\n    return SQUARES[i]\n"),
        Valid("import jax\nimport numpy as np\nSQUARES = np.arange(10)\n@jax.jit\ndef f(i):\n    return SQUARES[i.shape[0]]\n"),
        Valid("import jax\n@jax.jit\ndef f(xs):\n    for i in range(len(xs)):\n        xs = xs.at[i].set(0)\n    return xs\n"),
    )
    INVALID = (
        # A NumPy table kept in a module-level dict.
        Invalid("import jax\nimport numpy as np\nTABLES = {'a': np.arange(10)}\n@jax.jit\ndef lookup(i):\n"
                "    return TABLES['a'][i]\n", 6, 24, "NumPy array"),
        # A helper predicate testing something else narrows nothing.
        Invalid("import jax\nimport numpy as np\ndef _is_small(value):\n    return value.ndim == 0\n"
                "def fmt(value):\n    if _is_small(value):\n        return '<small>'\n    return str(np.asarray(value))\n"
                "@jax.jit\ndef f(x):\n    return x, fmt(x)\n", 8, 16, "numpy.asarray"),
        # A broad handler meant for other errors: under jit its fallback silently becomes the only path.
        Invalid("import jax\n@jax.jit\ndef normalize(x):\n    try:\n        n = float(jax.numpy.linalg.norm(x))\n"
                "    except Exception:\n        n = 1.0\n    return x / n\n", 5, 13),
        # ...but `float()`, NumPy and `math` fail on it, also in a helper it is passed to.
        Invalid("import jax\nimport jax.numpy as jnp\ndef loss(w, x):\n    l = jnp.mean((x @ w) ** 2)\n"
                "    print('loss', float(l))\n    return l\ng = jax.grad(loss)(w0, x0)\n", 5, 19, "being differentiated"),
        Invalid("import jax\nimport numpy as np\ndef log_norm(v):\n    return np.log(v)\ndef loss(w):\n"
                "    return log_norm(w.sum()) * w.sum()\nvalue, g = jax.value_and_grad(loss)(w0)\n", 4, 12, "NumPy"),
        # A handler that catches something else, or re-raises, is no fallback.
        Invalid("import jax\n@jax.jit\ndef f(x, n):\n    try:\n        steps = int(n)\n    except ValueError:\n"
                "        steps = None\n    return x\n", 5, 17),
        Invalid("import jax\n@jax.jit\ndef f(x, n):\n    try:\n        steps = int(n)\n    except TypeError:\n"
                "        print('failed')\n        raise\n    return x\n", 5, 17),
        Invalid("import jax\nimport jax.numpy as jnp\n@jax.jit\ndef f(x):\n    with jax.ensure_compile_time_eval():\n"
                "        n = int(x.sum())\n    return x * n\n", 6, 13),
        Invalid("import jax\nimport jax.numpy as jnp\n@jax.jit\ndef f(x):\n    return x * int((jnp.arange(8) ** 2).sum())\n",
                5, 16),
        # What the block computed is concrete, but an operation on it after the block is staged again.
        Invalid("import jax\nimport jax.numpy as jnp\n@jax.jit\ndef f(x):\n    with jax.ensure_compile_time_eval():\n"
                "        table = jnp.arange(8) ** 2\n    return x * int(table.sum())\n", 7, 16),
        Invalid("import jax\nimport jax.numpy as jnp\nimport numpy as np\ndef concrete(v):\n"
                "    if isinstance(v, jax.core.Tracer):\n        raise TypeError('v must be concrete')\n    return float(v)\n"
                "def validate(m, step):\n    out = np.asarray(m)\n    concrete(step)\n    return out\n"
                "def run(v):\n    return validate(jnp.ones(3), v)\njax.jit(run)(jnp.asarray(0.1))\n", 9, 11),
        Invalid("import jax\nimport jax.numpy as jnp\n@jax.jit\ndef f(m, p):\n    return jnp.linalg.matrix_power(m, p)\n", 5, 39),
        # A NumPy array indexed by a tracer converts the tracer to an int.
        Invalid("import jax\nimport numpy as np\n@jax.jit\ndef f(x, j):\n    return np.eye(4)[j] + x\n", 5, 22,
                "NumPy array"),
        Invalid("import jax\nimport numpy as np\nTABLE = np.arange(10) ** 2\nSQUARES = np.arange(10)\n"
                "@jax.jit\ndef f(i):\n    return SQUARES[i]\n", 7, 20, "`jnp.asarray(SQUARES)[i]`"),
        Invalid("import jax\nimport numpy as np\nLUT = np.ones((8, 4))\n@jax.jit\ndef f(k, x):\n"
                "    return LUT[k, 1:] * x\n", 6, 16, "`jnp.asarray(LUT)[k, 1:]`"),
        Invalid("import jax\n@jax.jit\ndef f(labels, n):\n    return jax.nn.one_hot(labels, num_classes=n)\n", 4, 47),
        # A lambda bound to a name and jitted later is analysed like a `def`.
        Invalid("import jax\ng = lambda i: int(i) + 1\nh = jax.jit(g)\n", 2, 15),
        Invalid("import jax\nfrom jax.sharding import PartitionSpec as P\nfrom jax import shard_map\ndef f(x, n):\n"
                "    for _ in range(n):\n        x = x + 1\n    return x\n@jax.jit\ndef run(x, mesh):\n"
                "    return shard_map(f, mesh=mesh, in_specs=P('x'), out_specs=P('x'))(x, x)\n", 5, 14),
        Invalid("import jax\nimport numpy as np\n@jax.jit\ndef f(x, v):\n    if isinstance(v, jax.core.Tracer):\n"
                "        print('traced')\n    return x * float(np.asarray(v))\n", 7, 22),
        Invalid("import jax\n@jax.jit\ndef f(x):\n    return int(x)\n", 4, 12, "astype"),
        Invalid("import jax\n@jax.jit\ndef f(x):\n    return x.sum().item()\n", 4, 12, ".item()"),
        Invalid("import jax\nimport numpy as np\n@jax.jit\ndef f(x):\n    return np.asarray(x) + 1\n", 5, 12,
                "jax.numpy"),
        Invalid("import jax\nimport math\n@jax.jit\ndef f(x):\n    return math.exp(x)\n", 5, 12),
        Invalid("import jax\n@jax.jit\ndef f(x, n):\n    for i in range(n):\n        x = x + i\n    return x\n", 4, 14,
                "fori_loop"),
        Invalid("import jax\n@jax.jit\ndef f(x, i):\n    options = [1.0, 2.0, 3.0]\n    return x * options[i]\n", 5, 24,
                "Python list"),
        Invalid("import jax\nimport jax.numpy as jnp\n@jax.jit\ndef f(x, a):\n    return jnp.sum(x, axis=a)\n", 5, 28,
                "axis"),
        # The method form too (checked under JAX 0.10.2: "The axis argument must be known statically").
        Invalid("import jax\n@jax.jit\ndef pool(x, axis):\n    return x.mean(axis=axis)\n", 4, 24, "axis"),
        Invalid("import jax\n@jax.jit\ndef pool(x, axis):\n    return x.sum(axis)\n", 4, 18, "axis"),
        Invalid("import jax\nfrom jax import lax\ndef body(carry, x):\n    return carry + float(x), None\n"
                "out = lax.scan(body, 0.0, xs)\n", 4, 20),
        Invalid("import jax\nimport numpy as onp\n@jax.vmap\ndef f(x):\n    return onp.array(x).tolist()\n", 5, 12),
        Invalid("import jax\nimport jax.numpy as jnp\n@jax.jit\ndef f(x):\n    k = jnp.argmax(x)\n    return bool(k)\n",
                6, 12),
    )

    def visit_Call(self, node: cst.Call) -> None:
        name = self.model.call_name(node)
        if name is not None:
            self._check_function(node, name)
        elif isinstance(node.func, cst.Attribute) and node.func.attr.value in CONCRETE_METHODS:
            receiver = node.func.value
            if self.model.is_traced(receiver) or node.func.attr.value == "tolist" and self.model.is_differentiated(receiver):
                method = node.func.attr.value
                self.report(node, f"`.{method}()` needs a concrete value but the array is traced under "
                                  f"{self.transform_name()}; keep it an array, or call it outside the traced function")
        elif isinstance(node.func, cst.Attribute) and node.func.attr.value in AXIS_FIRST_METHODS \
                and at_receiver(node.func) is None:  # `x.at[i].min(v)` is an update, not a reduction
            positional = [arg.value for arg in node.args if arg.keyword is None and not arg.star]
            axis = next((arg.value for arg in node.args if arg.keyword is not None and arg.keyword.value == "axis"),
                        positional[0] if positional else None)
            if axis is not None and self.model.is_traced(axis) and self.model.is_traced(node.func.value):
                self._report_axis(axis)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        numpy = self.model.is_numpy_array(node.value)
        if not numpy and not self.model.is_python_container(node.value):
            return
        for element in node.slice:
            index = element.slice
            if not (isinstance(index, cst.Index) and self.model.is_traced(index.value)):
                continue
            if numpy:
                array, indices = codegen.source(node.value), codegen.index(node.slice)
                hint = f"jnp.asarray({array})[{indices}]" if len(array) + len(indices) <= 60 else "jnp.asarray(...)[...]"
                self.report(index.value, f"indexing a NumPy array needs a concrete index but the index is traced "
                                         f"under {self.transform_name()}; index a JAX array instead: `{hint}`")
            else:
                self.report(index.value, f"indexing a Python list, tuple or dict needs a concrete key but the "
                                         f"index is traced under {self.transform_name()}; stack the items with "
                                         "`jnp.stack`/`jnp.asarray` and index the array, or use `lax.switch`")

    def _check_function(self, node: cst.Call, name: str) -> None:
        args = [arg.value for arg in node.args if arg.keyword is None]

        def traced() -> bool:  # asked only of the calls that need it: most calls are none of these
            return any(self.model.is_traced(arg) for arg in args)

        def differentiated() -> bool:  # under `jax.grad` alone: `float()`, NumPy and `math` fail, `int()` works
            return any(self.model.is_differentiated(arg) for arg in args)

        if name in _CONVERTERS and traced():
            function = name.rpartition(".")[2]
            hint = static_hint(self.model, args[0], self.context.function) if args else ""
            self.report(node, f"`{function}()` needs a concrete value but its argument is traced under "
                              f"{self.transform_name()}; use {_CONVERTERS[name]}{hint}")
        elif name in _FAIL_ON_DIFFERENTIATION and differentiated():
            function = name.rpartition(".")[2]
            self.report(node, f"`{function}()` fails on a value being differentiated under {self.transform_name()}; "
                              f"convert `jax.lax.stop_gradient(...)` of it, or return it as an auxiliary output "
                              f"(`has_aux=True`)")
        elif name.startswith(("numpy.", "math.")) and name not in _NUMPY_SAFE and (traced() or differentiated()):
            library = "NumPy" if name.startswith("numpy.") else "`math`"
            self.report(node, f"{library} function `{name}` converts its traced argument to a concrete value "
                              f"under {self.transform_name()}; use the jax.numpy equivalent")
        elif name in _INT_ARGUMENTS:
            position, keyword = _INT_ARGUMENTS[name]
            value = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == keyword),
                         args[position] if len(args) > position else None)
            if value is not None and self.model.is_traced(value):
                hint = static_hint(self.model, value, self.context.function)
                self.report(value, f"`{keyword}` of `{name}` must be a Python int but it is traced under "
                                   f"{self.transform_name()}; pass a Python int{hint}")
        elif is_array_call(name):
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value == "axis" and self.model.is_traced(arg.value):
                    self._report_axis(arg.value)

    def _report_axis(self, axis: cst.BaseExpression) -> None:
        hint = static_hint(self.model, axis, self.context.function)
        self.report(axis, f"`axis` must be a concrete int but it is traced under {self.transform_name()}; "
                          f"pass a Python int{hint}")
