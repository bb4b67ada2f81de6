"""The result cache: warm runs reuse results, edits (also of other modules) invalidate the right ones,
broken entries are misses, and the command line writes it only where asked."""

from __future__ import annotations

import io
import json
import os
import pickle
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import checkout_environment, cli, make_package

from jaxcheck.analyzer.cache import DEFAULT_CACHE_DIR, FORMAT, FORMAT_VERSION, ResultCache
from jaxcheck.analyzer.codec import CodecError, decode, encode
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
    entries = list(cache.rglob("*.json"))
    link_tables = [entry for entry in entries if b'"LinkTable"' in entry.read_bytes()]  # read only after a summary changed
    assert entries and len(link_tables) == 1
    for entry in entries:
        entry.write_bytes(garbage)
    assert _findings(_check(project, cache)) == [("utils.py", "JAX301", 3)]
    assert all(entry.read_bytes() != garbage for entry in entries)


class _Payload:
    """Unpickling this writes a file: proof that a cache entry ran code."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (Path.write_text, (self.marker, "code ran"))


def test_a_crafted_cache_entry_never_runs_code(project: Path, tmp_path: Path):
    cache = tmp_path / "cache"
    assert cli("check", "pkg", "--cache-dir", str(cache), "-j", "1", cwd=project).returncode == 1
    marker = tmp_path / "pwned"
    payload = pickle.dumps(_Payload(marker))
    entries = list(cache.rglob("*.json"))
    # The link table is read only after a summary changed, the whole-run record only by a check of some files.
    unread = [entry for entry in entries if b'"LinkTable"' in entry.read_bytes() or b'"WholeRun"' in entry.read_bytes()]
    assert entries and len(unread) == 2
    for entry in entries:
        entry.write_bytes(payload)
        entry.with_suffix(".pickle").write_bytes(payload)  # the format of earlier versions
    result = cli("check", "pkg", "--cache-dir", str(cache), "-j", "1", cwd=project)
    assert result.returncode == 1 and "utils.py:3:" in result.stdout
    assert not marker.exists()
    assert f"{cache}: note: ignored {len(entries) - len(unread)} unusable cache entries" in result.stderr


def _entries(cache: Path) -> list[tuple[Path, dict]]:
    """The entries a re-run of an unchanged project reads (not the link table nor the whole-run record:
    see test_index.py)."""
    entries = [(path, json.loads(path.read_text())) for path in sorted(cache.rglob("*.json"))]
    return [(path, entry) for path, entry in entries
            if entry.get("outcome", {}).get("@") not in ("LinkTable", "WholeRun")]


@pytest.mark.parametrize("change", [
    lambda entry: entry.update(version=entry["version"] + 1),
    lambda entry: entry.update(format="other"),
    lambda entry: entry.update(key="0" * 64),
    lambda entry: entry["outcome"].update(errors="x"),
    lambda entry: entry["outcome"].update({"@": "os.system"}),
    lambda entry: entry["outcome"].setdefault("diagnostics", []).append({"@": "Diagnostic"}),
    lambda entry: entry["outcome"].update(extra=1),
])
def test_entries_that_fail_validation_are_ignored_with_a_note(project: Path, tmp_path: Path, change):
    cache = tmp_path / "cache"
    cold = _check(project, cache)
    entries = _entries(cache)
    for path, entry in entries:
        change(entry)
        del entry["mac"]
        path.write_bytes(ResultCache(cache, "").seal(entry))  # signed with this user's key: checked past the signature
    warm = _check(project, cache)
    assert warm.diagnostics == cold.diagnostics and not warm.errors
    assert warm.notes == [f"{cache}: note: ignored {len(entries)} unusable cache entries (unreadable, corrupt, from "
                          "another version or signed with another key); the files were checked again"]
    assert not _check(project, cache).notes  # rewritten


def test_entries_are_json_data_that_round_trips(project: Path, tmp_path: Path):
    cache = tmp_path / "cache"
    cold = _check(project, cache)
    entries = _entries(cache)
    assert entries and all(entry["format"] == FORMAT and entry["version"] == FORMAT_VERSION for _, entry in entries)
    assert _check(project, cache).diagnostics == cold.diagnostics


def test_two_processes_can_share_one_cache_folder(project: Path, tmp_path: Path):
    cache = tmp_path / "cache"
    for round in range(2):
        runs = [subprocess.Popen([sys.executable, "-m", "jaxcheck", "check", "pkg", "--cache-dir", str(cache), "-j", "1"],
                                 cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env=checkout_environment()) for _ in range(4)]
        for run in runs:
            out, err = run.communicate(timeout=120)
            assert run.returncode == 1 and "utils.py:3:" in out and "note" not in err, err
    assert not [p for p in cache.rglob("*") if p.name.endswith(".tmp")]


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
    assert list((tmp_path / "elsewhere").rglob("*.json"))
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


@pytest.mark.parametrize("hint", [tuple[str, ...], frozenset[str], list[str]])
def test_sequences_of_names_are_checked_item_by_item(hint):
    assert decode(hint, ["a", "b"]) == hint.__origin__(["a", "b"])
    for bad in (["a", 1], ["a", None], [["a"]], "ab"):
        with pytest.raises(CodecError):
            decode(hint, bad)


@dataclass(frozen=True)
class _Declared:
    """Fields of each kind the codec encodes by declared type (module level: the codec reads its hints)."""

    names: tuple[str, ...]
    pair: tuple[str, int]
    table: dict[str, int]
    numbers: tuple[int, ...]
    inner: _Inner | None


@dataclass(frozen=True)
class _Inner:
    flag: bool
    count: int


def test_values_of_their_declared_types_round_trip():
    value = _Declared(("a", "b"), ("p", 2), {"k": 1}, (1, 2), _Inner(True, 3))
    data = encode(value)
    assert data == {"@": "_Declared", "names": ["a", "b"], "pair": ["p", 2], "table": [["k", 1]],
                    "numbers": [1, 2], "inner": {"@": "_Inner", "flag": True, "count": 3}}
    assert decode(_Declared, json.loads(json.dumps(data))) == value


def test_values_not_of_their_declared_types_are_encoded_as_they_are_and_never_decode():
    """A value that breaks its declared type (a bug) is written as what it is, so reading it back fails
    (a miss) instead of giving another value: a string is not split into letters, nor a tuple cut."""
    value = _Declared("abc", ("p", 2, 3), None, None, None)  # type: ignore[arg-type]
    data = encode(value)
    assert data == {"@": "_Declared", "names": "abc", "pair": ["p", 2, 3], "table": None, "numbers": None,
                    "inner": None}
    with pytest.raises(CodecError):
        decode(_Declared, data)
