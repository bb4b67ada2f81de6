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
