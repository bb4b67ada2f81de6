"""One batched traversal of a module that calls every enabled rule's visit/leave methods.

The walk skips whitespace and punctuation nodes, tracks the function whose body is being visited
(decorators, defaults and annotations belong to the enclosing scope) and whether the statement being
visited sits in a branch no trace of it runs (`RuleContext.untraced_branch`), and isolates rule failures:
a rule that raises is reported once as an error and dropped for the rest of the file.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import libcst as cst

from jaxcheck.analyzer.diagnostics import FileError
from jaxcheck.analyzer.rule import Rule, RuleContext
from jaxcheck.analyzer.tree import IS_NODE_TYPE, child_fields

Callback = Callable[[cst.CSTNode], object]


class RuleWalker:
    """Runs `rules` over a module in one traversal; failures are collected in `errors`."""

    def __init__(self, rules: Sequence[Rule], context: RuleContext) -> None:
        self.context = context
        self._guarded = context.model.guarded_statements
        self.errors: list[FileError] = []
        self._visitors: dict[type[cst.CSTNode], list[tuple[Rule, Callback]]] = {}
        self._leavers: dict[type[cst.CSTNode], list[tuple[Rule, Callback]]] = {}
        for rule in rules:
            for attribute in dir(type(rule)):
                prefix, _, type_name = attribute.partition("_")
                if prefix not in ("visit", "leave") or not type_name:
                    continue
                node_type = getattr(cst, type_name, None)
                if not (isinstance(node_type, type) and issubclass(node_type, cst.CSTNode)):
                    raise TypeError(f"{type(rule).__name__}.{attribute} names no LibCST node type")
                table = self._visitors if prefix == "visit" else self._leavers
                table.setdefault(node_type, []).append((rule, getattr(rule, attribute)))

    def walk(self, module: cst.Module) -> None:
        """Visit every node of `module`."""
        self._node(module)

    def _node(self, node: cst.CSTNode) -> None:
        if self._guarded and id(node) in self._guarded and not self.context.untraced_branch \
                and not self.context.model.runs_traced(node):
            self.context.untraced_branch = True  # visited again below, as code no trace runs
            try:
                self._node(node)
            finally:
                self.context.untraced_branch = False
            return
        node_type = type(node)
        callbacks = self._visitors.get(node_type)
        if callbacks:
            self._call(callbacks, node)
        if node_type is cst.FunctionDef:
            self._function_def(node)  # type: ignore[arg-type]
        elif (node_type is cst.Try or node_type is cst.TryStar) and not self.context.concretization_caught \
                and self.context.model.catches_concretization(node):  # type: ignore[arg-type]
            self._caught(node)  # type: ignore[arg-type]
        elif node_type is cst.Lambda:
            self._lambda(node)  # type: ignore[arg-type]
        else:
            self._children(node, child_fields(node_type))
        callbacks = self._leavers.get(node_type)
        if callbacks:
            self._call(callbacks, node)

    def _children(self, node: cst.CSTNode, fields: Sequence[str]) -> None:
        for name in fields:
            value = getattr(node, name)
            kind = type(value)
            if kind is tuple or kind is list:
                for child in value:
                    if IS_NODE_TYPE[type(child)]:
                        self._node(child)
            elif IS_NODE_TYPE[kind]:
                self._node(value)

    def _function_def(self, node: cst.FunctionDef) -> None:
        self._children(node, ("decorators", "params", "returns"))
        self._in_function(node, lambda: self._node(node.body))

    def _caught(self, node: cst.Try | cst.TryStar) -> None:
        """Visit a `try` whose handlers catch a concretization's error: its body with that known."""
        self.context.concretization_caught = True
        try:
            self._node(node.body)
        finally:
            self.context.concretization_caught = False
        self._children(node, [name for name in child_fields(type(node)) if name != "body"])

    def _lambda(self, node: cst.Lambda) -> None:
        self._node(node.params)
        self._in_function(node, lambda: self._node(node.body))

    def _in_function(self, node: cst.FunctionDef | cst.Lambda, body: Callable[[], None]) -> None:
        """Visit a nested function's body: one traced on its own has its own traces, whatever branch
        defines it; a closure traced only within its definer's trace shares that branch."""
        outer, untraced, caught = self.context.function, self.context.untraced_branch, self.context.concretization_caught
        self.context.function = self.context.model.function_key(node)
        self.context.concretization_caught = False  # a nested function runs where it is called
        if self.context.model.trace_of(self.context.function) is not None:
            self.context.untraced_branch = False
        try:
            body()
        finally:
            self.context.function, self.context.untraced_branch = outer, untraced
            self.context.concretization_caught = caught

    def _call(self, callbacks: list[tuple[Rule, Callback]], node: cst.CSTNode) -> None:
        for rule, callback in callbacks:
            try:
                callback(node)
            except Exception as exc:  # a broken rule must not stop the others
                self._drop(rule, exc)

    def _drop(self, rule: Rule, exc: Exception) -> None:
        """Report a failed rule once and remove all its callbacks for the rest of the file."""
        detail = " ".join(str(exc).split())[:200]
        self.errors.append(
            FileError(self.context.path, f"rule {rule.code} ({rule.name}) failed: {type(exc).__name__}: {detail}")
        )
        for table in (self._visitors, self._leavers):
            for node_type, entries in table.items():
                table[node_type] = [(r, c) for r, c in entries if r is not rule]
