"""JAX901 float64-without-x64."""

from __future__ import annotations

import libcst as cst

from jaxcheck.analyzer.rule import Invalid, Rule, Valid
from jaxcheck.analyzer.semantics.jax_api import WIDE_DTYPE_STRINGS, WIDE_DTYPES
from jaxcheck.analyzer.semantics.syntax import literal_strings

_DTYPE_POSITIONS = {
    **dict.fromkeys(("array", "asarray", "zeros", "ones", "empty", "zeros_like", "ones_like", "empty_like"), 1),
    **dict.fromkeys(("full", "full_like"), 2),
}
"""`jax.numpy` constructors that take the dtype positionally, and where (`jnp.zeros(shape, dtype)`)."""
_DTYPE_NAMESPACES = ("jax.numpy.", "jax.random.", "jax.lax.", "jax.nn.", "jax.scipy.")


class Float64WithoutX64(Rule):
    """
    ## What it does
    Finds 64-bit dtypes (`float64`, `int64`, `uint64`, `complex128`, as `jnp.float64`, `np.float64` or a
    string such as `"float64"`) given to a JAX array constructor or function (`jnp.zeros(3,
    dtype=jnp.float64)`, `jnp.array(x, np.float64)`, `jax.random.normal(key, s, dtype=...)`), to
    `.astype` of a JAX array, or called as a scalar type (`jnp.float64(1.0)`), in a project none of whose
    code enables 64-bit mode.

    Code that enables it anywhere in the project silences the rule: `jax.config.update("jax_enable_x64",
    True)`, `jax.enable_x64()` or `jax.experimental.enable_x64()`, setting `os.environ["JAX_ENABLE_X64"]`,
    or any other code that names the `jax_enable_x64` option (reading `jax.config.jax_enable_x64` shows
    code that adapts to the mode). The project is what the run sees: the checked files and the project
    modules that import them.

    ## Why is this bad?
    Without x64, JAX silently truncates every 64-bit dtype to its 32-bit counterpart (with at most a
    warning): the array is `float32`, and the precision the code asks for never happens.

    ## Known problems
    64-bit mode can also be turned on outside the code, with the `JAX_ENABLE_X64=1` environment variable
    or an absl flag (`--jax_enable_x64`), which a linter cannot see. In such a project this rule only
    reports code that works as intended: leave it off there.

    ## Example
    ```python
    import jax.numpy as jnp

    weights = jnp.zeros(1024, dtype=jnp.float64)
    ```

    ## Use instead
    ```python
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)  # at startup, before any array is created
    weights = jnp.zeros(1024, dtype=jnp.float64)
    ```
    or ask for the precision JAX gives without x64: `dtype=jnp.float32`.

    ## Fix safety
    No fix is offered: enabling x64 changes the default dtypes of the whole program, and asking for
    32 bits changes the code's intent.
    """

    code = "JAX901"
    name = "float64-without-x64"
    summary = "a 64-bit dtype in a project that never enables x64: JAX silently uses 32 bits"
    default_enabled = False

    VALID = (
        Valid("import jax\nimport jax.numpy as jnp\njax.config.update('jax_enable_x64', True)\n"
              "x = jnp.zeros(3, dtype=jnp.float64)\n"),
        Valid("import jax\nimport jax.numpy as jnp\nwith jax.enable_x64(True):\n    x = jnp.zeros(3, dtype=jnp.float64)\n"),
        Valid("import os\nos.environ['JAX_ENABLE_X64'] = '1'\nimport jax.numpy as jnp\nx = jnp.ones(3, jnp.float64)\n"),
        Valid("import jax\nimport jax.numpy as jnp\ndef f(x):\n"
              "    dtype = jnp.float64 if jax.config.read('jax_enable_x64') else jnp.float32\n    return x.astype(dtype)\n"),
        Valid("import numpy as np\nx = np.zeros(3, dtype=np.float64)\n"),
        Valid("import numpy as np\nimport jax.numpy as jnp\ny = np.asarray(jnp.ones(3)).astype(np.float64)\n"),
        Valid("import jax.numpy as jnp\nx = jnp.zeros(3, dtype=jnp.float32)\n"),
        Valid("import jax.numpy as jnp\nx = jnp.zeros(3, dtype=float)\n"),
        Valid("import jax.numpy as jnp\ndef f(x):\n    return x.astype('float64')\n"),
        Valid("import jax.numpy as jnp\nimport numpy as np\nx = jnp.zeros(3, dtype='float32')\ny = np.float64(1.0)\n"),
    )
    INVALID = (
        Invalid("import jax.numpy as jnp\nx = jnp.zeros(3, dtype=jnp.float64)\n", 2, 24, "32 bits"),
        Invalid("import jax.numpy as jnp\nimport numpy as np\nx = jnp.array([1, 2], np.int64)\n", 3, 23, "int64"),
        Invalid("import jax.numpy as jnp\nx = jnp.ones(3).astype('float64')\n", 2, 24),
        Invalid("import jax.numpy as jnp\nx = jnp.full((2, 2), 1.0, jnp.complex128)\n", 2, 27),
        Invalid("import jax\nimport jax.numpy as jnp\ndef f(key):\n"
                "    return jax.random.normal(key, (3,), dtype=jnp.float64)\n", 4, 47),
        Invalid("import jax.numpy as jnp\nx = jnp.float64(1.0)\n", 2, 5),
        Invalid("import jax.numpy as jnp\ndef f(x: jnp.ndarray):\n    return x.astype(jnp.float64)\n", 3, 21),
        Invalid("from jax.numpy import float64, zeros\nx = zeros(3, dtype=float64)\n", 2, 20),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if self.model.project_enables_x64():
            return
        name = self.model.call_name(node)
        if name is not None and name in WIDE_DTYPES and name.startswith("jax."):
            self._report(node, f"`{name}(...)`")
            return
        dtype = self._dtype_argument(node, name)
        if dtype is not None:
            wide = self._wide_dtype(dtype)
            if wide is not None:
                self._report(dtype, wide)

    def _dtype_argument(self, node: cst.Call, name: str | None) -> cst.BaseExpression | None:
        """The dtype a JAX call is given: `dtype=`, the positional slot of a `jnp` constructor, or the
        argument of a JAX array's `.astype`."""
        if name is not None and name.startswith(_DTYPE_NAMESPACES):
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value == "dtype":
                    return arg.value
            position = _DTYPE_POSITIONS.get(name.removeprefix("jax.numpy.")) if name.startswith("jax.numpy.") else None
            positional = [arg for arg in node.args if arg.keyword is None and not arg.star]
            if position is not None and len(positional) > position:
                return positional[position].value
            return None
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "astype" and node.args:
            if self.model.is_jax_array(func.value) and node.args[0].keyword in (None,) and not node.args[0].star:
                return node.args[0].value
        return None

    def _wide_dtype(self, node: cst.BaseExpression) -> str | None:
        if isinstance(node, (cst.Name, cst.Attribute)):
            name = self.model.qualified_name(node)
            return f"`{name}`" if name in WIDE_DTYPES else None
        if isinstance(node, cst.SimpleString):
            strings = literal_strings(node)
            if strings and strings[0].lower() in WIDE_DTYPE_STRINGS:
                return f"dtype {strings[0]!r}"
        return None

    def _report(self, node: cst.CSTNode, what: str) -> None:
        self.report(node, f"{what} is silently truncated to 32 bits: no code in this project enables x64 (set "
                          "`jax.config.update(\"jax_enable_x64\", True)` at startup, or ask for a 32-bit dtype; if "
                          "the JAX_ENABLE_X64 environment variable enables it, leave this rule off)")
