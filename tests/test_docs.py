"""Generated rule documentation: the checked-in pages must match the rule classes."""

from __future__ import annotations

from pathlib import Path

from jaxcheck.analyzer.diagnostics import RULE_DOCS_URL
from jaxcheck.analyzer.docs import GENERATED_HEADER, render_rule, write_docs
from jaxcheck.analyzer.registry import all_rules, rule_by_code_or_name

DOCS = Path(__file__).parent.parent / "docs" / "rules"


def test_checked_in_rule_docs_are_current(tmp_path: Path):
    write_docs(tmp_path)
    expected = {path.name: path.read_text(encoding="utf-8") for path in tmp_path.glob("*.md")}
    actual = {path.name: path.read_text(encoding="utf-8") for path in DOCS.glob("*.md")}
    assert actual == expected, "docs/rules is stale: run `python3 -m jaxcheck.analyzer.docs`"


def test_every_rule_has_a_page_at_its_docs_url():
    for rule in all_rules():
        page = RULE_DOCS_URL.format(name=rule.name).rsplit("/docs/rules/", 1)[1]
        assert (DOCS / page).is_file()


def test_render_rule_leads_with_name_code_summary_and_fix():
    rule = rule_by_code_or_name("JAX201")
    assert rule is not None
    text = render_rule(rule)
    assert text.startswith(f"# in-place-array-update (JAX201)\n\n{rule.summary}\n\nFix is sometimes available.\n\n")
    assert "\n## What it does\n" in text and not text.startswith(GENERATED_HEADER)


def test_write_docs_removes_pages_of_deleted_rules_only(tmp_path: Path):
    (tmp_path / "gone-rule.md").write_text(GENERATED_HEADER + "old\n")
    (tmp_path / "handwritten.md").write_text("# notes\n")
    write_docs(tmp_path)
    assert not (tmp_path / "gone-rule.md").exists() and (tmp_path / "handwritten.md").exists()
