"""What the model-building traversal records about a module's nodes, for the model facade to answer."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import Enum

import libcst as cst

from jaxcheck.analyzer.semantics.bindings import BindingHistory, CallableOrigin, ChangeSite
from jaxcheck.analyzer.semantics.program_order import ProgramOrder
from jaxcheck.analyzer.semantics.scopes import BindingKind
from jaxcheck.analyzer.semantics.summary import CallEdge, TraceSpec
from jaxcheck.analyzer.semantics.values import Deps, Value
from jaxcheck.analyzer.tree import descendants


@dataclass(frozen=True, slots=True)
class OuterName:
    """A name read inside a function but bound in an enclosing function or the module (`scope`)."""

    scope: str
    module_level: bool
    kind: BindingKind


@dataclass(frozen=True, slots=True)
class TransformSite:
    """A transform applied inside `function` (None at module level) within `loops` (node ids,
    outermost first), to a callable created as `origin` (None when not created in that function);
    `caches` when the transform compiles and caches per function object (jit-like)."""

    function: str | None
    loops: tuple[int, ...]
    origin: CallableOrigin | None
    caches: bool
    memoized: bool = False
    """Its result fills a cache slot that outlives the call, under a guard that finds the slot empty
    (`if k not in cache: cache[k] = jax.jit(f)`, `if self._f is None:`): one function per slot."""
    tabled: bool = False
    """In a loop, its result is stored in a container entry per iteration (`table[name] = jax.jit(f)`,
    `{name: jax.jit(f) for ...}`): one function per entry, each kept for later calls."""
    reused: bool = False
    """Its result is kept and used again by the code that made it: passed to another call (`minimize(step,
    x0)`: a driver calls it repeatedly) or called inside a loop there. One compile serves many calls."""


class Receiver(Enum):
    """Where the object a method is called on comes from, when it is new (see `ValueFlag.NEW_OBJECT`)."""

    MADE_HERE = "made here"
    """Made by the calling code itself, or kept by an object it made: `game = Game(s); game.step()`,
    `game.agent.update()`."""
    CALLERS_SELF = "the caller's self"
    """The calling method's own object: `self.reset()`."""
    KEPT_BY_SELF = "kept by the caller's self"
    """A new object the calling method's object keeps: `self.ball.move()`, every store to `self.ball`
    putting a new object there."""


@dataclass(slots=True)
class ModuleRecords:
    """What the builder learned about one module's nodes, keyed by `id(node)` (nodes stay alive)."""

    values: dict[int, Value] = field(default_factory=dict)
    root_sites: dict[tuple[str, TraceSpec], cst.CSTNode] = field(default_factory=dict)
    """Where each trace root's transform is applied (the decorator or the call), by (target, spec)."""
    edge_sites: list[tuple[CallEdge, cst.CSTNode]] = field(default_factory=list)
    """Each call edge with its call node, for notes that cite it (see :meth:`site_of_edge`)."""
    _edge_index: dict[CallEdge, cst.CSTNode] | None = None
    cut_nodes: list[cst.CSTNode] = field(default_factory=list)
    """The function definitions (or the module) whose work budget ran out: nothing is reported in them."""
    configuration_loops: set[int] = field(default_factory=set)
    """Loops (by id) over a fixed list of configurations: a literal display of concrete values, or a
    module-level constant (`for cov in ("dense", "diagonal")`, `for n in SIZES`). Each iteration is a
    setting of its own, run once: work repeated per iteration is not repeated work."""
    call_receivers: dict[int, Receiver] = field(default_factory=dict)
    """Per method call (by id) whose object is known to be new, where it comes from (see :class:`Receiver`)."""

    def site_of_edge(self, edge: CallEdge) -> cst.CSTNode | None:
        """The node of a call edge equal to `edge` (the first such call), indexed on first use."""
        if self._edge_index is None:
            self._edge_index = {}
            for known, node in self.edge_sites:
                self._edge_index.setdefault(known, node)
        return self._edge_index.get(edge)
    call_names: dict[int, str] = field(default_factory=dict)
    function_keys: dict[int, str] = field(default_factory=dict)
    outer_names: dict[int, OuterName] = field(default_factory=dict)
    outer_variable_reads: list[tuple[cst.Name, str]] = field(default_factory=list)
    """Every read of an outer variable, with the key of the function reading it."""
    outer_writes: dict[int, OuterName | None] = field(default_factory=dict)
    """Every assignment target written through `global`/`nonlocal`, with the variable's owner (None
    when it resolves to no module or function scope)."""
    self_loads: set[int] = field(default_factory=set)
    nnx_self_loads: set[int] = field(default_factory=set)
    """The reads of `self` (among `self_loads`) in methods of Flax NNX modules: NNX transforms carry
    updates of their state out of the trace."""
    transform_sites: dict[int, TransformSite] = field(default_factory=dict)
    property_methods: set[str] = field(default_factory=set)
    """Methods read as attributes (`@property`): each read of `self.rng` runs the method anew."""
    concretization_caught: set[int] = field(default_factory=set)
    """`try` statements whose handlers catch the error a concretization raises on a tracer and do not
    re-raise it (see `ModelBuilder._handles_concretization`)."""
    called_transforms: set[int] = field(default_factory=set)
    mutated_names: set[int] = field(default_factory=set)
    functions_in_loops: set[str] = field(default_factory=set)
    definition_order: dict[str, int] = field(default_factory=dict)
    history: BindingHistory = field(default_factory=BindingHistory)
    program_order: ProgramOrder = field(default_factory=ProgramOrder)
    read_paths: dict[int, str] = field(default_factory=dict)
    """For a read of an outer name followed by an attribute (`cfg.alpha`), that attribute; followed by
    a constant string item (`CONFIG["wd"]`), its key (see `ChangeSite.path`); none when the attribute
    is a method called (`CONFIG.get("wd")` may read any item)."""
    host_functions: set[str] = field(default_factory=set)
    """Keys of functions passed to host callbacks (`jax.debug.callback`): they run with concrete values."""
    ref_kernels: set[str] = field(default_factory=set)
    """Keys of Pallas kernels and scoped bodies: their parameters are mutable Refs."""
    unbatched_targets: dict[int, tuple[str, TraceSpec]] = field(default_factory=dict)
    """Per-example batching calls (`jax.vmap(f, in_axes=(None, 0))`) that leave arguments unmapped, by id,
    with the function (key or qualified name) and the spec: an unmapped key is shared by the batch."""
    attribute_owners: dict[int, tuple[str, str]] = field(default_factory=dict)
    """Attribute reads (`self.buf`, `state.vel` for `state: State`) by id: (class key, attribute)."""
    array_attribute_stores: dict[tuple[str, str], bool] = field(default_factory=dict)
    """Per (class key, attribute) stored in the class's methods: whether every store is a JAX array."""
    attribute_changes: dict[tuple[str, str], list[tuple[cst.CSTNode, str]]] = field(default_factory=dict)
    """Per (class key, attribute), the stores outside a constructor, in a function (a method such as
    `set_base`, `cls.scale *= f` in a classmethod, `obj.attr = v` in a helper), with that function's key."""
    module_attribute_changes: dict[tuple[str, str], list[tuple[ChangeSite, frozenset[str]]]] = field(default_factory=dict)
    """Per (class key, attribute), the stores module code makes (`agent.epsilon = 0.1` on `agent = Agent()`),
    each with the other module variables then holding objects of that class: program order tells whether
    a store falls between calls that reuse a compiled program reading it (calls that pass only another of
    those objects do not count)."""
    escaping_functions: set[str] = field(default_factory=set)
    """Functions of this module that may run at times program order does not see: read as a value other
    than to be called or transformed (`callbacks.append(f)`, `Thread(target=f)`, `g = f`, `f.lower(x)`),
    given to a decorator other than a transform, or generators (their bodies resume after each `next`)."""
    imported_attribute_changes: dict[tuple[str, str], list[ChangeSite]] = field(default_factory=dict)
    """Per (qualified name of an import, attribute), the stores this module makes to that attribute of
    the imported module or object, in any code (`config.DT = 0.5`, `config.HPARAMS["lr"] = 0.0`)."""
    receiver_reads: set[int] = field(default_factory=set)
    """Attribute reads through a method's own `self`/`cls` or through a class name (`Model.scale`)."""
    identity_hashed: set[str] = field(default_factory=set)
    """Classes whose objects hash by identity: as a static argument, changing their attributes keeps the
    cache key (no decorator such as `@dataclass`, no foreign base, no `__hash__`/`__eq__`)."""
    array_fields: set[tuple[str, str]] = field(default_factory=set)
    """Class fields annotated as arrays (`vel: jax.Array` in a NamedTuple or dataclass)."""
    random_scopes: set[str] = field(default_factory=set)
    """Keys of the functions (and the module) whose own code calls `jax.random`."""
    references: dict[int, str] = field(default_factory=dict)
    """Names and attributes (read in code, decorators, bases or annotations) that resolve through an
    import, by id: their canonical qualified name (`jnp.float64` -> `jax.numpy.float64`, `jnp` -> `jax.numpy`)."""
    import_targets: dict[int, str] = field(default_factory=dict)
    """Import aliases by id: the qualified name each imports as written, not mapped from JAX's private
    modules to their public names (`from jax import tree_map` -> `jax.tree_map`; `import
    jax.experimental.maps` -> `jax.experimental.maps`, though it binds `jax`; `from jax._src.pjit import
    PartitionSpec` -> `jax._src.pjit.PartitionSpec`)."""
    import_modules: dict[int, str] = field(default_factory=dict)
    """`from M import ...` statements by id: the absolute module `M` (relative imports resolved)."""
    transformed_calls: set[int] = field(default_factory=set)
    """Calls of a name bound to a transform's result (`step = jax.jit(f)`, then `step(x)`), by id."""
    name_assignments: list[tuple[tuple[str, ...], cst.BaseExpression]] = field(default_factory=list)
    """Every assignment to plain names in any scope (`v = ...`, `a = b = ...`, `v: T = ...`), with the
    assigned expression, in the order the builder interprets them (function bodies after the module's,
    loop bodies twice); targets that are not plain names are left out."""
    branch_guards: dict[int, Deps] = field(default_factory=dict)
    """Statements (and one-line suites, and reads of outer variables) in a guarded branch, by id: what an
    array operation there depends on (`StagedDep`s with the branch's guards; see
    `SemanticModel.runs_traced`)."""
    shaped_names: dict[int, tuple[str, str]] = field(default_factory=dict)
    """Reads of a name whose value has a certain shape, by id: (key of the scope that owns the name, name).
    A `global`/`nonlocal` write in a function (interpreted later) can still rebind it."""


def cut_region(cut: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The nodes a cut covers (see :attr:`ModuleRecords.cut_nodes`): a function's whole definition; for
    the module, its module-level code (the bodies of the functions it defined before the cut were
    interpreted on their own budgets)."""
    return descendants(cut, outside=(cst.FunctionDef,) if isinstance(cut, cst.Module) else ())
