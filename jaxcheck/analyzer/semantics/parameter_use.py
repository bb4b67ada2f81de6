"""Which parameters a function body only *probes*: reads their type, shape or identity and nothing else.

A PRNG key passed to such a parameter is not consumed (`is_prng_key(key)` reads `key.dtype` and
`key.shape`; a helper that ignores its `key`, or only prints or logs it or its `key_data`, draws nothing;
mapping a probing lambda over it with `jax.tree.map` probes it too). Folding data from other parameters into it (`jax.random.fold_in(rng,
step)`, as a train step does with its base dropout key) counts as a probe too, and the data parameters
are recorded (:meth:`ParameterUse.folds`): a call draws from a key of its own unless it passes the same
data again, which a caller's check can only tell for literals and defaults. The builder reports every
read of a parameter and every read that is a probe while its one traversal runs; a parameter is
*inert* when all of its reads are probes (or it is never read).

:class:`KeyParameters` is the collector of these facts (see :mod:`.collectors`), and of the parameters a
function passes as the key of a consuming `jax.random` call (`FunctionSummary.draws`); it also marks
the scopes that may draw random numbers (`ModuleRecords.random_scopes`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import replace

import libcst as cst

import jaxcheck.analyzer.semantics.jax_api as jax_api
from jaxcheck.analyzer.semantics.call_table import call_semantics
from jaxcheck.analyzer.semantics.collectors import Collector, Interpreting
from jaxcheck.analyzer.semantics.prng import abstractly_evaluated, is_key_like_name
from jaxcheck.analyzer.semantics.scopes import Scope, qualified_name
from jaxcheck.analyzer.semantics.summary import FunctionSummary
from jaxcheck.analyzer.semantics.syntax import argument
from jaxcheck.analyzer.semantics.values import KEY_TAKING_LAYER, Value
from jaxcheck.analyzer.tree import child_nodes

PROBE_ATTRIBUTES = frozenset({"shape", "dtype", "ndim", "size", "weak_type", "sharding", "__class__"})
"""Attributes whose reading draws nothing from a key."""
PROBE_CALLS = frozenset(
    {
        "builtins.isinstance", "builtins.type", "builtins.len", "builtins.id", "builtins.hasattr",
        "jax.numpy.shape", "jax.numpy.ndim", "jax.numpy.size", "numpy.shape", "numpy.ndim", "numpy.size",
    }
)
"""Calls that only look at their first argument's type or shape."""
FORMATTING_CALLS = frozenset(
    {"builtins.print", "builtins.repr", "builtins.str", "builtins.format"}
    | {f"logging.{level}" for level in ("debug", "info", "warning", "error", "critical", "exception", "log")}
)
"""Calls that only format their arguments for output: a key printed or logged draws nothing."""
KEY_VIEWS = frozenset({"jax.random.key_data", "jax.random.key_impl"})
"""Calls that read a key's data or implementation and never draw from it, whatever is done with the result
(printed, logged, saved in a checkpoint): they probe the key."""
KEY_REWRAP = "jax.random.wrap_key_data"
"""Makes a key of a key's data: `wrap_key_data(key_data(key))` is the key again, not a probe of it."""
TREE_MAPS = frozenset({"jax.tree.map", "jax.tree_util.tree_map", "jax.tree_map"})
"""Calls that apply their first argument to each leaf of the trees after it: when that function only
probes its parameter (`lambda y: isinstance(y, jax.Array)`), the trees are only probed."""


class ParameterUse:
    """Counts reads and probe reads of parameters, per (function key, parameter name)."""

    def __init__(self) -> None:
        self._reads: Counter[tuple[str, str]] = Counter()
        self._probes: Counter[tuple[str, str]] = Counter()
        self._fold_data: dict[tuple[str, str], set[str]] = {}

    def read(self, function: str, name: str) -> None:
        self._reads[(function, name)] += 1

    def probed(self, function: str, name: str) -> None:
        self._probes[(function, name)] += 1

    def folded(self, function: str, name: str, data: frozenset[str]) -> None:
        """Parameter `name` is read to fold in data from the parameters `data` (a probe of `name`)."""
        self._probes[(function, name)] += 1
        self._fold_data.setdefault((function, name), set()).update(data)

    def folds(self, function: str, inert: frozenset[str]) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """The `inert` parameters of `function` read by folds, each with the parameters folded into it."""
        return tuple((name, tuple(sorted(self._fold_data[(function, name)])))
                     for name in sorted(inert) if (function, name) in self._fold_data)

    def inert(self, function: str, parameters: tuple[str, ...]) -> frozenset[str]:
        """The `parameters` of `function` whose every read is a probe."""
        return frozenset(p for p in parameters if self._reads[(function, p)] <= self._probes[(function, p)])


class KeyParameters(Collector):
    """Which parameters each function only probes, folds or draws from, and which scopes may draw.

    Cost: constant work per event, plus a walk of a fold's data expression (once per fold call)."""

    def __init__(self, interpreter: Interpreting) -> None:
        super().__init__(interpreter)
        self.use = ParameterUse()
        self._draws: dict[str, set[str]] = {}
        """Per function key, the parameters it passes as the key to a consuming `jax.random` call."""
        self._parameter_folds: set[int] = set()
        """`jax.random.fold_in` calls that make a key of the call's own from a parameter key (see
        :meth:`_note_fold`)."""
        self._folded_values: dict[int, Value] = {}
        """The values such folds bound back to the parameter's own name, by id (kept alive here)."""
        self._rewrapped: set[int] = set()
        """Calls (by id) whose result `jax.random.wrap_key_data` makes a key again (`key_data(key)` there)."""
        self._constant_folds: dict[int, str] = {}
        """`jax.random.fold_in` calls that fold a literal into a parameter key (by id), with that parameter:
        every call derives the same key (see :meth:`_note_constant_fold`)."""
        self._derived_keys: dict[int, tuple[Value, str]] = {}
        """The values such folds bound to a name, by id, with the parameter they derive from (kept alive)."""

    # ------------------------------------------------------------------------------------ events
    def call_entered(self, node: cst.Call, name: str | None) -> None:
        interpreter = self.interpreter
        if abstractly_evaluated(node, lambda call: interpreter.records.call_names.get(id(call))):
            for arg in node.args:  # `jax.eval_shape(init, key)`: traced for shapes, nothing drawn
                self.probed(arg.value)
        if name is None:
            return
        if jax_api.is_random_call(name) or name in jax_api.PARTIAL and node.args and jax_api.is_random_call(
            qualified_name(interpreter.scope, node.args[0].value)
        ):  # `partial(jax.random.normal, key)` draws where it is called
            interpreter.records.random_scopes.add(interpreter.function_key)
            self._note_draw(node, name)
        elif is_library(interpreter.module_name, name) and passes_key(node):
            interpreter.records.random_scopes.add(interpreter.function_key)  # `eqx.nn.Linear(2, 2, key=k)`
        if name == KEY_REWRAP and node.args:  # `wrap_key_data(key_data(key))` rebuilds the key: no probe
            self._rewrapped.add(id(node.args[0].value))
        if (name in PROBE_CALLS or name in KEY_VIEWS and id(node) not in self._rewrapped) and node.args:
            self.probed(node.args[0].value)
        elif name in FORMATTING_CALLS:
            for arg in node.args:
                self.probed(arg.value)
        elif name == jax_api.KEY_FOLD and len(node.args) >= 2:
            if self._note_fold(node.args[0].value, node.args[1].value):
                self._parameter_folds.add(id(node))
            else:
                self._note_constant_fold(node)

    def call_read(self, node: cst.Call, name: str | None, args: Sequence[Value], called: Value) -> None:
        if name in TREE_MAPS and node.args and self._only_probes(node.args[0].value):
            for arg in node.args[1:]:
                if arg.keyword is None and not arg.star:
                    self.probed(arg.value)
        if name is None and called.flags & KEY_TAKING_LAYER and passes_key(node):
            self.interpreter.records.random_scopes.add(self.interpreter.function_key)  # `drop(x, key=k)`

    def name_read(self, node: cst.Name, owner: Scope) -> None:
        if self._reads_parameter(owner, node.value):
            self.use.read(owner.key, node.value)

    def probed(self, node: cst.BaseExpression) -> None:
        if isinstance(node, cst.Name):
            resolved = self.interpreter.scope.resolve(node.value)
            if resolved is not None and self._reads_parameter(resolved[0], node.value):
                self.use.probed(resolved[0].key, node.value)

    def bound(self, value_node: cst.BaseExpression, value: Value) -> None:
        """`rng = jax.random.fold_in(rng, step)` (a fold probing parameter `rng`): the key `rng` holds from
        here on is its own, so reading it reads no parameter. `k = jax.random.fold_in(key, 0)`: `k` is a
        key derived from parameter `key` (see :meth:`_note_constant_fold`)."""
        if id(value_node) in self._parameter_folds:
            self._folded_values[id(value)] = value
        if id(value_node) in self._constant_folds:
            self._derived_keys[id(value)] = (value, self._constant_folds[id(value_node)])

    def function_facts(self, summary: FunctionSummary) -> FunctionSummary:
        inert = self.use.inert(summary.key, summary.parameters)
        return replace(summary, inert_params=inert, key_folds=self.use.folds(summary.key, inert),
                       draws=frozenset(self._draws.get(summary.key, ())))

    # ----------------------------------------------------------------------------------- helpers
    def _reads_parameter(self, owner: Scope, name: str) -> bool:
        """Whether `name`, bound in `owner`, is a parameter of it and still holds the value passed (not a
        key a probing fold bound back to the name: `rng = jax.random.fold_in(rng, step)`)."""
        return self.interpreter.is_parameter(owner, name) \
            and id(self.interpreter.scope.load(name)) not in self._folded_values

    def _note_fold(self, key: cst.BaseExpression, data: cst.BaseExpression) -> bool:
        """`jax.random.fold_in(key, data)`: a parameter `key` of this function folded with data read from
        its other parameters (not only their shape, not the method's receiver) is a probe of `key` (each
        call folds in its own data, unless it passes the same). Returns whether the result is a key of the
        call's own: such a fold, or any fold of a key such a fold made (`fold_in(rng, worker)` after
        `rng = fold_in(rng, step)`)."""
        if not isinstance(key, cst.Name):
            return False
        scope = self.interpreter.scope
        if id(scope.load(key.value)) in self._folded_values:
            return True
        resolved = scope.resolve(key.value)
        owner = scope.function_scope()
        if resolved is None or resolved[0] is not owner or not self._reads_parameter(owner, key.value):
            return False
        parameters = frozenset(
            name for name in _data_names(data)
            if name != key.value and name != owner.self_name and (found := scope.resolve(name)) is not None
            and found[0] is owner and self.interpreter.is_parameter(owner, name)
        )
        if parameters:
            self.use.folded(owner.key, key.value, parameters)
        return bool(parameters)

    def _note_constant_fold(self, node: cst.Call) -> None:
        """`jax.random.fold_in(key, i)` of a parameter `key` with data read from no other parameter (a
        loop index, `lax.axis_index`, a constant): folding draws nothing from `key` (as JAX's key-reuse
        checker has it), so it is a probe. With a literal (`fold_in(key, 0)`), every call derives the same
        key: the function draws from `key` where it draws from that key (see :meth:`_note_draw`)."""
        key = node.args[0].value
        scope = self.interpreter.scope
        resolved = scope.resolve(key.value) if isinstance(key, cst.Name) else None
        owner = scope.function_scope()
        if isinstance(key, cst.Name) and resolved is not None and resolved[0] is owner \
                and self._reads_parameter(owner, key.value):
            self.use.probed(owner.key, key.value)
            if isinstance(node.args[1].value, (cst.Integer, cst.SimpleString)):
                self._constant_folds[id(node)] = key.value

    def _only_probes(self, function: cst.BaseExpression) -> bool:
        """Whether `function` is a lambda (already evaluated) whose every parameter is only probed."""
        interpreter = self.interpreter
        key = interpreter.records.function_keys.get(id(function)) if isinstance(function, cst.Lambda) else None
        summary = interpreter.functions.get(key) if key is not None else None
        if key is None or summary is None or not summary.parameters:
            return False
        return len(self.use.inert(key, summary.parameters)) == len(summary.parameters)

    def _note_draw(self, node: cst.Call, name: str) -> None:
        """A `jax.random` call consuming its key: when that key is still the current function's
        parameter, callers that pass one key twice to this function reuse it."""
        interpreter = self.interpreter
        key = argument(node, 0, ("key",))
        semantics = call_semantics(name)
        if semantics is None or not semantics.draws or not interpreter.in_function or not isinstance(key, cst.Name):
            return
        function = interpreter.function_key
        parameter = key.value if interpreter.holds_parameter(key.value, function) else None
        if parameter is None and (derived := self._derived_keys.get(id(interpreter.scope.load(key.value)))) is not None:
            parameter = derived[1]  # a key folded from it
        if parameter is not None:
            self._draws.setdefault(function, set()).add(parameter)


def is_library(module_name: str, name: str) -> bool:
    """Whether `name` is a callable of another package than `module_name`'s, not one that only moves keys
    (`builtins`, JAX internals, NumPy): a project's own classes store a `key=` they are given."""
    project = module_name.partition(".")[0]
    return name.partition(".")[0] != project and not name.startswith(jax_api.KEY_NEUTRAL_PREFIXES)


def passes_key(node: cst.Call) -> bool:
    """Whether a call passes a keyword argument named like a PRNG key (`key=`, `rng=`, `*_key=`)."""
    return any(arg.keyword is not None and is_key_like_name(arg.keyword.value) for arg in node.args)


def _data_names(node: cst.CSTNode) -> Iterator[str]:
    """The names whose values `node` reads, not counting those it only probes (`x.ndim`, `x.shape[0]`)
    nor the bodies of lambdas."""
    if isinstance(node, cst.Name):
        yield node.value
    elif isinstance(node, cst.Attribute) and node.attr.value in PROBE_ATTRIBUTES:
        return
    elif not isinstance(node, cst.Lambda):
        for child in child_nodes(node):
            yield from _data_names(child)
