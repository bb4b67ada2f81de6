"""Folder walking honours .gitignore, default excludes and configured excludes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from jaxcheck.analyzer.discovery import FileFinder
from jaxcheck.analyzer.gitignore import GitIgnore


def _tree(root: Path, files: list[str]) -> None:
    for name in files:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n")


def _found(root: Path, excludes: tuple[str, ...] = ()) -> list[str]:
    finder = FileFinder((".venv", "__pycache__", *excludes), root)
    return sorted(p.relative_to(root).as_posix() for p in finder.files([root]))


def test_gitignore_rules(tmp_path: Path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("# comment\n*.gen.py\n/top_only.py\nbuild/\n!keep.gen.py\n**/deep/*.py\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / ".gitignore").write_text("local.py\n")
    _tree(tmp_path, [
        "a.py", "x.gen.py", "keep.gen.py", "top_only.py", "sub/top_only.py", "build/b.py", "sub/local.py",
        "local.py", "one/two/deep/c.py", "notes.txt", ".venv/lib.py", "pkg/__pycache__/m.py", "stub.pyi",
    ])
    assert _found(tmp_path) == ["a.py", "keep.gen.py", "local.py", "stub.pyi", "sub/top_only.py"]


def test_configured_excludes(tmp_path: Path):
    _tree(tmp_path, ["src/a.py", "src/gen/b.py", "docs/conf.py", "tests/fixtures/c.py"])
    assert _found(tmp_path, ("gen", "docs/conf.py", "tests/fixtures")) == ["src/a.py"]


def test_explicit_files_are_always_checked(tmp_path: Path):
    (tmp_path / ".gitignore").write_text("ignored.py\n")
    (tmp_path / ".git").mkdir()
    _tree(tmp_path, ["ignored.py"])
    finder = FileFinder((), tmp_path)
    assert list(finder.files([tmp_path / "ignored.py"])) == [tmp_path / "ignored.py"]


def test_gitignore_matching_semantics():
    ignore = GitIgnore.parse("*.log\n!important.log\nout/\n/root.txt\ndocs/**/gen\n")
    assert ignore.verdict("a/b.log", False) is True
    assert ignore.verdict("important.log", False) is False
    assert ignore.verdict("out", True) is True and ignore.verdict("out", False) is None
    assert ignore.verdict("root.txt", False) is True and ignore.verdict("a/root.txt", False) is None
    assert ignore.verdict("docs/x/y/gen", True) is True


def test_force_exclude_applies_excludes_to_named_files(tmp_path: Path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("ignored.py\n")
    _tree(tmp_path, ["ignored.py", "gen/made.py", "kept.py"])
    finder = FileFinder(("gen",), tmp_path)
    named = [tmp_path / "ignored.py", tmp_path / "gen" / "made.py", tmp_path / "kept.py"]
    assert list(finder.files(named, force_exclude=True)) == [tmp_path / "kept.py"]
    assert len(list(finder.files(named))) == 3


_CLASSES = {"[ab]": "[ab]", "[!a]": "[^a/]", "[a-b]": "[a-b]", "[b-a]": "(?!)", "[]a]": "[]a]"}


def test_gitignore_glob_matching_agrees_with_a_regular_expression():
    hypothesis = pytest.importorskip("hypothesis")
    from hypothesis import strategies as st

    pieces = st.sampled_from(["a", "b", "-", "*", "?", *_CLASSES])

    @hypothesis.settings(max_examples=500, deadline=None, database=None)
    @hypothesis.given(st.lists(pieces, min_size=1, max_size=8), st.text("ab-]", max_size=12))
    def agree(glob: list[str], name: str) -> None:
        reference = "".join(_CLASSES.get(p, {"*": "[^/]*", "?": "[^/]"}.get(p, re.escape(p))) for p in glob)
        expected = re.fullmatch(reference, name) is not None
        assert (GitIgnore.parse("".join(glob)).verdict(name, False) is True) == expected

    agree()
    for never in ("[!]", "[]", "[unclosed", "a[b"):
        assert GitIgnore.parse(never).verdict("a", False) is None
