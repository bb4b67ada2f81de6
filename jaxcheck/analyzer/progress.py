"""A one-line progress bar for long runs on a terminal: `[########      ] 123/624`."""

from __future__ import annotations

import time
from typing import Protocol, TextIO

MIN_FILES = 50
"""Runs over fewer files finish too fast for a bar to help."""

REDRAW_SECONDS = 0.1


class Progress(Protocol):
    """What the engine reports while checking files."""

    def start(self, total: int) -> None:
        """`total` files are about to be checked."""

    def advance(self, count: int = 1) -> None:
        """`count` more files are done."""

    def finish(self) -> None:
        """Checking is over (also after an error)."""


class ProgressBar:
    """Draws on `stream` (meant for a terminal's stderr), at most every 0.1 s, and erases itself at the end."""

    def __init__(self, stream: TextIO, width: int = 30) -> None:
        self.stream = stream
        self.width = width
        self.total = 0
        self.done = 0
        self._drawn_at = float("-inf")
        self._shown = 0

    def start(self, total: int) -> None:
        self.total, self.done = total, 0
        self._draw(force=True)

    def advance(self, count: int = 1) -> None:
        self.done += count
        self._draw(force=self.done >= self.total)

    def finish(self) -> None:
        if self._shown:
            self.stream.write("\r" + " " * self._shown + "\r")
            self.stream.flush()
            self._shown = 0

    def _draw(self, force: bool) -> None:
        now = time.monotonic()
        if self.total <= MIN_FILES or (not force and now - self._drawn_at < REDRAW_SECONDS):
            return
        self._drawn_at = now
        filled = self.width * min(self.done, self.total) // self.total
        line = f"[{'#' * filled}{' ' * (self.width - filled)}] {self.done}/{self.total}"
        self.stream.write("\r" + line)
        self.stream.flush()
        self._shown = len(line)
