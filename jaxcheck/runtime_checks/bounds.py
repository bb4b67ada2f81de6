"""Out-of-bounds indexing at run time (opt-in, JAX203): a bounds test compiled into the program.

The checked function's program (the jaxpr JAX traced for it) is evaluated in a jitted interpreter (inner
jitted functions inlined, loop and branch bodies included: see :mod:`checked_program`) that adds, next to
every indexing operation the user wrote (`x[i]`, `x.at[i].set(v)`, `.at[i].get()`, `jnp.take`,
`lax.dynamic_slice`, `lax.dynamic_update_slice`, `lax.gather`/`scatter`), a test of its start indices
against the array's shape, like `jax.experimental.checkify`'s index checks. The program returns one small
int32 table, one row per operation: `(site, index, axis)` where out of bounds, zeros elsewhere. It is read
one call late, when the device says it is ready, so the host never waits for it.

What counts mirrors the static rule: operations that clamp, drop or fill silently by default (`x[i]` and
`.at[i].get()` clamp, `.at[i].set()` drops, `jnp.take`/`take_along_axis` return a fill value: NaN for
floats). Skipped: `mode="clip"`, and a fill or drop whose source line passes `mode=` (an explicit
`mode="fill"`/`"drop"` compiles to the same program as the default; `jnp.take`'s `mode="wrap"` indexes in
bounds), and indexing done inside library functions (`jax.ops.segment_sum` drops out-of-range ids by
contract). Indexing under `jax.checkpoint` and in a custom derivative's function is checked by a shadow
evaluation beside the call bound whole (see :mod:`checked_program`); a `custom_vjp` backward rule traced
into the program (`jit(grad(...))`) is checked where JAX traced it.
"""

from __future__ import annotations

import linecache
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax.numpy as jnp
import numpy as np
from jax._src import source_info_util
from jax._src.lax import slicing

from jaxcheck.runtime_checks.hidden_state import eqn_line
from jaxcheck.runtime_checks.jaxprs import has_user_frame

_SCATTERS = frozenset({"scatter", "scatter-add", "scatter_add", "scatter-mul", "scatter_mul", "scatter-min",
                       "scatter_min", "scatter-max", "scatter_max"})
_READS = frozenset({"dynamic_slice", "gather"})
_CHECKED = _READS | _SCATTERS | {"dynamic_update_slice"}
_FILL = slicing.GatherScatterMode.FILL_OR_DROP
_DIRECT = ("jax/_src/numpy/array_methods.py", "jax/_src/numpy/indexing.py", "jax/_src/lax/slicing.py")
"""Where the JAX function the user's line called lives when the user indexed directly."""


@dataclass(frozen=True)
class Site:
    """One checked indexing operation: where the user wrote it, which primitive, on what shape."""

    where: tuple[str, int]
    primitive: str
    shape: tuple[int, ...]
    filled: bool = False  # a gather that returns a fill value out of bounds (`jnp.take`'s default)

    @property
    def reads(self) -> bool:
        return self.primitive in _READS


_SITES: list[Site] = []
_SITE_IDS: dict[Site, int] = {}
_LOCK = threading.Lock()


def _site_id(site: Site) -> int:
    """A process-wide number for `site` (from 1: 0 means "in bounds" in the table)."""
    with _LOCK:
        number = _SITE_IDS.get(site)
        if number is None:
            _SITES.append(site)
            number = _SITE_IDS[site] = len(_SITES)
        return number


def _site(eqn: Any, caller: Any) -> Site | None:
    """The site of an indexing equation that should be checked, or None (see the module docstring);
    `caller`: the call equation whose program holds `eqn` (it has the user's frames when `eqn`, traced
    inside one of JAX's jitted functions such as `jnp.take`, has none)."""
    name = eqn.primitive.name
    if name not in _CHECKED:
        return None
    mode = eqn.params.get("mode")
    if mode is not None and mode not in (slicing.GatherScatterMode.PROMISE_IN_BOUNDS, _FILL):
        return None
    made_by = eqn if caller is None or has_user_frame(eqn) else caller
    traceback = made_by.source_info.traceback
    codes = traceback.raw_frames()[0] if traceback is not None else []
    user = next((k for k, code in enumerate(codes) if source_info_util.is_user_filename(code.co_filename)), None)
    if not user or not (codes[user - 1].co_filename.replace("\\", "/").endswith(_DIRECT) or _direct_jit(made_by)):
        return None
    where = eqn_line(made_by)
    if where is None:
        return None
    if mode == _FILL and "mode=" in linecache.getline(*where):
        return None  # a chosen `mode="fill"`/`"drop"` compiles to what the default does
    return Site(where, name, tuple(eqn.invars[0].aval.shape), name == "gather" and mode == _FILL)


def _direct_jit(call: Any) -> bool:
    """True when `call` is a call of one of JAX's jitted indexing functions (`jnp.take_along_axis`)."""
    inner = call.params.get("jaxpr") if call.primitive.name in ("jit", "pjit") else None
    source = getattr(getattr(getattr(inner, "jaxpr", None), "debug_info", None), "func_src_info", None) or ""
    return source.rsplit(" at ", 1)[-1].rsplit(":", 1)[0].replace("\\", "/").endswith(_DIRECT)


def _starts_and_limits(eqn: Any, invals: Sequence[Any]) -> tuple[Any, Any, Sequence[int]] | None:
    """`(starts, upper, axes)`: the start indices (last dimension: one per axis in `axes`), the largest
    in-bounds start per axis, and those axes; None when the operation is not read here."""
    name, operand = eqn.primitive.name, invals[0]
    shape = np.array(operand.shape, np.int64)
    if name == "dynamic_slice":
        starts = jnp.stack([jnp.asarray(i, jnp.int32) for i in invals[1:]])
        return starts, shape - np.array(eqn.params["slice_sizes"]), range(operand.ndim)
    if name == "dynamic_update_slice":
        starts = jnp.stack([jnp.asarray(i, jnp.int32) for i in invals[2:]])
        return starts, shape - np.array(invals[1].shape), range(operand.ndim)
    if name == "gather":
        dnums = eqn.params["dimension_numbers"]
        axes = tuple(dnums.start_index_map)
        sizes = np.array(eqn.params["slice_sizes"])[np.array(axes, int)] if axes else np.zeros(0, int)
        return invals[1], shape[np.array(axes, int)] - sizes if axes else sizes, axes
    dnums = eqn.params["dimension_numbers"]
    updates = invals[2]
    sizes, position = [], 0
    for axis in range(operand.ndim):
        if axis in dnums.inserted_window_dims or axis in getattr(dnums, "operand_batching_dims", ()):
            sizes.append(1)
        else:
            sizes.append(updates.shape[dnums.update_window_dims[position]])
            position += 1
    axes = tuple(dnums.scatter_dims_to_operand_dims)
    upper = np.array([operand.shape[a] - sizes[a] for a in axes], np.int64)
    return invals[1], upper, axes


def _row(number: int, eqn: Any, invals: Sequence[Any]) -> Any | None:
    """`[number, index, axis]` when the operation's first out-of-bounds start exists, else zeros."""
    found = _starts_and_limits(eqn, invals)
    if found is None:
        return None
    starts, upper, axes = found
    if not len(axes):
        return None
    starts = jnp.asarray(starts).astype(jnp.int32).reshape(-1, len(axes))
    limit = jnp.asarray(np.minimum(upper, np.iinfo(np.int32).max), jnp.int32)
    outside = (starts < 0) | (starts > limit)
    flat = jnp.argmax(outside.reshape(-1))
    column = flat % len(axes)
    index = starts.reshape(-1)[flat]
    axis = jnp.asarray(np.array(axes, np.int32))[column]
    bad = jnp.any(outside)
    return jnp.where(bad, jnp.stack([jnp.int32(number), index, axis]), jnp.zeros(3, jnp.int32))


def row_of(eqn: Any, invals: Sequence[Any], caller: Any) -> Any | None:
    """The bounds row of `eqn` when it is a checked indexing operation (see :func:`_row`), else None;
    `caller`: see :func:`_site`."""
    site = _site(eqn, caller)
    return _row(_site_id(site), eqn, invals) if site is not None else None


@dataclass(frozen=True)
class Finding:
    """An out-of-bounds index seen at run time."""

    site: Site
    index: int
    axis: int


def findings(table: Any) -> list[Finding]:
    """The out-of-bounds rows of a table the program returned (one per operation that went out of bounds)."""
    return [Finding(_SITES[int(number) - 1], int(index), int(axis))
            for number, index, axis in np.asarray(table).tolist() if number]


def describe(finding: Finding, function: str) -> tuple[str, str]:
    """Message and fix of an out-of-bounds finding."""
    site = finding.site
    size = site.shape[finding.axis] if 0 <= finding.axis < len(site.shape) else "?"
    what = ("JAX returned the fill value (NaN for floats) in place of the element" if site.filled
            else "JAX clamped the index and read another element" if site.reads
            else "JAX clamped the slice" if site.primitive == "dynamic_update_slice"
            else "JAX silently dropped the update")
    wrapped = " (a negative index is wrapped once before the test)" if finding.index < 0 else ""
    message = (f"index {finding.index}{wrapped} is out of bounds for axis {finding.axis} with size {size} of an array of "
               f"shape {site.shape} in `{function}` (`{site.primitive}`): {what}")
    fix = ("keep the index in range (`jnp.clip(i, 0, n - 1)` if clamping is meant), or choose the behaviour "
           "with `mode=`: `.at[i].get(mode=\"fill\", fill_value=...)`, `jnp.take(x, i, mode=\"clip\")`, "
           "`.at[i].set(v, mode=\"drop\")`")
    return message, fix
