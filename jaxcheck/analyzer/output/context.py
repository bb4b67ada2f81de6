"""What a formatter may know besides the diagnostics: the checked files' lines and whether to colour."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from jaxcheck.analyzer.files import read_file
from jaxcheck.analyzer.source import SourceDecodeError, decode_source, source_lines


@dataclass(frozen=True, slots=True)
class OutputContext:
    """`sources` maps a diagnostic's path to its lines (index 0 is line 1); `color` allows ANSI codes."""

    sources: Mapping[str, Sequence[str]] = field(default_factory=dict)
    color: bool = False


PLAIN = OutputContext()


def read_sources(paths: Iterable[str]) -> dict[str, list[str]]:
    """Read and decode each path once; a file that cannot be read or decoded is left out."""
    sources: dict[str, list[str]] = {}
    for path in sorted(set(paths)):
        try:
            sources[path] = source_lines(decode_source(read_file(Path(path))).text)
        except (OSError, SourceDecodeError):
            continue
    return sources
