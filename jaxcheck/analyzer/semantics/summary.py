"""Per-module summaries: what a module defines, which functions it traces and what it passes where.

Summaries are plain frozen data (no CST nodes), so a run on one file can combine its own summary with
those of the rest of the project, and a cache can store them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace, field

from jaxcheck.analyzer.semantics.values import CallArguments, Deps, Key


@dataclass(frozen=True, slots=True)
class ArrayLeaf:
    """A path (constant keys and positions) at which every `return` of a function holds a JAX array: the
    array itself (`return {"w": jax.random.normal(k, s)}` has one at `("w",)`), or, with `callee`, what
    project function `callee` returns at `callee_path` (`return {"enc": init_layer(k1)}`)."""

    path: tuple[Key, ...]
    callee: str | None = None
    callee_path: tuple[Key, ...] = ()


@dataclass(frozen=True, slots=True)
class FunctionSummary:
    """A function or lambda: its parameters, where it is nested, and what its return value depends on.

    `key` is its qualified name (`pkg.mod.f`, `pkg.mod.Cls.m`, `pkg.mod.f.<locals>.g`).
    `array_params` are parameters annotated as arrays (JAX arrays, or types that admit NumPy arrays too:
    `ArrayLike`, `Float[np.ndarray, "n"]`), `jax_array_annotated` those of them whose annotation admits
    JAX arrays only (`jax.Array`, `Float[Array, "n"]`), `non_array_params` those annotated with types
    that can never hold a tracer (`str`, `Callable`, `DTypeLike`); `parent` is the enclosing function's key.
    `return_elements` holds per-position dependencies when every `return` returns a tuple of one length.
    `inert_params` are the parameters the body only probes (see :mod:`.parameter_use`); `memoized`
    functions (`functools.cache`, `lru_cache`, a project's `*cache` decorator) run once per argument;
    `defaults` are the parameters with a Python default, `falsy_defaults` those whose default is false
    (`False`, `None`, `0`, an empty literal). `key_folds` are the inert parameters the body reads only to
    fold data from other parameters into (`jax.random.fold_in(rng, step)`), with those parameters.
    """

    key: str
    positional: tuple[str, ...]
    keyword_only: tuple[str, ...] = ()
    var_positional: str | None = None
    var_keyword: str | None = None
    array_params: frozenset[str] = frozenset()
    non_array_params: frozenset[str] = frozenset()
    parent: str | None = None
    returns: Deps = frozenset()
    return_elements: tuple[Deps, ...] | None = None
    inert_params: frozenset[str] = frozenset()
    key_folds: tuple[tuple[str, tuple[str, ...]], ...] = ()
    memoized: bool = False
    jax_array_annotated: frozenset[str] = frozenset()
    defaults: frozenset[str] = frozenset()
    falsy_defaults: frozenset[str] = frozenset()
    draws: frozenset[str] = frozenset()
    """Parameters the body passes as the key to a `jax.random` call that consumes it (`split`, `normal`)."""
    transformed_params: tuple[tuple[str, TraceSpec], ...] = ()
    """Callable parameters the body applies a transform to (`def fit(loss_fn, w): jax.grad(loss_fn)(w)`):
    whatever function a call passes there is traced by that spec."""
    array_leaves: frozenset[ArrayLeaf] = frozenset()
    called_params: tuple[tuple[str, CallArguments], ...] = ()
    """Parameters the body calls, with the arguments (`def step(model, x): return model(x)`): whatever
    function or instance a caller passes there runs with them."""

    @property
    def parameters(self) -> tuple[str, ...]:
        """Every parameter name, in signature order."""
        rest = tuple(n for n in (self.var_positional, self.var_keyword) if n is not None)
        return (*self.positional, *self.keyword_only, *rest)

    def parameter_for(self, position: int | None, keyword: str | None, bound: int = 0) -> str | None:
        """The parameter an argument binds to: the `position`-th positional argument after `bound`
        already-bound ones, or `keyword`; None when it binds to nothing."""
        if keyword is not None:
            if keyword in self.positional[bound:] or keyword in self.keyword_only:
                return keyword
            return self.var_keyword
        if position is None:
            return None
        free = self.positional[bound:]
        return free[position] if position < len(free) else self.var_positional


@dataclass(frozen=True, slots=True)
class TraceSpec:
    """How one transform traces the function it is applied to.

    Positions are relative to the parameters left after `bound_positional` (partial, bound methods).
    `reads_params` is False when the transform's static/axes configuration could not be read
    statically: the function is then traced, but no parameter is claimed to be a tracer.
    `caches` marks transforms whose traced program is reused on later calls (jit, pmap, lax bodies).
    A lax body created afresh each time the lax call runs (a lambda or `partial(...)` written in the
    call, a function defined beside it) is traced again each time (JAX caches the body by identity):
    its program is reused only as long as that of the function making the call, `caches_with`.
    `array_positions`/`array_keywords` name the arguments known to be JAX arrays where the call is
    visible (`jax.jit(f)(x)`, `lax.switch` operands): those parameters are certainly tracers;
    `present_positions`/`present_keywords` those known never to be None, `falsy_positions`/`falsy_keywords`
    those known to be false (with the keywords `functools.partial` binds to a false literal);
    `jax_positions`/`jax_keywords` those known to be JAX arrays.
    `differentiated_positions` are the parameters a differentiating transform (`grad`, staged False)
    passes concrete tracers to; with `differentiates_primals`, every positional parameter (`jvp`).
    """

    transform: str
    staged: bool
    static_positions: frozenset[int] = frozenset()
    static_names: frozenset[str] = frozenset()
    unbatched_positions: frozenset[int] = frozenset()
    array_params_only: bool = False
    reads_params: bool = True
    bound_positional: int = 0
    bound_names: frozenset[str] = frozenset()
    positional_limit: int | None = None
    passed_keywords: frozenset[str] = frozenset()
    caches: bool = False
    caches_with: str | None = None
    array_positions: frozenset[int] = frozenset()
    array_keywords: frozenset[str] = frozenset()
    present_positions: frozenset[int] = frozenset()
    present_keywords: frozenset[str] = frozenset()
    falsy_positions: frozenset[int] = frozenset()
    falsy_keywords: frozenset[str] = frozenset()
    jax_positions: frozenset[int] = frozenset()
    jax_keywords: frozenset[str] = frozenset()
    differentiated_positions: frozenset[int] = frozenset()
    differentiates_primals: bool = False

    def tracer_params(self, function: FunctionSummary) -> frozenset[str]:
        """The traced parameters of `function` that certainly hold a tracer (not None, not a container)."""
        return self.traced_params(function) & self._named(function, self.array_positions, self.array_keywords)

    def differentiated_params(self, function: FunctionSummary) -> frozenset[str]:
        """The parameters of `function` that receive a differentiating transform's tracers: values stay
        concrete there (Python control flow works), yet storing them outside leaks a tracer."""
        if self.staged or not self.reads_params:
            return frozenset()
        free = function.positional[self.bound_positional :]
        if self.differentiates_primals:
            names = set(free) | ({function.var_positional} if function.var_positional else set())
        else:
            names = {free[p] for p in self.normalized(self.differentiated_positions, len(free))}
        return frozenset(names - self.bound_names - function.non_array_params)

    def jax_array_params(self, function: FunctionSummary) -> frozenset[str]:
        """The parameters of `function` that receive a JAX array where the call is visible."""
        return self._named(function, self.jax_positions, self.jax_keywords)

    def present_params(self, function: FunctionSummary) -> frozenset[str]:
        """The parameters of `function` that certainly receive a value other than None."""
        return self._named(function, self.present_positions | self.array_positions, self.present_keywords | self.array_keywords)

    def falsy_params(self, function: FunctionSummary) -> frozenset[str]:
        """The parameters of `function` that certainly receive a false value (not counting defaults)."""
        return self._named(function, self.falsy_positions, self.falsy_keywords)

    def _named(self, function: FunctionSummary, positions: frozenset[int], keywords: frozenset[str]) -> frozenset[str]:
        free = function.positional[self.bound_positional :]
        return frozenset({free[p] for p in positions if p < len(free)} | keywords)

    def traced_params(self, function: FunctionSummary, passed_arrays: frozenset[str] = frozenset()) -> frozenset[str]:
        """The parameters of `function` that receive tracers under this transform (for a transform that
        traces arrays only, those annotated as arrays or `passed_arrays`: given one at a visible call).

        With `positional_limit` (lax bodies: `scan` passes exactly `carry, x`; `jax.vmap(f)(x)` passes
        one argument), only that many leading parameters and `passed_keywords` are traced; the rest
        keep their Python defaults."""
        if not self.staged or not self.reads_params:
            return frozenset()
        free = function.positional[self.bound_positional :]
        excluded = {free[p] for p in self.normalized(self.static_positions | self.unbatched_positions, len(free))}
        excluded |= self.static_names | self.bound_names | function.non_array_params
        if self.positional_limit is not None:
            names = list(free[: self.positional_limit])
            names += [n for n in self.passed_keywords if n in free[self.positional_limit :] or n in function.keyword_only]
        else:
            names = [*free, *function.keyword_only]
            names += [n for n in (function.var_positional, function.var_keyword) if n is not None]
        traced = frozenset(n for n in names if n not in excluded)
        return traced & (function.array_params | passed_arrays) if self.array_params_only else traced

    def static_params(self, function: FunctionSummary) -> frozenset[str]:
        """The parameters of `function` this transform takes as static (`static_argnums`, `static_argnames`)."""
        free = function.positional[self.bound_positional :]
        return frozenset({free[p] for p in self.normalized(self.static_positions, len(free))} | self.static_names)

    def binding(self, positional: int, names: frozenset[str] = frozenset(),
                falsy: frozenset[str] = frozenset()) -> TraceSpec:
        """This spec for the function with `positional` more leading parameters and `names` bound
        (`self` of a method, the arguments given to `functools.partial`), `falsy` of them to a false literal."""
        return replace(self, bound_positional=self.bound_positional + positional, bound_names=self.bound_names | names,
                       falsy_keywords=self.falsy_keywords | falsy)

    def without_first_argument(self) -> TraceSpec:
        """This spec for a callable that drops its first argument before calling the function (Flax's
        `apply(variables, *args)`): every non-negative position moves down by one."""
        def shift(positions: frozenset[int]) -> frozenset[int]:
            return frozenset(p - 1 if p > 0 else p for p in positions if p != 0)

        limit = None if self.positional_limit is None else max(0, self.positional_limit - 1)
        return replace(
            self, static_positions=shift(self.static_positions), unbatched_positions=shift(self.unbatched_positions),
            positional_limit=limit, array_positions=shift(self.array_positions),
            present_positions=shift(self.present_positions), falsy_positions=shift(self.falsy_positions),
            jax_positions=shift(self.jax_positions),
            differentiated_positions=shift(self.differentiated_positions),
        )

    @staticmethod
    def normalized(positions: frozenset[int], count: int) -> set[int]:
        """`positions` (negative ones counted from the end) as indices into `count` parameters."""
        return {p + count if p < 0 else p for p in positions if -count <= p < count}


@dataclass(frozen=True, slots=True)
class TraceRoot:
    """`target` (a function key, or a qualified name imported from another module) is traced by `spec`,
    applied by a decorator (`decorator`, for notes that explain a finding) or a call."""

    target: str
    spec: TraceSpec
    decorator: bool = field(default=False, compare=False)


@dataclass(frozen=True, slots=True)
class CallEdge:
    """`caller` calls `callee` (a function key or imported qualified name) with `arguments`; the
    callee runs under every trace of the caller (`jax.grad(loss)(p)` inside a jitted body is an edge
    too) where the guards of the branch the call sits in hold (`unless`/`absent`/`truthy`, as for
    :class:`ParamDep`)."""

    caller: str
    callee: str
    arguments: CallArguments
    unless: frozenset[str] = frozenset()
    absent: frozenset[str] = frozenset()
    truthy: frozenset[str] = frozenset()
    differentiated: bool = False
    """The callee runs only where the caller is differentiated (a `defjvp`/`defvjp` rule of the caller)."""
    in_loop: bool = False
    """The call sits in a loop of the caller (one that does not run over a fixed list of settings)."""

    @property
    def guarded(self) -> bool:
        """Whether the call runs only in some calls of the caller (it sits in a guarded branch)."""
        return bool(self.unless or self.absent or self.truthy)


@dataclass(frozen=True, slots=True)
class ModuleSummary:
    """Everything other modules need to know about one module. `exports` maps module-level names to
    the qualified names they are bound to (imports and definitions), for re-export resolution;
    `repeated_calls` seeds which functions run repeatedly (see :attr:`Solution.repeated`), and with
    `called_twice` which run more than once (:attr:`Solution.rerun`)."""

    module: str
    path: str
    functions: dict[str, FunctionSummary] = field(default_factory=dict)
    roots: tuple[TraceRoot, ...] = ()
    edges: tuple[CallEdge, ...] = ()
    exports: dict[str, str] = field(default_factory=dict)
    repeated_calls: frozenset[str] = frozenset()
    """Callees (function keys or imported qualified names) called inside a loop somewhere in the module."""
    enables_x64: bool = False
    """The module may turn on 64-bit mode: it names the `jax_enable_x64` option or `JAX_ENABLE_X64` variable
    in a string, or calls `jax.enable_x64`/`jax.experimental.enable_x64`."""
    wide_dtypes: bool = False
    """The module names a 64-bit dtype (`jnp.float64`, `np.int64`, `"complex128"`): its lint depends on
    whether the project enables x64."""
    unfollowed: tuple[str, ...] = ()
    """Project jit wrappers the model cannot follow (see `InterpreterCore.unfollowed`), sorted: what their
    callers pass them is not checked as traced, which a verbose run says once."""
    called_twice: frozenset[str] = frozenset()
    """Callees called at two call sites of one caller that one run of it can both reach (not in alternative
    branches): `a = f(x); b = f(y)`."""
    cut: tuple[str, ...] = ()
    """The functions (keys; the module's own key for its module-level code) whose work budget ran out
    (see :mod:`jaxcheck.analyzer.semantics.budget`): their facts are unknown, and nothing is reported in
    them."""
    digest: str = field(default="", compare=False)
    """The content digest of the file the summary was built from ("" when unknown). Notes that cite a
    place in this module depend on it; equality ignores it (two texts may have the same summary)."""
