"""Per-file configuration (as in ruff): each file's nearest configuration file, `extend`, `--isolated`,
`--show-settings`, and results that do not depend on the order of the paths."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from jaxcheck.analyzer.config import ConfigError, ConfigResolver, Configuration, find_config_file, read_configuration
from jaxcheck.cli import main

BUGGY = "import jax\n\n@jax.jit\ndef f(x):\n    print(x)\n    return int(x)\n"
"""JAX103 on line 5 and JAX302 on line 6."""
FINDING = re.compile(r"^(?P<path>.+?\.py):(?P<line>\d+):\d+: (?P<code>JAX\d+) ", re.M)


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def _check(capsys: pytest.CaptureFixture[str], root: Path, *argv: str) -> tuple[int, list[str], str]:
    """Exit code, `relative/path.py:line CODE` per finding, and stderr."""
    code = main(["check", "--no-cache", "--format", "concise", *argv])
    out, err = capsys.readouterr()
    found = []
    for match in FINDING.finditer(out):
        path = Path(match["path"]).resolve().relative_to(root.resolve()).as_posix()
        found.append(f"{path}:{match['line']} {match['code']}")
    return code, sorted(found), err


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A project ignoring JAX103; `sub` extends it and ignores JAX302 in `deep/`; `sub2` has a
    jaxcheck.toml (ignore JAX302) next to a pyproject.toml it takes precedence over; `plain` has a
    pyproject.toml without [tool.jaxcheck], which is skipped over."""
    return _write(tmp_path, {
        "pyproject.toml": "[tool.jaxcheck]\nignore = ['JAX103']\n",
        "a.py": BUGGY,
        "sub/pyproject.toml": "[tool.jaxcheck]\nextend = '../pyproject.toml'\n"
                              "[tool.jaxcheck.per-file-ignores]\n'deep/*.py' = ['JAX302']\n",
        "sub/a.py": BUGGY,
        "sub/deep/a.py": BUGGY,
        "sub2/jaxcheck.toml": "ignore = ['JAX302']\n",
        "sub2/pyproject.toml": "[tool.jaxcheck]\nignore = ['JAX101']\n",
        "sub2/a.py": BUGGY,
        "plain/pyproject.toml": "[project]\nname = 'plain'\n",
        "plain/a.py": BUGGY,
    })


EXPECTED = ["a.py:6 JAX302", "plain/a.py:6 JAX302", "sub/a.py:6 JAX302", "sub2/a.py:5 JAX103"]


def test_each_file_uses_its_nearest_configuration(capsys, tree: Path):
    code, found, _ = _check(capsys, tree, str(tree))
    assert code == 1 and found == EXPECTED


def test_results_do_not_depend_on_the_order_of_paths(capsys, tree: Path):
    orders = [["sub", "sub2", "plain"], ["sub2", "plain", "sub"], ["plain", "sub", "sub2"],
              ["sub/deep/a.py", "sub2/a.py", "a.py"], ["a.py", "sub2/a.py", "sub/deep/a.py"]]
    results = [_check(capsys, tree, *(str(tree / p) for p in order))[1] for order in orders]
    assert results[0] == results[1] == results[2] == ["plain/a.py:6 JAX302", "sub/a.py:6 JAX302", "sub2/a.py:5 JAX103"]
    assert results[3] == results[4] == ["a.py:6 JAX302", "sub2/a.py:5 JAX103"]


def test_isolated_ignores_every_configuration_file(capsys, tree: Path):
    _, found, _ = _check(capsys, tree, "--isolated", str(tree))
    assert len(found) == 10 and "sub/deep/a.py:6 JAX302" in found and "a.py:5 JAX103" in found


def test_config_applies_to_every_file(capsys, tree: Path):
    _, found, _ = _check(capsys, tree, "--config", str(tree / "sub2" / "jaxcheck.toml"), str(tree))
    assert found == ["a.py:5 JAX103", "plain/a.py:5 JAX103", "sub/a.py:5 JAX103", "sub/deep/a.py:5 JAX103",
                     "sub2/a.py:5 JAX103"]


def test_isolated_and_config_exclude_each_other(capsys, tree: Path):
    assert main(["check", "--isolated", "--config", str(tree / "pyproject.toml"), str(tree)]) == 2
    assert "not allowed with" in capsys.readouterr().err


def test_show_settings_names_the_file_and_what_it_extends(capsys, tree: Path):
    assert main(["check", "--show-settings", str(tree / "sub" / "deep" / "a.py")]) == 0
    out = capsys.readouterr().out
    assert f"Settings path: {tree / 'sub' / 'pyproject.toml'}" in out
    assert f"Extends: {(tree / 'pyproject.toml').resolve()}" in out
    assert "Ignored in this file (per-file-ignores): JAX302" in out
    assert "JAX103" not in out.split("Enabled rules: ")[1].splitlines()[0]
    settings = json.loads(out[out.index("{"):])
    assert settings["ignore"] == ["JAX103"] and settings["per-file-ignores"] == {"deep/*.py": ["JAX302"]}


def test_show_settings_jaxcheck_toml_wins_and_defaults(capsys, tree: Path):
    assert main(["check", "--show-settings", str(tree / "sub2" / "a.py")]) == 0
    assert f"Settings path: {tree / 'sub2' / 'jaxcheck.toml'}" in capsys.readouterr().out
    assert main(["check", "--isolated", "--show-settings", str(tree / "sub2" / "a.py")]) == 0
    out = capsys.readouterr().out
    assert "Settings path: none (--isolated)" in out and '"ignore": []' in out
    assert main(["check", "--show-settings", str(tree / "missing.py")]) == 2


def test_plain_pyproject_is_skipped_over(tree: Path):
    assert find_config_file(tree / "plain" / "a.py") == tree / "pyproject.toml"
    assert find_config_file(tree / "sub2") == tree / "sub2" / "jaxcheck.toml"


def test_extend_merges_and_accumulates_extend_exclude(tmp_path: Path):
    _write(tmp_path, {
        "base.toml": "select = ['JAX3']\nextend-exclude = ['gen']\n[runtime]\nmode = 'raise'\nnans = true\n",
        "proj/jaxcheck.toml": "extend = '../base.toml'\nextend-exclude = ['vendored']\n[runtime]\nnans = false\n",
    })
    configuration = read_configuration(tmp_path / "proj" / "jaxcheck.toml")
    settings = configuration.settings
    assert settings.select == ("JAX3",) and settings.extend_exclude == ("gen", "vendored")
    assert settings.runtime.mode == "raise" and settings.runtime.nans is False
    assert configuration.sources == (tmp_path / "proj" / "jaxcheck.toml", (tmp_path / "base.toml").resolve())


@pytest.mark.parametrize(("files", "message"), [
    ({"a.toml": "extend = 'b.toml'\n", "b.toml": "extend = 'a.toml'\n"}, "extend: circular"),
    ({"a.toml": "extend = 'missing.toml'\n"}, "extend: no such file"),
    ({"a.toml": "extend = 'b.toml'\n", "b.toml": "bogus = 1\n"}, "b.toml: [tool.jaxcheck] bogus: unknown key"),
])
def test_extend_errors_name_the_file(tmp_path: Path, files: dict[str, str], message: str):
    _write(tmp_path, files)
    with pytest.raises(ConfigError) as error:
        read_configuration(tmp_path / "a.toml")
    assert message in str(error.value)


def test_a_broken_nested_configuration_is_a_usage_error(capsys, tree: Path):
    (tree / "sub" / "pyproject.toml").write_text("[tool.jaxcheck]\nignore = ['NOPE1']\n")
    code = main(["check", "--no-cache", str(tree)])
    assert code == 2 and "sub/pyproject.toml: [tool.jaxcheck] ignore" in capsys.readouterr().err


def test_a_broken_configuration_beside_the_checked_files_does_not_stop_them(capsys, tmp_path: Path):
    """The walk of the project around the checked files (for importers) skips a folder whose own
    configuration is broken; the files asked for are checked with theirs, with or without the cache."""
    _write(tmp_path, {
        "pyproject.toml": "[tool.jaxcheck]\n",
        "a/x.py": BUGGY,
        "b/y.py": BUGGY,
        "c/pyproject.toml": "[tool.jaxcheck]\nignore = ['NOPE1']\n",
        "c/z.py": BUGGY,
    })
    paths = [str(tmp_path / "a" / "x.py"), str(tmp_path / "b" / "y.py")]
    code, found, err = _check(capsys, tmp_path, *paths)
    assert code == 1 and "NOPE1" not in err
    assert found == ["a/x.py:5 JAX103", "a/x.py:6 JAX302", "b/y.py:5 JAX103", "b/y.py:6 JAX302"]
    for _ in range(2):  # through the project index: filled, then answered from it
        code = main(["check", "--format", "concise", "--cache-dir", str(tmp_path / ".cache"), *paths])
        out, err = capsys.readouterr()
        assert code == 1 and "NOPE1" not in err and out.count("JAX302") == 2


def test_excludes_are_per_folder(capsys, tmp_path: Path):
    _write(tmp_path, {
        "pyproject.toml": "[tool.jaxcheck]\n",
        "lib/jaxcheck.toml": "extend-exclude = ['generated']\n",
        "lib/generated/a.py": BUGGY,
        "generated/a.py": BUGGY,
    })
    _, found, _ = _check(capsys, tmp_path, str(tmp_path))
    assert found == ["generated/a.py:5 JAX103", "generated/a.py:6 JAX302"]


def test_cross_module_solve_sees_files_under_other_configurations(capsys, tmp_path: Path):
    """A helper in a folder with its own configuration is still traced through its caller elsewhere."""
    _write(tmp_path, {
        "pyproject.toml": "[tool.jaxcheck]\nignore = ['JAX302']\n",
        "pkg/__init__.py": "",
        "pkg/model.py": "import jax\nfrom pkg.util.helpers import scale\n\n@jax.jit\ndef f(x):\n"
                        "    return scale(x) + int(x)\n",
        "pkg/util/__init__.py": "",
        "pkg/util/jaxcheck.toml": "ignore = []\n",
        "pkg/util/helpers.py": "def scale(x):\n    return int(x)\n",
    })
    for order in (["pkg/util", "pkg/model.py"], ["pkg/model.py", "pkg/util"], ["pkg/util"]):
        _, found, _ = _check(capsys, tmp_path, *(str(tmp_path / p) for p in order))
        assert found == ["pkg/util/helpers.py:2 JAX302"], order


def test_cached_results_follow_a_nested_configuration(capsys, tree: Path, tmp_path: Path):
    cache = tmp_path / "cache"
    argv = ["check", "--cache-dir", str(cache), "--format", "concise", str(tree / "sub")]
    main(argv)
    first = capsys.readouterr().out
    (tree / "sub" / "pyproject.toml").write_text("[tool.jaxcheck]\nignore = ['JAX302']\n")
    main(argv)
    second = capsys.readouterr().out
    assert "JAX302" in first and "JAX302" not in second and "JAX103" in second


def test_resolver_reads_each_file_once_and_pickles(tree: Path):
    import pickle

    resolver = ConfigResolver(Configuration(root=tree))
    first = resolver.for_path(tree / "sub" / "a.py")
    assert resolver.for_path(tree / "sub" / "deep" / "a.py") is first
    assert resolver.for_path(tree / "plain" / "a.py").source == tree / "pyproject.toml"
    assert pickle.loads(pickle.dumps(resolver)).for_path(tree / "sub").settings == first.settings


def test_inherited_per_file_ignores_stay_relative_to_the_file_that_sets_them(capsys, tmp_path: Path):
    _write(tmp_path, {
        "pyproject.toml": "[tool.jaxcheck.per-file-ignores]\n'pkg/legacy/*.py' = ['JAX3']\n",
        "pkg/jaxcheck.toml": "extend = '../pyproject.toml'\nignore = ['JAX103']\n",
        "pkg/legacy/a.py": BUGGY,
        "pkg/b.py": BUGGY,
    })
    _, found, _ = _check(capsys, tmp_path, str(tmp_path))
    assert found == ["pkg/b.py:6 JAX302"]
    assert read_configuration(tmp_path / "pkg" / "jaxcheck.toml").per_file_ignores_root == tmp_path.resolve()
