"""Parsing an edited buffer again by top-level statement (a language server checks a buffer on every edit,
and an edit leaves most of its top-level statements' text as it was).

The host parser's tree (which :func:`parsing.parse_source` runs first anyway) gives each top-level
statement's last line, so the buffer splits into *chunks*: a statement's text with the comments and blank
lines before it (the first chunk with the module's header; the footer after the last statement). A chunk
whose text was in the last parse of the buffer keeps its node; only new chunks go to LibCST, each after a
`pass` statement so that its leading comments stay its own, as in a whole parse. Each new part must
generate exactly its chunk's text under the module's indent and newline (a kept part did when it was
made), so the module, which generates its parts one after the other, is the buffer's text; when one does
not (another indent or newline style, comments LibCST would attach to the statement before), the buffer
is parsed whole, as with no last parse.

Cost: one host parse (about 0.08x LibCST's parse of the buffer) and LibCST and code generation for the new
chunks only; after a whole parse, one code generation of the module (about 0.3x, at the next parse of the
buffer: a buffer parsed once pays nothing) finds which of its parts generate their chunk's text. What is kept: the chunks of the last parse of each buffer (the caller bounds
how many buffers).
"""

from __future__ import annotations

import ast
import io
from collections.abc import Sequence
from dataclasses import dataclass

import libcst as cst

from jaxcheck.analyzer.parsing import ParseFailure, host_parse, parse_source, too_deep


@dataclass(frozen=True)
class ChunkedParse:
    """A buffer's module and its chunks; once `checked`, the chunks' nodes by chunk text for the next parse
    of the buffer (a whole parse's are found at that next parse: a buffer parsed once pays nothing)."""

    module: cst.Module
    chunks: tuple[str, ...]
    checked: bool
    first: tuple[str, tuple[cst.EmptyLine, ...], cst.BaseStatement] | None = None  # text, header, statement
    statements: dict[str, list[cst.BaseStatement]] | None = None  # the later chunks' nodes, by text, in order
    footer: tuple[str, tuple[cst.EmptyLine, ...]] | None = None  # text, nodes


def parse_reusing(text: str, last: ChunkedParse | None) -> tuple[cst.Module | ParseFailure, ChunkedParse | None]:
    """`text` parsed as :func:`parsing.parse_source` parses it, reusing the nodes of `last` (the last parse
    of the same buffer) for chunks whose text did not change; and what the next parse may reuse."""
    tree = host_parse(text)
    chunks = None
    if isinstance(tree, ast.Module) and text.endswith(("\n", "\r")) and not too_deep(text, tree):
        chunks = _chunks(text, tree)
    if chunks is not None and last is not None:
        assembled = _assembled(chunks, last if last.checked else _verified(last.module, list(last.chunks)))
        if assembled is not None:
            return assembled.module, assembled
    parsed = parse_source(text, tree)
    if isinstance(parsed, ParseFailure) or chunks is None or len(chunks) - 1 != len(parsed.body):
        return parsed, None
    return parsed, ChunkedParse(parsed, tuple(chunks), checked=False)


def _chunks(text: str, tree: ast.Module) -> list[str] | None:
    """The text of each top-level statement with what precedes it, then the footer; None for an empty
    module. Statements sharing a line are one chunk (LibCST makes them one statement line), and the
    comments right after a compound statement up to the last indented one are its own (LibCST puts them
    in its block)."""
    if not tree.body:
        return None
    lines = io.StringIO(text, newline="").readlines()  # split where the host parser counts lines
    ends: list[int] = []
    for statement in tree.body:
        decorators = getattr(statement, "decorator_list", [])
        start = min([statement.lineno, *(decorator.lineno for decorator in decorators)])
        end = statement.end_lineno or statement.lineno
        if hasattr(statement, "body") or isinstance(statement, ast.Match):  # a compound statement
            end = _after_indented_comments(lines, end)
        if ends and start <= ends[-1]:
            ends[-1] = max(ends[-1], end)
        else:
            ends.append(end)
    bounds = [0, *ends, len(lines)]
    return ["".join(lines[begin:end]) for begin, end in zip(bounds, bounds[1:])]


def _after_indented_comments(lines: list[str], end: int) -> int:
    """The last line of the comment and blank lines after line `end` up to the last indented comment
    among them (LibCST's block footer: a comment at column 0 followed by an indented one is in it too)."""
    last = end
    for number in range(end, len(lines)):
        line = lines[number]
        stripped = line.strip()
        if stripped.startswith("#"):
            last = number + 1 if line[:1] in (" ", "\t") else last
        elif stripped:
            break
    return last


def _assembled(chunks: list[str], last: ChunkedParse) -> ChunkedParse | None:
    """The module whose chunks are `chunks`, from `last`'s nodes and new chunks parsed alone, each new part
    checked to generate its chunk's text under the module's settings (indent, newline); None when one
    does not. The module's code is then the chunks' text: it generates its parts one after the other."""
    module = last.module
    header: Sequence[cst.EmptyLine]
    if last.first is not None and last.first[0] == chunks[0]:
        header, first = last.first[1], last.first[2]
    else:
        alone = _parse(chunks[0])
        if alone is None or len(alone.body) != 1 or alone.footer \
                or module.with_changes(header=alone.header, body=alone.body, footer=()).code != chunks[0]:
            return None
        header, first = alone.header, alone.body[0]
    body = [first]
    kept = {chunk: list(nodes) for chunk, nodes in (last.statements or {}).items()}
    for chunk in chunks[1:-1]:
        nodes = kept.get(chunk)
        if nodes:
            body.append(nodes.pop(0))  # each node once: a tree holds no node twice
            continue
        after_pass = _parse("pass" + module.default_newline + chunk)
        if after_pass is None or len(after_pass.body) != 2 or after_pass.footer \
                or module.code_for_node(after_pass.body[1]) != chunk:
            return None
        body.append(after_pass.body[1])
    footer = _footer(module, chunks[-1], last)
    if footer is None:
        return None
    assembled = module.with_changes(header=header, body=body, footer=footer)
    return _verified(assembled, chunks, trusted=True)


def _footer(module: cst.Module, chunk: str, last: ChunkedParse) -> Sequence[cst.EmptyLine] | None:
    """The module footer whose text is `chunk` (None when it is no footer alone)."""
    if not chunk:
        return ()
    if last.footer is not None and last.footer[0] == chunk:
        return last.footer[1]
    after_pass = _parse("pass" + module.default_newline + chunk)
    if after_pass is None or len(after_pass.body) != 1 \
            or module.with_changes(header=(), body=after_pass.body, footer=after_pass.footer).code != \
            module.code_for_node(after_pass.body[0]) + chunk:
        return None
    return after_pass.footer


def _parse(text: str) -> cst.Module | None:
    """LibCST's module of a chunk (None when it does not parse alone)."""
    parsed = parse_source(text)
    return None if isinstance(parsed, ParseFailure) else parsed


def _verified(module: cst.Module, chunks: list[str], trusted: bool = False) -> ChunkedParse:
    """What the next parse of the buffer may reuse from `module`, whose chunks are `chunks`: the parts
    that generate their chunk's text (all of them when `trusted`: each was checked as it was made)."""
    header, body, footer = module.header, module.body, module.footer
    first = None
    if trusted or module.with_changes(body=body[:1], footer=()).code == chunks[0]:
        first = (chunks[0], tuple(header), body[0])
    statements: dict[str, list[cst.BaseStatement]] = {}
    for chunk, node in zip(chunks[1:-1], body[1:]):
        if trusted or module.code_for_node(node) == chunk:
            statements.setdefault(chunk, []).append(node)
    kept_footer = None
    if trusted or module.with_changes(header=(), body=body[-1:]).code == module.code_for_node(body[-1]) + chunks[-1]:
        kept_footer = (chunks[-1], tuple(footer))
    return ChunkedParse(module, tuple(chunks), True, first, statements, kept_footer)
