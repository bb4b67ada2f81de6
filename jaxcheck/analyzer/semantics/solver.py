"""The project-wide fixpoint: which functions are traced, how, and which parameters carry tracers.

Seeds are the trace roots of every summary (decorators, `jax.jit(f)`, lax bodies, Flax methods).
Every call from a traced function runs under its trace, whatever it passes (a helper called with no
tracer still runs while tracing: its prints, global reads and NumPy draws happen once per trace), across
modules through qualified names and re-exports.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Container, Iterable
from dataclasses import dataclass, field, replace
from typing import Literal

from jaxcheck.analyzer.semantics.budget import STEPS
from jaxcheck.analyzer.semantics.jax_api import BATCHING_TRANSFORMS, CUSTOM_DERIVATIVES, DIFFERENTIATING
from jaxcheck.analyzer.semantics.links import linked_names
from jaxcheck.analyzer.semantics.summary import CallEdge, FunctionSummary, ModuleSummary, TraceRoot, TraceSpec
from jaxcheck.analyzer.semantics.values import (
    CallDep, Dep, Deps, OpaqueDep, ParamDep, StagedDep, canonical_text, nested_deps,
)

NOTES_MARK = "# notes"
"""Separates the part of a solve signature that only the notes of findings depend on (the trace chains)."""

ReadKind = Literal["lookup", "draws", "staged", "leaves", "reaches", "callers", "elsewhere", "returns", "x64"]
"""What a lint asked the solve about a name (see :class:`Read`)."""


@dataclass(frozen=True, slots=True, order=True)
class Read:
    """One question a lint asked the project solve beyond its own functions' facts; a solve that answers
    every read of a lint alike lints the module alike (see :meth:`Solution.lint_signature`).

    - `lookup`: the project function `name` refers to (its key, and for another module's, what the lint
      reads of it: see `Solution._read_facts`);
    - `draws`: only whether the function `name` refers to draws from a key parameter;
    - `staged`: only whether a staging transform is applied to it directly;
    - `leaves`: only the arrays function `name` (a key: no re-export is followed) returns;
    - `reaches`: which of the module's functions calling `name` may run (`Solution.reaches`);
    - `callers`: which functions call function `name`;
    - `elsewhere`: whether code of another module may run function `name`;
    - `returns`: whether function `name` of another module returns a tracer from its arguments;
    - `x64`: whether some module of the project may turn on 64-bit mode (`name` is empty)."""

    kind: ReadKind
    name: str = ""
MAX_REEXPORT_HOPS = 8
MAX_ROUNDS = 100
"""A bound on fixpoint rounds: guards (`ParamDep.unless`) make the solve non-monotone in principle. A
round visits callers before callees (:func:`callers_first`), so a chain of calls of any length is
carried in one round; another round is needed only for facts that flow against the call order (a
callee's return value read by its caller, a cycle), so real projects settle in a few."""


@dataclass(frozen=True, slots=True)
class FunctionTrace:
    """How one function is traced: the transforms it runs under (display names), whether any of them
    stages it (abstract tracers), which parameters receive tracers, and whether a transform is
    applied to it directly (a root) rather than reached through calls, and whether its traced program
    is cached and reused (jit-like), which freezes what the Python body reads and does."""

    transforms: frozenset[str]
    staged: bool
    traced_params: frozenset[str]
    direct: bool = False
    keepers: frozenset[str] = frozenset()
    """The caching transforms whose reused program holds this function's trace (its own, a caller's, or
    for a lax body made per call, those of the function making it): they keep what the body read."""

    @property
    def cached(self) -> bool:
        """Whether the traced program is reused on later calls, freezing what the Python body reads and does."""
        return bool(self.keepers)


@dataclass(frozen=True, slots=True)
class Witness:
    """How a function (or one of its parameters) first became traced, for notes that explain a finding:
    a `root`, or an `edge` from an already traced caller, found in module `module` (file `path`).
    `through` is the function in between, when there is one: for a root, the function that applies the
    transform to its parameter (`fit(loss, w)` with `jax.grad(loss_fn)` in `fit`; `site` is that call);
    for an edge, the function that passed the callable its caller calls through a parameter (`site` is
    the passing call). Notes are located at `site`, else at the root's or the edge's own node."""

    path: str
    module: str
    root: TraceRoot | None = None
    edge: CallEdge | None = None
    through: str | None = None
    site: CallEdge | None = None


@dataclass(frozen=True, slots=True)
class ChainLink:
    """One step of a trace chain: `function` became traced by `witness`; for an edge, `traced` are the
    parameters of `function` that the call gives tracers."""

    function: str
    witness: Witness
    traced: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Context:
    """One way a function is traced (a root, or a call from traced code): the parameters that may
    receive tracers, those that certainly do (an array passed where the call is visible), those
    that certainly receive a value other than None (which includes every certain tracer), whether
    it stages every array operation (`omnistaged`), and the parameters certainly false (`falsy`)."""

    traced: frozenset[str]
    tracers: frozenset[str] = frozenset()
    present: frozenset[str] = frozenset()
    omnistaged: bool = False
    falsy: frozenset[str] = frozenset()

    def reaches(self, dep: ParamDep) -> bool:
        """Whether `dep` is a tracer in this context: its parameter is traced, and the guards of the
        branch it lives in hold here."""
        return dep.name in self.traced and self.admits(dep)

    def admits(self, dep: ParamDep | StagedDep | CallEdge) -> bool:
        """Whether the guards of the branch `dep` lives in hold here: no certain tracer where it needs a
        concrete value, no certain value where it needs None, no certain false value where it needs a
        true one."""
        return not dep.unless & self.tracers and not dep.absent & self.present and not dep.truthy & self.falsy


@dataclass(frozen=True, slots=True)
class _Frame:
    """A call being evaluated: which of `callee`'s parameters receive tracers, and whether the
    caller stages every operation (array operations in the callee then produce tracers)."""

    callee: str
    context: Context
    staged: bool


@dataclass(frozen=True, slots=True)
class SignatureParts:
    """A solve signature (see :meth:`Solution.signature_parts`) in pieces, each about one function, so
    that a change to some functions' solved facts tells which pieces it may alter: per function of the
    module that has any, its facts and its trace chains; per function (of this module or another) that
    links the module to others, those lines (what the module reads of a function of another module it
    names and which of its own functions that one may run; which functions of other modules call one of
    its own); and whether 64-bit mode matters to it."""

    functions: dict[str, tuple[str, str]]
    """Per function key, its facts and its chains (only functions that have any)."""
    links: dict[str, str]
    """Per function key, the lines linking the module to other modules about it (only those that have any)."""
    x64: bool

    def text(self) -> str:
        """The signature: every function's facts in key order, the links in key order, then the chains."""
        facts = [text for text, _ in self.functions.values() if text]
        chains = [text for _, text in self.functions.values() if text]
        links = [self.links[key] for key in sorted(self.links)]
        return "\n".join([*facts, *links, *(["x64"] if self.x64 else [])]) + f"\n{NOTES_MARK}\n" + "\n".join(chains)


@dataclass(slots=True)
class FunctionState:
    """What the solve knows of one function: one record per function (:attr:`Solution.states`).

    The function is traced when :attr:`transforms` is not empty. Every field only grows during a solve
    (a custom derivative's :attr:`differentiated` is emptied once, before propagation), so the solve's
    progress is the growth of :meth:`progress`."""

    transforms: set[str] = field(default_factory=set)
    """The transforms it runs under (display names)."""
    staged: bool = False
    """Some transform it runs under stages it (abstract tracers)."""
    omnistaged: bool = False
    """It runs under a transform that stages every array operation (jit, pmap, lax bodies), so even
    operations on constants give tracers; a batching transform alone (`vmap`) does not."""
    root: bool = False
    """A transform is applied to it directly."""
    traced_params: set[str] = field(default_factory=set)
    """The parameters that receive tracers: the union of :attr:`contexts`' traced parameters."""
    contexts: dict[object, Context] = field(default_factory=dict)
    """The parameters each way of tracing it (a root's spec, a call edge) makes tracers. Guarded values
    (`ParamDep.unless`) ask about one context at a time."""
    holders: set[str] = field(default_factory=set)
    """The parameters that hold a tracer without being provably abstract: a differentiating transform's
    (`grad` keeps values concrete) or an opaque call's result passed on. Storing them outside leaks a
    tracer; branching on them is fine."""
    differentiated: set[str] = field(default_factory=set)
    """The parameters certainly given a differentiating transform's tracer (`jax.grad(f)`'s differentiated
    argument, or a value computed from one passed on): concrete enough for `if` and `int()`, yet
    `float()`, `.tolist()` and NumPy raise on it. Not a `custom_jvp`/`custom_vjp` function nor its rules:
    they run on primal values."""
    jax_array_params: set[str] = field(default_factory=set)
    """The parameters some visible call passes a JAX array (module-level calls too): item assignment to
    them raises there, traced or not."""
    keepers: set[str] = field(default_factory=set)
    """The caching transforms whose reused program holds its trace (see :attr:`FunctionTrace.keepers`)."""
    callees: set[str] = field(default_factory=set)
    """The project functions it calls directly (resolved keys)."""
    static_params: frozenset[str] = frozenset()
    """The parameters a caching transform applied by its decorator takes as static: every call by its
    name goes through that transform, so no call makes them tracers."""
    witness: Witness | None = None
    """How it first became traced (see :attr:`Solution.states`)."""
    param_witnesses: dict[str, Witness] = field(default_factory=dict)
    """Per parameter, how it first came to receive tracers."""

    def progress(self) -> tuple[int, bool, bool, int, int, int, int]:
        """Sizes that grow with every new fact of the propagated fields (contexts are compared apart)."""
        return (len(self.transforms), self.staged, self.omnistaged, len(self.traced_params), len(self.holders),
                len(self.differentiated), len(self.keepers))


_UNKNOWN_STATE = FunctionState()
"""The state of a function the solve knows nothing of; read, never written."""


@dataclass
class Solution:
    """The solved tracing state of a set of modules; answers whether dependency sets are traced."""

    functions: dict[str, FunctionSummary]
    states: dict[str, FunctionState] = field(default_factory=dict)
    """Per function, what the solve knows of it. Witnesses: roots are applied before any call propagates,
    and each round only extends functions traced in earlier rounds, so following witnesses back gives a
    shortest chain to a root."""
    resolve: _Resolver | None = None
    repeated: set[str] = field(default_factory=set)
    """Functions evidently run many times: called inside a loop (module level too), or called by a function
    that is. A test, `main()` or a constructor called once is not."""
    defaults_reused: dict[str, set[str]] = field(default_factory=dict)
    """Per function, the parameters with a Python default that a call run many times leaves to it (a call
    in a loop, or in a function of :attr:`repeated`): every such call gets the very same default object."""
    rerun: set[str] = field(default_factory=set)
    """Functions evidently run more than once: those of :attr:`repeated`, those called at two call sites one
    run of their caller reaches (`a = f(x); b = f(y)`), and the functions any of them calls."""
    digests: dict[str, str] = field(default_factory=dict)
    """The content digest of each module's file, by path (see :attr:`ModuleSummary.digest`)."""
    x64_enabled: bool = False
    """Some module of the solve may turn on 64-bit mode (see :attr:`ModuleSummary.enables_x64`)."""
    converged: bool = True
    """False when the fixpoint stopped at MAX_ROUNDS with facts still changing."""
    _cache: dict[tuple[Dep, _Frame | None], bool] = field(default_factory=dict)
    _holds: dict[Dep, bool] = field(default_factory=dict)
    _returns: dict[tuple[str, Context, bool, int | None], bool] = field(default_factory=dict)
    _in_progress: set[tuple[str, Context, bool, int | None]] = field(default_factory=set)
    _cuts: int = 0
    """How many times an evaluation met a call already being evaluated (a cycle, taken as not traced):
    a result computed past such a cut depends on the path to it, so it is not memoized (the answers then
    do not depend on the order sets are walked in)."""
    _traces: dict[str, FunctionTrace | None] = field(default_factory=dict)
    _return_digest_of: dict[str, str] = field(default_factory=dict)
    _chain_digests: dict[tuple[str, str | None], str] = field(default_factory=dict)
    _leaf_digest_of: dict[str, str] = field(default_factory=dict)
    _callers_of: dict[str, set[str]] | None = None

    def state_of(self, key: str) -> FunctionState:
        """What the solve knows of function `key` (an empty record for a function it knows nothing of)."""
        return self.states.get(key, _UNKNOWN_STATE)

    def _state(self, key: str) -> FunctionState:
        """Function `key`'s record, made on its first fact."""
        state = self.states.get(key)
        if state is None:
            state = self.states[key] = FunctionState()
        return state

    def callee_graph(self) -> dict[str, set[str]]:
        """The project functions each function calls directly, for the functions that call any."""
        return {key: state.callees for key, state in self.states.items() if state.callees}

    def forget_evaluations(self) -> None:
        """Drop memoized evaluations (the solve changed the state they depend on)."""
        self._cache.clear()
        self._returns.clear()
        self._holds.clear()

    def trace_of(self, key: str) -> FunctionTrace | None:
        """How function `key` is traced, or None when it is not traced at all (memoized: call it only
        once the solve is complete)."""
        if key in self._traces:
            return self._traces[key]
        trace = self._trace_of(key)
        self._traces[key] = trace
        return trace

    def _trace_of(self, key: str) -> FunctionTrace | None:
        state = self.state_of(key)
        if not state.transforms:
            return None
        return FunctionTrace(frozenset(state.transforms), state.staged, frozenset(state.traced_params), state.root,
                             frozenset(state.keepers))

    def trace_chain(self, key: str, param: str | None = None) -> list[ChainLink]:
        """Why function `key` is traced: the chain from a root to `key`, root first, following each
        function's witness (for `param`, the witness that made that parameter a tracer, then the caller's
        parameter the tracer came from); a lax body made per call and cached by the trace of the
        function making it continues with that function's chain. Empty when `key` is not traced;
        cycle-safe."""
        links: list[ChainLink] = []
        seen: set[str] = set()
        step: tuple[str, str | None] | None = (key, param)
        while step is not None and step[0] not in seen:
            seen.add(step[0])
            found = self._chain_step(*step)
            if found is None:
                break
            link, step = found
            links.append(link)
        links.reverse()
        return links

    def _chain_step(self, current: str, param: str | None) -> tuple[ChainLink, tuple[str, str | None] | None] | None:
        """One link of :meth:`trace_chain`: how `current` (its `param`) became traced, and the function
        (and parameter) the chain goes on with, if any; None when `current` is not traced."""
        state = self.state_of(current)
        witness = state.param_witnesses.get(param) if param is not None else None
        witness = witness or state.witness
        if witness is None:
            return None
        edge = witness.edge
        if witness.root is not None or edge is None:
            maker = witness.root.spec.caches_with if witness.root is not None else None
            if maker is None or not state.keepers or not self.state_of(maker).keepers:
                return ChainLink(current, witness), None
            return ChainLink(current, witness), (maker, None)  # a body made per call is cached by its maker's trace
        context = state.contexts.get(edge)
        link = ChainLink(current, witness, context.traced if context is not None else frozenset())
        return link, (edge.caller, self._caller_param(edge, current, param))

    def _chain_digest(self, key: str, param: str | None) -> str:
        """A digest of what :meth:`trace_chain` gives for `key` and `param` (see :meth:`_chain_texts`).
        Memoised per (function, parameter) along chains that meet no cycle, so the digests of every
        function of a chain of n calls cost O(n), not O(n²)."""
        path: list[tuple[tuple[str, str | None], ChainLink]] = []
        seen: set[str] = set()
        step: tuple[str, str | None] | None = (key, param)
        known = ""
        while step is not None:
            if step in self._chain_digests:
                known = self._chain_digests[step]
                break
            if step[0] in seen:  # a cycle: where the chain stops depends on where it began
                return _digest(repr([_link_text(link) for link in self.trace_chain(key, param)]))
            seen.add(step[0])
            found = self._chain_step(*step)
            if found is None:
                break
            path.append((step, found[0]))
            step = found[1]
        for start, link in reversed(path):
            known = self._chain_digests[start] = _digest(repr((_link_text(link), known)))
        return known

    def _caller_param(self, edge: CallEdge, callee: str, param: str | None) -> str | None:
        """The traced parameter of `edge.caller` that the call passes to `callee`'s `param`, if any."""
        function = self.functions.get(callee)
        if param is None or function is None:
            return None
        deps = edge.arguments.bind(function).get(param, frozenset())
        traced = self.state_of(edge.caller).traced_params
        names = [d.name for d in deps if isinstance(d, ParamDep) and d.function == edge.caller and d.name in traced]
        return min(names) if names else None

    def function_named(self, target: str) -> FunctionSummary | None:
        """The project function a qualified name (or re-export of one) refers to, if any."""
        key = self.resolve(target) if self.resolve is not None else target
        return self.functions.get(key) if key is not None else None

    def reaches(self, callee: str, function: str) -> bool:
        """Whether calling `callee` (a function key or qualified name) may run `function`: it is
        `function`, or calls it directly or through other project functions."""
        return function in self._reached(callee)

    def signature_parts(self, summary: ModuleSummary) -> SignatureParts:
        """Everything a lint of `summary`'s module may read from this solve, as text in pieces: how its
        functions are traced, which of them run repeatedly, receive JAX arrays or are called from other
        modules, and the trace chains its notes follow (per function); what the lint reads of the other
        modules' functions it names (their parameters, those that only probe or draw from their
        argument, the arrays they return, whether a transform is applied to them, what the ones it passes
        values to return: see :meth:`_return_facts`) and which of its own
        functions calling them may run. Two solves with equal parts lint the module identically, notes
        included (given the same contents of the files the notes cite); `SignatureParts.text` is the
        whole signature."""
        own = summary.functions
        callers = self._callers()
        links: dict[str, list[str]] = {}
        for key, line in (*self._named_function_facts(summary), *self._reached_from_elsewhere(summary)):
            links.setdefault(key, []).append(line)
        for key in self._called_elsewhere(summary):
            links.setdefault(key, []).append(self._return_facts(key))
        for key in sorted(own):
            if elsewhere := {caller for caller in callers.get(key, ()) if caller not in own}:
                links[key] = [repr((key, "called from", sorted(elsewhere)))]
        return SignatureParts(self._function_parts(summary), {key: "\n".join(lines) for key, lines in links.items()},
                              summary.wide_dtypes and self.x64_enabled)

    def _function_parts(self, summary: ModuleSummary) -> dict[str, tuple[str, str]]:
        """Per function of `summary` that has any, its facts and its chains (see :meth:`signature_parts`)."""
        own = summary.functions
        functions: dict[str, tuple[str, str]] = {}
        for key in sorted(own):
            facts, chains = self._function_facts(key), self._chain_texts(key)
            if facts or chains:
                functions[key] = ("\n".join(facts), "\n".join(chains))
        return functions

    def lint_signature(self, summary: ModuleSummary, reads: Iterable[Read], parts: SignatureParts | None = None) -> str:
        """The signature (see :meth:`signature_parts`) narrowed to what one lint of `summary`'s module
        asked beyond its own functions' facts (`reads`: see `SemanticModel.reads`): a lint is
        deterministic, so a solve that answers all of them alike lints the module alike. `parts` are
        this solve's :meth:`signature_parts` of `summary`, when known."""
        functions = parts.functions if parts is not None else self._function_parts(summary)
        answers = []
        for read in sorted(set(reads)):
            answers.append(repr((read.kind, read.name, self._answer(read, summary))))
        facts = [text for text, _ in functions.values() if text]
        chains = [text for _, text in functions.values() if text]
        return "\n".join([*facts, *answers]) + f"\n{NOTES_MARK}\n" + "\n".join(chains)

    def _called_elsewhere(self, summary: ModuleSummary) -> list[str]:
        """The functions of other modules that `summary`'s calls pass values to: whether what such a
        call returns is traced depends on what they return (see :meth:`_return_facts`)."""
        own = summary.functions
        keys = {key for edge in summary.edges if any(edge.arguments.all_deps())
                if (key := self._key_of(edge.callee)) is not None and key not in own}
        return sorted(keys)

    def runs_from_elsewhere(self, key: str, own: Container[str]) -> bool:
        """Whether code outside `own` (a module's functions and the key of its module-level code) may
        run function `key`: a function or the module-level code of another module calls it, directly or
        through other functions."""
        callers = self._callers()
        seen, pending = {key}, [key]
        while pending:
            for caller in callers.get(pending.pop(), ()):
                if caller not in own:
                    return True
                if caller not in seen:
                    seen.add(caller)
                    pending.append(caller)
        return False

    def _reached(self, callee: str) -> set[str]:
        """Every function calling `callee` may run (see :meth:`reaches`)."""
        start = self._key_of(callee)
        if start is None:
            return set()
        reached, pending = {start}, [start]
        while pending:
            for next_key in self.state_of(pending.pop()).callees:
                if next_key not in reached:
                    reached.add(next_key)
                    pending.append(next_key)
        return reached

    def _answer(self, read: Read, summary: ModuleSummary) -> object:
        """The solve's answer to one of a lint's reads (see :class:`Read`)."""
        own, name = summary.functions, read.name
        if read.kind == "x64":
            return self.x64_enabled
        if read.kind == "callers":
            return sorted(self._callers().get(name, ()))
        if read.kind == "elsewhere":
            return self.runs_from_elsewhere(name, {*own, summary.module})
        if read.kind == "returns":
            found = self._key_of(name)
            return self._return_facts(found) if found is not None and found not in own else None
        if read.kind == "reaches":
            return sorted(self._reached(name) & own.keys())
        return self._lookup_answer(read, own)

    def _lookup_answer(self, read: Read, own: Container[str]) -> object:
        """What a lint reads of the project function a lookup finds: the facet it asked (`draws`,
        `staged`, `leaves`); for a plain lookup, nothing more for one of its own module (its summary and
        facts are in the signature already), and for another's its key and :meth:`_read_facts`."""
        function = self.functions.get(read.name) if read.kind == "leaves" else self.function_named(read.name)
        if read.kind == "draws":  # a function found without draws reads like one not found
            return function is not None and bool(function.draws)
        if read.kind == "staged":
            return function is not None and self._staged_root(function.key)
        if read.kind == "leaves":
            return sorted(map(repr, function.array_leaves)) if function is not None else []
        if function is None or function.key in own:
            return None if function is None else function.key
        return (function.key, *self._read_facts(function))

    def _read_facts(self, function: FunctionSummary) -> tuple[object, ...]:
        """What a lint reads of another module's function it finds: the parameters arguments bind to
        (only when some parameter probes or draws: no other read binds an argument), those parameters
        (with the data folded into the probed ones),
        its array leaves, and whether a staging transform is applied to it directly."""
        probes = function.inert_params or function.draws
        binding = (function.positional, function.keyword_only, function.var_positional, function.var_keyword)
        return (binding if probes else (), sorted(function.inert_params), function.key_folds, sorted(function.draws),
                sorted(map(repr, function.array_leaves)), self._staged_root(function.key))

    def _return_facts(self, key: str) -> str:
        """What deciding whether a call of function `key` returns a tracer reads (see `_call_traced`):
        the signatures and return values of `key` and of the project functions its return value calls,
        transitively, and how the other functions whose parameters or operations it depends on are
        traced, as a digest. Computed once per solve for every function (see :meth:`_return_digests`)."""
        return self._return_digests()[key]

    def _return_digests(self) -> dict[str, str]:
        """Per function, the digest :meth:`_return_facts` gives: over the graph of the calls return values
        make, the digest of a function's strongly connected component (the facts of its members, and the
        digests of the components they call), components taken callees first. Linear in the return
        values' dependencies, however long the chains of helpers returning each other's results."""
        if self._return_digest_of:
            return self._return_digest_of
        calls: dict[str, set[str]] = {}
        lines: dict[str, list[str]] = {}
        for function in self.functions.values():
            own = [canonical_text((function.key, function.positional, function.keyword_only, function.var_positional,
                                   function.var_keyword, function.falsy_defaults, function.returns,
                                   function.return_elements))]
            called: set[str] = set()
            for deps in (function.returns, *(function.return_elements or ())):
                for dep in nested_deps(deps):
                    if isinstance(dep, CallDep):
                        callee = self._key_of(dep.callee)
                        if callee is not None:
                            called.add(callee)
                    elif isinstance(dep, (ParamDep, StagedDep)) and dep.function != function.key:
                        own += self._function_facts(dep.function)
            calls[function.key] = called
            lines[function.key] = own
        self._return_digest_of = component_digests(calls, lines)
        return self._return_digest_of

    def _staged_root(self, key: str) -> bool:
        """Whether a staging transform is applied to function `key` directly."""
        trace = self.trace_of(key)
        return trace is not None and trace.direct and trace.staged

    def _function_facts(self, key: str) -> list[str]:
        """How function `key` is traced, whether it runs repeatedly and which of its parameters receive
        JAX arrays, as lines of a signature."""
        parts: list[str] = []
        trace = self.trace_of(key)
        if trace is not None:
            state = self.state_of(key)
            facts = (sorted(trace.transforms), trace.staged, state.omnistaged, sorted(trace.traced_params),
                     sorted(state.holders), sorted(state.differentiated), trace.direct,
                     sorted(trace.keepers),
                     sorted(self.applied_transforms(key)))
            parts.append(repr((key, *facts, self._distinct_contexts(key))))
        if key in self.repeated:
            parts.append(repr((key, "repeated")))
        elif key in self.rerun:
            parts.append(repr((key, "rerun")))
        if key in self.defaults_reused:
            parts.append(repr((key, "defaults reused", sorted(self.defaults_reused[key]))))
        if self.state_of(key).jax_array_params:
            parts.append(repr((key, sorted(self.state_of(key).jax_array_params))))
        return parts

    def _named_function_facts(self, summary: ModuleSummary) -> list[tuple[str, str]]:
        """What a lint reads of the functions of other modules that `summary` names (and of those their
        array leaves come from, as the digest :meth:`_leaf_digests` gives): that they exist, which
        parameters only probe or draw from their argument (with the parameters arguments bind to, when
        any do), the arrays they return, and whether a staging transform is applied to them directly: a
        line per function key named."""
        own = summary.functions
        named = {key for name in linked_names(summary) if (key := self._key_of(name)) is not None and key not in own}
        digests = self._leaf_digests()
        lines = []
        for key in sorted(named):
            facts = self._read_facts(self.functions[key])
            beyond = sorted({digests[leaf.callee] for leaf in self.functions[key].array_leaves
                             if leaf.callee is not None and leaf.callee in self.functions})
            lines.append((key, repr((key, *facts, *beyond)) if any(facts) or beyond else key))
        return lines

    def _leaf_digests(self) -> dict[str, str]:
        """Per function, a digest of what :meth:`_read_facts` gives of it and of every function its array
        leaves come from, transitively (by strongly connected components, callees first: linear however
        long the chains of helpers returning each other's arrays). Computed once per solve."""
        if self._leaf_digest_of:
            return self._leaf_digest_of
        leaves = {key: {leaf.callee for leaf in function.array_leaves
                        if leaf.callee is not None and leaf.callee in self.functions}
                  for key, function in self.functions.items()}
        facts = {key: [repr((key, *self._read_facts(function)))] for key, function in self.functions.items()}
        self._leaf_digest_of = component_digests(leaves, facts)
        return self._leaf_digest_of

    def _reached_from_elsewhere(self, summary: ModuleSummary) -> list[tuple[str, str]]:
        """For each function of another module that `summary`'s calls name, the functions of `summary`
        calling it may run (see :meth:`reaches`): a line per such function key."""
        own = summary.functions
        outside = {key for edge in summary.edges if (key := self._key_of(edge.callee)) is not None and key not in own}
        if not outside:
            return []
        callers = self._callers()
        ancestors = set(own)  # every function from which one of `own` can be reached
        pending = list(own)
        while pending:
            for caller in callers.get(pending.pop(), ()):
                if caller not in ancestors:
                    ancestors.add(caller)
                    pending.append(caller)
        lines = []
        for start in sorted(outside & ancestors):
            reached, pending = {start}, [start]
            while pending:
                for callee in self.state_of(pending.pop()).callees:
                    if callee in ancestors and callee not in reached:
                        reached.add(callee)
                        pending.append(callee)
            lines.append((start, repr((start, "reaches", sorted(reached & own.keys())))))
        return lines

    def _key_of(self, name: str) -> str | None:
        """The function key `name` resolves to, if any."""
        return self.resolve(name) if self.resolve is not None else name if name in self.functions else None

    def _callers(self) -> dict[str, set[str]]:
        """Per project function, the functions that call it directly (built once per solve)."""
        if self._callers_of is None:
            self._callers_of = {}
            for caller, state in self.states.items():
                for callee in state.callees:
                    self._callers_of.setdefault(callee, set()).add(caller)
        return self._callers_of

    def callers_of(self, key: str) -> set[str]:
        """The functions that call function `key` directly."""
        return self._callers().get(key, set())

    def _chain_texts(self, key: str) -> list[str]:
        """What the notes on findings in function `key` say and where they point, when it is traced,
        whole and per traced parameter: each link's function, file, transform or caller, and traced
        parameters. (Where a note lands in another file depends on that file's contents too: a lint
        records the digests of the files its notes cite, see `FileOutcome.cited`.)"""
        if not self.state_of(key).transforms:
            return []
        return [repr((key, param, self._chain_digest(key, param)))
                for param in (None, *sorted(self.state_of(key).traced_params))]

    def applied_transforms(self, key: str) -> frozenset[str]:
        """The transforms applied to function `key` itself (its roots), not those it is called under."""
        return frozenset(spec.transform for spec in self.state_of(key).contexts if isinstance(spec, TraceSpec))

    def certain_tracer(self, dep: ParamDep) -> bool:
        """Whether parameter `dep` certainly holds a tracer (an array, not a container) in some way its
        function is traced that reaches `dep`."""
        return any(context.reaches(dep) and dep.name in context.tracers
                   for context in self.state_of(dep.function).contexts.values())

    def _distinct_contexts(self, key: str) -> list[tuple[list[str], list[str], list[str], bool, list[str]]]:
        distinct = set(self.state_of(key).contexts.values())
        return sorted((sorted(context.traced), sorted(context.tracers), sorted(context.present), context.omnistaged,
                       sorted(context.falsy)) for context in distinct)

    def runs_traced(self, branch: Deps) -> bool:
        """Whether code in a branch with these guards (`StagedDep`s: see `ModuleRecords.branch_guards`)
        runs in some way its function is traced (also when the function has no known way)."""
        return any(self.admitted(dep) for dep in branch if isinstance(dep, StagedDep))

    def admitted(self, guarded: StagedDep | CallEdge) -> bool:
        """Whether some way `guarded`'s function is traced admits its guards (True when none is known)."""
        function = guarded.function if isinstance(guarded, StagedDep) else guarded.caller
        contexts = self.state_of(function).contexts
        return not contexts or any(context.admits(guarded) for context in contexts.values())

    def is_traced(self, deps: Deps) -> bool:
        """True when a value with these dependencies is an abstract tracer on some traced path."""
        return any(self._dep_traced(dep, None) for dep in deps)

    def is_differentiated(self, deps: Deps) -> bool:
        """True when a value with these dependencies is computed from a parameter given a differentiating
        transform's tracer (not through an opaque call: what that returns is unknown)."""
        return any(isinstance(dep, ParamDep) and dep.name in self.state_of(dep.function).differentiated
                   and (not dep.guarded or any(c.admits(dep) for c in self.state_of(dep.function).contexts.values()))
                   for dep in deps)

    def holds_tracer(self, deps: Deps) -> bool:
        """True when a value with these dependencies holds a tracer on some traced path (storing it
        outside leaks): it is traced, flows from a parameter that holds one (`holders`), is the result of
        an opaque call given such a value, or is returned by a project function from such an argument."""
        return any(self._dep_holds(dep) for dep in deps)

    def _dep_holds(self, dep: Dep) -> bool:
        """Memoized like `_dep_traced`: nested helpers share their argument values."""
        known = self._holds.get(dep)
        if known is None:
            cuts = self._cuts
            known = self._evaluate_holds(dep)
            if self._cuts == cuts:
                self._holds[dep] = known
        return known

    def _evaluate_holds(self, dep: Dep) -> bool:
        if self._dep_traced(dep, None):
            return True
        if isinstance(dep, OpaqueDep):
            return self.holds_tracer(dep.inputs)
        if isinstance(dep, ParamDep):
            state = self.state_of(dep.function)
            return dep.name in state.holders and (
                not dep.guarded or any(context.admits(dep) for context in state.contexts.values()))
        if isinstance(dep, CallDep):
            key = self._key_of(dep.callee)
            callee = self.functions.get(key) if key is not None else None
            if callee is None:
                return False
            returned = {d.name for d in _returned(callee, dep) if isinstance(d, ParamDep) and d.function == callee.key}
            return any(self.holds_tracer(deps) for name, deps in dep.arguments.bind(callee).items() if name in returned)
        return False

    def _deps_traced(self, deps: Deps, frame: _Frame | None) -> bool:
        return any(self._dep_traced(dep, frame) for dep in deps)

    def _dep_traced(self, dep: Dep, frame: _Frame | None) -> bool:
        """Memoized per (dependency, frame): a DAG of nested calls is evaluated once per node and frame."""
        memo = (dep, frame)
        cached = self._cache.get(memo)
        if cached is not None:
            return cached
        cuts = self._cuts
        result = self._evaluate(dep, frame)
        if self._cuts == cuts:
            self._cache[memo] = result
        return result

    def _evaluate(self, dep: Dep, frame: _Frame | None) -> bool:
        STEPS.spend()
        if isinstance(dep, ParamDep):
            if frame is not None and dep.function == frame.callee:
                return frame.context.reaches(dep)
            if not dep.guarded:
                return dep.name in self.state_of(dep.function).traced_params
            return any(context.reaches(dep) for context in self.state_of(dep.function).contexts.values())
        if isinstance(dep, StagedDep):
            if frame is not None and dep.function == frame.callee:
                return frame.staged and frame.context.admits(dep)
            state = self.state_of(dep.function)
            if not dep.guarded or not state.omnistaged:
                return state.omnistaged
            return any(context.omnistaged and context.admits(dep) for context in state.contexts.values())
        if isinstance(dep, OpaqueDep):
            return False  # what an opaque call returns is unknown: maybe a Python bool or a shape
        return self._call_traced(dep, frame)

    def _call_traced(self, dep: CallDep, frame: _Frame | None) -> bool:
        """Whether a call's result is traced: the callee's return value evaluated with the parameters
        that receive tracers from this call. Memoized on (callee, traced parameters, staged), so
        mutually recursive helpers cost one evaluation each; a cycle counts as not traced."""
        key = self._key_of(dep.callee)
        callee = self.functions.get(key) if key is not None else None
        if callee is None or not callee.returns:
            return False
        traced = frozenset(
            name for name, deps in dep.arguments.bind(callee).items() if self._deps_traced(deps, frame)
        )
        tracers = traced & dep.arguments.arrays(callee)
        context = Context(traced, tracers, tracers | dep.arguments.present(callee), falsy=dep.arguments.falsy(callee))
        staged = self._dep_traced(StagedDep(dep.caller, dep.unless, dep.absent, dep.truthy), frame)
        memo = (callee.key, context, staged, dep.index)
        known = self._returns.get(memo)
        if known is not None:
            return known
        if memo in self._in_progress:
            self._cuts += 1
            return False
        self._in_progress.add(memo)
        cuts = self._cuts
        try:
            result = self._deps_traced(_returned(callee, dep), _Frame(callee.key, context, staged))
        finally:
            self._in_progress.discard(memo)
        if self._cuts == cuts:
            self._returns[memo] = result
        return result


def findings_part(signature: str) -> str:
    """The part of a solve signature (`SignatureParts.text`, `Solution.lint_signature`) that a module's
    findings depend on, all but their notes: when only the rest differs, a lint without findings
    stays the same."""
    return signature.partition(f"\n{NOTES_MARK}\n")[0]


def _link_text(link: ChainLink) -> str:
    """What a note made from `link` says and where it points (see `Solution._chain_texts`)."""
    return repr((link.function, link.witness.path, _witness_text(link.witness), sorted(link.traced)))


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def _witness_text(witness: Witness) -> str:
    """A short identity of a witness: its root's target, transform and form, or its edge's caller and
    callee, and the function in between."""
    if witness.root is not None:
        return f"{witness.root.target}|{witness.root.spec.transform}|{witness.root.decorator}|{witness.through}"
    edge = witness.edge
    return f"{edge.caller}>{edge.callee}|{witness.through}" if edge is not None else ""


def _returned(callee: FunctionSummary, dep: CallDep) -> Deps:
    """What the call `dep` receives from `callee`: its return value, or one element of a returned tuple."""
    if dep.index is not None and callee.return_elements is not None and dep.index < len(callee.return_elements):
        return callee.return_elements[dep.index]
    return callee.returns


def _parameter_call_edges(edges_by_caller: dict[str, list[tuple[CallEdge, str]]],
                          functions: dict[str, FunctionSummary]) -> list[tuple[CallEdge, CallEdge]]:
    """The calls a function makes through its parameters, as edges to what its callers pass there:
    `step(model, x)` with `def step(model, x): return model(x)` calls `MLP.__call__` from `step`. Each
    comes with the function whose call passed the callable: the edge holds only where that call runs
    under the trace (or where the function called is itself a root, traced with what its caller passes).
    Each new edge is located at the passing call and comes with it."""
    edges: list[tuple[CallEdge, CallEdge]] = []
    for caller_edges in edges_by_caller.values():
        for edge, callee in caller_edges:
            for parameter, arguments in functions[callee].called_params:
                passed = edge.arguments.callable_for(parameter, functions[callee])
                if passed is not None:
                    target, bound = passed
                    edges.append((CallEdge(callee, target, replace(arguments, bound_positional=bound)), edge))
    return edges


def solve(summaries: Iterable[ModuleSummary], project_modules: Iterable[str] = ()) -> Solution:
    """Run the fixpoint over `summaries` and return the solved state. A solve of part of a project
    names the modules of the whole in `project_modules`: a function keyed like one stays unknown, as
    in the whole project's solve."""
    summaries = list(summaries)
    functions: dict[str, FunctionSummary] = {}
    exports: dict[str, str] = {}
    modules = {summary.module for summary in summaries}.union(project_modules)
    for summary in summaries:  # a function keyed like a module's own scope (`pkg.m` in pkg/__init__.py) stays unknown
        functions.update((key, function) for key, function in summary.functions.items() if key not in modules)
        for name, target in summary.exports.items():
            exports[f"{summary.module}.{name}"] = target
    resolve = _Resolver(functions, exports)
    solution = Solution(functions, resolve=resolve, x64_enabled=any(summary.enables_x64 for summary in summaries),
                        digests={summary.path: summary.digest for summary in summaries})
    edges_by_caller: dict[str, list[tuple[CallEdge, str]]] = {}
    passed: dict[str, set[str]] = {}
    witnesses: dict[int, Witness | ModuleSummary] = {}
    """Per edge (by id), the witness a callee traced through it gets, or for a plain call the module it
    is made in (the witness is made only when it is first needed)."""

    def add_edge(edge: CallEdge, witness: Witness | ModuleSummary) -> None:
        callee = resolve(edge.callee)
        if callee is not None:
            witnesses[id(edge)] = witness
            edges_by_caller.setdefault(edge.caller, []).append((edge, callee))
            solution._state(edge.caller).callees.add(callee)
            passed.setdefault(callee, set()).update(edge.arguments.passed(functions[callee]))
            jax_arrays = edge.arguments.jax_arrays(functions[callee])
            if jax_arrays:
                solution._state(callee).jax_array_params.update(jax_arrays)

    for summary in summaries:
        for edge in summary.edges:
            add_edge(edge, summary)
    passed_by: dict[int, str] = {}
    for edge, passing in _parameter_call_edges(edges_by_caller, functions):
        made = witnesses[id(passing)]
        add_edge(edge, Witness(made.path, made.module, edge=edge, through=passing.caller, site=passing))
        passed_by[id(edge)] = passing.caller
    roots = [Witness(summary.path, summary.module, root=root) for summary in summaries for root in summary.roots]
    for caller_edges in edges_by_caller.values():
        for edge, callee in caller_edges:  # `fit(loss, w)` where `fit` applies `jax.grad` to its parameter
            for parameter, spec in functions[callee].transformed_params:
                passed_function = edge.arguments.callable_for(parameter, functions[callee])
                if passed_function is not None:
                    target, bound = passed_function
                    root = TraceRoot(target, spec.binding(bound) if bound else spec)
                    made = witnesses[id(edge)]
                    roots.append(Witness(made.path, made.module, root=root, through=callee, site=edge))
    for witness in roots:  # a decorating jit's static parameters stay static under every other transform too
        assert witness.root is not None
        key = resolve(witness.root.target)
        if key is not None and witness.root.decorator and witness.root.spec.caches:
            state = solution._state(key)
            state.static_params |= witness.root.spec.static_params(functions[key])
    root_keys: set[str] = set()
    for witness in roots:
        assert witness.root is not None
        key = resolve(witness.root.target)
        if key is not None:
            root_keys.add(key)
            never_passed = functions[key].defaults - passed.get(key, set())
            _apply(solution, key, witness.root.spec, never_passed, witness)
    for key in root_keys:
        if solution.state_of(key).transforms & CUSTOM_DERIVATIVES:
            solution.state_of(key).differentiated.clear()  # a custom derivative's function runs on primal values
    fresh_bodies = {(key, spec.caches_with) for key in root_keys for spec in solution.state_of(key).contexts
                    if isinstance(spec, TraceSpec) and spec.caches_with is not None}
    order = callers_first(solution.callee_graph())
    changed = True
    for _ in range(MAX_ROUNDS):
        if not changed:
            break
        changed = False
        solution.forget_evaluations()
        for caller in order:
            if not solution.state_of(caller).transforms:
                continue
            for edge, callee in edges_by_caller.get(caller, ()):
                passed_in = passed_by.get(id(edge))
                if passed_in is not None and not solution.state_of(passed_in).transforms and caller not in root_keys:
                    continue  # the callable reached `caller` through a call that runs outside every trace
                changed |= _propagate(solution, edge, callee, witnesses[id(edge)])
        for key, maker in fresh_bodies:  # a body made per call is reused as long as its maker's program
            kept = solution.state_of(maker).keepers
            if not kept <= solution.state_of(key).keepers:
                solution._state(key).keepers.update(kept)
                changed = True
    solution.converged = not changed
    solution.forget_evaluations()
    callees = solution.callee_graph()
    seeds = {key for summary in summaries for target in summary.repeated_calls if (key := resolve(target)) is not None}
    solution.repeated = _repeated(seeds, functions, callees)
    seeds |= {key for summary in summaries for target in summary.called_twice if (key := resolve(target)) is not None}
    solution.rerun = _repeated(seeds, functions, callees)
    for caller_edges in edges_by_caller.values():
        for edge, callee in caller_edges:
            if edge.in_loop or edge.caller in solution.repeated:
                left = functions[callee].defaults - edge.arguments.passed(functions[callee])
                if left:
                    solution.defaults_reused.setdefault(callee, set()).update(left)
    return solution


def callers_first(callees: dict[str, set[str]]) -> list[str]:
    """Every function that calls or is called, callers before their callees: the strongly connected
    components of the call graph in topological order, the functions of one component in name order."""
    return [member for component in reversed(strongly_connected(callees)) for member in component]


def component_digests(graph: dict[str, set[str]], lines: dict[str, list[str]]) -> dict[str, str]:
    """Per node of `graph` (each node's successors, all keys of `graph`), a digest of the `lines` of every
    node of its strongly connected component and of the digests of the components it reaches: equal
    digests, equal lines everywhere downstream. Linear in the graph and the lines."""
    digests: dict[str, str] = {}
    for component in strongly_connected(graph):  # successors first
        members = set(component)
        outside = sorted({digests[successor] for member in component for successor in graph[member]
                          if successor not in members})
        digest = _digest("\n".join([*sorted(line for member in component for line in lines[member]), *outside]))
        for member in component:
            digests[member] = digest
    return digests


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of `graph` (each node's successors; a successor need not be a
    key), each in name order, successors' components before their predecessors' (Tarjan's algorithm,
    iterative: deep call chains need no deep recursion). Linear in the nodes and edges."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    nodes = sorted({*graph, *(successor for successors in graph.values() for successor in successors)})
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph.get(successor, ())))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    components.append(sorted(component))
    return components


def _repeated(start: set[str], functions: dict[str, FunctionSummary], callees: dict[str, set[str]]) -> set[str]:
    """`start` and every function they call, directly or through other calls; memoized functions run
    once per argument, so neither they nor what they call count."""
    reached = {key for key in start if not functions[key].memoized}
    pending = list(reached)
    while pending:
        for callee in callees.get(pending.pop(), ()):
            if callee not in reached and not functions[callee].memoized:
                reached.add(callee)
                pending.append(callee)
    return reached


def _apply(solution: Solution, key: str, spec: TraceSpec, never_passed: frozenset[str] | set[str],
           witness: Witness) -> None:
    """Trace function `key` by `spec` (the root `witness` states); parameters whose Python default no
    known call overrides (`never_passed`) keep that concrete default."""
    function = solution.functions[key]
    state = solution._state(key)
    state.transforms.add(spec.transform)
    state.root = True
    if spec.caches:
        state.keepers.add(spec.transform)
    if spec.staged:
        state.staged = True
        if spec.transform not in BATCHING_TRANSFORMS:
            state.omnistaged = True
    traceable = spec.traced_params(function, frozenset(state.jax_array_params)) - state.static_params
    traced = traceable - never_passed
    held = spec.differentiated_params(function) - never_passed
    state.jax_array_params.update(spec.jax_array_params(function))
    state.holders.update(held)
    state.differentiated.update(held)
    tracers = spec.tracer_params(function) & traced
    # A false default no known call overrides stays false where passing a value would make it a tracer (a
    # staging transform's traced parameter: `if flag:` would raise); a static one may be passed anywhere.
    staging = spec.staged and spec.transform not in BATCHING_TRANSFORMS
    defaulted = frozenset(never_passed) & function.falsy_defaults & traceable if staging else frozenset()
    falsy = spec.falsy_params(function) | defaulted
    state.contexts[spec] = Context(traced, tracers, tracers | spec.present_params(function),
                                   spec.staged and spec.transform not in BATCHING_TRANSFORMS, falsy)
    state.traced_params.update(traced)
    _witness(state, traced, witness)


def _witness(state: FunctionState, traced: frozenset[str], witness: Witness | ModuleSummary,
             edge: CallEdge | None = None) -> None:
    """Remember `witness` for the function of `state` and each of its `traced` parameters that has none
    yet; a module stands for the plain call `edge` made in it."""
    missing = [name for name in traced if name not in state.param_witnesses]
    if state.witness is not None and not missing:
        return
    if isinstance(witness, ModuleSummary):
        assert edge is not None
        witness = Witness(witness.path, witness.module, edge=edge)
    if state.witness is None:
        state.witness = witness
    for name in missing:
        state.param_witnesses[name] = witness


def _propagate(solution: Solution, edge: CallEdge, callee_key: str, witness: Witness | ModuleSummary) -> bool:
    """Carry the caller's tracing into the callee along one edge (made where `witness` says); True when
    anything changed. A call in a guarded branch carries nothing while no way of tracing the caller
    admits its guards (`if debug: dump(x)` where every trace passes `debug=False`), nor a
    differentiation rule while its caller is under no differentiating transform."""
    STEPS.spend()
    if edge.guarded and not solution.admitted(edge):
        return False  # checked each round; a context admitting it later carries it then (never retracted)
    caller = solution.state_of(edge.caller)
    if edge.differentiated and not caller.transforms & DIFFERENTIATING:
        return False  # a differentiation rule runs only where its function is differentiated
    callee = solution.functions[callee_key]
    bound = edge.arguments.bind(callee)
    static = solution.state_of(callee_key).static_params  # `@partial(jax.jit, static_argnames=...)` keeps them concrete
    traced = frozenset(name for name, deps in bound.items() if name not in static and solution.is_traced(deps))
    state = solution._state(callee_key)
    previous = state.contexts.get(edge)
    if previous is not None:
        traced |= previous.traced
    held = {name for name, deps in bound.items() if name not in traced and solution.holds_tracer(deps)}
    primal = edge.differentiated or bool(state.transforms & CUSTOM_DERIVATIVES)
    differentiated = {name for name in held if not primal and solution.is_differentiated(bound[name])}
    passed_on = {name for name, deps in bound.items() if _certain_tracer(solution, edge.caller, deps)}
    tracers = traced & (edge.arguments.arrays(callee) | passed_on)
    context = Context(traced, tracers, tracers | edge.arguments.present(callee), caller.omnistaged,
                      edge.arguments.falsy(callee))
    before = state.progress()
    state.contexts[edge] = context
    state.transforms.update(caller.transforms)
    state.staged |= caller.staged
    state.omnistaged |= caller.omnistaged
    state.keepers.update(caller.keepers)
    state.traced_params.update(traced)
    state.holders.update(held)
    state.differentiated.update(differentiated)
    _witness(state, traced, witness, edge)
    return before != state.progress() or previous != context


def _certain_tracer(solution: Solution, caller: str, deps: Deps) -> bool:
    """Whether an argument is one of the caller's parameters that holds a tracer in every way the
    caller is traced."""
    if len(deps) != 1:
        return False
    (dep,) = deps
    if not isinstance(dep, ParamDep) or dep.function != caller or dep.guarded:
        return False
    contexts = solution.state_of(caller).contexts.values()
    return bool(contexts) and all(dep.name in context.tracers for context in contexts)


@dataclass(slots=True)
class _Resolver:
    """Resolves a call or root target to a known function key, following re-exports
    (`from .utils import helper` in `pkg/__init__.py`, then `pkg.helper`)."""

    functions: dict[str, FunctionSummary]
    exports: dict[str, str]

    def __call__(self, target: str) -> str | None:
        """The function key `target` refers to, if any."""
        if target in self.functions:
            return target
        return resolve_target(target, self.functions.__contains__, self.exports.get)[0]


def resolve_target(target: str, is_function: Callable[[str], bool],
                   forwarded: Callable[[str], str | None]) -> tuple[str | None, list[str]]:
    """The function key `target` refers to (None: none), following re-exports (`forwarded` gives the
    qualified name a module-level name is bound to), and every name visited on the way."""
    visited: list[str] = []
    for _ in range(MAX_REEXPORT_HOPS):
        visited.append(target)
        if is_function(target):
            return target, visited
        following = forwarded(target)
        if following is None or following == target:
            return None, visited
        target = following
    return None, visited


def lookup_name(solution: Solution, target: str) -> tuple[str | None, list[str]]:
    """The function key `target` refers to in `solution` (None: none), and the names resolving it goes
    through (see :func:`resolve_target`)."""
    resolver = solution.resolve
    if resolver is None:
        return (target if target in solution.functions else None), [target]
    return resolve_target(target, resolver.functions.__contains__, resolver.exports.get)
