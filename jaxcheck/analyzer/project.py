"""The project around the checked files: module names, and which other modules import them.

Cross-module tracing needs the summaries of modules that import a checked module (a helper in
`utils.py` is traced because `train.py` calls it from a jitted step), even when only `utils.py`
is checked (pre-commit, flake8). Importers are found with a cheap text scan before any parsing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from jaxcheck.analyzer.files import read_file, real_path
from jaxcheck.analyzer.source import SourceDecodeError, decode_source

_IMPORT_LINE = re.compile(r"^[ \t]*(?:from[ \t]+([.\w]+)[ \t]+import[ \t]+([^#\n]+)|import[ \t]+([^#\n]+))", re.M)


@dataclass(frozen=True, slots=True)
class ModuleName:
    """A file's dotted module name and the package its relative imports start from."""

    name: str
    package: str


def module_name_for(path: Path) -> ModuleName:
    """Derive the module name by climbing the folders that have an `__init__.py`. A notebook is no
    module: it is named `<stem>-ipynb`, which no import can name, in no package."""
    path = real_path(path)
    stem = path.stem
    if path.suffix == ".ipynb":
        return ModuleName(f"{stem}-ipynb", "")
    parts: list[str] = [] if stem == "__init__" else [stem]
    folder = path.parent
    while (folder / "__init__.py").is_file() or (folder / "__init__.pyi").is_file():
        parts.insert(0, folder.name)
        if folder.parent == folder:
            break
        folder = folder.parent
    name = ".".join(parts) or stem
    package = name if stem == "__init__" else name.rpartition(".")[0]
    return ModuleName(name, package)


def project_root(start: Path) -> Path:
    """The nearest folder at or above `start` holding `.git` or `pyproject.toml` (else `start`'s folder).
    A `jaxcheck.toml` only holds settings: a folder with one is still part of the project around it."""
    start = real_path(start)
    folder = start if start.is_dir() else start.parent
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists() or (candidate / "pyproject.toml").is_file():
            return candidate
    return folder


def common_folder(paths: Iterable[Path]) -> Path:
    """The deepest folder holding every path (a file counts as its folder), whatever their order: a
    run's project root, cache and importer scan start from it, so `check a b` is `check b a`."""
    folders = []
    for path in paths:
        resolved = real_path(path)
        folders.append(str(resolved if resolved.is_dir() else resolved.parent))
    return Path(os.path.commonpath(folders)) if folders else real_path(Path("."))


def imported_modules(text: str, package: str) -> set[str]:
    """Every module name an import statement in `text` may refer to (a cheap over-approximation:
    `from pkg import mod` yields both `pkg` and `pkg.mod`)."""
    found: set[str] = set()
    for match in _IMPORT_LINE.finditer(text):
        source, names, plain = match.groups()
        if plain is not None:
            for item in plain.replace("(", " ").replace(")", " ").split(","):
                dotted = item.split()[0] if item.split() else ""
                found.update(_prefixes(dotted))
            continue
        level = len(source) - len(source.lstrip("."))
        base = absolute_module(level, source[level:], package)
        if base is None:
            continue
        found.update(_prefixes(base))
        for item in names.replace("(", " ").replace(")", " ").replace("\\", " ").split(","):
            words = item.split()
            if words:
                found.add(f"{base}.{words[0]}" if base else words[0])
    return found


Stamp = tuple[int, int]
"""A file's size and modification time: while both are unchanged, its cached text is current."""

_TEXTS: dict[Path, tuple[Stamp, ModuleName, str]] = {}


def project_texts(paths: Iterable[Path]) -> dict[Path, tuple[Stamp, ModuleName, str]]:
    """Stamp, module name and decoded text of each readable file, read at most once per process while
    the file is unchanged (a flake8 run checks every file against the same project)."""
    texts: dict[Path, tuple[Stamp, ModuleName, str]] = {}
    for path in paths:
        try:
            status = path.stat()
        except OSError:
            continue
        stamp = (status.st_size, status.st_mtime_ns)
        known = _TEXTS.get(path)
        if known is None or known[0] != stamp:
            try:
                known = (stamp, module_name_for(path), decode_source(read_file(path)).text)
            except (OSError, SourceDecodeError):
                continue
            _TEXTS[path] = known
        texts[path] = known
    return texts


def importers_of(
    targets: Iterable[str], candidates: dict[Path, tuple[ModuleName, str]], known: set[Path]
) -> list[Path]:
    """The files among `candidates` (path -> module name and text) that import any module in
    `targets`, directly or through other importers (the reverse-import closure), minus `known`."""
    wanted = set(targets)
    found: list[Path] = []
    changed = True
    while changed:
        changed = False
        for path, (module, text) in candidates.items():
            if path in known or path in found:
                continue
            if imported_modules(text, module.package) & wanted:
                found.append(path)
                wanted.add(module.name)
                changed = True
    return found


def absolute_module(level: int, module: str, package: str) -> str | None:
    """Resolve `from <level dots><module> import ...` inside `package`; None when it escapes the top."""
    if level == 0:
        return module
    parts = package.split(".") if package else []
    if level - 1 > len(parts):
        return None
    base = ".".join(parts[: len(parts) - (level - 1)])
    return ".".join(p for p in (base, module) if p)


def _prefixes(dotted: str) -> list[str]:
    parts = dotted.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts)) if parts[i]]
