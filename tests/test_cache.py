"""The result cache: warm runs reuse results, edits (also of other modules) invalidate the right ones,
broken entries are misses, and the command line writes it only where asked."""

from __future__ import annotations

import io
import os
import textwrap
from pathlib import Path

import pytest

from conftest import make_package

from jaxcheck.analyzer.cache import DEFAULT_CACHE_DIR
from jaxcheck.analyzer.config import Configuration
from jaxcheck.analyzer.engine import CheckReport, Linter
from jaxcheck.analyzer.progress import ProgressBar
from jaxcheck.cli import main

TRAIN = """
    import jax
    from .utils import clip_positive

    @jax.jit
    def step(x):
        return clip_positive(x)
"""
UTILS = """
    def clip_positive(v):
        if v > 0:
            return v
        return 0.0
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_package(tmp_path, {"train.py": TRAIN, "utils.py": UTILS})


def _write(path: Path, text: str) -> None:
    path.write_text(textwrap.dedent(text))


def _check(project: Path, cache: Path, linter: Linter | None = None) -> CheckReport:
    return (linter or Linter(Configuration())).check_paths([project / "pkg"], cache_dir=cache)


def _findings(report: CheckReport) -> list[tuple[str, str, int]]:
    return [(Path(d.path).name, d.code, d.range.start.line) for d in report.diagnostics]


def test_a_warm_run_checks_nothing_again(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    cache = tmp_path / "cache"
    cold = _check(project, cache)
    assert _findings(cold) == [("utils.py", "JAX301", 3)]
    assert (cache / ".gitignore").read_text() == "*\n"
    assert not list(cache.rglob("*.tmp"))
    monkeypatch.setattr(Linter, "check_file", lambda *_: pytest.fail("a cached file was checked again"))
    warm = _check(project, cache)
    assert warm.diagnostics == cold.diagnostics and warm.files_checked == cold.files_checked == 3


def test_editing_the_caller_updates_the_helpers_findings(project: Path, tmp_path: Path):
    cache = tmp_path / "cache"
    assert _findings(_check(project, cache)) == [("utils.py", "JAX301", 3)]
    _write(project / "pkg" / "train.py", "from .utils import clip_positive\n\ndef step(x):\n    return clip_positive(x)\n")
    assert _findings(_check(project, cache)) == []
    _write(project / "pkg" / "train.py", TRAIN)
    assert _findings(_check(project, cache)) == [("utils.py", "JAX301", 3)]


def test_editing_the_helper_updates_its_findings_under_the_callers_trace(project: Path, tmp_path: Path):
    cache = tmp_path / "cache"
    _check(project, cache)
    _write(project / "pkg" / "utils.py", "\n\n" + UTILS)
    assert _findings(_check(project, cache)) == [("utils.py", "JAX301", 5)]
    _write(project / "pkg" / "utils.py", "def clip_positive(v):\n    return v\n")
    assert _findings(_check(project, cache)) == []


def test_settings_and_rules_are_part_of_the_key(project: Path, tmp_path: Path):
    cache = tmp_path / "cache"
    _check(project, cache)
    assert _findings(_check(project, cache, Linter(Configuration(), ignore=["JAX301"]))) == []
    assert _findings(_check(project, cache)) == [("utils.py", "JAX301", 3)]


@pytest.mark.parametrize("garbage", [b"", b"not a pickle", b"\x80\x05K\x01."])
def test_corrupt_entries_are_misses(project: Path, tmp_path: Path, garbage: bytes):
    cache = tmp_path / "cache"
    _check(project, cache)
    entries = list(cache.rglob("*.pickle"))
    assert entries
    for entry in entries:
        entry.write_bytes(garbage)
    assert _findings(_check(project, cache)) == [("utils.py", "JAX301", 3)]
    assert all(entry.read_bytes() != garbage for entry in entries)


def test_an_unwritable_cache_is_no_error(project: Path, tmp_path: Path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    report = _check(project, blocker / "cache")
    assert _findings(report) == [("utils.py", "JAX301", 3)] and not report.errors


def test_cli_caches_in_the_project_root_unless_told_otherwise(project: Path, tmp_path: Path, capsys):
    assert main(["check", str(project / "pkg"), "-j", "1", "--no-cache"]) == 1
    assert not (project / DEFAULT_CACHE_DIR).exists()
    assert main(["check", str(project / "pkg"), "-j", "1"]) == 1
    assert (project / DEFAULT_CACHE_DIR / ".gitignore").read_text() == "*\n"
    assert main(["check", str(project / "pkg"), "--cache-dir", str(tmp_path / "elsewhere")]) == 1
    assert list((tmp_path / "elsewhere").rglob("*.pickle"))
    assert "\r" not in capsys.readouterr().err


@pytest.mark.parametrize("jobs", ["0", "-2", "many"])
def test_jobs_must_be_positive(jobs: str, capsys):
    assert main(["check", "-j", jobs]) == 2
    assert "positive number of jobs" in capsys.readouterr().err


def test_progress_bar_draws_only_for_many_files_and_erases_itself():
    stream = io.StringIO()
    bar = ProgressBar(stream, width=10)
    bar.start(100)
    bar.advance(50)
    bar.advance(50)
    bar.finish()
    text = stream.getvalue()
    assert "\r[          ] 0/100" in text and "\r[##########] 100/100" in text
    assert text.endswith("\r" + " " * len("[##########] 100/100") + "\r")
    small = io.StringIO()
    bar = ProgressBar(small)
    bar.start(10)
    bar.advance(10)
    bar.finish()
    assert small.getvalue() == ""


class _Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def start(self, total: int) -> None:
        self.calls.append(("start", total))

    def advance(self, count: int = 1) -> None:
        self.calls.append(("advance", count))

    def finish(self) -> None:
        self.calls.append(("finish", 0))


@pytest.mark.parametrize("runs", [1, 2])
def test_the_engine_reports_every_file_once_cached_or_not(project: Path, tmp_path: Path, runs: int):
    for _ in range(runs):
        recorder = _Recorder()
        Linter(Configuration()).check_paths([project / "pkg"], cache_dir=tmp_path / "cache", progress=recorder)
    assert recorder.calls[0] == ("start", 3) and recorder.calls[-1] == ("finish", 0)
    assert sum(count for kind, count in recorder.calls if kind == "advance") == 3


def test_fingerprint_follows_jaxcheck_source_files():
    import jaxcheck.analyzer.cache as cache_module
    from jaxcheck.analyzer.cache import fingerprint

    source = Path(cache_module.__file__)
    before = fingerprint("0.1.0", "{}", ["JAX301"], True)
    status = source.stat()
    try:
        os.utime(source, ns=(status.st_atime_ns, status.st_mtime_ns + 1_000_000_000))
        assert fingerprint("0.1.0", "{}", ["JAX301"], True) != before
    finally:
        os.utime(source, ns=(status.st_atime_ns, status.st_mtime_ns))
    assert fingerprint("0.1.0", "{}", ["JAX301"], True) == before
