"""Parsing source into a LibCST module without ever crashing the process.

LibCST's native parser overflows the C stack (a segmentation fault, no exception) on deeply nested
input. Two guards make parsing total:

1. CPython's own parser runs first (about a tenth of LibCST's cost). It rejects the pathological
   inputs CPython cannot compile either (5,000 nested parentheses, 100,000 unary minus signs, a
   20,000-term sum) with a catchable SyntaxError, RecursionError or MemoryError.
2. Everything else runs on a worker thread with a large stack (see :func:`run_with_deep_stack`), so
   inputs CPython accepts but LibCST nests deeply (a 10,000-term ``and`` chain) parse too.
"""

from __future__ import annotations

import ast
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import libcst as cst

DEEP_STACK_BYTES = 512 * 1024 * 1024
DEEP_RECURSION_LIMIT = 100_000
MAX_EXPRESSION_DEPTH = 2500
"""LibCST parses nested binary operations in quadratic time (4,000 terms: about 5 s); CPython 3.11+
rejects deeper ones itself, but 3.10 accepts them. Only files with a very long line are measured."""
LONG_LINE = 2000
CPYTHON_RECURSION_LIMIT = 1000
"""CPython's default limit: the gate rejects exactly what a default interpreter rejects."""

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ParseFailure:
    """Why a source text could not be parsed: a one-line message and the 1-based line/0-based column."""

    message: str
    line: int
    column: int


def parse_source(text: str) -> cst.Module | ParseFailure:
    """Parse `text`; return the module, or a ParseFailure for anything CPython or LibCST rejects."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(CPYTHON_RECURSION_LIMIT)
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        line = exc.lineno or 1
        column = max((exc.offset or 1) - 1, 0)
        return ParseFailure(f"syntax error: {exc.msg}", line, column)
    except (RecursionError, MemoryError) as exc:
        kind = "too deeply nested" if isinstance(exc, RecursionError) else "too large"
        return ParseFailure(f"syntax error: expression {kind} for the Python parser", 1, 0)
    except ValueError as exc:  # e.g. "source code string cannot contain null bytes"
        return ParseFailure(f"syntax error: {exc}", 1, 0)
    finally:
        sys.setrecursionlimit(limit)
    if max(map(len, text.splitlines()), default=0) > LONG_LINE and _depth(tree) > MAX_EXPRESSION_DEPTH:
        return ParseFailure("syntax error: expression too deeply nested to analyze", 1, 0)
    try:
        return cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        return ParseFailure(f"syntax error: {exc.message}", exc.raw_line, exc.raw_column)
    except RecursionError:
        return ParseFailure("syntax error: expression too deeply nested for LibCST", 1, 0)


def _depth(tree: ast.AST) -> int:
    """The nesting depth of `tree` (iteratively: the tree may be deeper than the recursion limit)."""
    deepest = 0
    stack: list[tuple[ast.AST, int]] = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest


def run_with_deep_stack(function: Callable[[], T]) -> T:
    """Run `function` on a thread with a 512 MiB stack and a high recursion limit; re-raise its error.

    The stack is reserved virtually, so only what deep inputs actually use is ever touched.
    """
    result: list[T] = []
    error: list[BaseException] = []

    def target() -> None:
        try:
            result.append(function())
        except BaseException as exc:  # handed to the caller's thread unchanged
            error.append(exc)

    previous_stack = threading.stack_size(DEEP_STACK_BYTES)
    previous_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(previous_limit, DEEP_RECURSION_LIMIT))
    try:
        worker = threading.Thread(target=target, name="jaxcheck-deep-stack")
        worker.start()
        worker.join()
    finally:
        threading.stack_size(previous_stack)
        sys.setrecursionlimit(previous_limit)
    if error:
        raise error[0]
    return result[0]
