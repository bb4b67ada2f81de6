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
