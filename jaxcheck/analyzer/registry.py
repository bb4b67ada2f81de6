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


ALL = "ALL"
"""The selector of every rule, the opt-in ones included (as in ruff)."""


def is_known_selector(selector: str) -> bool:
    """True when `selector` is `ALL`, a code, or a prefix of at least one code (`JAX`, `JAX3`, `JAX30`)."""
    return selector == ALL or any(rule.code.startswith(selector) for rule in CATALOGUE)


def resolve_selector(text: str) -> str | None:
    """The selector that `text` means: a rule name becomes its code (`prng-key-reuse` -> `JAX401`),
    a code, prefix or `ALL` is upper-cased; None when it matches no rule. Reads the catalogue, so
    selection imports no rule (nor LibCST)."""
    text = text.strip()
    for rule in CATALOGUE:
        if text.upper() == rule.code or text == rule.name:
            return rule.code
    return text.upper() if is_known_selector(text.upper()) else None


def known_selectors() -> list[str]:
    """Every code and rule name, and `ALL`: the candidates of a did-you-mean."""
    return [ALL, *(rule.code for rule in CATALOGUE), *(rule.name for rule in CATALOGUE)]


def selected_codes(select: Iterable[str] | None, ignore: Iterable[str]) -> frozenset[str]:
    """The codes enabled by `select` (default: every default-enabled rule) minus `ignore`.

    As in ruff, a more specific selector wins: `--select JAX3 --ignore JAX` keeps JAX3xx.
    Rules that are off by default need a selector naming them: their group for the opinionated 9xx
    range (`JAX9`, `JAX901`), their own code for the others (`JAX002`), or `ALL`; `JAX` alone does not
    turn them on.
    """
    select = list(select) if select is not None else None
    ignore = list(ignore)
    enabled: set[str] = set()
    for rule in CATALOGUE:  # the rules' codes without importing them (see .catalogue)
        chosen = _longest_prefix(rule.code, select) if select is not None else ("" if rule.default_enabled else None)
        if chosen is None or (not rule.default_enabled and not _names_opt_in(rule.code, chosen)):
            continue
        ignored = _longest_prefix(rule.code, ignore)
        if ignored is None or len(ignored) < len(chosen):
            enabled.add(rule.code)
    return frozenset(enabled)


def _names_opt_in(code: str, selector: str) -> bool:
    return selector in (ALL, code) or (code.startswith("JAX9") and len(selector) >= len("JAX9"))


def _longest_prefix(code: str, selectors: Iterable[str]) -> str | None:
    matches = [s for s in selectors if s == ALL or code.startswith(s)]
    return max(matches, key=lambda s: 0 if s == ALL else len(s)) if matches else None
