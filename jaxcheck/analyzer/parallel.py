"""Checking files in worker processes.

Workers are started with the `spawn` method (safe whatever threads the parent runs) and receive the
linter and the result cache once, when they start; a task is one file, plus the pickled project
solution for re-lints (unpickled once per worker per solve). A worker stores each outcome in the
cache itself (encoding is a tenth of a file's cost: done in parallel, not after). Small runs stay in-process: starting a worker costs
more than checking a few files. A worker that dies (a crash in native code, the OOM killer) loses no
other file: the files it left unfinished are checked again one at a time in a fresh worker, and only
the file that kills that worker too is reported as a :class:`FileError`.

Workers ignore SIGINT (Ctrl-C reaches the whole process group): the parent decides, and
:func:`terminate_workers` ends them when it is interrupted or terminated.
"""

from __future__ import annotations

import multiprocessing
import pickle
import signal
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from itertools import count
from types import TracebackType

from jaxcheck.analyzer.cache import ResultCache
from jaxcheck.analyzer.outcome import FileLinter, FileOutcome
from jaxcheck.analyzer.project import ModuleName
from jaxcheck.analyzer.semantics.solver import Solution

MIN_FILES_PER_WORKER = 8
"""A pool is started only when every worker gets at least this many files."""

CRASH_MESSAGE = "the worker process checking this file crashed; file skipped"

_SOLVES = count()


@dataclass(frozen=True, slots=True)
class FileTask:
    """One file to check: its display path, its bytes, its module name, and the key of the result
    cache entry its outcome is stored under (None: not stored; nor is an outcome with errors, so a
    crash or a failing rule is tried again next time)."""

    display_path: str
    data: bytes
    module: ModuleName
    entry_key: str | None = None


_PackedSolution = tuple[int, bytes]
"""A solution pickled once in the parent, with a number that identifies it in the workers."""


class Checker:
    """Runs :meth:`FileLinter.check_file` over tasks with up to `jobs` worker processes, storing the
    outcomes of tasks with an entry key in `cache`.

    Use it as a context manager: the pool, started on first need, is shut down on exit.
    """

    def __init__(self, linter: FileLinter, jobs: int, cache: ResultCache | None = None) -> None:
        self.linter = linter
        self.jobs = jobs
        self.cache = cache
        self._pool: ProcessPoolExecutor | None = None
        self._solo: ProcessPoolExecutor | None = None

    def __enter__(self) -> Checker:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        for pool in (self._pool, self._solo):
            if pool is not None:
                _stop(pool)

    def check(self, tasks: Sequence[FileTask], solution: Solution | None,
              done: Callable[[], None] = lambda: None) -> list[FileOutcome]:
        """Outcomes of `tasks`, in order; without `solution` each file is solved on its own.
        `done` is called once per finished file (in the calling thread)."""
        workers = min(self.jobs, len(tasks) // MIN_FILES_PER_WORKER)
        if self._pool is None and workers < 2:
            outcomes = []
            for task in tasks:
                outcome = self.linter.check_file(task.display_path, task.data, task.module, solution)
                _store(self.cache, task, outcome, solution is not None)
                outcomes.append(outcome)
                done()
            return outcomes
        if self._pool is None:
            self._pool = self._start(workers)
        packed = None if solution is None else (next(_SOLVES), pickle.dumps(solution, pickle.HIGHEST_PROTOCOL))
        return self._run_pooled(tasks, packed, done)

    def _run_pooled(self, tasks: Sequence[FileTask], packed: _PackedSolution | None,
                    done: Callable[[], None]) -> list[FileOutcome]:
        assert self._pool is not None
        results: list[FileOutcome | None] = [None] * len(tasks)
        # Largest files first, so no worker is left with a big file at the end (results keep task order).
        largest_first = sorted(range(len(tasks)), key=lambda index: len(tasks[index].data), reverse=True)
        futures = {self._pool.submit(_check, tasks[index], packed): index for index in largest_first}
        try:
            for future in as_completed(futures):
                results[futures[future]] = self._result(future, tasks[futures[future]])
                done()
        except BrokenProcessPool:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None
            for future, index in futures.items():
                if results[index] is None and future.done() and not future.cancelled() and not future.exception():
                    results[index] = future.result()
                    done()
        outcomes = []
        for task, result in zip(tasks, results):
            if result is None:
                result = self._check_alone(task, packed)
                done()
            outcomes.append(result)
        return outcomes

    def _result(self, future: Future[FileOutcome], task: FileTask) -> FileOutcome:
        try:
            return future.result()
        except BrokenProcessPool:
            raise
        except Exception as exc:  # e.g. an outcome that could not be pickled back
            return self.linter.failed(task.display_path, f"internal error: {exc}")

    def _check_alone(self, task: FileTask, packed: _PackedSolution | None) -> FileOutcome:
        """Check one file in a worker of its own; a crash there is that file's error."""
        if self._solo is None:
            self._solo = self._start(1)
        try:
            return self._result(self._solo.submit(_check, task, packed), task)
        except BrokenProcessPool:
            self._solo.shutdown(cancel_futures=True)
            self._solo = None
            return self.linter.failed(task.display_path, CRASH_MESSAGE)

    def _start(self, workers: int) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(workers, multiprocessing.get_context("spawn"), _initialize, (self.linter, self.cache))


def _stop(pool: ProcessPoolExecutor) -> None:
    """Shut `pool` down, its workers ended outright: exiting normally, each would first free its whole
    heap (about a second on a large run). Nothing is lost: a worker writes a file's cache entry before
    it returns the file's result (atomically), and the results wanted are in (or the run failed)."""
    for worker in list((getattr(pool, "_processes", None) or {}).values()):  # the executor has no public list
        worker.terminate()
    pool.shutdown(wait=True, cancel_futures=True)


def terminate_workers() -> None:
    """Send SIGTERM to every worker process this process started (on SIGINT or SIGTERM)."""
    for child in multiprocessing.active_children():
        child.terminate()


def _store(cache: ResultCache | None, task: FileTask, outcome: FileOutcome, solved: bool) -> None:
    """Store `outcome` under the task's entry key, unless it has errors."""
    if cache is not None and task.entry_key is not None and not outcome.errors:
        cache.store(task.entry_key, outcome.entry(solved))


# ------------------------------------------------------------------------------- worker side
_linter: FileLinter | None = None
_cache: ResultCache | None = None
_solution: tuple[int, Solution] | None = None


def _initialize(linter: FileLinter, cache: ResultCache | None) -> None:
    global _linter, _cache
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _linter, _cache = linter, cache


def _check(task: FileTask, packed: _PackedSolution | None) -> FileOutcome:
    """Check one file in a worker (storing its outcome); any exception becomes that file's error."""
    global _solution
    assert _linter is not None
    solution = None
    if packed is not None:
        if _solution is None or _solution[0] != packed[0]:
            _solution = (packed[0], pickle.loads(packed[1]))
        solution = _solution[1]
    outcome = _linter.check_isolated(task.display_path, task.data, task.module, solution)
    _store(_cache, task, outcome, solution is not None)
    return outcome
