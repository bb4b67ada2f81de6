"""The rule base class and the VALID/INVALID example types that double as tests."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import ClassVar

import libcst as cst

from jaxcheck.analyzer.diagnostics import Applicability
from jaxcheck.analyzer.semantics import FunctionTrace, SemanticModel
from jaxcheck.analyzer.semantics.model import TraceNote
from jaxcheck.analyzer.semantics.jax_api import STATIC_ARGNAMES_TRANSFORMS

KEBAB_NAME = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
RULE_CODE = re.compile(r"^JAX\d{3}$")


@dataclass(frozen=True, slots=True)
class Valid:
    """Source that the rule must leave alone (a near miss of an INVALID case)."""

    code: str | bytes


@dataclass(frozen=True, slots=True)
class Invalid:
    """Source the rule must flag, first at `line`/`column` (1-based, as printed by the CLI), then at each
    of `also` and nowhere else. `message` is a substring the first finding's message must contain, when
    given; `fix` is the exact source after applying the fixes of all of this rule's findings, when given."""

    code: str | bytes
    line: int
    column: int
    message: str | None = None
    fix: str | None = None
    also: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True, slots=True)
class NodeFix:
    """A fix as a rule states it: replace the source of each node with the text paired with it.
    The engine turns it into text edits (:class:`jaxcheck.analyzer.diagnostics.Fix`)."""

    title: str
    replacements: tuple[tuple[cst.CSTNode, str], ...]
    applicability: Applicability = "safe"


@dataclass(slots=True)
class Report:
    """A finding as a rule raises it, before positions are computed."""

    node: cst.CSTNode
    code: str
    name: str
    message: str
    fix: NodeFix | None = None
    trace_notes: tuple[TraceNote, ...] = ()
    """Why the code is traced (located by the engine, in this file or another)."""
    related_nodes: tuple[tuple[str, cst.CSTNode], ...] = ()
    """Notes at nodes of this module, located with the finding (`(message, node)`)."""


@dataclass(slots=True)
class RuleContext:
    """What rules see while the walker visits one module. `function` is the key of the innermost
    function or lambda whose body is being visited (None at module level)."""

    path: str
    model: SemanticModel
    function: str | None = None
    reports: list[Report] = field(default_factory=list)
    untraced_branch: bool = False
    """Whether the statement being visited sits in a branch that no trace of `function` runs."""
    concretization_caught: bool = False
    """Whether the code being visited is in the body of a `try` of `function` whose handlers catch the
    error a concretization raises on a tracer (the code has a fallback for traced values)."""


class Rule:
    """Base class of every rule: one class per module in `jaxcheck.rules`.

    Subclasses set `code`, `name` (kebab-case, naming the bad pattern), `summary` (one line),
    a docstring with the sections What it does / Why is this bad? / Example / Use instead / Fix
    safety, and `VALID`/`INVALID` examples. They define `visit_<NodeType>`/`leave_<NodeType>`
    methods, which the walker calls in one batched traversal, and report with :meth:`report`.
    """

    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]
    default_enabled: ClassVar[bool] = True
    explains_trace: ClassVar[bool] = False
    """Whether findings say why the code is traced: :meth:`report` then adds the trace chain as notes."""
    concretizes: ClassVar[bool] = False
    """Whether findings are code that needs a concrete value (JAX raises a `TypeError` on a tracer):
    :meth:`report` then drops those in a `try` whose handlers catch that error."""
    VALID: ClassVar[tuple[Valid, ...]] = ()
    INVALID: ClassVar[tuple[Invalid, ...]] = ()

    def __init__(self, context: RuleContext) -> None:
        self.context = context
        self.model = context.model

    def report(self, node: cst.CSTNode, message: str, fix: NodeFix | None = None,
               related: tuple[tuple[str, cst.CSTNode], ...] = (), function: str | None = None) -> None:
        """Record a finding at `node`, optionally with a fix and notes at other nodes (`related`:
        `(message, node)` pairs). Rules that set `explains_trace` get the trace chain of the function
        being visited (or of `function`) as notes first (`self.model.position(other)` gives the line
        of another node for messages such as "first used on line N")."""
        if self.concretizes and self.context.concretization_caught:
            return  # `try: n = int(x)` / `except TypeError: n = None`: the code has a fallback for tracers
        traced_in = self.context.function if function is None else function
        chain = self.model.trace_notes(traced_in, node) if self.explains_trace else ()
        self.context.reports.append(Report(node, self.code, self.name, message, fix, chain, related))

    @property
    def trace(self) -> FunctionTrace | None:
        """How the code being visited runs traced: the trace of its function (or of the traced function it
        is nested in); None in a branch no trace runs (`if debug:` where every trace passes `debug=False`)."""
        return None if self.context.untraced_branch else self.function_trace

    @property
    def function_trace(self) -> FunctionTrace | None:
        """How the function being visited (or the traced function it is nested in) is traced, whether or
        not the statement being visited runs in that trace (rules about eager code skip traced functions)."""
        return self.model.enclosing_trace(self.context.function)

    def transform_name(self) -> str:
        """A short name of a transform tracing the current function, for messages."""
        return transform_name(self.trace)


def static_hint(model: SemanticModel, node: cst.BaseExpression, function: str | None) -> str:
    """"; if 'n' is a Python configuration value, mark it static ..." when `node` is traced only through
    one parameter of a function a transform is applied to directly; "" otherwise."""
    trace = model.trace_of(function)
    param = model.traced_parameter(node, function)
    if trace is None or not trace.direct or param is None or not trace.transforms & STATIC_ARGNAMES_TRANSFORMS:
        return ""
    return f"; if {param!r} is a Python configuration value, mark it static with `static_argnames=({param!r},)`"


def transform_name(trace: FunctionTrace | None) -> str:
    """The transform to name in a message about `trace`: jit-like ones first."""
    return _preferred(trace.transforms if trace is not None else frozenset())


def keeper_name(trace: FunctionTrace | None) -> str:
    """The transform to name as keeping what `trace`'s body read (see `FunctionTrace.keepers`): a lax body
    made per call in a jitted function is kept by `jax.jit`, not by the lax primitive."""
    if trace is None or not trace.keepers:
        return transform_name(trace)
    return _preferred(trace.keepers)


def _preferred(transforms: frozenset[str]) -> str:
    if not transforms:
        return "jax.jit"
    return min(transforms, key=lambda name: ("jit" not in name and "pmap" not in name, name))
