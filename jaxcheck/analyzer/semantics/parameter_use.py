"""Which parameters a function body only *probes*: reads their type, shape or identity and nothing else.

A PRNG key passed to such a parameter is not consumed (`is_prng_key(key)` reads `key.dtype` and
`key.shape`; a helper that ignores its `key`, or only prints or logs it or its `key_data`, draws nothing;
mapping a probing lambda over it with `jax.tree.map` probes it too). Folding data from other parameters into it (`jax.random.fold_in(rng,
step)`, as a train step does with its base dropout key) counts as a probe too, and the data parameters
are recorded (:meth:`ParameterUse.folds`): a call draws from a key of its own unless it passes the same
data again, which a caller's check can only tell for literals and defaults. The builder reports every
read of a parameter and every read that is a probe while its one traversal runs; a parameter is
*inert* when all of its reads are probes (or it is never read).
"""

from __future__ import annotations

from collections import Counter

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
