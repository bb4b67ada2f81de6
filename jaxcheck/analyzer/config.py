"""Settings: the nearest configuration file of each checked file (or `--config`), validated by pydantic.

A configuration file is `.jaxcheck.toml` or `jaxcheck.toml` (settings at the top level) or a
`pyproject.toml` with a `[tool.jaxcheck]` table; in one folder they are tried in that order (ruff's
`.ruff.toml`, `ruff.toml`, `pyproject.toml`), and a `pyproject.toml` without the table is skipped
over. Each file is checked with the settings of the nearest such file at or above its folder
(:class:`ConfigResolver`); `extend = "../pyproject.toml"` inherits another file's settings, the
extending file's keys winning (`extend-exclude` accumulates along the chain, and the `runtime` table
merges key by key).

Keys are kebab-case. Any unknown key, bad value or unknown rule code is a :class:`ConfigError` whose
one-line message names the file and the key.
"""

from __future__ import annotations

import difflib
import fnmatch
import re
import sys
import weakref
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from jaxcheck.analyzer.registry import known_selectors, resolve_selector
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
DEFAULT_INCLUDES: tuple[str, ...] = ("*.py", "*.pyi", "*.ipynb")
_QUALIFIED_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$")


class ConfigError(ValueError):
    """A configuration problem, with a one-line message that names the file and key."""


def _kebab(name: str) -> str:
    return name.replace("_", "-")


def did_you_mean(word: str, candidates: list[str]) -> str:
    """`; did you mean 'x'?` for the closest candidate, or ''."""
    close = difflib.get_close_matches(word, candidates, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def unknown_selector(text: str) -> str:
    """The message for a selector that matches no rule, with a did-you-mean."""
    return f"unknown rule code, prefix or name {text!r}" + did_you_mean(text, known_selectors())


def _check_selectors(codes: tuple[str, ...]) -> tuple[str, ...]:
    """Rule names become codes; an unknown selector is an error."""
    resolved = []
    for code in codes:
        selector = resolve_selector(code)
        if selector is None:
            raise ValueError(unknown_selector(code))
        resolved.append(selector)
    return tuple(resolved)


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
        True, description="Report `np.random`, `random` or the clock read while a function traces (JAX104)."
    )
    key_reuse: bool = Field(True, description="Report a PRNG key consumed twice, typed or legacy (JAX401).")


class Settings(BaseModel):
    """jaxcheck's settings; every field is a `[tool.jaxcheck]` key (kebab-case)."""

    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=_kebab, populate_by_name=True)

    select: tuple[str, ...] | None = Field(
        None, description="Rule codes, prefixes, names or ALL to enable (default: every rule that is on by default)."
    )
    extend_select: tuple[str, ...] = Field(
        (), description="Rule codes, prefixes or names to enable in addition to `select` (or the defaults)."
    )
    ignore: tuple[str, ...] = Field((), description="Rule codes, prefixes or names to disable.")
    per_file_ignores: dict[str, tuple[str, ...]] = Field(
        default_factory=dict, description="Glob (relative to the config file) -> codes or prefixes to ignore there."
    )
    exclude: tuple[str, ...] = Field(DEFAULT_EXCLUDES, description="Paths and globs never checked when walking folders.")
    extend_exclude: tuple[str, ...] = Field((), description="Extra excludes, added to `exclude`.")
    include: tuple[str, ...] = Field(DEFAULT_INCLUDES, description="File name globs (or paths with a `/`) that walking "
                                     "folders checks; `*.ipynb` reads Jupyter notebooks.")
    extend_include: tuple[str, ...] = Field((), description="Extra includes, added to `include`.")
    extra_jit_decorators: tuple[str, ...] = Field(
        (), description="Qualified names of the project's own jit wrappers, treated like `jax.jit`."
    )
    extend: str | None = Field(
        None, description="Another configuration file (relative to this one) whose settings this one inherits; "
                          "keys set here override it."
    )
    runtime: RuntimeSettings = Field(
        default_factory=RuntimeSettings, description="The runtime companion (`jaxcheck run`, `pytest --jaxcheck`)."
    )

    @field_validator("select", "extend_select", "ignore")
    @classmethod
    def _known_codes(cls, codes: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return None if codes is None else _check_selectors(codes)

    @field_validator("per_file_ignores")
    @classmethod
    def _known_per_file_codes(cls, table: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
        return {glob: _check_selectors(codes) for glob, codes in table.items()}

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

    @property
    def all_includes(self) -> tuple[str, ...]:
        return self.include + self.extend_include


CONFIG_NAMES: tuple[str, ...] = (".jaxcheck.toml", "jaxcheck.toml", "pyproject.toml")
"""Configuration file names, in the order they are tried within one folder."""


class Configuration(BaseModel):
    """Settings plus where they came from: `root` is the folder of the nearest configuration file
    (excludes are relative to it), `sources` the files read, nearest first (the file itself, then what
    it extends; empty with default settings), `ignores_root` the folder of the file that set
    `per-file-ignores` (its globs are relative to it, as in ruff; default: `root`)."""

    model_config = ConfigDict(frozen=True)

    settings: Settings = Settings()
    root: Path = Path(".")
    sources: tuple[Path, ...] = ()
    ignores_root: Path | None = None

    @property
    def per_file_ignores_root(self) -> Path:
        """The folder that `per-file-ignores` globs are relative to."""
        return self.ignores_root if self.ignores_root is not None else self.root

    @property
    def source(self) -> Path | None:
        """The configuration file the settings were read from (None: defaults)."""
        return self.sources[0] if self.sources else None


class PerFileIgnores:
    """A `per-file-ignores` table compiled once, for matching many files: patterns without wildcards
    are looked up by value, the others are tried as one combined regular expression first and one by
    one only when that matches (a table of 40,000 patterns costs a lookup per file, not 40,000 matches)."""

    def __init__(self, table: dict[str, tuple[str, ...]]) -> None:
        self._codes = list(table.values())
        self._literal: dict[str, list[int]] = {}
        self._patterns: list[tuple[int, re.Pattern[str]]] = []
        for index, pattern in enumerate(table):
            if _WILDCARD.search(pattern):
                self._patterns.append((index, re.compile(fnmatch.translate(pattern))))
            else:
                self._literal.setdefault(pattern, []).append(index)
        self._any = re.compile("|".join(f"(?:{compiled.pattern})" for _, compiled in self._patterns)) \
            if self._patterns else None

    def codes(self, relative: str, name: str) -> tuple[str, ...]:
        """The codes and prefixes turned off in the file at `relative` (a POSIX path) named `name`: those
        of each pattern that matches either, as `fnmatch.fnmatchcase` matches, in the table's order."""
        matched = {*self._literal.get(relative, ()), *self._literal.get(name, ())}
        if self._any is not None and (self._any.match(relative) or self._any.match(name)):
            matched.update(index for index, compiled in self._patterns
                           if compiled.match(relative) or compiled.match(name))
        return tuple(code for index in sorted(matched) for code in self._codes[index])


_WILDCARD = re.compile(r"[*?[]")
"""What makes an fnmatch pattern more than a literal path."""
_COMPILED_IGNORES: dict[int, PerFileIgnores] = {}
"""Compiled tables by the id of their live Settings (an entry goes with its Settings)."""


def per_file_ignores_of(settings: Settings) -> PerFileIgnores:
    """`settings.per_file_ignores` compiled, once per Settings object."""
    compiled = _COMPILED_IGNORES.get(id(settings))
    if compiled is None:
        compiled = _COMPILED_IGNORES[id(settings)] = PerFileIgnores(settings.per_file_ignores)
        weakref.finalize(settings, _COMPILED_IGNORES.pop, id(settings), None)
    return compiled


def find_config_file(start: Path) -> Path | None:
    """The nearest configuration file at or above `start` (see the module docstring): `.jaxcheck.toml`
    or `jaxcheck.toml`, or a pyproject.toml that has a `[tool.jaxcheck]` table."""
    folder = start if start.is_dir() else start.parent
    for candidate in (folder, *folder.parents):
        found = _config_in(candidate)
        if found is not None:
            return found
    return None


def find_pyproject(start: Path) -> Path | None:
    """The nearest configuration file at or above `start` (kept for callers of the old name)."""
    return find_config_file(start)


def _config_in(folder: Path) -> Path | None:
    for name in CONFIG_NAMES:
        path = folder / name
        if not path.is_file():
            continue
        if name != "pyproject.toml":
            return path
        try:
            if "jaxcheck" in _tool_table(_read_toml(path)):
                return path
        except ConfigError:
            return path  # report the broken file rather than skip past it
    return None


def load_configuration(config_file: Path | None, start: Path) -> Configuration:
    """Load settings from `config_file`, or from the nearest configuration file above `start`."""
    path = config_file if config_file is not None else find_config_file(real_path(start))
    if path is None:
        return Configuration(root=real_path(start) if start.is_dir() else real_path(start).parent)
    return read_configuration(path)


def read_configuration(path: Path) -> Configuration:
    """The settings of one configuration file, with what it extends merged in."""
    table, sources, ignores_from = _resolved_table(path)
    return Configuration(settings=parse_settings(table, path), root=real_path(path).parent, sources=sources,
                         ignores_root=real_path(ignores_from).parent)


def _resolved_table(path: Path) -> tuple[dict[str, Any], tuple[Path, ...], Path]:
    """`path`'s table merged over the tables it extends (each validated on its own first, so an
    error names the file that has it), the files read, nearest first, and the file that set
    `per-file-ignores` (`path` when none did). The chain is followed in a loop: any length is fine."""
    chain: list[tuple[Path, dict[str, Any]]] = []
    visited: dict[Path, None] = {}  # the resolved paths in order, for the message about a cycle
    current = path
    while True:
        resolved = real_path(current)
        if resolved in visited:
            cycle = " -> ".join(str(p) for p in (*visited, resolved))
            raise ConfigError(f"{current}: [tool.jaxcheck] extend: circular: {cycle}")
        visited[resolved] = None
        table = _settings_table(current)
        parse_settings(table, current)
        chain.append((current, table))
        base_name = table.get("extend")
        if base_name is None:
            break
        base_path = real_path(resolved.parent / Path(str(base_name)).expanduser())
        if not base_path.is_file():
            raise ConfigError(f"{current}: [tool.jaxcheck] extend: no such file: {base_path}")
        current = base_path
    merged, ignores_from = chain[-1][1], chain[-1][0]
    for nearer, table in reversed(chain[:-1]):
        base = merged
        merged = {**_canonical(base), **_canonical(table)}
        for accumulated in ("extend-exclude", "extend-include"):
            merged[accumulated] = [*_canonical(base).get(accumulated, ()), *_canonical(table).get(accumulated, ())]
        if isinstance(base.get("runtime"), dict) and isinstance(table.get("runtime"), dict):
            merged["runtime"] = {**_canonical(base["runtime"]), **_canonical(table["runtime"])}
        if "per-file-ignores" in _canonical(table) or "per-file-ignores" not in _canonical(base):
            ignores_from = nearer
    return merged, tuple(file for file, _ in chain), ignores_from


def _canonical(table: dict[str, Any]) -> dict[str, Any]:
    """A validated table with kebab-case keys (snake_case is accepted too), so merging sees one spelling."""
    return {_kebab(str(key)): value for key, value in table.items()}


def _settings_table(path: Path) -> dict[str, Any]:
    """The jaxcheck table of a file: `[tool.jaxcheck]` in a pyproject.toml (or any file that has one),
    else the whole file (jaxcheck.toml)."""
    data = _read_toml(path)
    tool = _tool_table(data)
    if path.name == "pyproject.toml" or "jaxcheck" in tool:
        table = tool.get("jaxcheck", {})
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: [tool.jaxcheck] must be a table")
        return table
    return data


def _tool_table(data: dict[str, Any]) -> dict[str, Any]:
    tool = data.get("tool")
    return tool if isinstance(tool, dict) else {}


class ConfigResolver:
    """Finds the configuration of each checked file: the nearest configuration file at or above its
    folder, read once per file. `config_file` (`--config`) applies to every file instead, and
    `isolated` (`--isolated`) ignores every configuration file. `fallback` is used where no file is
    found. Picklable, so worker processes resolve the same way. Answers are kept for the resolver's
    lifetime (one run): a configuration file created or edited meanwhile is not noticed."""

    def __init__(self, fallback: Configuration, config_file: Path | None = None, isolated: bool = False) -> None:
        self.fallback = fallback
        self.fixed = fallback if isolated else read_configuration(config_file) if config_file is not None else None
        self._folders: dict[Path, Path | None] = {}
        self._files: dict[Path, Configuration] = {}
        self._paths: dict[Path, Configuration] = {}  # as given: a run asks about each file several times

    def for_path(self, path: Path) -> Configuration:
        """The configuration that applies to `path` (a file, or a folder's own files)."""
        if self.fixed is not None:
            return self.fixed
        known = self._paths.get(path)
        if known is not None:
            return known
        resolved = real_path(path)
        folder = resolved if resolved.is_dir() else resolved.parent
        source = self._config_file(folder)
        if source is None:
            configuration = self.fallback
        else:
            configuration = self._files.get(source) or read_configuration(source)
            self._files[source] = configuration
        self._paths[path] = configuration
        return configuration

    def _config_file(self, folder: Path) -> Path | None:
        walked: list[Path] = []
        found: Path | None = None
        for candidate in (folder, *folder.parents):
            if candidate in self._folders:
                found = self._folders[candidate]
                break
            walked.append(candidate)
            found = _config_in(candidate)
            if found is not None:
                break
        for candidate in walked:
            self._folders[candidate] = found
        return found


def parse_settings(table: Any, path: Path | str) -> Settings:
    """Validate a `[tool.jaxcheck]` table; raise ConfigError naming `path` and the key on failure."""
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.jaxcheck] must be a table")
    try:
        return Settings.model_validate(table)
    except ValidationError as exc:
        raise ConfigError(f"{path}: {_plain_error(exc)}") from None


_EXPECTED = {
    "tuple_type": "a list", "list_type": "a list", "dict_type": "a table", "model_type": "a table",
    "string_type": "a string", "bool_type": "true or false", "bool_parsing": "true or false",
    "int_type": "a whole number", "int_parsing": "a whole number", "int_from_float": "a whole number",
}


def _plain_error(exc: ValidationError) -> str:
    """The first validation error in plain words: `[tool.jaxcheck] KEY: ...`, with a did-you-mean for an
    unknown key; no pydantic wording ("Input should be a valid tuple")."""
    error = exc.errors()[0]
    location = [str(part) for part in error["loc"]]
    kind = error["type"]
    # The key a user wrote: `select` for a bad `select[2]` item, `runtime.mode` in the runtime table.
    keys = [part for part in location if not part.isdigit()]
    where = "[tool.jaxcheck] " + (".".join(keys) if keys else "tool.jaxcheck")
    if kind == "extra_forbidden":
        model: type[BaseModel] = RuntimeSettings if keys[:1] == ["runtime"] else Settings
        known = [field.alias or name for name, field in model.model_fields.items()]
        return f"{where}: unknown key" + did_you_mean(keys[-1], known)
    got = _shown(error.get("input"))
    if kind in _EXPECTED:
        item = " item" if location and location[-1].isdigit() else ""
        return f"{where}{item}: expected {_EXPECTED[kind]}, got {got}"
    if kind == "literal_error":
        return f"{where}: expected one of {error.get('ctx', {}).get('expected', '')}, got {got}"
    if kind == "greater_than_equal":
        return f"{where}: must be at least {error.get('ctx', {}).get('ge')}, got {got}"
    return f"{where}: " + str(error["msg"]).removeprefix("Value error, ")


def _shown(value: object) -> str:
    """A TOML-ish rendering of a bad value, for messages."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a table"
    return repr(value) if not isinstance(value, (list, tuple)) else "a list"


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(read_file(path).decode("utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{path}: invalid TOML: nested too deeply") from None
