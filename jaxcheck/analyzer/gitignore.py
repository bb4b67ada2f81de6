""".gitignore files: the common subset of git's syntax (`*`, `**`, `?`, `[...]`, `\\` escapes, leading
`/` anchors, trailing `/` for folders, `!` negation, `#` comments), matched against paths relative to
the file's folder.

Patterns are matched per path component in time linear in the pattern times the name (one
backtracking point, never a regular expression, so no pattern can make matching exponential); a pattern
git would never match (`[!]`, `[]`, an unclosed class) matches nothing, and a reversed range (`[z-a]`)
matches no character, as in git.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from jaxcheck.analyzer.files import read_file


@dataclass(frozen=True, slots=True)
class _CharClass:
    """A `[...]` bracket expression: single characters and inclusive ranges, maybe negated."""

    negated: bool
    chars: frozenset[str]
    ranges: tuple[tuple[str, str], ...]

    def matches(self, char: str) -> bool:
        inside = char in self.chars or any(low <= char <= high for low, high in self.ranges)
        return inside != self.negated


class _Star:
    """`*`: any run of characters within one path component."""


STAR = _Star()
GLOBSTAR = "**"
"""A whole `**` component: any number of path components."""

_Token = str | _CharClass | _Star | None
"""A literal character, a class, a star, or None for `?` (any one character)."""
_Component = tuple[_Token, ...]


@dataclass(frozen=True, slots=True)
class _IgnoreRule:
    """One pattern: components of an anchored pattern (matched from the .gitignore's folder), or a
    single component matched against the last component of the path."""

    components: tuple[_Component | str, ...]
    anchored: bool
    negated: bool
    directory_only: bool

    def matches(self, relative: str) -> bool:
        parts = relative.split("/")
        if not self.anchored:
            component = self.components[0]
            return not isinstance(component, tuple) or _match_component(component, parts[-1])
        return _match_components(self.components, parts)


class GitIgnore:
    """The rules of one `.gitignore` file, matched against paths relative to its folder."""

    def __init__(self, rules: Sequence[_IgnoreRule]) -> None:
        self.rules = tuple(rules)

    @classmethod
    def read(cls, path: Path) -> GitIgnore:
        """The rules of the file at `path`; none when it is missing, unreadable or not a regular file."""
        try:
            text = read_file(path).decode("utf-8", errors="replace")
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
            directory_only = line.endswith("/")
            line = line.rstrip("/")
            if not line:
                continue
            anchored = "/" in line
            components = [GLOBSTAR if part == GLOBSTAR else _compile(part) for part in line.lstrip("/").split("/")]
            if all(component is not None for component in components) and components:
                rules.append(_IgnoreRule(tuple(c for c in components if c is not None), anchored, negated,
                                         directory_only))
        return cls(rules)

    def verdict(self, relative: str, is_dir: bool) -> bool | None:
        """True (ignored), False (re-included by `!`) or None (no rule matches)."""
        result: bool | None = None
        for rule in self.rules:
            if rule.directory_only and not is_dir:
                continue
            if rule.matches(relative):
                result = not rule.negated
        return result


def _compile(glob: str) -> _Component | None:
    """The tokens of one component's glob, or None when git would never match it."""
    tokens: list[_Token] = []
    index = 0
    while index < len(glob):
        char = glob[index]
        if char == "\\" and index + 1 < len(glob):
            tokens.append(glob[index + 1])
            index += 2
            continue
        if char == "*":
            if not tokens or tokens[-1] is not STAR:
                tokens.append(STAR)
        elif char == "?":
            tokens.append(None)
        elif char == "[":
            parsed = _char_class(glob, index + 1)
            if parsed is None:
                return None
            tokens.append(parsed[0])
            index = parsed[1]
        else:
            tokens.append(char)
        index += 1
    return tuple(tokens)


def _char_class(glob: str, index: int) -> tuple[_CharClass, int] | None:
    """The class starting after a `[` at `index`, and the index of its `]`; None when unclosed."""
    negated = index < len(glob) and glob[index] in "!^"
    if negated:
        index += 1
    chars: set[str] = set()
    ranges: list[tuple[str, str]] = []
    first = True
    while index < len(glob):
        char = glob[index]
        if char == "]" and not first:
            return _CharClass(negated, frozenset(chars), tuple(ranges)), index
        first = False
        if char == "\\" and index + 1 < len(glob):
            index += 1
            char = glob[index]
        if index + 2 < len(glob) and glob[index + 1] == "-" and glob[index + 2] != "]":
            ranges.append((char, glob[index + 2]))  # a reversed range (z-a) matches nothing, as in git
            index += 3
            continue
        chars.add(char)
        index += 1
    return None


def _match_component(tokens: _Component, text: str) -> bool:
    """Whether `tokens` match all of `text`: one backtracking point (the last star), O(len * len)."""
    position = token = 0
    star_token, star_position = -1, 0
    while position < len(text):
        if token < len(tokens) and tokens[token] is STAR:
            star_token, star_position = token, position
            token += 1
            continue
        if token < len(tokens) and _matches_char(tokens[token], text[position]):
            token += 1
            position += 1
            continue
        if star_token < 0:
            return False
        token = star_token + 1
        star_position += 1
        position = star_position
    return all(t is STAR for t in tokens[token:])


def _matches_char(token: _Token, char: str) -> bool:
    if token is None:
        return True
    if isinstance(token, _CharClass):
        return token.matches(char)
    return token == char


def _match_components(pattern: Sequence[_Component | str], parts: Sequence[str]) -> bool:
    """Anchored matching of components: `**` spans any number of parts (at least one at the end)."""
    reachable = {0}
    for index, component in enumerate(pattern):
        if isinstance(component, str):  # GLOBSTAR
            lowest = min(reachable) + (1 if index == len(pattern) - 1 else 0)
            reachable = set(range(lowest, len(parts) + 1))
        else:
            reachable = {p + 1 for p in reachable if p < len(parts) and _match_component(component, parts[p])}
        if not reachable:
            return False
    return len(parts) in reachable
