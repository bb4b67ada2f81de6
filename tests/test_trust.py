"""Trust nothing on disk, lose nothing on failure (issue 31).

The cache holds facts, never instructions: whatever its entries say, `--fix`, `--diff` and `--add-noqa`
write only what a fresh check of the file's current bytes computes, only into the files the run checks;
entries edited, emptied or swapped by someone without the cache key are not believed; huge sparse
entries are rejected before a byte is read. No fix loses bytes: a file-size limit, a full disk, kill -9,
a concurrent edit and a read-only file all leave the file as it was.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import checkout_environment

from jaxcheck.analyzer import files
from jaxcheck.analyzer.autofix import fix_files, write_fixed
from jaxcheck.analyzer.cache import ResultCache, cache_secret
from jaxcheck.analyzer.config import Configuration
from jaxcheck.analyzer.engine import Linter
from jaxcheck.analyzer.files import FileChangedError, read_file, write_through
from jaxcheck.cli import main

MUTATION = "import jax.numpy as jnp\n\nx = jnp.zeros(3)\nx[0] = 1.0\nx[1] += 2.0\n"
FIXED = "import jax.numpy as jnp\n\nx = jnp.zeros(3)\nx = x.at[0].set(1.0)\nx = x.at[1].add(2.0)\n"
OTHER = "import jax.numpy as jnp\n\ny = jnp.ones(2)\n\n\ny[1] = 0.0\n"
PAYLOAD = "__import__('os').system('touch pwned')"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project with two files of different findings, the current folder (display paths are relative)."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (root / "a.py").write_text(MUTATION)
    (root / "b.py").write_text(OTHER)
    monkeypatch.chdir(root)
    return root


def _check(cache: Path, *paths: str) -> list[tuple[str, str, int]]:
    report = Linter(Configuration()).check_paths([Path(path) for path in paths or ["."]], cache_dir=cache)
    assert not report.errors
    return [(d.path, d.code, d.range.start.line) for d in report.diagnostics]


def _cli_findings(cache: Path, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    """The findings `jaxcheck check .` reports as JSON with the cache at `cache` (it writes the cache)."""
    capsys.readouterr()
    main(["check", ".", "--cache-dir", str(cache), "-j", "1", "--output-format", "json"])
    findings: list[dict[str, Any]] = json.loads(capsys.readouterr().out)
    assert findings
    return findings


def _dicts(value: Any) -> Iterator[dict[str, Any]]:
    """Every JSON object in `value`, outermost first."""
    if isinstance(value, dict):
        yield value
        value = list(value.values())
    if isinstance(value, list):
        for item in value:
            yield from _dicts(item)


def _rewrite(cache: Path, change: Callable[[dict[str, Any]], None], secret: bytes) -> None:
    """Apply `change` to every JSON object of every entry, then sign each entry with `secret`
    (an attacker's key, or the user's own: the worst case, a leaked key)."""
    for path in cache.rglob("*.json"):
        entry = json.loads(path.read_bytes())
        del entry["mac"]
        for value in _dicts(entry):
            change(value)
        path.write_bytes(ResultCache(cache, "", secret).seal(entry))


def _tagged(tag: str, change: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    return lambda value: change(value) if value.get("@") == tag else None


# ------------------------------------------------------------------ the cache holds facts, never instructions
@pytest.mark.parametrize("mode", ["--fix", "--diff"])
def test_fix_and_diff_recompute_fixes_whatever_the_cache_says(project: Path, tmp_path: Path, mode: str, capsys):
    cache = tmp_path / "cache"
    _cli_findings(cache, capsys)
    _rewrite(cache, _tagged("Edit", lambda edit: edit.update(content=PAYLOAD)), cache_secret())
    assert PAYLOAD in json.dumps(_cli_findings(cache, capsys))  # the report believes what the key signed
    main(["check", mode, ".", "--cache-dir", str(cache), "-j", "1"])
    out = capsys.readouterr().out
    assert PAYLOAD not in out and PAYLOAD not in (project / "a.py").read_text()
    if mode == "--fix":
        assert (project / "a.py").read_text() == FIXED
    else:
        assert "+x = x.at[0].set(1.0)" in out and (project / "a.py").read_text() == MUTATION


def test_add_noqa_writes_only_the_codes_of_a_fresh_check(project: Path, tmp_path: Path, capsys):
    cache = tmp_path / "cache"
    _cli_findings(cache, capsys)
    _rewrite(cache, _tagged("Diagnostic", lambda d: d.update(code="JAX201\nimport os  #")), cache_secret())
    assert "import os" in json.dumps(_cli_findings(cache, capsys))
    assert main(["check", "--add-noqa", ".", "--cache-dir", str(cache), "-j", "1"]) == 0
    assert "import os" not in (project / "a.py").read_text()
    assert (project / "a.py").read_text().splitlines()[3] == "x[0] = 1.0  # noqa: JAX201"


def test_a_cached_path_outside_the_project_is_never_read_or_written(project: Path, tmp_path: Path, capsys):
    victim = tmp_path / "victim.py"
    victim.write_text(MUTATION)
    before = victim.stat()
    cache = tmp_path / "cache"
    _cli_findings(cache, capsys)
    _rewrite(cache, _tagged("Diagnostic", lambda d: d.update(path="../victim.py")), cache_secret())
    assert "victim" not in json.dumps(_cli_findings(cache, capsys))
    main(["check", "--fix", ".", "--cache-dir", str(cache), "-j", "1"])
    captured = capsys.readouterr()
    assert "victim" not in captured.out + captured.err
    assert victim.read_text() == MUTATION and victim.stat().st_mtime_ns == before.st_mtime_ns
    assert (project / "a.py").read_text() == FIXED  # the file the run checked is fixed


def test_entries_emptied_without_the_key_are_not_believed(project: Path, tmp_path: Path):
    cache = tmp_path / "cache"
    cold = _check(cache)
    assert {path for path, _, _ in cold} == {"a.py", "b.py"}

    def emptied(value: dict[str, Any]) -> None:
        if "diagnostics" in value:
            value["diagnostics"] = []

    _rewrite(cache, emptied, b"an attacker's key")
    assert _check(cache) == cold
    _rewrite(cache, emptied, cache_secret())  # the key is what protects: an entry signed with it is believed
    assert _check(cache) == []


@pytest.mark.parametrize("secret", [b"an attacker's key", None], ids=["attacker-key", "user-key"])
def test_entries_swapped_between_files_are_not_believed(project: Path, tmp_path: Path, secret: bytes | None):
    cache = tmp_path / "cache"
    cold = {name: _check(cache, name) for name in ("a.py", "b.py")}  # each alone: no project solve relints them
    own: dict[str, tuple[Path, dict[str, Any]]] = {}
    for path in cache.rglob("*.json"):
        entry = json.loads(path.read_bytes())
        outcome = entry.get("outcome", {})
        if outcome.get("@") != "FileOutcome":
            path.unlink()  # run records and states: per-file entries are then what a re-run reads
            continue
        own[outcome["diagnostics"][0]["path"]] = (path, entry)
    (path_a, entry_a), (path_b, entry_b) = own["a.py"], own["b.py"]
    entry_a["key"], entry_b["key"] = entry_b["key"], entry_a["key"]
    signer = ResultCache(cache, "", secret)
    for path, entry in ((path_b, entry_a), (path_a, entry_b)):
        del entry["mac"]
        path.write_bytes(signer.seal(entry))
    assert {name: _check(cache, name) for name in cold} == cold


def test_huge_sparse_entries_are_rejected_before_being_read(project: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch):
    cache = tmp_path / "cache"
    cold = _check(cache)
    entries = list(cache.rglob("*.json"))
    for path in entries:
        with open(path, "wb") as stream:
            stream.truncate(1 << 40)  # 1 TiB of holes
    read = 0
    real_read = os.read

    def counting(handle: int, size: int) -> bytes:
        nonlocal read
        data = real_read(handle, size)
        read += len(data)
        return data

    monkeypatch.setattr(os, "read", counting)
    report = Linter(Configuration()).check_paths([Path(".")], cache_dir=cache)
    assert [(d.path, d.code, d.range.start.line) for d in report.diagnostics] == cold
    assert read < 64 * 1024  # the sources; before: each entry read up to its cap (64 MiB, 256 MiB)
    assert any("ignored" in note for note in report.notes)


def test_a_bounded_read_rejects_a_sparse_file_under_the_bound_and_a_large_one_unread(tmp_path: Path,
                                                                                     monkeypatch: pytest.MonkeyPatch):
    sparse = tmp_path / "sparse.json"
    with open(sparse, "wb") as stream:
        stream.write(b"{}")
        stream.truncate(1 << 20)
    large = tmp_path / "large.json"
    large.write_bytes(b"x" * 4096)
    monkeypatch.setattr(os, "read", lambda *_: pytest.fail("read"))
    for path, limit in ((sparse, 2 << 20), (large, 2048)):
        with pytest.raises(OSError, match=f"larger than {limit} bytes or sparse"):
            read_file(path, limit)


# ------------------------------------------------------------------------------- no fix ever loses bytes
def _target(folder: Path, linked: bool, text: str = MUTATION) -> tuple[Path, Path | None]:
    path = folder / "a.py"
    path.write_text(text)
    twin = None
    if linked:
        twin = folder / "twin.txt"
        os.link(path, twin)
    return path, twin


def _intact(path: Path, twin: Path | None, text: str = MUTATION) -> None:
    """The file holds `text`, stays linked to its twin, and nothing else is left in its folder."""
    assert path.read_text() == text
    if twin is not None:
        assert twin.read_text() == text and twin.stat().st_ino == path.stat().st_ino
    assert sorted(p.name for p in path.parent.iterdir()) == sorted(["a.py", *(["twin.txt"] if twin else [])])


@pytest.mark.parametrize("linked", [False, True], ids=["one-link", "hard-linked"])
def test_a_file_size_limit_leaves_the_file_intact(tmp_path: Path, linked: bool):
    path, twin = _target(tmp_path, linked)
    limit = len(MUTATION) + 5  # the fixed text is longer

    def limited() -> None:
        import resource

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write then fails with EFBIG instead of killing
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    result = subprocess.run([sys.executable, "-m", "jaxcheck", "check", "--fix", "--no-cache", "a.py"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120, preexec_fn=limited,
                            env={**checkout_environment(), "PYTHONDONTWRITEBYTECODE": "1"})
    assert result.returncode == 2, result.stderr
    assert "a.py: error: cannot write: File too large" in result.stderr
    _intact(path, twin)


class _Full:
    """`os.write` on a full disk: writes to the files `failing` selects write three quarters of their data
    (half of the fixed text is the unchanged first lines), then fail with ENOSPC."""

    def __init__(self, failing: Callable[[int], bool]) -> None:
        self.failing = failing
        self.real = os.write

    def __call__(self, handle: int, data: Any) -> int:
        if not self.failing(handle):
            return self.real(handle, data)
        self.real(handle, bytes(data[: len(data) * 3 // 4]))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _inode_of(path: Path) -> Callable[[int], bool]:
    inode = path.stat().st_ino
    return lambda handle: os.fstat(handle).st_ino == inode


@pytest.mark.parametrize("linked", [False, True], ids=["one-link", "hard-linked"])
def test_a_full_disk_while_the_new_text_is_written_leaves_the_file_intact(tmp_path: Path, linked: bool,
                                                                         monkeypatch: pytest.MonkeyPatch):
    path, twin = _target(tmp_path, linked)
    inode = _inode_of(path)
    monkeypatch.setattr(os, "write", _Full(lambda handle: not inode(handle)))  # the temporary file
    with pytest.raises(OSError) as raised:
        write_through(path, FIXED.encode())
    assert raised.value.errno == errno.ENOSPC
    _intact(path, twin)


def test_a_full_disk_while_a_linked_file_is_copied_into_restores_its_bytes(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch):
    path, twin = _target(tmp_path, linked=True)
    full = _Full(_inode_of(path))
    failed = []

    def once(handle: int) -> bool:
        if failed or not full.failing(handle):
            return False
        failed.append(handle)
        return True

    monkeypatch.setattr(os, "write", _Full(once))
    with pytest.raises(OSError, match="No space left on device"):
        write_through(path, FIXED.encode())
    assert failed
    _intact(path, twin)


def test_when_even_the_restore_fails_the_fixed_text_is_kept_beside_the_file(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch):
    path, _ = _target(tmp_path, linked=True)
    monkeypatch.setattr(os, "write", _Full(_inode_of(path)))
    with pytest.raises(OSError, match="the file may be damaged, its fixed text is kept in") as raised:
        write_through(path, FIXED.encode())
    kept = Path(str(raised.value.strerror).rpartition(" kept in ")[2])
    assert kept.parent == tmp_path and kept.read_text() == FIXED


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="names open files through /proc")
def test_a_full_disk_during_fix_is_a_one_line_error_and_other_files_are_fixed(project: Path,
                                                                             monkeypatch: pytest.MonkeyPatch, capsys):
    (project / "c.py").write_text(MUTATION)
    monkeypatch.setattr(os, "write", _Full(lambda handle: os.readlink(f"/proc/self/fd/{handle}").startswith(
        str(project / ".a.py."))))  # the temporary file of a.py
    assert main(["check", "--fix", "--no-cache", "-j", "1", "."]) == 2
    assert "a.py: error: cannot write: No space left on device\n" in capsys.readouterr().err
    assert (project / "a.py").read_text() == MUTATION and (project / "c.py").read_text() == FIXED


_KILLER = """
import os, signal, sys
from pathlib import Path
from jaxcheck.analyzer import files
path, phase = Path(sys.argv[1]), sys.argv[2]
inode, real = path.stat().st_ino, os.write
def write(handle, data):
    if (os.fstat(handle).st_ino == inode) == (phase == "copy"):
        real(handle, bytes(data[: len(data) * 3 // 4]))
        os.kill(os.getpid(), signal.SIGKILL)
    return real(handle, data)
os.write = write
files.write_through(path, sys.argv[3].encode())
"""


@pytest.mark.parametrize("linked, phase", [(False, "temporary"), (True, "temporary"), (True, "copy")])
def test_kill_9_during_the_write_loses_no_bytes(tmp_path: Path, linked: bool, phase: str):
    path, twin = _target(tmp_path, linked)
    result = subprocess.run([sys.executable, "-c", _KILLER, str(path), phase, FIXED], capture_output=True,
                            text=True, env=checkout_environment(), timeout=60)
    assert result.returncode == -signal.SIGKILL, result.stderr
    leftovers = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    if phase == "temporary":  # the file itself was not touched yet
        assert path.read_text() == MUTATION
    else:  # the copy into the linked file was cut: the whole fixed text waits beside it
        assert [p.read_text() for p in leftovers] == [FIXED]
    if twin is not None:
        assert twin.stat().st_ino == path.stat().st_ino


@pytest.mark.parametrize("linked", [False, True], ids=["one-link", "hard-linked"])
def test_a_file_edited_while_it_is_written_keeps_the_edit(tmp_path: Path, linked: bool,
                                                          monkeypatch: pytest.MonkeyPatch):
    path, twin = _target(tmp_path, linked)
    (result,) = fix_files(Linter(Configuration()), Linter(Configuration()).check_paths([path]).diagnostics, False)
    edited = MUTATION + "y = 1\n"
    real_fsync = os.fsync

    def editor_saves(handle: int) -> None:  # while the temporary file is flushed
        real_fsync(handle)
        if path.read_text() != edited:
            path.write_text(edited)

    monkeypatch.setattr(files.os, "fsync", editor_saves)
    with pytest.raises(FileChangedError, match="changed while it was being fixed"):
        write_fixed(result)
    _intact(path, twin, edited)


@pytest.mark.parametrize("linked", [False, True], ids=["one-link", "hard-linked"])
def test_read_only_files_are_refused_and_other_files_fixed(project: Path, linked: bool, capsys):
    path, twin = _target(project, linked)
    (project / "b.py").unlink()
    (project / "c.py").write_text(MUTATION)
    path.chmod(0o444)
    assert main(["check", "--fix", "--no-cache", "-j", "1", "."]) == 2
    assert "a.py: error: cannot write: Permission denied\n" in capsys.readouterr().err
    assert path.read_text() == MUTATION and (project / "c.py").read_text() == FIXED
    assert oct(path.stat().st_mode & 0o777) == oct(0o444)
    if twin is not None:
        assert twin.stat().st_ino == path.stat().st_ino
