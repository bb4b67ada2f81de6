"""Exact verdicts at the edges (issue 31): a file the running interpreter's compiler refuses is JAX001,
a file it accepts is not; a parser running out of memory or recursion depth is a file error."""

from __future__ import annotations

import ast
import sys
import warnings

import libcst as cst
import pytest

from jaxcheck.analyzer import parsing
from jaxcheck.analyzer.engine import check_source

EDGE_FILES = [
    b"x = b'\\x0'\n",  # (value error) in a bytes escape
    b"x = '\\x0'\n",  # (unicode error): truncated escape
    b"x = '\\N{nope}'\n",  # (unicode error): unknown character name
    b"x = f'\\N{nope}'\n",  # the same inside an f-string, which older hosts hand to LibCST
    b"x = b'\xc3\xa9'\n",  # a non-ASCII character in a bytes literal
    b"\xef\xbb\xbf\xef\xbb\xbfx = 1\n",  # two BOMs
    b"x = 1\n\xef\xbb\xbf\n",  # a BOM after the start
    b"\xef\xbb\xbf# coding: latin-1\nx = 1\n",  # a BOM and another declared encoding
    b"x = 1\x01\n",  # a non-printable character
    b"x = 1\xc2\xa0\n",  # a no-break space
    b"\xe2\x80\xa8x = 1\n",  # U+2028, no line break for Python
    b"\xe2\x82\xac = 1\n",  # a character that is no identifier
    b"x = 1\x00\n",  # a null byte
    b"(*x) = 1\n",  # grammar LibCST accepts and CPython does not
    b"x = 0_\n",
    b"x = 1\n\\",  # a line continuation into the end of the file
    b"type X = int\nx = b'\\x0'\n",  # newer syntax does not hide an error elsewhere
    b"x = [f'''\n\n{'a'}'''\n, 1]\n(*x) = 1\n",
    b"def f[T](x: T):\n    return f'{'a'}'\ny = '\\N{nope}'\n",
    # accepted by CPython
    b"\xef\xbb\xbfx = 1\n",
    b"x = 1 # \x0c \x0b \x1c \xc2\x85 \xe2\x80\xa8\n",
    b"# coding: latin-1\nx = '\xff'\n",
    b"x = '\\q'\n",  # an invalid escape is only a warning
    b"x = 1if 1else 0\n",
    b"a = 1\n\x0c\n",
    b"x = 1 \\\r\n",
    b"if True:\n\tif True:\n\t    x = 1\n",
    b"x = " + b"(" * 199 + b"1" + b")" * 199 + b"\n",
]
"""Files at the edges of the grammar; the running interpreter decides which are Python."""

NEWER_SYNTAX = [
    b"type Vector = list[float]\n",
    b"def first[T](items: list[T]) -> T:\n    return items[0]\n",
    b"class A[T: int, *Ts, **P]: pass\n",
    b"def f[T=int](): pass\n",
    b"name = 'x'\ngreeting = f'{f'{name!r}'}' + f\"{'a' + \"b\"}\"\n",
    b"x = [f'''\n\n{'a'}'''\n, 1]\n",
    b"try:\n    pass\nexcept* ValueError:\n    pass\n",
    b"try:\n    pass\nexcept ValueError, TypeError:\n    pass\n",
    b"x = t'{a}'\n",
]
"""Syntax of Pythons newer than 3.10 that LibCST parses: accepted on any host (see parsing.py)."""


def refused(data: bytes) -> bool:
    """The oracle: whether the running interpreter's compiler refuses `data` as a module."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(data, "edge.py", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError):
        return True
    return False


@pytest.mark.parametrize("data", EDGE_FILES, ids=range(len(EDGE_FILES)))
def test_jax001_exactly_when_the_interpreter_refuses_the_file(data: bytes) -> None:
    report = check_source(data, "edge.py")
    assert report.errors == []
    assert [d.code for d in report.diagnostics if d.code == "JAX001"] == (["JAX001"] if refused(data) else [])


def test_the_table_holds_both_verdicts() -> None:
    verdicts = [refused(data) for data in EDGE_FILES]
    assert verdicts.count(True) >= 19 and verdicts.count(False) >= 9


@pytest.mark.parametrize("data", NEWER_SYNTAX, ids=range(len(NEWER_SYNTAX)))
def test_newer_syntax_is_accepted_on_any_host(data: bytes) -> None:
    report = check_source(data, "new.py")
    assert report.errors == [] and not [d for d in report.diagnostics if d.code == "JAX001"]


@pytest.mark.parametrize("host", [(3, 10), (3, 11), (3, 12), (3, 13)])
@pytest.mark.parametrize("data", NEWER_SYNTAX, ids=range(len(NEWER_SYNTAX)))
def test_newer_syntax_written_older_is_accepted_by_this_interpreter(host: tuple[int, int], data: bytes) -> None:
    text = data.decode()
    older = parsing._without_newer_syntax(cst.parse_module(text), text, host)
    assert older.count("\n") == text.count("\n")
    if sys.version_info[:2] >= host:  # this interpreter knows all that `host` knows
        compile(older, "older.py", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)


@pytest.mark.parametrize("where", ["compile", "libcst"])
@pytest.mark.parametrize("error", [MemoryError, RecursionError])
def test_a_parser_running_out_of_resources_is_a_file_error_not_jax001(
        monkeypatch: pytest.MonkeyPatch, where: str, error: type[BaseException]) -> None:
    def exhausted(*args: object, **kwargs: object) -> None:
        raise error()

    if where == "compile":
        monkeypatch.setattr(parsing, "compile", exhausted, raising=False)
    else:
        monkeypatch.setattr(cst, "parse_module", exhausted)
    report = check_source("x = 1\n", "valid.py")
    assert report.diagnostics == []
    assert [(e.path, e.message) for e in report.errors] == [
        ("valid.py", "cannot analyze line 1: file too large to check "
                     f"({'the Python parser' if where == 'compile' else 'LibCST'} ran out of "
                     f"{'memory' if error is MemoryError else 'recursion depth'})")]


@pytest.mark.parametrize(("source", "reason"), [
    ("x = " + "-" * 100_000 + "1\n", "memory"),  # CPython's parser: MemoryError
    ("x = " + "+".join(["1"] * 20_000) + "\n", "recursion depth"),  # RecursionError during ast construction
], ids=["unary", "sum"])
def test_input_the_parser_exhausts_itself_on_is_a_file_error(source: str, reason: str) -> None:
    with pytest.raises((MemoryError, RecursionError)):
        ast.parse(source)
    report = check_source(source, "deep.py")
    assert report.diagnostics == [] and len(report.errors) == 1
    assert f"file too large to check (the Python parser ran out of {reason})" in report.errors[0].message
