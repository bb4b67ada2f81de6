"""pmap's mapped axis against the devices present (JAX702): JAX's own error speaks of "logical devices"
and names no argument; this names the argument, its axis and size, and how to reshape it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax


def axis_excess(args: tuple[Any, ...], in_axes: Any, names: Sequence[str],
                devices: Sequence[Any] | None) -> tuple[str, str] | None:
    """(message, fix) for the first argument whose mapped axis is larger than the device count, else None."""
    count = len(devices) if devices is not None else jax.local_device_count()
    for index, arg in enumerate(args):
        axis = in_axes[index] if isinstance(in_axes, (tuple, list)) and index < len(in_axes) else in_axes
        if not isinstance(axis, int):
            continue
        for leaf in jax.tree_util.tree_leaves(arg):
            shape = getattr(leaf, "shape", ())
            if len(shape) > axis and shape[axis] > count:
                name = names[index] if index < len(names) else f"args[{index}]"
                size = shape[axis]
                split = f"({count}, {size // count}, ...)" if size % count == 0 else f"a multiple of {count}"
                message = (f"pmap maps argument {name!r} over its axis {axis} of size {size}, but only {count} "
                           f"{jax.default_backend()} device(s) exist")
                fix = f"reshape it to {split} and map the inner axis with vmap, or use fewer shards"
                return message, fix
    return None
