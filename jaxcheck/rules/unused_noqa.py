"""JAX002 unused-noqa."""

from __future__ import annotations

from jaxcheck.analyzer.rule import Invalid, Rule, Valid


class UnusedNoqa(Rule):
    """
    ## What it does
    Reports codes in a `# noqa: JAX...` comment that suppress nothing on their line: the finding they
    were written for is gone (the code was fixed, or the rule became more precise).

    ## Why is this bad?
    A stale suppression hides the next real finding on that line, and it tells readers that something
    is wrong where nothing is.

    ## Known problems
    Only codes of rules that ran on the file count: a code of another tool (`E501`), or of a jaxcheck
    rule that is not enabled, may still be needed elsewhere and is left alone. Blanket `# noqa`
    comments (no codes) are not reported for the same reason. The rule is off by default: enable it
    with `--extend-select JAX002` (or `unused-noqa`).

    ## Example
    ```python
    import jax.numpy as jnp

    x = jnp.zeros(3)  # noqa: JAX201
    ```

    ## Use instead
    ```python
    import jax.numpy as jnp

    x = jnp.zeros(3)
    ```

    ## Fix safety
    The fix is safe: it removes the unused codes, or the whole comment when no code is left; other
    codes and any text after them stay.
    """

    code = "JAX002"
    name = "unused-noqa"
    summary = "A `# noqa` code that suppresses nothing on its line (off by default)"
    default_enabled = False

    VALID = (
        Valid("import jax.numpy as jnp\nx = jnp.zeros(3)\nx[0] = 1  # noqa: JAX201\n"),
        Valid("import jax.numpy as jnp\nx = jnp.zeros(3)\nx[0] = 1  # noqa: JAX2\n"),
        Valid("x = 1  # noqa: E501\n"),
        Valid("x = 1  # noqa\n"),
        Valid("x = '# noqa: JAX201'\n"),
        Valid("x = 1  # noqa: JAX903\n"),
        Valid("import jax.numpy as jnp\nx = jnp.zeros(3)\nx[0] = 1  # noqa: JAX201, E501\n"),
        Valid("import jax.numpy as jnp\nx = jnp.zeros(3)\nx[0] = 1  # NOQA:jax201\n"),
        Valid("# jaxcheck: noqa: JAX301\nx = 1\n"),
    )
    INVALID = (
        Invalid("x = 1  # noqa: JAX201\n", 1, 8, "unused: `JAX201`", fix="x = 1\n"),
        Invalid("import jax.numpy as jnp\nx = jnp.zeros(3)\nx[0] = 1  # noqa: E501, JAX201, JAX301\n", 3, 11,
                "unused: `JAX301`", fix="import jax.numpy as jnp\nx = jnp.zeros(3)\nx[0] = 1  # noqa: E501, JAX201\n"),
        Invalid("x = 1  # noqa: JAX3 the branch is static\n", 1, 8, fix="x = 1  # the branch is static\n"),
        Invalid("x = 1  # type: ignore  # noqa:JAX401\n", 1, 24, fix="x = 1  # type: ignore\n"),
        Invalid("x = 1  # noqa: JAX201, JAX301\n", 1, 8, "unused: `JAX201`, `JAX301`", fix="x = 1\n"),
        Invalid("x = 1\ny = 2  # noqa: JAX401\n", 2, 8, fix="x = 1\ny = 2\n"),
        Invalid("def f(x):\n    return x  # NOQA: jax301\n", 2, 15, "unused", fix="def f(x):\n    return x\n"),
        Invalid("x = 1  # noqa: JAX1,E501\n", 1, 8, "unused: `JAX1`", fix="x = 1  # noqa: E501\n"),
    )
