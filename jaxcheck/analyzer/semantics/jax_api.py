"""What JAX's public API does, keyed by canonical qualified names (never by spelling).

Everything here is data: which callables trace a function and how, which calls return static
Python values, which produce arrays or boolean masks. Qualified names from JAX's private modules
(`jax._src.api.jit`, `jax._src.numpy.sum`) are mapped to their public names by :func:`canonical`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

_PRIVATE_PREFIXES: tuple[tuple[str, str], ...] = (
    ("jax._src.api.", "jax."),
    ("jax._src.pjit.", "jax.experimental.pjit."),
    ("jax._src.ad_checkpoint.", "jax."),
    ("jax._src.custom_derivatives.", "jax."),
    ("jax._src.numpy.lax_numpy.", "jax.numpy."),
    ("jax._src.numpy.reductions.", "jax.numpy."),
    ("jax._src.numpy.ufuncs.", "jax.numpy."),
    ("jax._src.numpy.", "jax.numpy."),
    ("jax._src.lax.control_flow.loops.", "jax.lax."),
    ("jax._src.lax.control_flow.conditionals.", "jax.lax."),
    ("jax._src.lax.control_flow.", "jax.lax."),
    ("jax._src.lax.lax.", "jax.lax."),
    ("jax._src.lax.slicing.", "jax.lax."),
    ("jax._src.random.", "jax.random."),
    ("jax._src.nn.functions.", "jax.nn."),
    ("jax._src.scipy.", "jax.scipy."),
    ("jax._src.typing.", "jax.typing."),
    ("jax._src.core.", "jax.core."),
    ("jax.experimental.shard_map.", "jax."),
    ("jax.ad_checkpoint.", "jax."),
    ("flax.linen.module.", "flax.linen."),
    ("flax.linen.transforms.", "flax.linen."),
    ("flax.nnx.transforms.", "flax.nnx."),
)


def canonical(qualified_name: str) -> str:
    """Map a qualified name from a JAX-internal module to the public name it is exported as."""
    if qualified_name.startswith(("jax._src.", "jax.experimental.shard_map.", "jax.ad_checkpoint.", "flax.")):
        for private, public in _PRIVATE_PREFIXES:
            if qualified_name.startswith(private):
                return public + qualified_name[len(private) :]
    if qualified_name == "jax.typing.Array":
        return "jax.Array"
    return qualified_name


@dataclass(frozen=True, slots=True)
class Transform:
    """A function transformation: how it traces the function it is applied to.

    `staged` is True when the function runs on abstract tracers (jit, vmap, lax bodies), where Python
    control flow and concretization fail; grad-style transforms keep concrete values.
    `static_argnums`/`static_argnames` name the keyword arguments that mark parameters static;
    `in_axes` is the keyword whose `None` entries leave a parameter unbatched (untraced by this transform:
    `vmap`'s `in_axes`, `shard_map`'s `in_specs`);
    `in_axes_position` is where `in_axes` may also be passed positionally (`jax.vmap(f, (0, None))`);
    `array_params_only` means only parameters annotated as arrays are traced (Equinox `filter_*`).
    `caches` means the traced program is cached and reused on later calls (jit-like), so anything the
    Python body reads or does at trace time is frozen into it.
    """

    name: str
    staged: bool
    static_argnums: tuple[str, ...] = ()
    static_argnames: tuple[str, ...] = ()
    in_axes: str | None = None
    in_axes_position: int | None = None
    array_params_only: bool = False
    caches: bool = False
    in_axes_call_maps_all: bool = False
    """A call given as the whole `in_axes` (`in_specs=P("x")`) maps every argument."""
    differentiates: bool = False
    """It passes (concrete) tracers to the differentiated parameters: the positions named by `argnums`
    (default the first), or with `primals` every positional parameter (`jvp`, `vjp`, `linearize`)."""
    argnums: str | None = None
    primals: bool = False


SELF_FLATTENING = ("register_pytree_node_class", "register_pytree_with_keys_class")
"""Decorators (by name ending) of classes that flatten themselves with their own methods."""
PYTREE_REGISTRATIONS = frozenset({
    f"jax.tree_util.{name}" for name in
    ("register_dataclass", "register_pytree_node", "register_pytree_with_keys", "register_static")
})
"""Calls that register a class as a pytree with its own choice of leaves (`register_dataclass(C, data_fields,
meta_fields)`)."""
CUSTOM_DERIVATIVES = frozenset({"jax.custom_jvp", "jax.custom_vjp"})
"""Decorators whose function takes differentiation rules (`defjvp`, `defvjp`), traced with it."""
_JIT = Transform("jax.jit", True, ("static_argnums",), ("static_argnames",), caches=True)

TRANSFORMS: dict[str, Transform] = {
    "jax.jit": _JIT,
    "jax.experimental.pjit.pjit": Transform("pjit", True, ("static_argnums",), ("static_argnames",), caches=True),
    # `pmap` traces a broadcast argument (`in_axes=None`) too, unlike `vmap`: only static ones stay Python values.
    "jax.pmap": Transform("jax.pmap", True, ("static_broadcasted_argnums",), (), caches=True),
    "jax.vmap": Transform("jax.vmap", True, (), (), "in_axes", 1),
    "jax.checkpoint": Transform("jax.checkpoint", True, ("static_argnums",)),
    "jax.remat": Transform("jax.remat", True, ("static_argnums",)),
    # A custom_jvp/custom_vjp function runs eagerly on concrete values unless its caller is traced.
    "jax.custom_jvp": Transform("jax.custom_jvp", False, ("nondiff_argnums",), ("nondiff_argnames",)),
    "jax.custom_vjp": Transform("jax.custom_vjp", False, ("nondiff_argnums",), ("nondiff_argnames",)),
    "jax.shard_map": Transform("shard_map", True, in_axes="in_specs", caches=True, in_axes_call_maps_all=True),
    "jax.eval_shape": Transform("jax.eval_shape", True),
    "jax.make_jaxpr": Transform("jax.make_jaxpr", True, ("static_argnums",)),
    "equinox.filter_jit": Transform("equinox.filter_jit", True, array_params_only=True, caches=True),
    "equinox.filter_vmap": Transform("equinox.filter_vmap", True, array_params_only=True),
    "equinox.filter_pmap": Transform("equinox.filter_pmap", True, array_params_only=True, caches=True),
    "flax.linen.jit": Transform("flax.linen.jit", True, ("static_argnums",), caches=True),
    "flax.nnx.jit": Transform("flax.nnx.jit", True, ("static_argnums",), ("static_argnames",), caches=True),
    "flax.nnx.vmap": Transform("flax.nnx.vmap", True, (), (), "in_axes", 1),
    "jax.grad": Transform("jax.grad", False, differentiates=True, argnums="argnums"),
    "jax.value_and_grad": Transform("jax.value_and_grad", False, differentiates=True, argnums="argnums"),
    "jax.jacfwd": Transform("jax.jacfwd", False, differentiates=True, argnums="argnums"),
    "jax.jacrev": Transform("jax.jacrev", False, differentiates=True, argnums="argnums"),
    "jax.jacobian": Transform("jax.jacobian", False, differentiates=True, argnums="argnums"),
    "jax.hessian": Transform("jax.hessian", False, differentiates=True, argnums="argnums"),
    "jax.jvp": Transform("jax.jvp", False, differentiates=True, primals=True),
    "jax.vjp": Transform("jax.vjp", False, differentiates=True, primals=True),
    "jax.linearize": Transform("jax.linearize", False, differentiates=True, primals=True),
    "equinox.filter_grad": Transform("equinox.filter_grad", False, differentiates=True),
    "equinox.filter_value_and_grad": Transform("equinox.filter_value_and_grad", False, differentiates=True),
    "flax.nnx.grad": Transform("flax.nnx.grad", False, differentiates=True, argnums="argnums"),
    "flax.nnx.value_and_grad": Transform("flax.nnx.value_and_grad", False, differentiates=True, argnums="argnums"),
}

STATE_LIFTING_TRANSFORMS = frozenset(t.name for t in TRANSFORMS.values() if t.name.startswith("flax.nnx."))
"""Transforms that carry the updates of the NNX objects they are given out of the trace."""
IDENTITY_CACHED = frozenset({"jax.jit", "pjit", "flax.nnx.jit"})
"""Transforms whose compile cache is keyed by the function object's identity: a bound method, new at
each read, misses it (checked under JAX 0.10.2: `jax.pmap` and `equinox.filter_jit` compare bound
methods by equality and hit)."""
WRAPPER_CACHED = frozenset({"flax.nnx.jit"})
"""Transforms that keep the compiled program in the wrapper each application returns: applying one again,
even to the same module-level function, traces and compiles anew (checked under Flax 0.12.8: three
`nnx.jit(f)(x)` calls trace `f` three times; `jax.jit`, `jax.pmap` and `equinox.filter_jit` once)."""
ATTRIBUTE_DECORATORS = frozenset({"builtins.property", "functools.cached_property"})
"""Decorators that make a method an attribute: reading it gives the method's value, not a bound method."""
DIFFERENTIATING = frozenset(t.name for t in TRANSFORMS.values() if t.differentiates)
"""The display names of the transforms that differentiate the function they trace."""
CACHING_TRANSFORMS = frozenset(t.name for t in TRANSFORMS.values() if t.caches)
"""Transforms that compile once and reuse the program for every later call of the same function."""

STATIC_ARGNAMES_TRANSFORMS = frozenset(t.name for t in TRANSFORMS.values() if "static_argnames" in t.static_argnames)
"""Transforms that take `static_argnames=` (so a "mark it static" hint is actionable)."""


@dataclass(frozen=True, slots=True)
class BodySlot:
    """Where a lax control-flow primitive takes a function it traces: position and keyword.

    `arity` is how many positional arguments the primitive passes to it (`scan` calls `f(carry, x)`),
    None when it passes the caller's operands through (`cond`, `switch`). `sequence` means the
    argument is a list or tuple of functions (`lax.switch` branches).
    """

    position: int
    keyword: str
    arity: int | None
    sequence: bool = False


LAX_BODIES: dict[str, tuple[BodySlot, ...]] = {
    "jax.lax.scan": (BodySlot(0, "f", 2),),
    "jax.lax.fori_loop": (BodySlot(2, "body_fun", 2),),
    "jax.lax.while_loop": (BodySlot(0, "cond_fun", 1), BodySlot(1, "body_fun", 1)),
    "jax.lax.cond": (BodySlot(1, "true_fun", None), BodySlot(2, "false_fun", None)),
    "jax.lax.switch": (BodySlot(1, "branches", None, sequence=True),),
    "jax.lax.map": (BodySlot(0, "f", 1),),
    "jax.lax.associative_scan": (BodySlot(0, "fn", 2),),
}

PARTIAL = frozenset({"functools.partial"})

TRACER_TYPES = frozenset({"jax.core.Tracer", "jax.Array", "jax.numpy.ndarray"})
"""`isinstance(x, T)` with one of these may be true of a tracer; any other type proves `x` concrete."""

CONTAINER_ANNOTATIONS = frozenset(
    f"{module}.{name}"
    for module, names in (
        ("builtins", ("dict", "list", "tuple", "set", "frozenset")),
        ("typing", ("Dict", "List", "Tuple", "Set", "FrozenSet", "Mapping", "MutableMapping")),
        ("collections.abc", ("Mapping", "MutableMapping")),
    )
    for name in names
)
"""Annotations of Python containers: the truth value of such a parameter is its (static) length."""

NON_ARRAY_ANNOTATIONS = frozenset(
    {
        "builtins.str", "builtins.bytes", "builtins.type", "builtins.None", "typing.Callable",
        "collections.abc.Callable", "jax.typing.DTypeLike", "numpy.dtype", "numpy.typing.DTypeLike",
        "jax.sharding.Mesh", "jax.sharding.Sharding", "jax.sharding.NamedSharding", "jax.sharding.PartitionSpec",
    }
)
"""Annotations of parameters that can never hold a tracer: jit would reject such a non-static argument."""

JAX_ARRAY_ANNOTATIONS = frozenset({"jax.Array", "jax.numpy.ndarray", "chex.ArrayDevice", "jaxtyping.Array"})
"""Annotations that admit JAX arrays only."""
ARRAY_ANNOTATIONS = JAX_ARRAY_ANNOTATIONS | {"jax.typing.ArrayLike", "chex.Array"}
"""Annotations of arrays: JAX arrays, or (`ArrayLike`, `chex.Array`) NumPy arrays and scalars too."""
JAXTYPING_DTYPES = frozenset(
    f"jaxtyping.{name}"
    for name in ("Float", "Int", "Bool", "Shaped", "Num", "Real", "Inexact", "Integer", "UInt", "Complex", "Key")
)

ARRAY_NAMESPACES = frozenset(
    {"jax.numpy", "jax.numpy.linalg", "jax.numpy.fft", "jax.lax", "jax.nn", "jax.random", "jax.image"}
)

STATIC_RESULT_CALLS = frozenset(
    {f"jax.numpy.{name}" for name in (
        "shape", "ndim", "size", "result_type", "dtype", "issubdtype", "iinfo", "finfo", "promote_types",
        "isscalar", "iscomplexobj", "isrealobj", "can_cast", "isdtype", "broadcast_shapes", "broadcast_shape",
    )}
    | {f"jax.lax.{name}" for name in ("broadcast_shapes", "dtype", "axis_size")}
    | {"jax.random.key_impl"}
)

BOOL_RESULT_CALLS = frozenset(
    {f"jax.numpy.{name}" for name in (
        "isnan", "isinf", "isfinite", "isneginf", "isposinf", "isclose", "isin", "signbit",
        "logical_and", "logical_or", "logical_not", "logical_xor",
        "greater", "greater_equal", "less", "less_equal", "equal", "not_equal", "any", "all",
    )}
    | {f"jax.lax.{name}" for name in ("eq", "ne", "lt", "le", "gt", "ge", "is_finite")}
)

ARRAY_VIEW_ATTRIBUTES = frozenset({"T", "mT", "real", "imag", "at"})

ARRAY_METHODS = frozenset(
    {
        "sum", "mean", "max", "min", "prod", "std", "var", "argmax", "argmin", "cumsum", "cumprod",
        "reshape", "astype", "transpose", "ravel", "flatten", "squeeze", "clip", "round", "conj",
        "conjugate", "dot", "take", "repeat", "swapaxes", "sort", "argsort", "any", "all", "copy",
        "nonzero", "ptp", "trace", "diagonal", "__getitem__",
        # `.at[...]` update methods
        "set", "add", "subtract", "multiply", "divide", "power", "get", "apply",
    }
)
BOOL_METHODS = frozenset({"any", "all"})
AXIS_FIRST_METHODS = frozenset(
    {"sum", "mean", "max", "min", "prod", "std", "var", "argmax", "argmin", "cumsum", "cumprod", "any", "all",
     "ptp", "squeeze", "sort", "argsort"}
)
"""Array methods whose first argument is `axis` (`x.mean(axis)`), which must be static under a transform."""


def is_array_call(qualified_name: str) -> bool:
    """True for public functions of JAX's array namespaces (`jax.numpy.sum`, `jax.scipy.special.erf`),
    which return arrays staged as tracers under jit. Private helpers and submodules are unknown."""
    namespace, _, function = qualified_name.rpartition(".")
    if not function or function.startswith("_"):
        return False
    if namespace not in ARRAY_NAMESPACES and not (
        namespace.startswith("jax.scipy.") and not any(part.startswith("_") for part in namespace.split("."))
    ):
        return False
    return qualified_name not in STATIC_RESULT_CALLS and qualified_name not in LAX_BODIES


PURE_CALL_PREFIXES = ("jax.", "builtins.", "numpy.", "math.", "logging.")
"""Callables that never change the objects passed to them, nor reach into a project's objects."""
STOP_GRADIENT = "jax.lax.stop_gradient"
NON_ARRAY_RESULT_CALLS = frozenset(
    {f"jax.numpy.{name}" for name in (
        "split", "array_split", "hsplit", "vsplit", "dsplit", "meshgrid", "broadcast_arrays", "atleast_1d",
        "atleast_2d", "atleast_3d", "gradient", "vectorize", "frompyfunc", "ndarray",
    )}
    | {f"jax.lax.{name}" for name in (
        "stop_gradient", "psum", "pmean", "pmax", "pmin", "all_gather", "ppermute", "pshuffle", "all_to_all",
        "psum_scatter", "pbroadcast", "optimization_barrier", "with_sharding_constraint", "custom_root",
        "custom_linear_solve", "reduce", "tie_in",
    )}
)
"""Array-namespace calls that return lists, pytrees of their input, or callables rather than one array."""

TUPLE_RESULT_CALLS = frozenset(
    {f"jax.numpy.{name}" for name in (
        "nonzero", "unravel_index", "divmod", "frexp", "modf", "tril_indices", "triu_indices", "diag_indices",
        "tril_indices_from", "triu_indices_from", "diag_indices_from", "mask_indices", "histogram",
        "histogram2d", "histogramdd", "unique_all", "unique_counts", "unique_inverse",
    )}
    | {f"jax.numpy.linalg.{name}" for name in ("eigh", "eig", "svd", "qr", "slogdet", "lstsq")}
    | {f"jax.scipy.linalg.{name}" for name in ("eigh", "svd", "qr", "lu", "lu_factor", "schur", "polar")}
    | {f"jax.lax.{name}" for name in ("top_k", "sort_key_val", "split")}
)
"""Array-namespace calls that dispatch JAX work and return a tuple (or named tuple) of arrays, by default or
always (`jnp.linalg.eigh`, `jnp.nonzero`, `lax.top_k`): JAX work, but not one array (no `.block_until_ready()`,
no `.at[...]`). Calls whose result is a tuple only with some arguments (`jnp.where(c)`, `jnp.unique(...,
return_counts=True)`, `jnp.indices(..., sparse=True)`) stay single arrays."""

AT_METHODS = frozenset({"set", "add", "subtract", "multiply", "divide", "power", "min", "max", "apply", "get"})
"""Methods of `x.at[...]`: each returns a new array (`get` reads, the others update)."""


def returns_array(qualified_name: str) -> bool:
    """True for calls known to return a single JAX array (`jax.numpy.zeros`, `jax.random.normal`)."""
    return (
        is_array_call(qualified_name) and qualified_name not in NON_ARRAY_RESULT_CALLS
        and qualified_name not in TUPLE_RESULT_CALLS
    )


def dispatches_work(qualified_name: str) -> bool:
    """True for calls that queue JAX computation and return its arrays (one, or a tuple of them) before it
    finishes; key management (`jax.random.key`, `split`, `fold_in`) is left out, as it is not work worth
    timing."""
    return (
        (returns_array(qualified_name) or qualified_name in TUPLE_RESULT_CALLS)
        and qualified_name not in KEY_SOURCES
    )


# PRNG keys (JAX401): which `jax.random` calls create keys, which leave their key argument unconsumed,
# and which other callables never consume a key passed to them.
KEY_SOURCES = frozenset(
    f"jax.random.{name}" for name in ("key", "PRNGKey", "split", "fold_in", "wrap_key_data", "clone")
)
SEEDED_KEY_SOURCES = frozenset({"jax.random.key", "jax.random.PRNGKey"})
KEY_FOLD = "jax.random.fold_in"
KEY_SPLIT = "jax.random.split"
"""Derives a key from a key and data: calls passing different data draw different bits."""
DERIVED_KEY_SOURCES = SEEDED_KEY_SOURCES | {KEY_FOLD}
"""Calls whose key is a function of their arguments alone: the same arguments give the same key."""
BATCHING_TRANSFORMS = frozenset({"jax.vmap", "flax.nnx.vmap", "equinox.filter_vmap"})
"""Staged transforms that trace only the values they map: an array operation on anything else runs
eagerly on concrete values (only jit-like transforms and lax bodies stage every operation: omnistaging)."""
PER_ITEM_TRANSFORMS = BATCHING_TRANSFORMS | frozenset({
    "jax.lax.scan", "jax.lax.fori_loop", "jax.lax.while_loop", "jax.lax.map",
})
"""Transforms (display names) whose function runs once per example of a batch or per loop step: a key
it seeds with the same value every time gives every example (or step) the same draws."""
LOOP_CARRIES: dict[str, Literal["all", "first"]] = {
    "jax.lax.scan": "first", "jax.lax.fori_loop": "all", "jax.lax.while_loop": "all",
}
"""Lax loops whose body returns the next step's carry: all of its result, or the first of the pair."""
KEYLESS_RANDOM = SEEDED_KEY_SOURCES | {"jax.random.wrap_key_data"}
"""`jax.random` calls whose first argument is a seed or key data, not a key."""
NON_CONSUMING_RANDOM = frozenset(
    f"jax.random.{name}"
    for name in ("key", "PRNGKey", "fold_in", "wrap_key_data", "clone", "key_data", "key_impl", "default_prng_impl")
)
KEY_KEYWORDS = frozenset({"key", "rng", "rng_key", "prng_key", "prngkey"})
"""Keywords through which JAX-ecosystem callables take a PRNG key (`eqx.nn.Linear(2, 2, key=k)`); a
longer `*_key` (`sort_key=`, `strict_map_key=`) names something else."""
KEY_TAKING_LIBRARIES = ("equinox.", "flax.", "haiku.", "numpyro.", "distrax.", "optax.", "blackjax.", "diffrax.",
                        "jraph.", "jax.random.", "penzai.", "levanter.", "jmp.", "rlax.", "chex.")
"""Libraries whose `key=`/`rng=` is a PRNG key; elsewhere `key=` is a sort key (`sorted`, `itertools.groupby`,
`heapq.nlargest`, pandas) and `rng=` may be a NumPy generator."""
KEY_NEUTRAL_PREFIXES = ("builtins.", "jax.", "numpy.", "logging.", "typing.")
"""Callables that read, print, store or move a key without drawing from it (`print`, `isinstance`,
`jax.device_put`, JAX internals); `jax.random` and the lax bodies are decided separately."""


def is_random_call(qualified_name: str | None) -> bool:
    """A public function of the `jax.random` namespace (not `jax.random.prng.*` internals)."""
    if qualified_name is None:
        return False
    namespace, _, function = qualified_name.rpartition(".")
    return namespace == "jax.random" and not function.startswith("_")


ABSTRACT_EVALUATION = frozenset(
    {"jax.eval_shape", "jax.make_jaxpr", "equinox.filter_eval_shape", "equinox.filter_make_jaxpr", "flax.nnx.eval_shape"}
)
"""Calls that only trace their function for shapes: a key passed through them draws nothing
(`jax.eval_shape(init, key)`; `jax.make_jaxpr(init)(key)` calls what they return the same way)."""
STAGING_METHODS = frozenset({"lower", "trace", "eval_shape"})
"""Methods of a jitted function that trace it without running it (`jax.jit(init).lower(key)`)."""


KEY_STORING_CALLS = frozenset({"dataclasses.replace", "copy.replace"})
"""Calls that store their arguments in a new object (`dataclasses.replace(state, key=k)`): a key moved there
is drawn from where it is read back, not here."""
STORING_METHODS = frozenset({"replace", "_replace"})
"""Methods of library objects returning a copy with fields replaced (`flax.struct`, `chex`, `NamedTuple`):
`state.replace(key=k)` stores the key."""


def consumes_key_argument(qualified_name: str | None) -> bool:
    """True when passing a key to this callable (None: unknown, a method, a user helper) may draw
    random numbers from it; `jax.random` samplers and `split` are handled by their first argument."""
    if qualified_name is None:
        return True
    if qualified_name in ABSTRACT_EVALUATION or qualified_name in KEY_STORING_CALLS:
        return False
    if qualified_name in LAX_BODIES:
        return True  # the key flows into a user body
    return not qualified_name.startswith(KEY_NEUTRAL_PREFIXES)


MEMOIZING_DECORATORS = frozenset({"cache", "lru_cache", "cached", "memoize", "memoized", "weakref_lru_cache"})
"""Last components of decorator names that memoize a function: it runs once per distinct argument, so a
transform it applies is not repeated per call (`functools.cache`, JAX's own `util.cache()`)."""


HOST_CALLBACKS = frozenset(
    {
        "jax.debug.callback", "jax.pure_callback", "jax.experimental.io_callback",
        "jax.experimental.host_callback.call", "jax.experimental.host_callback.id_tap",
        "jax.experimental.host_callback.id_print",
    }
)
"""Calls whose first argument runs on the host with concrete values, on every call (not traced)."""

REF_KERNEL_CALLS = frozenset(
    {
        "jax.experimental.pallas.pallas_call", "jax.experimental.pallas.run_scoped",
        "jax.experimental.pallas.tpu.run_scoped", "jax.experimental.pallas.tpu.emit_pipeline",
        "jax.experimental.pallas.mosaic_gpu.emit_pipeline", "jax.experimental.pallas.core_map",
    }
)
"""Calls whose first argument is a Pallas kernel (or scoped body): its parameters are mutable Refs, so
`o_ref[...] = v` is the API, not an in-place update of an immutable array."""

CONCRETE_RESULT_CALLS = frozenset({"jax.lax.axis_size", "jax.lax.axis_index_size"})
"""JAX calls that return a Python int even inside traced code."""
GRADIENT_TRANSFORMS = frozenset({
    "jax.grad", "jax.jacfwd", "jax.jacrev", "jax.jacobian", "jax.hessian", "equinox.filter_grad", "flax.nnx.grad",
})
"""Transforms whose result, without `argnums`/`has_aux`, has the structure of the first argument: the
gradient of a function of one array is an array."""
ARRAY_PRESERVING_CALLS = frozenset({"jax.device_put", "jax.block_until_ready"})
"""JAX calls that return a JAX array when given one (or a NumPy array): pytree functions of one leaf."""
CONCRETE_METHODS = frozenset({"item", "tolist", "__index__", "__int__", "__float__", "__bool__"})
"""Array methods that convert to a Python value (and fail on an abstract tracer)."""
STRUCTURE_METHODS = frozenset({"keys"})
"""Container methods that return structure, never the leaves: their result holds no tracer."""
CONSTANT_COLLECTIVES = frozenset({"jax.lax.psum"})
"""Collectives that return a Python value when given one (`lax.psum(1, "i")` is the axis size)."""

X64_SWITCHES = frozenset(
    {"jax.enable_x64", "jax.experimental.enable_x64", "jax.experimental.x64_context.enable_x64",
     "jax.experimental.enable_x64.enable_x64"}
)
"""Calls (and context managers) that turn 64-bit mode on; `jax.config.update("jax_enable_x64", ...)` is
recognised by its option string."""
_WIDE_TYPES = ("float64", "int64", "uint64", "complex128", "double", "cdouble")
WIDE_DTYPES = frozenset(f"{namespace}.{name}" for namespace in ("numpy", "jax.numpy") for name in _WIDE_TYPES)
"""64-bit dtypes, which JAX truncates to 32 bits unless x64 is enabled."""
WIDE_DTYPE_STRINGS = frozenset({*_WIDE_TYPES[:4], "f8", "i8", "u8", "c16", "<f8", "<i8", "<u8", "<c16"})
"""Dtype strings naming a 64-bit type (`"float64"`, `"f8"`)."""
EAGER_MODULES = frozenset(
    {"jax", "jax.tree", "jax.tree_util", "jax.numpy", "jax.lax", "jax.random", "jax.sharding", "jax.core", "jax.nn",
     "jax.debug", "jax.dtypes", "jax.errors", "jax.interpreters.xla", "jax.interpreters.pxla",
     "jax.interpreters.ad", "jax.interpreters.partial_eval"}
)
"""Modules `import jax` loads: `jax.tree.map` works after `import jax` alone (a rename into any other
module would need an import of its own)."""
TIMERS = frozenset(
    {"time.time", "time.perf_counter", "time.monotonic", "time.process_time", "time.time_ns",
     "time.perf_counter_ns", "time.monotonic_ns", "time.process_time_ns", "timeit.default_timer"}
)
"""Clock reads that time a piece of host code."""
BLOCKING_CALLS = frozenset({"jax.block_until_ready", "jax.device_get"})
"""Calls that wait for their arguments' computations (besides any host conversion)."""
COMPILE_TIME_EVAL = frozenset({"jax.ensure_compile_time_eval", "jax.core.eval_context"})
"""Context managers under which JAX computes operations on concrete values at once instead of staging
them: inside, `jnp.arange(8) ** 2` is a concrete array even in a jitted function (values from traced
arguments stay tracers)."""
EXPECTED_RAISES = frozenset(
    {"pytest.raises", "numpy.testing.assert_raises", "numpy.testing.assert_raises_regex"}
)
"""Context managers that expect their block to raise (and swallow the exception): a test puts the
statement that raises last."""
CONCRETIZATION_ERRORS = frozenset(
    {"builtins.TypeError"}
    | {f"jax.errors.{name}" for name in ("ConcretizationTypeError", "TracerBoolConversionError",
                                         "TracerIntegerConversionError", "TracerArrayConversionError")}
)
"""Exception types a handler names when it expects the error of a concretization (`bool()`, `int()`, `if`
on a tracer): JAX raises subclasses of `TypeError`. A broad `except Exception:` is meant for other
errors; under a transform its fallback would silently be the only path that runs."""
EXPECTED_RAISE_METHODS = frozenset({"assertRaises", "assertRaisesRegex"})
"""`unittest.TestCase` (and `absltest`) methods that, used as context managers, expect their block to raise."""
