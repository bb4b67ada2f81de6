"""Every rule class is a complete catalogue entry."""

from __future__ import annotations

import pytest

from jaxcheck.analyzer.registry import all_rules
from jaxcheck.analyzer.rule import KEBAB_NAME, RULE_CODE

RULES = all_rules()
SECTIONS = ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety")


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_rule_has_code_name_summary_and_docs(rule):
    assert RULE_CODE.match(rule.code)
    assert KEBAB_NAME.match(rule.name)
    assert not rule.name.startswith(("no-", "avoid-", "use-"))
    assert rule.summary and "\n" not in rule.summary
    positions = [rule.__doc__.find(section) for section in SECTIONS]
    assert all(p >= 0 for p in positions), f"{rule.code} misses a docstring section"
    assert positions == sorted(positions), f"{rule.code} docstring sections are out of order"


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_rule_has_enough_examples(rule):
    assert len(rule.INVALID) >= 8
    assert len(rule.VALID) >= 8


def test_codes_and_names_are_unique():
    assert len({r.code for r in RULES}) == len(RULES)
    assert len({r.name for r in RULES}) == len(RULES)


def test_catalogue_covers_the_issue_2_rules():
    assert {"JAX001", "JAX301", "JAX302", "JAX303"} <= {r.code for r in RULES}
