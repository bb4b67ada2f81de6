"""Settings: `[tool.jaxcheck]` in the nearest pyproject.toml (or `--config`), validated by pydantic.

Keys are kebab-case. Any unknown key, bad value or unknown rule code is a :class:`ConfigError` whose
one-line message names the file and the key.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from jaxcheck.analyzer.registry import is_known_selector
from jaxcheck.analyzer.files import read_file, real_path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

DEFAULT_EXCLUDES: tuple[str, ...] = (
    ".git", ".hg", ".svn", ".bzr", ".venv", "venv", ".tox", ".nox", ".eggs", "*.egg-info", "__pycache__",
    "__pypackages__", "build", "dist", "node_modules", ".mypy_cache", ".pytest_cache", ".ruff_cache",
    "site-packages", ".ipynb_checkpoints",
)
_QUALIFIED_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$")


class ConfigError(ValueError):
    """A configuration problem, with a one-line message that names the file and key."""


def _kebab(name: str) -> str:
    return name.replace("_", "-")


def _check_selectors(codes: tuple[str, ...]) -> tuple[str, ...]:
    for code in codes:
        if not is_known_selector(code):
            raise ValueError(f"unknown rule code or prefix {code!r}")
    return codes


class RuntimeSettings(BaseModel):
    """The runtime companion's settings: the `[tool.jaxcheck.runtime]` table (kebab-case keys)."""

    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=_kebab, populate_by_name=True)

    mode: Literal["warn", "raise", "collect"] = Field(
        "warn", description="What a finding does: warn (a warning at the user's line), raise, or collect."
    )
    nans: bool = Field(False, description="Find the first operation that produced a NaN or Inf (forward and backward).")
    index_checks: bool = Field(
        False, description="Report out-of-bounds indexing that JAX clamps or drops silently (JAX203); costs a "
                           "bounds test per indexing operation in the compiled program."
    )
    retrace_budget: int = Field(10, ge=1, description="Report a function traced more than this many times (JAX501).")
    stale_globals: bool = Field(True, description="Report globals read while tracing that changed later (JAX101).")
    side_effects: bool = Field(True, description="Report output written while tracing (JAX103).")
    hidden_state: bool = Field(
        True, description="Trace once more on each compile and report a program that differs (JAX104)."
    )
    key_reuse: bool = Field(True, description="Report a PRNG key consumed twice, typed or legacy (JAX401).")


class Settings(BaseModel):
    """jaxcheck's settings; every field is a `[tool.jaxcheck]` key (kebab-case)."""

    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=_kebab, populate_by_name=True)

    select: tuple[str, ...] | None = Field(
        None, description="Rule codes or prefixes to enable (default: every rule that is on by default)."
    )
    ignore: tuple[str, ...] = Field((), description="Rule codes or prefixes to disable.")
    per_file_ignores: dict[str, tuple[str, ...]] = Field(
        default_factory=dict, description="Glob (relative to the config file) -> codes or prefixes to ignore there."
    )
    exclude: tuple[str, ...] = Field(DEFAULT_EXCLUDES, description="Paths and globs never checked when walking folders.")
    extend_exclude: tuple[str, ...] = Field((), description="Extra excludes, added to `exclude`.")
    extra_jit_decorators: tuple[str, ...] = Field(
        (), description="Qualified names of the project's own jit wrappers, treated like `jax.jit`."
    )
    runtime: RuntimeSettings = Field(
        default_factory=RuntimeSettings, description="The runtime companion (`jaxcheck run`, `pytest --jaxcheck`)."
    )

    @field_validator("select", "ignore")
    @classmethod
    def _known_codes(cls, codes: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return None if codes is None else _check_selectors(codes)

    @field_validator("per_file_ignores")
    @classmethod
    def _known_per_file_codes(cls, table: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
        for codes in table.values():
            _check_selectors(codes)
        return table

    @field_validator("extra_jit_decorators")
    @classmethod
    def _qualified_names(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        for name in names:
            if not _QUALIFIED_NAME.match(name):
                raise ValueError(f"{name!r} is not a qualified name like 'mypkg.utils.my_jit'")
        return names

    @property
    def all_excludes(self) -> tuple[str, ...]:
        return self.exclude + self.extend_exclude


class Configuration(BaseModel):
    """Settings plus the folder they were read from (per-file-ignores globs are relative to it)."""

    model_config = ConfigDict(frozen=True)

    settings: Settings = Settings()
    root: Path = Path(".")
    source: Path | None = None


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above `start` that has a `[tool.jaxcheck]` table."""
    folder = start if start.is_dir() else start.parent
    for candidate in (folder, *folder.parents):
        pyproject = candidate / "pyproject.toml"
        if pyproject.is_file():
            try:
                if "jaxcheck" in _read_toml(pyproject).get("tool", {}):
                    return pyproject
            except ConfigError:
                return pyproject  # report the broken file rather than skip past it
    return None


def load_configuration(config_file: Path | None, start: Path) -> Configuration:
    """Load settings from `config_file`, or from the nearest pyproject.toml above `start`."""
    path = config_file if config_file is not None else find_pyproject(real_path(start))
    if path is None:
        return Configuration(root=real_path(start) if start.is_dir() else real_path(start).parent)
    data = _read_toml(path)
    tool = data.get("tool")
    table = tool.get("jaxcheck", {}) if isinstance(tool, dict) else data
    return Configuration(settings=parse_settings(table, path), root=real_path(path).parent, source=path)


def parse_settings(table: Any, path: Path | str) -> Settings:
    """Validate a `[tool.jaxcheck]` table; raise ConfigError naming `path` and the key on failure."""
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.jaxcheck] must be a table")
    try:
        return Settings.model_validate(table)
    except ValidationError as exc:
        error = exc.errors()[0]
        key = ".".join(str(part) for part in error["loc"]) or "tool.jaxcheck"
        message = error["msg"]
        if error["type"] == "extra_forbidden":
            message = "unknown key"
        message = message.removeprefix("Value error, ")
        raise ConfigError(f"{path}: [tool.jaxcheck] {key}: {message}") from None


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(read_file(path).decode("utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{path}: invalid TOML: nested too deeply") from None
