"""Parsing an edited buffer again by top-level statement (issue 30: the editor at parse speed): the tree is
always the one a whole parse gives, unchanged statements keep their nodes, and LibCST parses only the new
statements."""

from __future__ import annotations

import random
from pathlib import Path

import libcst as cst
import pytest

from jaxcheck.analyzer import reparse
from jaxcheck.analyzer.config import Configuration
from jaxcheck.analyzer.engine import Linter
from jaxcheck.analyzer.parsing import ParseFailure, parse_source
from jaxcheck.analyzer.stack import run_with_deep_stack

SOURCE = '''#!/usr/bin/env python
# a header comment

"""The module docstring."""
from __future__ import annotations

import jax  # trailing comment
a = 1; b = 2


@jax.jit
def f(x):
    if x:
        return x
        # an indented comment after the block

    # another one
    return x


# column 0 comment
class C:
    y = 1
# a comment at column 0 right after a block
    # and an indented one

match a:
    case 1:
        pass
    # a comment after the cases

pass
pass
# the footer
'''

EDITS = [
    ("a statement inserted", lambda text: text.replace("a = 1; b = 2\n", "a = 1; b = 2\nc = 3\n")),
    ("a body edited", lambda text: text.replace("        return x\n", "        return x + 1\n")),
    ("a comment added", lambda text: text.replace("class C:", "# new\nclass C:")),
    ("a statement deleted", lambda text: text.replace("pass\npass\n", "pass\n")),
    ("a case edited", lambda text: text.replace("    case 1:", "    case 2:")),
    ("the header edited", lambda text: text.replace("# a header comment", "# another header")),
    ("the footer edited", lambda text: text + "# more footer\n"),
    ("the first statement edited", lambda text: text.replace('"""The module docstring."""', '"""Docs."""')),
    ("a syntax error", lambda text: text.replace("def f(x):", "def f(x)")),
    ("the indent changed", lambda text: text.replace("    if x:\n        return x\n", "    if x:\n      return x\n")),
    ("a statement indented otherwise", lambda text: text.replace("pass\npass\n", "pass\ndef k():\n  return 1\n")),
    ("no trailing newline", lambda text: text.rstrip("\n")),
    ("CRLF newlines", lambda text: text.replace("\n", "\r\n")),
    ("a future import moved", lambda text: text.replace("from __future__ import annotations\n", "") + "x = 1\n"),
]


def _parse_twice(first: str, second: str) -> tuple[cst.Module | ParseFailure, cst.Module | ParseFailure]:
    """`second` parsed reusing the parse of `first`, and `second` parsed whole."""
    _, kept = run_with_deep_stack(lambda: reparse.parse_reusing(first, None))
    reused, _ = run_with_deep_stack(lambda: reparse.parse_reusing(second, kept))
    return reused, run_with_deep_stack(lambda: parse_source(second))


def _nodes(module: cst.Module) -> list[cst.CSTNode]:
    found: list[cst.CSTNode] = []

    class Collect(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            found.append(node)
            return True

    module.visit(Collect())
    return found


@pytest.mark.parametrize(("name", "edit"), EDITS, ids=[name for name, _ in EDITS])
def test_the_tree_is_the_whole_parse(name: str, edit):
    reused, whole = _parse_twice(SOURCE, edit(SOURCE))
    if isinstance(whole, ParseFailure):
        assert reused == whole
    else:
        assert isinstance(reused, cst.Module) and reused.deep_equals(whole) and reused.code == edit(SOURCE)


def test_unchanged_statements_keep_their_nodes_and_only_new_ones_are_parsed(monkeypatch):
    _, kept = run_with_deep_stack(lambda: reparse.parse_reusing(SOURCE, None))
    assert kept is not None
    parsed: list[str] = []
    monkeypatch.setattr(reparse, "parse_source", lambda text, host=None: parsed.append(text) or parse_source(text, host))
    edited = SOURCE.replace("a = 1; b = 2\n", "a = 1; b = 2\nc = 3\n")
    module, _ = run_with_deep_stack(lambda: reparse.parse_reusing(edited, kept))
    assert isinstance(module, cst.Module)
    assert parsed == ["pass\nc = 3\n"]  # LibCST saw the new statement only (after a `pass`)
    unchanged = [*module.body[:4], *module.body[5:]]  # all but `c = 3`
    assert [node is old for node, old in zip(unchanged, kept.module.body)] == [True] * 9
    nodes = _nodes(module)
    assert len({id(node) for node in nodes}) == len(nodes)  # `pass` twice: two nodes, as parsed whole


def test_edits_of_real_modules_give_the_whole_parse():
    """jaxcheck's own modules, each edited at random places: the tree is always the whole parse's, and
    most edits reuse the statements they leave alone."""
    rng = random.Random(0)
    files = sorted(Path(reparse.__file__).parent.parent.rglob("*.py"))
    reused_any = 0
    for path in rng.sample(files, 40):
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines(keepends=True)
        first, kept = run_with_deep_stack(lambda: reparse.parse_reusing(text, None))
        assert isinstance(first, cst.Module)
        for line in (rng.randrange(len(lines)) for _ in range(3)):
            edited = "".join(lines[:line]) + lines[line].rstrip("\n") + "  # edited\n" + "".join(lines[line + 1:])
            reused, _ = run_with_deep_stack(lambda: reparse.parse_reusing(edited, kept))
            whole = run_with_deep_stack(lambda: parse_source(edited))
            if isinstance(whole, ParseFailure):  # a comment inside a string or after a continuation
                assert reused == whole
                continue
            assert isinstance(reused, cst.Module) and reused.deep_equals(whole), (path, line)
            reused_any += any(node is old for node, old in zip(reused.body, first.body))
    assert reused_any > 80


def test_the_server_gives_the_findings_of_a_whole_check_after_each_edit(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    path = tmp_path / "m.py"
    text = ("import jax\nimport numpy as np\n\n\n@jax.jit\ndef f(x):\n    print(x)\n    return np.sin(x)\n\n\n"
            "def g(key):\n    return jax.random.normal(key) + jax.random.normal(key)\n")
    path.write_text(text)
    server = Linter(Configuration())
    server.check_file_in_project(path, text.encode())
    for edit in ("\n\nCONSTANT = 1\n", "\n\n@jax.jit\ndef h(x):\n    if x > 0:\n        return x\n    return -x\n",
                 "# a comment\n"):
        text = edit + text if edit.startswith("#") else text + edit
        warm = server.check_file_in_project(path, text.encode())
        cold = Linter(Configuration()).check_file_in_project(path, text.encode())
        assert warm.diagnostics == cold.diagnostics and warm.diagnostics
