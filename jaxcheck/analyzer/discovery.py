"""Finding the Python files to check: folders are walked honouring `.gitignore` and excludes.

Files named explicitly on the command line are always checked. `.gitignore` files apply to the folder
they sit in and below (the common subset of git's syntax: `*`, `**`, `?`, `[...]`, leading `/`
anchors, trailing `/` for folders, `!` negation, `#` comments).
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

PYTHON_SUFFIXES = (".py", ".pyi")


@dataclass(frozen=True, slots=True)
class _IgnoreRule:
    pattern: re.Pattern[str]
    negated: bool
    directory_only: bool


class GitIgnore:
    """The rules of one `.gitignore` file, matched against paths relative to its folder."""

    def __init__(self, rules: Sequence[_IgnoreRule]) -> None:
        self.rules = tuple(rules)

    @classmethod
    def read(cls, path: Path) -> GitIgnore:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return cls(())
        return cls.parse(text)

    @classmethod
    def parse(cls, text: str) -> GitIgnore:
        rules = []
        for raw in text.splitlines():
            line = raw.rstrip()
            if not line or line.startswith("#"):
                continue
            negated = line.startswith("!")
            if negated:
                line = line[1:]
            line = line.replace("\\", "")
            directory_only = line.endswith("/")
            line = line.rstrip("/")
            if not line:
                continue
            anchored = "/" in line
            line = line.lstrip("/")
            rules.append(_IgnoreRule(_glob_to_regex(line, anchored), negated, directory_only))
        return cls(rules)

    def verdict(self, relative: str, is_dir: bool) -> bool | None:
        """True (ignored), False (re-included by `!`) or None (no rule matches)."""
        result: bool | None = None
        for rule in self.rules:
            if rule.directory_only and not is_dir:
                continue
            if rule.pattern.match(relative):
                result = not rule.negated
        return result


def _glob_to_regex(glob: str, anchored: bool) -> re.Pattern[str]:
    parts: list[str] = []
    index = 0
    while index < len(glob):
        char = glob[index]
        if glob.startswith("**/", index):
            parts.append("(?:.*/)?")
            index += 3
            continue
        if glob.startswith("**", index):
            parts.append(".*")
            index += 2
            continue
        if char == "*":
            parts.append("[^/]*")
        elif char == "?":
            parts.append("[^/]")
        elif char == "[":
            end = glob.find("]", index + 1)
            if end == -1:
                parts.append(re.escape(char))
            else:
                body = glob[index + 1 : end].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                parts.append(f"[{body}]")
                index = end
        else:
            parts.append(re.escape(char))
        index += 1
    prefix = "" if anchored else "(?:.*/)?"
    return re.compile(f"^{prefix}{''.join(parts)}$")


class FileFinder:
    """Yields the Python files under some paths, skipping excluded and git-ignored ones."""

    def __init__(self, excludes: Sequence[str], root: Path) -> None:
        self.excludes = tuple(excludes)
        self.root = root.resolve()
        self._gitignores: dict[Path, GitIgnore] = {}

    def is_excluded(self, path: Path) -> bool:
        """True when `path` or one of its folders below the root matches an exclude pattern."""
        resolved = path.resolve()
        try:
            relative = resolved.relative_to(self.root).as_posix()
        except ValueError:
            relative = resolved.name
        components = relative.split("/")
        for pattern in self.excludes:
            pattern = pattern.rstrip("/")
            if "/" in pattern:
                if fnmatch.fnmatchcase(relative, pattern) or relative.startswith(pattern + "/"):
                    return True
            elif any(fnmatch.fnmatchcase(component, pattern) for component in components):
                return True
        return False

    def files(self, paths: Sequence[Path], force_exclude: bool = False) -> Iterator[Path]:
        """Every file to check under `paths`, each once, in a stable order. Files named in `paths`
        are always checked unless `force_exclude` applies the excludes and `.gitignore` to them too
        (pre-commit passes every staged file by name)."""
        seen: set[Path] = set()
        for path in paths:
            if path.is_file() and force_exclude and self._skipped(path, False):
                continue
            candidates = [path] if path.is_file() or not path.exists() else self._walk(path)
            for candidate in candidates:
                key = candidate.resolve()
                if key not in seen:
                    seen.add(key)
                    yield candidate

    def _walk(self, top: Path) -> Iterator[Path]:
        for folder, dirnames, filenames in os.walk(top):
            current = Path(folder)
            dirnames[:] = sorted(d for d in dirnames if not self._skipped(current / d, True))
            for name in sorted(filenames):
                candidate = current / name
                if name.endswith(PYTHON_SUFFIXES) and not self._skipped(candidate, False):
                    yield candidate

    def _skipped(self, path: Path, is_dir: bool) -> bool:
        if self.is_excluded(path):
            return True
        return self._git_ignored(path, is_dir)

    def _git_ignored(self, path: Path, is_dir: bool) -> bool:
        resolved = path.resolve()
        result: bool | None = None
        for folder in reversed(resolved.parents):
            if folder != self.root and self.root not in folder.parents:
                continue
            ignore = self._gitignore(folder)
            verdict = ignore.verdict(resolved.relative_to(folder).as_posix(), is_dir)
            if verdict is not None:
                result = verdict
        return bool(result)

    def _gitignore(self, folder: Path) -> GitIgnore:
        cached = self._gitignores.get(folder)
        if cached is None:
            cached = GitIgnore.read(folder / ".gitignore")
            self._gitignores[folder] = cached
        return cached
