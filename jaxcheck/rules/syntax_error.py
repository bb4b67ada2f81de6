"""JAX001 syntax-error."""

from __future__ import annotations

from jaxcheck.analyzer.rule import Invalid, Rule, Valid


class SyntaxErrorInSource(Rule):
    """
    ## What it does
    Reports a file that cannot be analysed: it does not parse as Python, is not valid text in its
    declared encoding, is binary, or nests expressions deeper than the Python parser accepts.

    ## Why is this bad?
    A file jaxcheck cannot parse would otherwise look clean. Python cannot import it either.

    ## Example
    ```python
    def step(x:
        return x
    ```

    ## Use instead
    ```python
    def step(x):
        return x
    ```

    ## Fix safety
    No fix is offered: only the author knows what the code should say.
    """

    code = "JAX001"
    name = "syntax-error"
    summary = "A file that does not parse (reported, never a crash, never silently clean)"

    VALID = (
        Valid("x = 1\n"),
        Valid(""),
        Valid("\ufeffimport jax\n"),
        Valid(b"# -*- coding: latin-1 -*-\nname = 'caf\xe9'\n"),
        Valid("x = " + " and ".join(["a"] * 12000) + "\n"),
        Valid("match x:\n    case 1:\n        pass\n"),
        Valid("def f(a, /, b, *, c):\n    return a\n"),
        Valid("async def f():\n    await g()\n"),
    )
    INVALID = (
        Invalid("def step(x:\n    return x\n", 1, 9, "was never closed"),
        Invalid("x = " + "(" * 5000 + "1" + ")" * 5000 + "\n", 1, 205, "too many nested parentheses"),
        Invalid("x = " + "[" * 3000 + "]" * 3000 + "\n", 1, 205, "too many nested parentheses"),
        Invalid("x = " + "f(" * 3000 + ")" * 3000 + "\n", 1, 406, "too many nested parentheses"),
        Invalid("x = " + "-" * 100_000 + "1\n", 1, 1, "syntax error"),
        Invalid("x = " + "+".join(["1"] * 20_000) + "\n", 1, 1, "too deeply nested"),
        Invalid("x = " + "+".join(["1"] * 2_600) + "\n", 1, 1, "too deeply nested"),
        Invalid("x = 1\n\x00\x01\x02", 2, 1, "binary file"),
        Invalid(b"x = 1\nname = 'caf\xe9'\n", 2, 1, "not valid utf-8"),
    )
