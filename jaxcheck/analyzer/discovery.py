"""Finding the files to check: folders are walked honouring `.gitignore`, excludes and includes.

Files named explicitly on the command line are always checked. `.gitignore` files apply to the folder
they sit in and below (:mod:`.gitignore`). A walk never follows a symlinked folder, nor a symlinked
file that leads out of the walked folder (noted); entries named like Python files that are not regular
files (FIFOs, dangling links, symlink loops) are yielded, and reading them
(:func:`~jaxcheck.analyzer.files.read_file`) reports why.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from jaxcheck.analyzer.files import real_path
from jaxcheck.analyzer.gitignore import GitIgnore

PYTHON_INCLUDES = ("*.py", "*.pyi")
"""What a project's modules are (the files a walk for importers reads: a notebook is never imported)."""


class FileFinder:
    """Yields the files to check under some paths, skipping excluded and git-ignored ones, and symlinks
    that lead out of the folder being walked (one note each in `notes`)."""

    def __init__(self, excludes: Sequence[str], root: Path,
                 excludes_for: Callable[[Path], tuple[tuple[str, ...], Path]] | None = None,
                 includes: Sequence[str] = PYTHON_INCLUDES) -> None:
        """`excludes` are relative to `root` (the walk's project root). With `excludes_for`, each
        path's excludes are instead those it returns for the path's folder, with the folder they are
        relative to (per-folder configuration files). A walk yields the files whose name (or, for a
        pattern with a `/`, path relative to `root`) matches one of `includes`."""
        self.excludes = tuple(excludes)
        self.includes = tuple(includes)
        self.root = real_path(root)
        self.excludes_for = excludes_for
        self.notes: list[str] = []
        self._gitignores: dict[Path, GitIgnore] = {}

    def around(self, unreadable: type[Exception]) -> FileFinder:
        """This finder for the walk of the project around the checked files (importers, context), which
        reads Python modules only (a notebook is never imported): a folder
        whose per-folder settings raise `unreadable` (a broken nested configuration file) is skipped there
        instead of failing the run; the files a run checks still report it."""
        excludes_for = self.excludes_for
        if excludes_for is None:
            finder = FileFinder(self.excludes, self.root)
            finder._gitignores = self._gitignores
            return finder

        def tolerant(folder: Path) -> tuple[tuple[str, ...], Path]:
            try:
                return excludes_for(folder)
            except unreadable:
                return ("*",), folder

        finder = FileFinder(self.excludes, self.root, tolerant)
        finder._gitignores = self._gitignores
        return finder

    def included(self, path: Path) -> bool:
        """Whether a walk checks the file at `path` (by its name, or its path relative to the root)."""
        name = path.name
        for pattern in self.includes:
            if "/" not in pattern:
                if fnmatch.fnmatchcase(name, pattern):
                    return True
                continue
            try:
                relative = real_path(path).relative_to(self.root).as_posix()
            except ValueError:
                continue
            if fnmatch.fnmatchcase(relative, pattern.removeprefix("**/")) or fnmatch.fnmatchcase(relative, pattern):
                return True
        return False

    def is_excluded(self, path: Path, resolved: Path | None = None) -> bool:
        """True when `path` or one of its folders below the excludes' folder matches an exclude pattern
        (`resolved`: its real path, when the caller knows it)."""
        resolved = resolved or real_path(path)
        excludes, anchor = (self.excludes, self.root) if self.excludes_for is None \
            else self.excludes_for(resolved.parent)
        try:
            relative = resolved.relative_to(anchor).as_posix()
        except ValueError:
            relative = resolved.name
        components = relative.split("/")
        for pattern in excludes:
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
            named = not path.is_dir()
            if named and force_exclude and self._skipped(path, False):
                continue
            for candidate, resolved in [(path, real_path(path))] if named else self._walk(path):
                if resolved not in seen:
                    seen.add(resolved)
                    yield candidate

    def _walk(self, top: Path) -> Iterator[tuple[Path, Path]]:
        """The files to check under folder `top`, each with its real path (resolved once per folder:
        an entry that is no symlink lies in its folder's real path)."""
        inside = real_path(top)
        for folder, dirnames, filenames in os.walk(top):
            current, real_folder = Path(folder), real_path(Path(folder))
            kept = []
            for name in dirnames:
                entry, target, _ = _entry(current, real_folder, name)
                if not self._skipped(entry, True, target):
                    kept.append(name)
            dirnames[:] = sorted(kept)
            for name in sorted(filenames):
                if not self.included(current / name):
                    continue
                candidate, target, link = _entry(current, real_folder, name)
                if self._skipped(candidate, False, target):
                    continue
                if link and target != inside and inside not in target.parents:
                    self.notes.append(f"{candidate}: note: skipped: a symlink to {target}, outside {top}")
                    continue
                yield candidate, target

    def _skipped(self, path: Path, is_dir: bool, resolved: Path | None = None) -> bool:
        resolved = resolved or real_path(path)
        if self.is_excluded(path, resolved):
            return True
        return self._git_ignored(resolved, is_dir)

    def _git_ignored(self, resolved: Path, is_dir: bool) -> bool:
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


def _entry(folder: Path, real_folder: Path, name: str) -> tuple[Path, Path, bool]:
    """An entry of a walked folder: its path, its real path and whether it is a symlink."""
    entry = folder / name
    link = entry.is_symlink()
    return entry, real_path(entry) if link else real_folder / name, link
