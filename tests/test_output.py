"""Snapshot tests of every output format (update with JAXCHECK_UPDATE_SNAPSHOTS=1), plus the
structural contracts of the machine-read formats (SARIF 2.1.0, JUnit XML, GitHub commands)."""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from jaxcheck import __version__
from jaxcheck.analyzer.diagnostics import Diagnostic, Edit, Fix, Position, Range, RelatedLocation, display_column
from jaxcheck.analyzer.output import FORMATTERS, PLAIN, OutputContext, summary
from jaxcheck.analyzer.output.context import read_sources, source_lines
from jaxcheck.analyzer.output.sarif import artifact_uri
from jaxcheck.analyzer.registry import all_rules

SNAPSHOTS = Path(__file__).parent / "snapshots"
SOURCE = (
    "import jax\nimport jax.numpy as jnp\n\n\n@jax.jit\ndef f(x):\n    if x > 0:\n        return 1\n"
    "print((\n\n\ndef g(x):\n    x[0] = 1\n"
)
DIAGNOSTICS = [
    Diagnostic("src/model.py", Range(Position(7, 7), Position(7, 12)), "JAX301", "python-branch-on-tracer",
               "Python `if` needs a concrete bool but the value is traced under jax.jit; use `jnp.where`",
               related=(RelatedLocation("`f` is traced by `@jax.jit`", Range(Position(5, 1), Position(5, 1))),
                        RelatedLocation("`step` calls `f`: `x` is traced", Range(Position(40, 11), Position(40, 11)),
                                        "src/train.py"))),
    Diagnostic("src/model.py", Range(Position(9, 0), Position(9, 0)), "JAX001", "syntax-error",
               "syntax error: '(' was never closed"),
    Diagnostic("src/model.py", Range(Position(13, 4), Position(13, 12)), "JAX201", "in-place-array-update",
               "item assignment on a JAX array", Fix((Edit(Range(Position(13, 4), Position(13, 12)),
                                                          "x = x.at[0].set(1)"),), "safe", "Use `x.at[...].set`")),
]
CONTEXT = OutputContext(sources={"src/model.py": source_lines(SOURCE)})


def _stable(name: str, rendered: str) -> str:
    """SARIF carries the version and every rule's docs: keep only the rule ids in the snapshot."""
    if name != "sarif":
        return rendered
    log = json.loads(rendered)
    driver = log["runs"][0]["tool"]["driver"]
    driver["version"] = "VERSION"
    driver["rules"] = [rule["id"] for rule in driver["rules"]]
    return json.dumps(log, indent=2) + "\n"


@pytest.mark.parametrize("name", sorted(FORMATTERS))
def test_format_snapshot(name: str):
    rendered = _stable(name, FORMATTERS[name](DIAGNOSTICS, CONTEXT))
    snapshot = SNAPSHOTS / f"output.{name}"
    if os.environ.get("JAXCHECK_UPDATE_SNAPSHOTS"):
        snapshot.write_text(rendered)
    assert rendered == snapshot.read_text()


@pytest.mark.parametrize("name", sorted(FORMATTERS))
def test_output_is_deterministic_and_order_independent(name: str):
    formatter = FORMATTERS[name]
    assert formatter(DIAGNOSTICS, CONTEXT) == formatter(list(reversed(DIAGNOSTICS)), CONTEXT)


def test_no_diagnostics():
    assert FORMATTERS["text"]([]) == FORMATTERS["concise"]([]) == FORMATTERS["grouped"]([]) == "All checks passed!\n"
    quiet = OutputContext(summary=False)
    assert FORMATTERS["text"]([], quiet) == FORMATTERS["concise"]([], quiet) == FORMATTERS["grouped"]([], quiet) == ""
    assert FORMATTERS["github"]([]) == FORMATTERS["pylint"]([]) == FORMATTERS["json-lines"]([]) == ""
    assert json.loads(FORMATTERS["json"]([])) == json.loads(FORMATTERS["gitlab"]([])) == []
    assert json.loads(FORMATTERS["rdjson"]([]))["diagnostics"] == []
    assert json.loads(FORMATTERS["sarif"]([]))["runs"][0]["results"] == []
    root = ET.fromstring(FORMATTERS["junit"]([]))
    assert root.tag == "testsuites" and list(root) == [] and root.get("tests") == "0"


def test_columns_are_shown_one_based():
    assert display_column(0) == 1


def test_related_locations_are_notes_in_text_and_a_list_in_json():
    text = FORMATTERS["text"](DIAGNOSTICS[:1])
    assert text.splitlines()[1:3] == ["  note: src/model.py:5:2: `f` is traced by `@jax.jit`",
                                      "  note: src/train.py:40:12: `step` calls `f`: `x` is traced"]
    (item,) = json.loads(FORMATTERS["json"](DIAGNOSTICS[:1]))
    assert item["related"][1] == {"message": "`step` calls `f`: `x` is traced", "filename": "src/train.py",
                                  "location": {"row": 40, "column": 12}, "end_location": {"row": 40, "column": 12}}
    assert FORMATTERS["concise"](DIAGNOSTICS[:1]).count("\n") == 2  # concise stays one line per finding


def test_text_without_sources_is_the_headline_only():
    rendered = FORMATTERS["text"](DIAGNOSTICS[1:2])
    assert rendered.splitlines() == [
        "src/model.py:9:1: JAX001 " + DIAGNOSTICS[1].message, "", "Found 1 error."]


def test_text_underlines_with_tabs_and_multiline_ranges():
    diagnostic = Diagnostic("t.py", Range(Position(1, 4), Position(2, 1)), "JAX301", "python-branch-on-tracer", "m")
    rendered = FORMATTERS["text"]([diagnostic], OutputContext(sources={"t.py": ["\tif x > 0:", "y"]}))
    assert "1 |     if x > 0:\n  |        ^^^^^^\n" in rendered


def test_text_colours_only_when_asked():
    plain = FORMATTERS["text"](DIAGNOSTICS, CONTEXT)
    coloured = FORMATTERS["text"](DIAGNOSTICS, OutputContext(sources=CONTEXT.sources, color=True))
    assert "\x1b[" not in plain and "\x1b[" in coloured
    assert re.sub(r"\x1b\[[0-9;]*m", "", coloured) == plain


def test_read_sources_splits_lines_like_python_and_skips_unreadable(tmp_path: Path):
    (tmp_path / "a.py").write_bytes(b"# coding: latin-1\nx = '\xe9'\x0c\r\ny = 1\r")
    sources = read_sources([str(tmp_path / "a.py"), str(tmp_path / "missing.py")])
    assert sources == {str(tmp_path / "a.py"): ["# coding: latin-1", "x = '\xe9'\x0c", "y = 1", ""]}


def test_github_escapes_data_and_properties():
    diagnostic = Diagnostic("a,b:c.py", Range(Position(1, 0), Position(1, 1)), "JAX001", "syntax-error",
                            "100% bad\r\nline: two, three")
    assert FORMATTERS["github"]([diagnostic]) == (
        "::error file=a%2Cb%3Ac.py,line=1,col=1,endLine=1,endColumn=2,title=JAX001 (syntax-error)"
        "::100%25 bad%0D%0Aline: two, three\n"
    )


def test_junit_is_well_formed_with_one_suite_per_file():
    other = Diagnostic("b.py", Range(Position(1, 0), Position(1, 1)), "JAX001", "syntax-error", "bad \x01 <&>")
    root = ET.fromstring(FORMATTERS["junit"]([*DIAGNOSTICS, other]))
    assert root.tag == "testsuites" and root.get("tests") == root.get("failures") == "4"
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["b.py", "src/model.py"]
    assert [len(s.findall("testcase")) for s in suites] == [1, 3]
    failure = suites[0].find("testcase/failure")
    assert failure is not None and failure.get("type") == "JAX001" and failure.get("message") == "bad \ufffd <&>"


def test_sarif_meets_the_schema_requirements():
    log = json.loads(FORMATTERS["sarif"](DIAGNOSTICS, CONTEXT))
    assert log["version"] == "2.1.0" and log["$schema"].endswith("sarif-2.1.0.json")
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "jaxcheck" and driver["version"] == __version__
    assert driver["informationUri"].startswith("https://")
    rules = driver["rules"]
    assert [r["id"] for r in rules] == [rule.code for rule in all_rules()]
    for descriptor, rule in zip(rules, all_rules()):
        assert descriptor["name"] == rule.name and descriptor["shortDescription"]["text"] == rule.summary
        assert descriptor["fullDescription"]["text"].startswith("## What it does")
        assert descriptor["helpUri"].endswith(f"docs/rules/{rule.name}.md")
    assert len(run["results"]) == len(DIAGNOSTICS)
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["level"] in ("none", "note", "warning", "error") and result["message"]["text"]
        (location,) = result["locations"]
        physical = location["physicalLocation"]
        assert physical["artifactLocation"]["uri"] == "src/model.py"
        region = physical["region"]
        assert all(isinstance(region[k], int) and region[k] >= 1 for k in region)
        assert (region["endLine"], region["endColumn"]) >= (region["startLine"], region["startColumn"])
    related = run["results"][0]["relatedLocations"]
    assert [r["id"] for r in related] == [0, 1] and related[1]["message"]["text"].startswith("`step` calls")
    assert related[1]["physicalLocation"]["artifactLocation"]["uri"] == "src/train.py"
    assert related[0]["physicalLocation"]["region"] == {"startLine": 5, "startColumn": 2, "endLine": 5, "endColumn": 2}
    (flow,) = run["results"][0]["codeFlows"]
    (thread,) = flow["threadFlows"]
    assert [step["location"]["message"]["text"] for step in thread["locations"]][-1] == DIAGNOSTICS[0].message
    assert "relatedLocations" not in run["results"][1] and "codeFlows" not in run["results"][1]
    (fix,) = run["results"][2]["fixes"]
    (change,) = fix["artifactChanges"]
    (replacement,) = change["replacements"]
    assert change["artifactLocation"]["uri"] == "src/model.py"
    assert replacement["deletedRegion"]["startLine"] == 13 and replacement["insertedContent"]["text"]


@pytest.mark.parametrize(("path", "uri"), [("src/a b.py", "src/a%20b.py"), ("./x.py", "x.py"), ("/tmp/x.py", "file:///tmp/x.py")])
def test_sarif_uris(path: str, uri: str):
    assert artifact_uri(path) == uri


UNSAFE = Diagnostic("b.py", Range(Position(1, 0), Position(1, 5)), "JAX103", "print-in-traced-function", "print",
                    Fix((Edit(Range(Position(1, 0), Position(1, 5)), "jax.debug.print"),), "unsafe", "Use it"))


def test_summary_counts_fixable_and_hidden_unsafe_fixes_like_ruff():
    assert summary(DIAGNOSTICS, PLAIN) == "Found 3 errors.\n[*] 1 fixable with the `--fix` option.\n"
    assert summary([*DIAGNOSTICS, UNSAFE, UNSAFE], PLAIN) == (
        "Found 5 errors.\n[*] 1 fixable with the `--fix` option (2 hidden fixes can be enabled with the "
        "`--unsafe-fixes` option).\n")
    assert summary([UNSAFE], PLAIN) == (
        "Found 1 error.\nNo fixes available (1 hidden fix can be enabled with the `--unsafe-fixes` option).\n")
    assert summary([UNSAFE], OutputContext(unsafe_fixes=True)) == "Found 1 error.\n[*] 1 fixable with the `--fix` option.\n"
    assert summary([], OutputContext(fixed=2)) == "Found 2 errors (2 fixed, 0 remaining).\n"
    assert summary([], PLAIN) == "All checks passed!\n" and summary([], OutputContext(summary=False)) == ""


def test_summary_never_says_all_checks_passed_when_a_file_could_not_be_checked():
    assert summary([], OutputContext(unchecked=1)) == "No findings, but 1 file could not be checked.\n"
    assert summary(DIAGNOSTICS, OutputContext(unchecked=2)) == (
        "Found 3 errors.\n[*] 1 fixable with the `--fix` option.\n2 files could not be checked.\n")


def test_fixable_marker_follows_unsafe_fixes():
    assert " JAX103 print" in FORMATTERS["concise"]([UNSAFE])
    assert " JAX103 [*] print" in FORMATTERS["concise"]([UNSAFE], OutputContext(unsafe_fixes=True))


def test_json_is_ruffs_shape():
    (item,) = [i for i in json.loads(FORMATTERS["json"](DIAGNOSTICS)) if i["code"] == "JAX201"]
    assert list(item) == ["cell", "code", "end_location", "filename", "fix", "location", "message", "noqa_row", "url"]
    assert item["fix"] == {"applicability": "safe", "message": "Use `x.at[...].set`", "edits": [
        {"content": "x = x.at[0].set(1)", "end_location": {"column": 13, "row": 13}, "location": {"column": 5, "row": 13}}]}
    lines = FORMATTERS["json-lines"](DIAGNOSTICS).splitlines()
    assert [json.loads(line) for line in lines] == json.loads(FORMATTERS["json"](DIAGNOSTICS))


def test_gitlab_fingerprints_are_unique_and_stable():
    twice = [DIAGNOSTICS[0], DIAGNOSTICS[0]]
    first, second = json.loads(FORMATTERS["gitlab"](twice))
    assert first["fingerprint"] != second["fingerprint"]
    assert json.loads(FORMATTERS["gitlab"](twice)) == [first, second]
    assert first["location"] == {"path": "src/model.py", "positions": {"begin": {"line": 7, "column": 8},
                                                                       "end": {"line": 7, "column": 13}}}


def test_rdjson_carries_fixes_as_suggestions():
    result = json.loads(FORMATTERS["rdjson"](DIAGNOSTICS))
    assert result["source"]["name"] == "jaxcheck" and len(result["diagnostics"]) == 3
    fixed = [d for d in result["diagnostics"] if "suggestions" in d]
    assert fixed[0]["suggestions"] == [{"range": {"start": {"line": 13, "column": 5}, "end": {"line": 13, "column": 13}},
                                        "text": "x = x.at[0].set(1)"}]
