"""Collectors: the facts the interpreter's events feed, each kept by the one object that owns it.

The interpreter (:class:`.builder.ModelBuilder`) reads a module once. Where something happens that a
fact may depend on, it announces an event to every collector, in traversal order:

- :meth:`Collector.call_entered`: a call is met, before its arguments are read;
- :meth:`Collector.call_read`: its callee and arguments have been read (their values are known);
- :meth:`Collector.name_read`: a name is read as data;
- :meth:`Collector.probed`: an expression is read only for its type, shape or identity;
- :meth:`Collector.bound`: the value of an expression is bound to a target;

and when the module is read, :meth:`Collector.function_facts` adds what a collector knows of each
function to its :class:`FunctionSummary`. A collector reads the interpreter only through
:class:`Interpreting`, and writes only its own state (and the records it is given). A new fact about
the code is a new collector, not another branch in the interpreter. Each event costs a collector
constant work plus what it reads of the event's own nodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import libcst as cst

from jaxcheck.analyzer.semantics.records import ModuleRecords
from jaxcheck.analyzer.semantics.scopes import Scope
from jaxcheck.analyzer.semantics.summary import FunctionSummary
from jaxcheck.analyzer.semantics.values import Value


class Interpreting(Protocol):
    """What a collector may read of the interpreter while it runs."""

    module_name: str
    scope: Scope
    records: ModuleRecords
    functions: dict[str, FunctionSummary]

    @property
    def function_key(self) -> str:
        """The key of the function (or module) whose code is being read."""

    @property
    def in_function(self) -> bool:
        """Whether that code is a function's body (not module-level code)."""

    def is_parameter(self, owner: Scope, name: str) -> bool:
        """Whether `name` is a parameter of the function scope `owner`."""

    def holds_parameter(self, name: str, function_key: str) -> bool:
        """Whether `name` still holds the parameter of that name of function `function_key`."""

    def callable_key(self, target: cst.BaseExpression | None) -> str | None:
        """The key of a function of this module that `target` names, if it names one."""


class Collector:
    """Listens to the interpreter's events; every event is ignored unless a subclass overrides it."""

    def __init__(self, interpreter: Interpreting) -> None:
        self.interpreter = interpreter

    def call_entered(self, node: cst.Call, name: str | None) -> None:
        """`node` calls `name` (None: a callee the model cannot name); its arguments are not read yet."""

    def call_read(self, node: cst.Call, name: str | None, args: Sequence[Value], called: Value) -> None:
        """The callee's value `called` and the arguments' values `args` of `node` are read."""

    def name_read(self, node: cst.Name, owner: Scope) -> None:
        """`node` is read as data; `owner` is the scope that binds it."""

    def probed(self, node: cst.BaseExpression) -> None:
        """`node` is read only for its type, shape or identity (`x.shape`, `x is None`)."""

    def bound(self, value_node: cst.BaseExpression, value: Value) -> None:
        """`value`, the value of `value_node`, is bound to an assignment's targets."""

    def function_facts(self, summary: FunctionSummary) -> FunctionSummary:
        """`summary` with this collector's facts about that function (the module has been read)."""
        return summary
