"""JAX001 syntax-error."""

from __future__ import annotations

from jaxcheck.analyzer.rule import Invalid, Rule, Valid


class SyntaxErrorInSource(Rule):
    """
    ## What it does
    Reports a file that cannot be analysed: the running Python's parser refuses it (a syntax error, a
    bad escape in a literal, a character that is no Python, nesting deeper than the parser accepts), or
    it is not valid text in its declared encoding, or binary. (A file a parser runs out of memory or
    recursion depth on is a file error, "file too large to check": no verdict on the code.)

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
        # What CPython refuses is a syntax error here too, though LibCST would parse it.
        Invalid("x = b'\\x0'\n", 1, 11, "invalid \\x escape"),
        Invalid("x = '\\N{nope}'\n", 1, 15, "unknown Unicode character name"),
        Invalid("x = 1\n\x00\x01\x02", 2, 1, "binary file"),
        Invalid(b"x = 1\nname = 'caf\xe9'\n", 2, 1, "not valid utf-8"),
    )
