"""The shipped examples show every implemented rule, and the clean example stays clean."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from jaxcheck import check_paths
from jaxcheck.analyzer.registry import all_rules

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_examples_cover_every_rule_and_clean_file_is_clean():
    report = check_paths([EXAMPLES])
    assert not report.errors
    by_file = Counter((Path(d.path).name, d.code) for d in report.diagnostics)
    assert {code for _, code in by_file} == {rule.code for rule in all_rules() if rule.default_enabled}
    opinions = check_paths([EXAMPLES], select=["JAX9", "JAX002"])
    assert {d.code for d in opinions.diagnostics} == {rule.code for rule in all_rules() if not rule.default_enabled}
    assert not any(Path(d.path).name == "clean_model.py" for d in opinions.diagnostics)
    assert not any(name == "clean_model.py" for name, _ in by_file)
    # metrics.py is only traced through train_step.py: cross-module propagation at work.
    assert by_file[("metrics.py", "JAX301")] == 1
