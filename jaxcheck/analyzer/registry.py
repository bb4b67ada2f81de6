"""The rule registry: every rule class, looked up by code, name or code prefix."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from jaxcheck.analyzer.catalogue import CATALOGUE

if TYPE_CHECKING:
    from jaxcheck.analyzer.rule import Rule


def all_rules() -> tuple[type[Rule], ...]:
    """Every rule class jaxcheck ships, ordered by code."""
    from jaxcheck.rules import RULES

    return tuple(sorted(RULES, key=lambda rule: rule.code))


def rule_by_code_or_name(key: str) -> type[Rule] | None:
    """The rule whose code (`JAX301`) or kebab name (`python-branch-on-tracer`) is `key`."""
    for rule in all_rules():
        if key.upper() == rule.code or key == rule.name:
            return rule
    return None


def is_known_selector(selector: str) -> bool:
    """True when `selector` is a code, or a prefix of at least one code (`JAX`, `JAX3`, `JAX30`)."""
    return any(rule.code.startswith(selector) for rule in CATALOGUE)


def selected_codes(select: Iterable[str] | None, ignore: Iterable[str]) -> frozenset[str]:
    """The codes enabled by `select` (default: every default-enabled rule) minus `ignore`.

    As in ruff, a more specific selector wins: `--select JAX3 --ignore JAX` keeps JAX3xx.
    Rules that are off by default (the opinionated 9xx range) need a selector naming their group
    (`JAX9`, `JAX901`): `JAX` alone does not turn them on.
    """
    select = list(select) if select is not None else None
    ignore = list(ignore)
    enabled: set[str] = set()
    for rule in CATALOGUE:  # the rules' codes without importing them (see .catalogue)
        chosen = _longest_prefix(rule.code, select) if select is not None else ("" if rule.default_enabled else None)
        if chosen is None or (not rule.default_enabled and len(chosen) < len("JAX9")):
            continue
        ignored = _longest_prefix(rule.code, ignore)
        if ignored is None or len(ignored) < len(chosen):
            enabled.add(rule.code)
    return frozenset(enabled)


def _longest_prefix(code: str, selectors: Iterable[str]) -> str | None:
    matches = [s for s in selectors if code.startswith(s)]
    return max(matches, key=len) if matches else None
