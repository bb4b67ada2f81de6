"""The codes, names and default state of every rule, without importing the rules (which load LibCST):
what selection and the cache fingerprint need, so a run answered from the project index never imports
LibCST. Generated from the rule classes; `tests/test_index.py` checks it against them
(regenerate: `python -c "from jaxcheck.analyzer.catalogue import render; print(render())"`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RuleEntry:
    """A rule's code, kebab name and whether it is on by default."""

    code: str
    name: str
    default_enabled: bool


CATALOGUE: tuple[RuleEntry, ...] = (
    RuleEntry("JAX001", "syntax-error", True),
    RuleEntry("JAX002", "unused-noqa", False),
    RuleEntry("JAX101", "stale-global-read", True),
    RuleEntry("JAX102", "outer-state-mutation", True),
    RuleEntry("JAX103", "print-in-traced-function", True),
    RuleEntry("JAX104", "impure-call-in-traced-function", True),
    RuleEntry("JAX201", "in-place-array-update", True),
    RuleEntry("JAX202", "discarded-functional-update", True),
    RuleEntry("JAX203", "out-of-bounds-index", True),
    RuleEntry("JAX301", "python-branch-on-tracer", True),
    RuleEntry("JAX302", "tracer-concretization", True),
    RuleEntry("JAX303", "value-dependent-shape", True),
    RuleEntry("JAX401", "prng-key-reuse", True),
    RuleEntry("JAX501", "transform-in-loop", True),
    RuleEntry("JAX601", "removed-jax-api", True),
    RuleEntry("JAX901", "float64-without-x64", False),
    RuleEntry("JAX902", "unsynchronized-timing", False),
    RuleEntry("JAX903", "legacy-prng-key", False),
)


def render() -> str:
    """This module's `CATALOGUE` as the rule classes define it (for regenerating it)."""
    from jaxcheck.analyzer.registry import all_rules

    rows = "\n".join(f'    RuleEntry("{r.code}", "{r.name}", {r.default_enabled}),' for r in all_rules())
    return f"CATALOGUE: tuple[RuleEntry, ...] = (\n{rows}\n)"
