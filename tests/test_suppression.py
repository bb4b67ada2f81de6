"""flake8-style `# noqa` and file-level `# jaxcheck: noqa`."""

from __future__ import annotations

import pytest

from conftest import findings

BODY = "import jax\n@jax.jit\ndef f(x):\n    if x > 0:{comment}\n        return int(x){comment2}\n    return x\n"


@pytest.mark.parametrize(
    ("comment", "comment2", "expected"),
    [
        ("", "", ["JAX301", "JAX302"]),
        ("  # noqa", "", ["JAX302"]),
        ("  # noqa: JAX301", "", ["JAX302"]),
        ("  # noqa:JAX302", "", ["JAX301", "JAX302"]),
        ("  # NOQA: JAX3", "  # noqa: E501, JAX302", []),
        ("  # noqa: E501", "", ["JAX301", "JAX302"]),
    ],
)
def test_line_noqa(comment: str, comment2: str, expected: list[str]):
    source = BODY.format(comment=comment, comment2=comment2)
    assert [d.code for d in findings(source)] == expected


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("# jaxcheck: noqa\n", []),
        ("# jaxcheck: noqa: JAX302\n", ["JAX301"]),
        ("# flake8: noqa\n", []),
        ("x = 1  # jaxcheck: noqa\n", ["JAX301", "JAX302"]),
    ],
)
def test_file_level_noqa(header: str, expected: list[str]):
    assert [d.code for d in findings(header + BODY.format(comment="", comment2=""))] == expected


@pytest.mark.parametrize(("text", "line", "expected"), [
    ("x = 1   \n", 1, "x = 1  # noqa: JAX301\n"),  # trailing blanks give way to the comment, as in ruff
    ("x = 1\t\x0c \r\n", 1, "x = 1  # noqa: JAX301\r\n"),
    ("x = 1  # note \xa0\n", 1, "x = 1  # note \xa0  # noqa: JAX301\n"),  # a comment's characters are kept
    ("x = 1  # a\u2028b\x1c\ny = 2 \n", 2, "x = 1  # a\u2028b\x1c\ny = 2  # noqa: JAX301\n"),  # no line breaks
    ("# \x0c\x85\ny = 2\r", 2, "# \x0c\x85\ny = 2  # noqa: JAX301\r"),
    ("y = 2", 1, "y = 2  # noqa: JAX301"),
])
def test_add_noqa_changes_only_the_line_it_comments(text: str, line: int, expected: str):
    from jaxcheck.analyzer.diagnostics import Diagnostic, Position, Range
    from jaxcheck.analyzer.noqa import add_noqa

    at = Position(line, 0)
    assert add_noqa(text, [Diagnostic("a.py", Range(at, at), "JAX301", "x", "m")]) == (expected, 1)
