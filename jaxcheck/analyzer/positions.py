"""Source positions for a few nodes, computed in one code-generation pass that records only them.

LibCST's `PositionProvider` records a `CodeRange` for every node of the module and splits every token
with a regular expression: on large files it costs about eight times the code generation itself. Rules
report few nodes, so this pass counts lines and columns cheaply and stores ranges only for the nodes
asked for, with the same (syntactic) ranges `PositionProvider` gives. It stops as soon as every node
asked for has its range.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import libcst as cst
from libcst._nodes.internal import CodegenState  # the documented hook PositionProvider itself uses
from libcst.metadata import CodePosition, CodeRange

_NEWLINE = re.compile(r"\r\n?|\n")


class _AllFound(Exception):
    """Every node asked for has its range: the rest of the module need not be generated."""


@dataclass(frozen=False)
class _RecordingState(CodegenState):
    """A code generator that writes nothing and records ranges of `targets` (node ids)."""

    targets: set[int] = field(default_factory=set)
    ranges: dict[int, CodeRange] = field(default_factory=dict)
    remaining: set[int] = field(default_factory=set)
    """The nodes asked for that have no range yet (`targets` also holds the children statements hoist from)."""
    line: int = 1
    column: int = 0
    _starts: list[CodePosition] = field(default_factory=list)

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.add_token(token)

    def add_token(self, value: str) -> None:
        if "\n" not in value and "\r" not in value:
            self.column += len(value)
            return
        segments = _NEWLINE.split(value)
        self.line += len(segments) - 1
        self.column = len(segments[-1])

    def pop_trailing_newline(self) -> None:
        """Nothing is written, so there is nothing to pop (positions before it are unaffected)."""

    def before_codegen(self, node: cst.CSTNode) -> None:
        if id(node) in self.targets:
            self._starts.append(CodePosition(self.line, self.column))

    def after_codegen(self, node: cst.CSTNode) -> None:
        if id(node) in self.targets:
            start = self._starts.pop()
            self.ranges.setdefault(id(node), CodeRange(start, CodePosition(self.line, self.column)))
            self._found(id(node))

    @contextmanager
    def record_syntactic_position(self, node: cst.CSTNode, *, start_node: cst.CSTNode | None = None,
                                  end_node: cst.CSTNode | None = None) -> Iterator[None]:
        if id(node) not in self.targets:
            yield
            return
        # Statements hoist their range from children: record those children too.
        for child in (start_node, end_node):
            if child is not None:
                self.targets.add(id(child))
        start = CodePosition(self.line, self.column)
        try:
            yield
        finally:
            end = CodePosition(self.line, self.column)
            if start_node is not None:
                start = self.ranges[id(start_node)].start
            if end_node is not None:
                end = self.ranges[id(end_node)].end
            self.ranges[id(node)] = CodeRange(start, end)
        self._found(id(node))

    def _found(self, node_id: int) -> None:
        self.remaining.discard(node_id)
        if not self.remaining:
            raise _AllFound


def node_ranges(module: cst.Module, nodes: Iterable[cst.CSTNode]) -> dict[int, CodeRange]:
    """The ranges (1-based lines, 0-based columns) of `nodes` in `module`, keyed by `id(node)`."""
    wanted = {id(node) for node in nodes}
    if not wanted:
        return {}
    state = _RecordingState(
        default_indent=module.default_indent, default_newline=module.default_newline,
        targets=set(wanted), remaining=set(wanted),
    )
    try:
        module._codegen(state)
    except _AllFound:
        pass
    return state.ranges
