"""Every rule's VALID/INVALID examples and docstring examples run as tests."""

from __future__ import annotations

import re

from collections import Counter

import libcst as cst
import pytest

from conftest import findings
from jaxcheck.analyzer.diagnostics import display_column
from jaxcheck.analyzer.fixes import apply_fixes
from jaxcheck.analyzer.registry import all_rules

RULES = all_rules()
_FENCE = re.compile(r"```python\n(.*?)```", re.S)


def _cases(kind: str):
    for rule in RULES:
        for index, example in enumerate(getattr(rule, kind)):
            yield pytest.param(rule, example, id=f"{rule.code}-{kind.lower()}-{index}")


@pytest.mark.parametrize(("rule", "example"), list(_cases("VALID")))
def test_valid_example_has_no_finding(rule, example):
    assert findings(example.code, rule.code) == []


@pytest.mark.parametrize(("rule", "example"), list(_cases("INVALID")))
def test_invalid_example_is_reported_where_expected(rule, example):
    reported = findings(example.code, rule.code)
    assert reported, f"{rule.code} found nothing in:\n{example.code[:300]!r}"
    first = reported[0]
    assert (first.range.start.line, display_column(first.range.start.column)) == (example.line, example.column)
    positions = [(d.range.start.line, display_column(d.range.start.column)) for d in reported]
    assert positions == [(example.line, example.column), *example.also], "every finding is pinned by the example"
    assert first.name == rule.name
    if example.message is not None:
        assert example.message.lower() in first.message.lower()


@pytest.mark.parametrize(("rule", "example"), list(_cases("INVALID")))
def test_fix_gives_expected_source_that_parses_and_lints_clean(rule, example):
    before = findings(example.code, also=rule.code)
    fixes = [d.fix for d in before if d.code == rule.code and d.fix is not None]
    if not fixes:
        assert example.fix is None, f"{rule.code} offers no fix"
        return
    assert isinstance(example.code, str)
    source = example.code
    fixed = apply_fixes(source, fixes)
    cst.parse_module(fixed)
    compile(fixed, "<fixed>", "exec")
    if example.fix is None:
        return
    assert fixed == example.fix
    after = findings(fixed, also=rule.code)
    assert not [d for d in after if d.code == rule.code], f"{rule.code} still reported after its fix"
    other = Counter(d.code for d in before if d.code != rule.code)
    assert not Counter(d.code for d in after) - other, "the fix introduced a new finding"


def _doc_blocks(rule, section: str) -> list[str]:
    doc = rule.__doc__ or ""
    match = re.search(rf"## {section}\n(.*?)(?=\n    ## |\Z)", doc, re.S)
    assert match, f"{rule.code} has no '## {section}' section"
    blocks = [re.sub(r"^    ", "", block, flags=re.M) for block in _FENCE.findall(match.group(1))]
    assert blocks, f"{rule.code} '## {section}' has no python block"
    return blocks


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_docstring_example_is_reported(rule):
    for block in _doc_blocks(rule, "Example"):
        assert findings(block, rule.code), f"{rule.code} docstring example is not reported"


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_docstring_use_instead_is_clean(rule):
    for block in _doc_blocks(rule, "Use instead"):
        assert findings(block, also=rule.code) == [], f"{rule.code} 'Use instead' still has findings"


def test_static_hint_only_for_transforms_with_static_argnames():
    jit = findings("import jax\n@jax.jit\ndef f(x, n):\n    if n > 0:\n        return x\n    return -x\n", "JAX301")
    remat = findings("import jax\n@jax.checkpoint\ndef f(x, n):\n    if n > 0:\n        return x\n    return -x\n",
                     "JAX301")
    assert "static_argnames=('n',)" in jit[0].message
    assert "static_argnames" not in remat[0].message
