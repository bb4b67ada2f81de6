"""`[tool.jaxcheck]` settings: validation errors name the file and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from jaxcheck import check_paths
from jaxcheck.analyzer.config import ConfigError, Settings, load_configuration, parse_settings


def test_defaults():
    settings = Settings()
    assert settings.select is None and settings.ignore == () and ".git" in settings.all_excludes


def test_kebab_case_keys():
    settings = parse_settings(
        {"per-file-ignores": {"tests/*.py": ["JAX3"]}, "extend-exclude": ["gen"], "extra-jit-decorators": ["a.b.jit"]},
        "pyproject.toml",
    )
    assert settings.per_file_ignores == {"tests/*.py": ("JAX3",)}
    assert settings.extend_exclude == ("gen",)
    assert settings.extra_jit_decorators == ("a.b.jit",)


@pytest.mark.parametrize(
    ("table", "fragment"),
    [
        ({"bogus": 1}, "bogus: unknown key"),
        ({"select": ["JAX999"]}, "select: unknown rule code, prefix or name 'JAX999'"),
        ({"selct": ["JAX3"]}, "selct: unknown key; did you mean 'select'?"),
        ({"select": ["prng-key-reus"]}, "did you mean 'prng-key-reuse'?"),
        ({"select": "JAX3"}, "select: expected a list, got 'JAX3'"),
        ({"ignore": "JAX301"}, "ignore"),
        ({"per-file-ignores": {"x.py": ["NOPE1"]}}, "per-file-ignores"),
        ({"extra-jit-decorators": ["not a name"]}, "extra-jit-decorators"),
    ],
)
def test_bad_settings_raise_one_line_errors(table, fragment):
    with pytest.raises(ConfigError) as error:
        parse_settings(table, "proj/pyproject.toml")
    message = str(error.value)
    assert message.startswith("proj/pyproject.toml: [tool.jaxcheck] ")
    assert fragment in message and "\n" not in message


def test_invalid_toml_names_the_file(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text("[tool.jaxcheck\n")
    with pytest.raises(ConfigError, match="pyproject.toml: invalid TOML"):
        load_configuration(None, tmp_path)


def test_nearest_pyproject_with_the_table_wins(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text("[tool.jaxcheck]\nignore = ['JAX301']\n")
    inner = tmp_path / "sub"
    inner.mkdir()
    (inner / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    configuration = load_configuration(None, inner)
    assert configuration.settings.ignore == ("JAX301",) and configuration.root == tmp_path.resolve()


def test_per_file_ignores_apply_by_glob(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text("[tool.jaxcheck.per-file-ignores]\n'legacy/*.py' = ['JAX3']\n")
    code = "import jax\n@jax.jit\ndef f(x):\n    return int(x)\n"
    (tmp_path / "legacy").mkdir()
    (tmp_path / "legacy" / "old.py").write_text(code)
    (tmp_path / "new.py").write_text(code)
    report = check_paths([tmp_path], load_configuration(None, tmp_path))
    assert [Path(d.path).name for d in report.diagnostics] == ["new.py"]


def test_extra_jit_decorators_mark_functions_traced(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text("[tool.jaxcheck]\nextra-jit-decorators = ['mylib.compile']\n")
    (tmp_path / "a.py").write_text("from mylib import compile\n@compile\ndef f(x):\n    return int(x)\n")
    assert check_paths([tmp_path]).diagnostics == []
    assert [d.code for d in check_paths([tmp_path], load_configuration(None, tmp_path)).diagnostics] == ["JAX302"]


def test_extra_jit_decorators_cache_like_jit(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text("[tool.jaxcheck]\nextra-jit-decorators = ['mylib.compile']\n")
    (tmp_path / "a.py").write_text("from mylib import compile\n@compile\ndef f(x):\n    print(x)\n    return x\n")
    assert [d.code for d in check_paths([tmp_path], load_configuration(None, tmp_path)).diagnostics] == ["JAX103"]


def test_runtime_table_is_validated():
    settings = parse_settings({"runtime": {"mode": "raise", "retrace-budget": 3, "nans": True}}, "pyproject.toml")
    assert settings.runtime.mode == "raise" and settings.runtime.retrace_budget == 3 and settings.runtime.nans
    with pytest.raises(ConfigError, match=r"runtime\.bogus: unknown key"):
        parse_settings({"runtime": {"bogus": 1}}, "pyproject.toml")
    with pytest.raises(ConfigError, match=r"runtime\.mode"):
        parse_settings({"runtime": {"mode": "loud"}}, "pyproject.toml")


def test_config_errors_use_plain_words_not_pydantic_wording():
    for table in ({"select": "JAX3"}, {"runtime": {"nans": 3}}, {"runtime": {"retrace-budget": 0}}, {"exclude": 1}):
        with pytest.raises(ConfigError) as error:
            parse_settings(table, "pyproject.toml")
        assert "Input should" not in str(error.value) and "valid tuple" not in str(error.value)
    with pytest.raises(ConfigError, match=r"runtime\.mod: unknown key; did you mean 'mode'\?"):
        parse_settings({"runtime": {"mod": "warn"}}, "pyproject.toml")


def test_rule_names_and_all_and_extend_select_in_settings():
    settings = parse_settings({"select": ["prng-key-reuse", "ALL"], "extend-select": ["unused-noqa"],
                               "ignore": ["python-branch-on-tracer"]}, "pyproject.toml")
    assert settings.select == ("JAX401", "ALL") and settings.extend_select == ("JAX002",)
    assert settings.ignore == ("JAX301",)


def test_a_long_extend_chain_of_valid_files_loads(tmp_path: Path):
    depth = 2000  # deeper than Python's recursion limit: the chain is followed in a loop
    for index in range(depth):
        base = f'extend = "c{index + 1}.toml"\n' if index + 1 < depth else 'ignore = ["JAX301"]\n'
        excludes = f'extend-exclude = ["gen{index}"]\n'
        (tmp_path / f"c{index}.toml").write_text(base + excludes)
    configuration = load_configuration(tmp_path / "c0.toml", tmp_path)
    assert configuration.settings.ignore == ("JAX301",) and len(configuration.sources) == depth
    assert configuration.settings.extend_exclude == tuple(f"gen{index}" for index in reversed(range(depth)))
    (tmp_path / f"c{depth - 1}.toml").write_text('extend = "c0.toml"\n')
    with pytest.raises(ConfigError, match=r"c0\.toml: \[tool\.jaxcheck\] extend: circular: .*c0\.toml$"):
        load_configuration(tmp_path / "c0.toml", tmp_path)



def test_per_file_ignores_are_compiled_once_per_table_not_once_per_file(monkeypatch: pytest.MonkeyPatch):
    import fnmatch

    from jaxcheck.analyzer.config import per_file_ignores_of

    table = {**{f"pkg/generated_{i}.py": ["JAX301"] for i in range(20_000)},
             **{f"gen{i}/*.py": ["JAX302"] for i in range(20_000)}, "conftest.py": ["JAX1"], "*_test.py": ["JAX4"]}
    settings = parse_settings({"per-file-ignores": table}, "pyproject.toml")
    translated = []
    translate = fnmatch.translate
    monkeypatch.setattr(fnmatch, "translate", lambda pattern: translated.append(pattern) or translate(pattern))
    for i in range(0, 20_000, 100):
        assert per_file_ignores_of(settings).codes(f"pkg/generated_{i}.py", f"generated_{i}.py") == ("JAX301",)
    assert per_file_ignores_of(settings).codes("gen7/x_test.py", "x_test.py") == ("JAX302", "JAX4")
    assert per_file_ignores_of(settings).codes("a/conftest.py", "conftest.py") == ("JAX1",)
    assert per_file_ignores_of(settings).codes("gen7/x/y.py", "y.py") == ("JAX302",)  # `*` crosses `/`
    assert len(translated) == 20_001  # each wildcard pattern once, for all files


@pytest.mark.parametrize("relative", ["a/b.py", "b.py", "tests/x.py", "xzy.py", "q/conftest.py", "a/q/c.py",
                                      "src/[", "a\nb.py", "zz.txt", "A/B.PY"])
def test_per_file_ignores_match_as_fnmatchcase(relative: str):
    import fnmatch

    from jaxcheck.analyzer.config import PerFileIgnores

    patterns = ["*.py", "tests/*.py", "a/b.py", "b.py", "[!a]*.py", "x?y.py", "**/conftest.py", "src/[",
                "a/*/c.py", "c.py", "b.py"]
    table = {pattern: (f"JAX{index}",) for index, pattern in enumerate(patterns)}
    name = relative.rpartition("/")[2]
    assert PerFileIgnores(table).codes(relative, name) == tuple(
        code for pattern, codes in table.items() for code in codes
        if fnmatch.fnmatchcase(relative, pattern) or fnmatch.fnmatchcase(name, pattern))
