"""JAX APIs that JAX has removed, keyed by canonical qualified name: the data of JAX601.

Every entry cites JAX's CHANGELOG (Pallas names: the Pallas changelog; names a changelog does not list:
the removal table in the source of the JAX release that removed them): the version that removed the
name (not the one that deprecated it), the replacement named there, and whether that replacement is a
one-to-one rename (same call signature and meaning, so a fix may apply it). Names JAX still exports (`jax.host_count`, kept
as an alias of `jax.process_count`) are not here: only removals are.

A `module` entry covers everything under it (`jax.experimental.host_callback.id_tap`), unless a more
specific entry names the member.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RemovedApi:
    """One removed name: `removed_in` is the first JAX release without it; `replacement` the qualified
    name to use instead (None: nothing public replaces it); `one_to_one` when the replacement is a
    plain rename; `note` says what to do when it is not."""

    name: str
    removed_in: str
    replacement: str | None = None
    one_to_one: bool = False
    note: str = ""
    module: bool = False


@dataclass(frozen=True, slots=True)
class RemovedKeyword:
    """A keyword argument a JAX callable no longer accepts, renamed one-to-one to `replacement`."""

    callables: frozenset[str]
    keyword: str
    removed_in: str
    replacement: str


def _renamed(removed_in: str, pairs: dict[str, str]) -> tuple[RemovedApi, ...]:
    return tuple(RemovedApi(name, removed_in, new, one_to_one=True) for name, new in pairs.items())


_TREE_NOTE = "`jax.tree` needs JAX 0.4.25 or newer; `jax.tree_util` has the same functions for older releases"

REMOVED_APIS: tuple[RemovedApi, ...] = (
    # 0.6.0: "From jax: jax.treedef_is_leaf, jax.tree_flatten, jax.tree_map, jax.tree_leaves,
    # jax.tree_structure, jax.tree_transpose, and jax.tree_unflatten" (deprecated in 0.3.15 / 0.4.26).
    *(
        RemovedApi(f"jax.tree_{name}", "0.6.0", f"jax.tree.{name}", one_to_one=True, note=_TREE_NOTE)
        for name in ("map", "flatten", "leaves", "structure", "transpose", "unflatten")
    ),
    RemovedApi("jax.treedef_is_leaf", "0.6.0", "jax.tree_util.treedef_is_leaf", one_to_one=True),
    # 0.3.16: "jax.tree_util.tree_multimap has been removed ... jax.tree_util.tree_map is a direct replacement".
    RemovedApi("jax.tree_util.tree_multimap", "0.3.16", "jax.tree_util.tree_map", one_to_one=True),
    RemovedApi("jax.tree_multimap", "0.3.16", "jax.tree.map", one_to_one=True, note=_TREE_NOTE),
    # 0.4.35: "jax.experimental.host_callback ... Now we removed it" (deprecated in 0.4.26): its functions
    # raise NotImplementedError since then; 0.8.0 removed the module itself (importing it fails).
    RemovedApi("jax.experimental.host_callback", "0.4.35", None, module=True,
               note="use `jax.debug.callback`, `jax.pure_callback` or `jax.experimental.io_callback`"),
    RemovedApi("jax.experimental.host_callback.id_tap", "0.4.35", "jax.debug.callback",
               note="`jax.debug.callback(fn, x)` passes no `transforms` and returns None: return `x` yourself"),
    RemovedApi("jax.experimental.host_callback.id_print", "0.4.35", "jax.debug.print",
               note="`jax.debug.print` takes a format string: `jax.debug.print(\"{}\", x)`"),
    RemovedApi("jax.experimental.host_callback.call", "0.4.35", "jax.pure_callback",
               note="`jax.pure_callback(fn, result_shape_dtypes, *args)` needs the result's shape and dtype; "
                    "use `jax.experimental.io_callback` for side effects"),
    # 0.4.31: "xmap has been deleted. Please use shard_map as the replacement"; the `jax.experimental.maps`
    # module was deprecated with it in 0.4.26.
    RemovedApi("jax.experimental.maps", "0.4.31", None, module=True,
               note="use `jax.shard_map`, or `jax.vmap` with `spmd_axis_name`"),
    RemovedApi("jax.experimental.maps.xmap", "0.4.31", "jax.shard_map",
               note="rewrite with `jax.shard_map` (or `jax.vmap` with `spmd_axis_name`)"),
    # 0.4.11: "jax.experimental.maps.Mesh: use jax.sharding.Mesh", and the other sharding renames.
    *_renamed("0.4.11", {
        "jax.experimental.maps.Mesh": "jax.sharding.Mesh",
        "jax.experimental.PartitionSpec": "jax.sharding.PartitionSpec",
        "jax.experimental.pjit.NamedSharding": "jax.sharding.NamedSharding",
        "jax.experimental.pjit.PartitionSpec": "jax.sharding.PartitionSpec",
        "jax.interpreters.pxla.PartitionSpec": "jax.sharding.PartitionSpec",
        "jax.interpreters.pxla.Mesh": "jax.sharding.Mesh",
        "jax.interpreters.xla.Buffer": "jax.Array",
        "jax.interpreters.xla.Device": "jax.Device",
        "jax.interpreters.xla.DeviceArray": "jax.Array",
        "jax.interpreters.xla.device_put": "jax.device_put",
        "jax.xla.DeviceArray": "jax.Array",
        "jax.xla.Device": "jax.Device",
    }),
    # 0.4.14: "The following APIs have been removed after previous deprecation". (`jax.ad`, removed then
    # too, is a public namespace again in current JAX, so it is not listed.)
    *_renamed("0.4.14", {
        "jax.numpy.DeviceArray": "jax.Array",
        "jax.interpreters.pxla.ShardedDeviceArray": "jax.Array",
        "jax.interpreters.pxla.device_put": "jax.device_put",
        "jax.interpreters.pxla.make_sharded_device_array": "jax.make_array_from_single_device_arrays",
        "jax.ShapedArray": "jax.core.ShapedArray",
    }),
    *(
        RemovedApi(name, "0.4.14", new, one_to_one=True, module=True)
        for name, new in {
            "jax.partial_eval": "jax.interpreters.partial_eval",
            "jax.pxla": "jax.interpreters.pxla",
            "jax.xla": "jax.interpreters.xla",
        }.items()
    ),
    RemovedApi("jax.curry", "0.4.14", None, note="use `lambda f: functools.partial(functools.partial, f)`"),
    # 0.4.24: "From jax.random: PRNGKeyArray, KeyArray, ..."; "The jax.linear_util submodule and all its
    # contents"; "The jax.prng submodule and all its contents" (moved to jax.extend in 0.4.16).
    RemovedApi("jax.random.KeyArray", "0.4.24", "jax.Array",
               note="annotate keys as `jax.Array`; test for a typed key with "
                    "`jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)`"),
    RemovedApi("jax.random.PRNGKeyArray", "0.4.24", "jax.Array",
               note="annotate keys as `jax.Array`; test for a typed key with "
                    "`jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)`"),
    RemovedApi("jax.linear_util", "0.4.24", "jax.extend.linear_util", one_to_one=True, module=True),
    RemovedApi("jax.prng", "0.4.24", "jax.extend.random", module=True,
               note="its public parts live in `jax.extend.random`"),
    # 0.4.16/0.4.17: `jax.abstract_arrays` and its contents removed.
    RemovedApi("jax.abstract_arrays", "0.4.17", None, module=True, note="see `jax.core`"),
    *_renamed("0.4.16", {
        "jax.abstract_arrays.ShapedArray": "jax.core.ShapedArray",
        "jax.numpy.alltrue": "jax.numpy.all",
        "jax.numpy.sometrue": "jax.numpy.any",
        "jax.numpy.product": "jax.numpy.prod",
        "jax.numpy.cumproduct": "jax.numpy.cumprod",
    }),
    # 0.4.24: "from jax.numpy: NINF, NZERO, PZERO, row_stack, issubsctype, trapz, and in1d".
    *_renamed("0.4.24", {"jax.numpy.row_stack": "jax.numpy.vstack"}),
    RemovedApi("jax.numpy.trapz", "0.4.24", "jax.numpy.trapezoid",
               note="`trapezoid` takes the same arguments; it needs JAX 0.4.26 or newer"),
    RemovedApi("jax.numpy.in1d", "0.4.24", "jax.numpy.isin", note="`isin` keeps the shape of its first argument"),
    RemovedApi("jax.numpy.NINF", "0.4.24", None, note="use `-jnp.inf`"),
    RemovedApi("jax.numpy.PZERO", "0.4.24", None, note="use `0.0`"),
    RemovedApi("jax.numpy.NZERO", "0.4.24", None, note="use `-0.0`"),
    RemovedApi("jax.numpy.issubsctype", "0.4.24", "jax.numpy.issubdtype", note="use `jnp.issubdtype(x.dtype, t)`"),
    # 0.4.9: "The function jax.numpy.msort has been removed ... Use jnp.sort(a, axis=0) instead".
    RemovedApi("jax.numpy.msort", "0.4.9", "jax.numpy.sort", note="use `jnp.sort(a, axis=0)`"),
    # 0.4.38: "from jax.numpy: round_".
    RemovedApi("jax.numpy.round_", "0.4.38", "jax.numpy.round", one_to_one=True),
    # 0.4.29: "from jax.lax: tie_in" (a no-op since 0.2.0); "The deprecated jax.config submodule has been
    # removed"; 0.4.25: "the jax.config.config object" removed.
    RemovedApi("jax.lax.tie_in", "0.4.29", None, note="it has done nothing since JAX 0.2.0: pass the value on"),
    RemovedApi("jax.config.config", "0.4.25", "jax.config", one_to_one=True,
               note="`jax.config` is the configuration object"),
    RemovedApi("jax.nn.normalize", "0.4.29", "jax.nn.standardize", one_to_one=True),
    # 0.4.31: "The previously-deprecated function jax.random.shuffle has been removed".
    RemovedApi("jax.random.shuffle", "0.4.31", "jax.random.permutation",
               note="use `jax.random.permutation(key, x, independent=True)`"),
    # 0.4.34: "jax.xla_computation is deleted"; 0.4.36: "jax.clear_backends was removed", "The deprecated
    # module jax.experimental.export has been removed"; 0.5.0: "The jax.experimental.array_api module has
    # been removed".
    RemovedApi("jax.xla_computation", "0.4.34", None,
               note="use the AOT API: `jax.jit(fn).lower(*args).compiler_ir('hlo')`"),
    RemovedApi("jax.clear_backends", "0.4.36", "jax.clear_caches",
               note="use `jax.clear_caches()` to drop compilation caches"),
    RemovedApi("jax.experimental.export", "0.4.36", "jax.export", module=True,
               note="see the migration guide of `jax.export`"),
    RemovedApi("jax.experimental.array_api", "0.5.0", "jax.numpy", module=True,
               note="`jax.numpy` implements the array API itself"),
    # 0.3.16: "Removed jax.experimental.stax; it has long been a deprecated alias of
    # jax.example_libraries.stax" (same for optimizers); "jax.experimental.loops has been removed";
    # "jax.mask jax.shapecheck APIs have been removed".
    RemovedApi("jax.experimental.stax", "0.3.16", "jax.example_libraries.stax", one_to_one=True, module=True),
    RemovedApi("jax.experimental.optimizers", "0.3.16", "jax.example_libraries.optimizers", one_to_one=True,
               module=True),
    RemovedApi("jax.experimental.loops", "0.3.16", None, module=True,
               note="use `jax.lax.fori_loop`, `scan` or `while_loop`"),
    RemovedApi("jax.mask", "0.3.16", None),
    RemovedApi("jax.shapecheck", "0.3.16", None),
    # 0.3.18: "jax.soft_pmap has been deleted"; 0.4.2: "Deleted jax.experimental.callback".
    RemovedApi("jax.soft_pmap", "0.3.18", None, note="use `jax.jit` with shardings, or `jax.shard_map`"),
    RemovedApi("jax.experimental.callback", "0.4.2", None, module=True),
    # 0.3.2: "The functions jax.ops.index_update, jax.ops.index_add, which were deprecated in 0.2.22, have
    # been removed" (with `index` and the other `index_*` functions deprecated alongside them).
    *(
        RemovedApi(f"jax.ops.{name}", "0.3.2", None, note=f"use the `.at` property: {at}")
        for name, at in {
            "index": "`x.at[idx]`",
            "index_update": "`x.at[idx].set(y)`",
            "index_add": "`x.at[idx].add(y)`",
            "index_mul": "`x.at[idx].multiply(y)`",
            "index_min": "`x.at[idx].min(y)`",
            "index_max": "`x.at[idx].max(y)`",
        }.items()
    ),
    # 0.2.21: "jax.api has been removed"; "jax.partial, and jax.lax.partial were accidental exports that
    # have now been removed"; 0.2.22: "jax.util.partial ... has now been removed".
    RemovedApi("jax.api", "0.2.21", "jax", one_to_one=True, module=True),
    RemovedApi("jax.partial", "0.2.21", "functools.partial", one_to_one=True),
    RemovedApi("jax.lax.partial", "0.2.21", "functools.partial", one_to_one=True),
    RemovedApi("jax.util.partial", "0.2.22", "functools.partial", one_to_one=True),
    # 0.4.3: "Deleted jax.scipy.linalg.polar_unitary, which was a deprecated JAX extension to the scipy API.
    # Use jax.scipy.linalg.polar instead."
    RemovedApi("jax.scipy.linalg.polar_unitary", "0.4.3", "jax.scipy.linalg.polar",
               note="`polar(a)` returns `(u, p)`: take `polar(a)[0]` for the unitary factor"),
    # 0.4.11: "jax.experimental.pjit.FROM_GDA. Instead pass sharded jax.Array objects as input and remove the
    # optional in_shardings argument to pjit."
    RemovedApi("jax.experimental.pjit.FROM_GDA", "0.4.11", None,
               note="pass sharded `jax.Array` inputs and drop the `in_shardings` argument"),
    # 0.4.12: "jax.sharding.OpShardingSharding has been removed since it has been 3 months since it was
    # deprecated" (its 0.4.5 rename, GSPMDSharding, is gone from jax.sharding as well).
    RemovedApi("jax.sharding.OpShardingSharding", "0.4.12", "jax.sharding.NamedSharding",
               note="describe the layout with a `jax.sharding.NamedSharding` over a `Mesh`"),
    # 0.4.16: "jax.lax.prod has been removed after being deprecated in JAX v0.4.11. Use the built-in math.prod
    # instead."
    RemovedApi("jax.lax.prod", "0.4.16", "math.prod", one_to_one=True, note="needs `import math`"),
    # 0.4.24: "From jax.tree_util: register_keypaths, AttributeKeyPathEntry, and GetItemKeyPathEntry";
    # "from jax.scipy.linalg: tril and triu"; "From jax.random: ... threefry2x32_key, rbg_key, and
    # unsafe_rbg_key". Replacements as named at deprecation (0.4.6: "register_keypaths: use
    # jax.tree_util.register_pytree_with_keys", "AttributeKeyPathEntry: use GetAttrKey", "GetitemKeyPathEntry:
    # use SequenceKey or DictKey"; 0.4.16: "Use jax.numpy.tril and jax.numpy.triu"; 0.4.17:
    # "random.threefry2x32_key(seed) becomes random.PRNGKey(seed, impl='threefry2x32')", and so on).
    RemovedApi("jax.tree_util.register_keypaths", "0.4.24", "jax.tree_util.register_pytree_with_keys",
               note="`register_pytree_with_keys(cls, flatten_with_keys, unflatten)` takes a flatten function that "
                    "returns `(key, child)` pairs instead of a separate keypath function"),
    RemovedApi("jax.tree_util.AttributeKeyPathEntry", "0.4.24", "jax.tree_util.GetAttrKey",
               note="key paths now use `jax.tree_util.GetAttrKey(name)`"),
    RemovedApi("jax.tree_util.GetitemKeyPathEntry", "0.4.24", None,
               note="key paths now use `jax.tree_util.SequenceKey(idx)` or `jax.tree_util.DictKey(key)`"),
    *_renamed("0.4.24", {
        "jax.scipy.linalg.tril": "jax.numpy.tril",
        "jax.scipy.linalg.triu": "jax.numpy.triu",
    }),
    *(
        RemovedApi(f"jax.random.{name}", "0.4.24", "jax.random.PRNGKey",
                   note=f"use `jax.random.PRNGKey(seed, impl='{impl}')` (or `jax.random.key(seed, impl='{impl}')`)")
        for name, impl in {
            "threefry2x32_key": "threefry2x32",
            "rbg_key": "rbg",
            "unsafe_rbg_key": "unsafe_rbg",
        }.items()
    ),
    # 0.4.34: "jax.sharding.XLACompatibleSharding has been removed. Please use jax.sharding.Sharding."
    RemovedApi("jax.sharding.XLACompatibleSharding", "0.4.34", "jax.sharding.Sharding",
               note="annotate and test with the base class `jax.sharding.Sharding`"),
    # 0.4.38: "from jax.lib.xla_bridge: xla_client and default_backend" (deprecated in 0.4.32 in favour of
    # jax.extend.backend.default_backend; the same function is public as jax.default_backend).
    RemovedApi("jax.lib.xla_bridge.default_backend", "0.4.38", "jax.default_backend", one_to_one=True),
    # 0.5.0: "From jax.lib.xla_client, the previously-deprecated Device and XlaRuntimeError symbols have been
    # removed; instead use jax.Device and jax.errors.JaxRuntimeError respectively."
    # 0.6.0: "From jax.lib.xla_client: ArrayImpl, ..."; "From jax.lib.xla_extension: ArrayImpl,
    # XlaRuntimeError" (0.4.36: "use jax.Array instead", "use jax.errors.JaxRuntimeError instead").
    *_renamed("0.5.0", {
        "jax.lib.xla_client.Device": "jax.Device",
        "jax.lib.xla_client.XlaRuntimeError": "jax.errors.JaxRuntimeError",
    }),
    *_renamed("0.6.0", {
        "jax.lib.xla_client.ArrayImpl": "jax.Array",
        "jax.lib.xla_extension.ArrayImpl": "jax.Array",
        "jax.lib.xla_extension.XlaRuntimeError": "jax.errors.JaxRuntimeError",
    }),
    # 0.6.0: "From jax.core: AxisSize, ClosedJaxpr, ..., Jaxpr, JaxprEqn, Literal, ..., Primitive, Token, ...,
    # Var, ..., jaxpr_as_fun, ..., raise_to_shaped, ... Most have no public replacement, though a few are
    # available at jax.extend.core." (Only the names users import for custom primitives and jaxpr walking;
    # each replacement below exists in jax.extend.core.)
    *_renamed("0.6.0", {
        f"jax.core.{name}": f"jax.extend.core.{name}"
        for name in ("Primitive", "ClosedJaxpr", "Jaxpr", "JaxprEqn", "Literal", "Var", "Token", "jaxpr_as_fun")
    }),
    RemovedApi("jax.core.raise_to_shaped", "0.6.0", None,
               note="abstract values are already shaped: drop the call, or use `jax.typeof(x)` for a value's aval"),
    # 0.7.0: "jax.experimental.shard module has been deleted and all the APIs have been moved to the
    # jax.sharding endpoint. So use jax.sharding.reshard, jax.sharding.auto_axes and jax.sharding.explicit_axes
    # instead of their experimental endpoints."
    RemovedApi("jax.experimental.shard", "0.7.0", "jax.sharding", module=True,
               note="its APIs moved to `jax.sharding` (`reshard`, `auto_axes`, `explicit_axes`)"),
    *_renamed("0.7.0", {
        "jax.experimental.shard.reshard": "jax.sharding.reshard",
        "jax.experimental.shard.auto_axes": "jax.sharding.auto_axes",
        "jax.experimental.shard.explicit_axes": "jax.sharding.explicit_axes",
    }),
    # 0.7.0: "lax.infeed and lax.outfeed were removed, after being deprecated in JAX 0.6."
    RemovedApi("jax.lax.infeed", "0.7.0", None,
               note="move host data with `jax.experimental.io_callback` or `jax.pure_callback`"),
    RemovedApi("jax.lax.outfeed", "0.7.0", None,
               note="send values to the host with `jax.debug.callback` or `jax.experimental.io_callback`"),
    # 0.7.0: "jax.stages.OutInfo has been replaced with jax.ShapeDtypeStruct."
    RemovedApi("jax.stages.OutInfo", "0.7.0", "jax.ShapeDtypeStruct",
               note="`Lowered.out_info` now holds `jax.ShapeDtypeStruct` values"),
    # 0.7.1: "Exposed jax.set_mesh which acts as a global setter and a context manager. Removed
    # jax.sharding.use_mesh in favor of jax.set_mesh."
    RemovedApi("jax.sharding.use_mesh", "0.7.1", "jax.set_mesh",
               note="`with jax.set_mesh(mesh):` replaces `with jax.sharding.use_mesh(mesh):`; called outside a "
                    "`with`, `jax.set_mesh` sets the mesh globally"),
    # 0.8.0: "The jax.util, jax.extend.ffi, and jax.experimental.host_callback modules have been removed. All
    # public APIs within these modules were deprecated and removed in v0.7.0 or earlier." (0.5.0: "The
    # jax.extend.ffi submodule was moved to jax.ffi"); "The deprecated function
    # jax.interpreters.mlir.custom_call was removed." (0.6.0: "The APIs provided by jax.ffi should be used
    # instead.")
    RemovedApi("jax.util", "0.8.0", None, module=True,
               note="internal helpers: use `functools`, `itertools` or a local copy"),
    RemovedApi("jax.extend.ffi", "0.8.0", "jax.ffi", one_to_one=True, module=True),
    RemovedApi("jax.interpreters.mlir.custom_call", "0.8.0", "jax.ffi.ffi_lowering",
               note="register the target with `jax.ffi.register_ffi_target` and call it with `jax.ffi.ffi_call` "
                    "(or lower with `jax.ffi.ffi_lowering`)"),
    # Pallas changelog, 0.8.1: "Removed the previously deprecated jax.experimental.pallas.tpu.TPUCompilerParams,
    # jax.experimental.pallas.tpu.TPUMemorySpace, jax.experimental.pallas.tpu.TritonCompilerParams" (0.7.0:
    # "TPUCompilerParams and TPUMemorySpace have been renamed to jax.experimental.pallas.tpu.CompilerParams and
    # jax.experimental.pallas.tpu.MemorySpace"; "jax.experimental.pallas.triton.TritonCompilerParams has been
    # renamed to jax.experimental.pallas.triton.CompilerParams").
    *_renamed("0.8.1", {
        "jax.experimental.pallas.tpu.TPUCompilerParams": "jax.experimental.pallas.tpu.CompilerParams",
        "jax.experimental.pallas.tpu.TPUMemorySpace": "jax.experimental.pallas.tpu.MemorySpace",
        "jax.experimental.pallas.triton.TritonCompilerParams": "jax.experimental.pallas.triton.CompilerParams",
    }),
    # Pallas changelog, 0.9.0: "Removed the previously deprecated pl.atomic_*, pl.load, pl.store, pl.swap and
    # pl.max_contiguous." (0.7.1: "pl.atomic_* APIs have been moved to jax.experimental.pallas.triton";
    # "pl.load and pl.store are deprecated. Use indexing or backend-specific loading/storing APIs instead";
    # 0.8.1: "pl.max_contiguous has been moved to jax.experimental.pallas.triton"; "pl.swap is deprecated".)
    RemovedApi("jax.experimental.pallas.load", "0.9.0", None,
               note="index the ref instead: `x_ref[idx]`, or use a backend-specific load API"),
    RemovedApi("jax.experimental.pallas.store", "0.9.0", None,
               note="assign through the ref instead: `x_ref[idx] = value`, or use a backend-specific store API"),
    RemovedApi("jax.experimental.pallas.swap", "0.9.0", None,
               note="read `old = x_ref[idx]`, then assign `x_ref[idx] = value`"),
    *_renamed("0.9.0", {
        f"jax.experimental.pallas.{name}": f"jax.experimental.pallas.triton.{name}"
        for name in ("max_contiguous", "atomic_add", "atomic_and", "atomic_cas", "atomic_max", "atomic_min",
                     "atomic_or", "atomic_xchg", "atomic_xor")
    }),
    # Pallas changelog, 0.10.0: "Removed the previously deprecated pltpu.ANY and pltpu.MemorySpace.ANY. Use
    # pl.ANY instead."; "Removed the deprecated pltpu.delay, which is now available as pl.delay."
    *_renamed("0.10.0", {
        "jax.experimental.pallas.tpu.ANY": "jax.experimental.pallas.ANY",
        "jax.experimental.pallas.tpu.delay": "jax.experimental.pallas.delay",
    }),
    # 0.10.0: JAX 0.10.2's own table of removed names (jax/__init__.py `_deprecations`, "# Removed for
    # v0.10.0"): "jax.device_put_replicated is deprecated; use jax.device_put instead" (deprecated in 0.8.1).
    RemovedApi("jax.device_put_replicated", "0.10.0", "jax.device_put",
               note="`jax.device_put(jnp.stack([x] * n), NamedSharding(mesh, P('x')))`; see JAX's pmap migration "
                    "guide for the drop-in replacement"),
    RemovedApi("jax.device_put_sharded", "0.10.0", "jax.device_put",
               note="`jax.device_put(jnp.stack(shards), NamedSharding(mesh, P('x')))`; see JAX's pmap migration "
                    "guide for the drop-in replacement"),
)

REMOVED_KEYWORDS: tuple[RemovedKeyword, ...] = (
    # 0.4.14: "in_axis_resources and out_axis_resources have been deleted from pjit ... Please use
    # in_shardings and out_shardings as the replacement. This is a safe and trivial name replacement."
    RemovedKeyword(frozenset({"jax.experimental.pjit.pjit"}), "in_axis_resources", "0.4.14", "in_shardings"),
    RemovedKeyword(frozenset({"jax.experimental.pjit.pjit"}), "out_axis_resources", "0.4.14", "out_shardings"),
    # 0.4.11: "axis_resources argument of with_sharding_constraint is removed. Please use shardings instead."
    RemovedKeyword(frozenset({"jax.experimental.pjit.with_sharding_constraint", "jax.lax.with_sharding_constraint"}),
                   "axis_resources", "0.4.11", "shardings"),
)

_BY_NAME = {api.name: api for api in REMOVED_APIS}
_MODULES = {api.name: api for api in REMOVED_APIS if api.module}


def removed_api(qualified_name: str) -> RemovedApi | None:
    """The entry for a canonical qualified name: its own, or that of the innermost removed module it
    lives in (`jax.experimental.host_callback.barrier_wait` is in `jax.experimental.host_callback`)."""
    api = _BY_NAME.get(qualified_name)
    if api is not None:
        return api
    parts = qualified_name.split(".")
    for end in range(len(parts) - 1, 1, -1):
        module = _MODULES.get(".".join(parts[:end]))
        if module is not None:
            return module
    return None


def renamed(qualified_name: str, api: RemovedApi) -> str | None:
    """What `qualified_name` becomes under `api`'s one-to-one rename (a member of a renamed module keeps
    its path below the module); None when `api` is not a one-to-one rename."""
    if not api.one_to_one or api.replacement is None:
        return None
    if qualified_name == api.name:
        return api.replacement
    return api.replacement + qualified_name[len(api.name):]


def removed_keyword(callee: str, keyword: str) -> RemovedKeyword | None:
    """The removed keyword `keyword` of the JAX callable `callee`, if it is one."""
    for entry in REMOVED_KEYWORDS:
        if keyword == entry.keyword and callee in entry.callables:
            return entry
    return None
