"""Checking files, in worker processes when there are enough of them.

A run checks each file first with a solve of its own, then, after the project solve, again those
files whose findings the project solve may change (see `Linter._check_paths`). The process that
checked a file first keeps its analysis (up to MAX_KEPT_BYTES of source per process), and a file's
second check is sent there: it is linted again without being parsed again.

Each worker is a single-process executor of its own, so a task can be sent to the worker that holds
its analysis. Workers are started with the `spawn` method (safe whatever threads the parent runs),
receive the linter and the result cache once, when they start, and the pickled project solve once
per solve. A worker stores each outcome in the cache itself (encoding is a tenth of a file's cost:
done in parallel, not after), and runs with the cyclic collector off: syntax trees, records and
summaries are acyclic (reference counting frees them; a few small closures per file wait for the
worker's end), and a collection would rescan every kept analysis. Small runs stay in-process: starting
a worker costs more than checking a few files.

A worker that dies (a crash in native code, the OOM killer) loses no other file: the files it was
checking are checked again one at a time in a fresh worker, and only the file that kills that worker
too is reported as a :class:`FileError`; the files queued for it go to the other workers, and those
whose analyses it held are parsed again. Workers ignore SIGINT (Ctrl-C reaches the whole process
group): the parent decides, and :func:`terminate_workers` ends them when it is interrupted or
terminated.
"""

from __future__ import annotations

import gc
import multiprocessing
import pickle
import signal
from collections import Counter, deque
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from itertools import count
from types import TracebackType
from typing import TypeVar

from jaxcheck.analyzer.cache import ResultCache
from jaxcheck.analyzer.outcome import Analysis, FileLinter, FileOutcome
from jaxcheck.analyzer.project import ModuleName
from jaxcheck.analyzer.semantics.solver import Solution, solve

MIN_FILES_PER_WORKER = 8
"""Workers are started only when each gets at least this many files."""
MAX_KEPT_BYTES = 8 * 1024 * 1024
"""Source bytes whose analyses one process keeps for a second check (an analysis takes about 50 times
its source in memory: some 400 MiB)."""
IN_FLIGHT = 2
"""Files queued per worker while any worker can take them (the next is ready when one finishes)."""

CRASH_MESSAGE = "the worker process checking this file crashed; file skipped"
NO_WORKERS_NOTE = ("worker processes could not start (a script running jaxcheck needs an "
                   "`if __name__ == \"__main__\":` guard; an interactive `__main__` cannot be spawned), "
                   "so files were checked in this process")

_SOLVES = count()
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class FileTask:
    """One file to check: its display path, its bytes, its module name, and the key of the result
    cache entry its outcome is stored under (None: not stored; nor is an outcome with errors, so a
    crash or a failing rule is tried again next time)."""

    display_path: str
    data: bytes
    module: ModuleName
    entry_key: str | None = None


class FileWorker:
    """Checks files as one process does: each file's analysis kept from its check with its own solve to
    its check with the project's (up to MAX_KEPT_BYTES of source), outcomes stored in `cache` under
    their tasks' entry keys. With `isolated`, an exception is the file's error (see
    :meth:`FileLinter.isolated`); else it propagates."""

    def __init__(self, linter: FileLinter, cache: ResultCache | None, isolated: bool,
                 budget: int = MAX_KEPT_BYTES) -> None:
        self.linter = linter
        self.cache = cache
        self.isolated = isolated
        self.budget = budget
        """Source bytes whose analyses it keeps (0: none)."""
        self.solutions: dict[int, Solution] = {}
        self._kept: dict[str, tuple[bytes, Analysis]] = {}
        self._kept_bytes = 0

    def check(self, task: FileTask, solution: Solution | None) -> FileOutcome:
        """The file's outcome linted with `solution` (a kept analysis reused), or without, with its own
        solve (its analysis kept); stored, as linted with a project solve or not."""
        kept = self._kept.pop(task.display_path, None)
        if kept is not None:
            self._kept_bytes -= len(kept[0])
        if solution is None:
            outcome = self._guarded(task, lambda: self._first_check(task))
        elif kept is not None and kept[0] == task.data:
            analysis = kept[1]
            outcome = self._guarded(task, lambda: self.linter.lint(analysis, solution))
        else:
            outcome = self._guarded(task, lambda: self.linter.check_file(task.display_path, task.data, task.module,
                                                                         solution))
        if self.cache is not None and task.entry_key is not None and not outcome.errors:
            self.cache.store(task.entry_key, outcome.entry(solution is not None))
        return outcome

    def keeps(self, task: FileTask) -> bool:
        """Whether this worker holds the analysis of `task`'s file (from its first check)."""
        return task.display_path in self._kept

    def forget(self) -> None:
        """Drop the kept analyses."""
        self._kept.clear()
        self._kept_bytes = 0

    def _first_check(self, task: FileTask) -> FileOutcome:
        analysis = self.linter.analyze(task.display_path, task.data, task.module)
        if isinstance(analysis, FileOutcome):
            return analysis
        if self._kept_bytes + len(task.data) <= self.budget:
            self._kept[task.display_path] = (task.data, analysis)
            self._kept_bytes += len(task.data)
        return self.linter.lint(analysis, solve([analysis.summary]))

    def _guarded(self, task: FileTask, work: Callable[[], FileOutcome]) -> FileOutcome:
        return self.linter.isolated(task.display_path, work) if self.isolated else work()


_PackedSolution = tuple[int, bytes]
"""A solution pickled once in the parent, with a number that identifies it in the workers."""


class Checker:
    """Runs :meth:`FileWorker.check` over tasks with up to `jobs` worker processes, storing the outcomes
    of tasks with an entry key in `cache`.

    Use it as a context manager: the workers, started on first need, are ended on exit.
    """

    def __init__(self, linter: FileLinter, jobs: int, cache: ResultCache | None = None) -> None:
        self.linter = linter
        self.jobs = jobs
        self.cache = cache
        self._local = FileWorker(linter, cache, isolated=False)
        self._workers: list[ProcessPoolExecutor] = []
        self._solo: ProcessPoolExecutor | None = None
        self._owners: dict[str, ProcessPoolExecutor] = {}
        self._packed: tuple[Solution, _PackedSolution] | None = None
        self._received: dict[ProcessPoolExecutor, int] = {}
        self._answered = False
        """Some worker returned a result: workers can start here."""
        self._cannot_start: bool | None = None
        """Whether workers die while starting, once a probe has told (see :meth:`_workers_start`)."""
        self.notes: list[str] = []
        """What the run should tell the user about how files were checked."""

    def __enter__(self) -> Checker:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        for worker in [*self._workers, *([self._solo] if self._solo is not None else [])]:
            _stop(worker)
        self._local.forget()
        self._packed = None

    def check(self, tasks: Sequence[FileTask], solution: Solution | None,
              done: Callable[[], None] = lambda: None) -> list[FileOutcome]:
        """Outcomes of `tasks`, in order; without `solution` each file is solved on its own. `done` is
        called once per finished file (in the calling thread)."""
        if not self._workers and self._solo is None:
            workers = min(self.jobs, len(tasks) // MIN_FILES_PER_WORKER)
            if workers < 2 or self._cannot_start or all(map(self._local.keeps, tasks)):  # second checks where the first ran
                local = []
                for task in tasks:
                    local.append(self._local.check(task, solution))
                    done()
                return local
            self._workers = [self._start() for _ in range(workers)]
        packed = self._pack(solution)
        results: list[FileOutcome | None] = [None] * len(tasks)
        for index in self._run_pooled(tasks, packed, results, done):
            if self._workers_start():
                results[index] = self._run_alone(tasks[index], packed)
            else:
                results[index] = self._local.check(tasks[index], solution)
            done()
        return [_filled(result) for result in results]

    def _run_pooled(self, tasks: Sequence[FileTask], packed: _PackedSolution | None,
                    results: list[FileOutcome | None], done: Callable[[], None]) -> list[int]:
        """Fill `results` from the workers, largest files first (so none is left with a big file at the
        end), a file's second check where its first ran (a worker takes others when it has none of its
        own left); the indexes of the tasks a crash left unfinished."""
        shared: deque[int] = deque()
        owned: dict[ProcessPoolExecutor, deque[int]] = {}
        for index in sorted(range(len(tasks)), key=lambda index: len(tasks[index].data), reverse=True):
            owner = self._owners.get(tasks[index].display_path) if packed is not None else None
            if owner is not None and owner in self._workers:
                owned.setdefault(owner, deque()).append(index)
            else:
                shared.append(index)
        running: dict[Future[FileOutcome], tuple[int, ProcessPoolExecutor]] = {}
        load: Counter[ProcessPoolExecutor] = Counter()
        lost: list[int] = []
        while True:
            for worker in list(self._workers):
                own = owned.get(worker)
                while load[worker] < IN_FLIGHT and (own or shared):
                    index = own.popleft() if own else shared.popleft()
                    try:
                        running[self._submit(worker, tasks[index], packed)] = (index, worker)
                    except BrokenProcessPool:  # it died since its last result: its files go to the others
                        self._retire(worker)
                        shared.appendleft(index)
                        shared.extend(owned.pop(worker, ()))
                        break
                    load[worker] += 1
            if not running:
                break
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                index, worker = running.pop(future)
                load[worker] -= 1
                try:
                    results[index] = self._result(future, tasks[index])
                except BrokenProcessPool:
                    self._retire(worker)
                    lost.append(index)
                    shared.extend(owned.pop(worker, ()))  # parsed again where they are checked
                    continue
                if packed is None:
                    self._owners[tasks[index].display_path] = worker
                done()
        return [*lost, *shared, *(index for own in owned.values() for index in own)]

    def _workers_start(self) -> bool:
        """Whether worker processes can run anything here. A worker that died before any result may
        have crashed on its file, or may never have started (a script without a `__main__` guard makes
        every spawned worker fail while importing it): an empty task sent to a new worker tells them
        apart, once. When they cannot start, the run goes on in this process and says so."""
        if self._answered or self._cannot_start is False:
            return True
        if self._cannot_start is None:
            solo = self._solo = self._solo or self._start(keeps=False)
            try:
                _send(solo, _ping).result()
                self._cannot_start = False
            except BrokenProcessPool:
                self._retire(solo)
                self._cannot_start = True
                self.notes.append(NO_WORKERS_NOTE)
        return not self._cannot_start

    def _run_alone(self, task: FileTask, packed: _PackedSolution | None) -> FileOutcome:
        """Check one file in a worker of its own; a crash there is that file's error (a worker found
        dead before the file was sent is replaced once)."""
        for _ in range(2):
            if self._solo is None:
                self._solo = self._start(keeps=False)  # its second checks are not sent back to it
            solo = self._solo
            try:
                future = self._submit(solo, task, packed)
            except BrokenProcessPool:
                self._retire(solo)
                continue
            try:
                return self._result(future, task)
            except BrokenProcessPool:
                self._retire(solo)
                break
        return self.linter.failed(task.display_path, CRASH_MESSAGE)

    def _submit(self, worker: ProcessPoolExecutor, task: FileTask, packed: _PackedSolution | None) -> Future[FileOutcome]:
        """Send `task` to `worker`, the solve first if it does not have it yet (a worker runs what it is
        sent in order)."""
        if packed is not None and self._received.get(worker) != packed[0]:
            _send(worker, _receive, packed)
            self._received[worker] = packed[0]
        return _send(worker, _check, task, packed[0] if packed is not None else None)

    def _result(self, future: Future[FileOutcome], task: FileTask) -> FileOutcome:
        try:
            result = future.result()
            self._answered = True
            return result
        except BrokenProcessPool:
            raise
        except Exception as exc:  # e.g. an outcome that could not be pickled back
            return self.linter.failed(task.display_path, f"internal error: {exc}")

    def _pack(self, solution: Solution | None) -> _PackedSolution | None:
        """`solution` pickled, once per solve."""
        if solution is None:
            return None
        if self._packed is None or self._packed[0] is not solution:
            self._packed = (solution, (next(_SOLVES), pickle.dumps(solution, pickle.HIGHEST_PROTOCOL)))
        return self._packed[1]

    def _retire(self, worker: ProcessPoolExecutor) -> None:
        """Give up a worker that died (the files whose analyses it held are parsed again)."""
        worker.shutdown(wait=False, cancel_futures=True)
        if worker in self._workers:
            self._workers.remove(worker)
        if worker is self._solo:
            self._solo = None
        self._received.pop(worker, None)

    def _start(self, keeps: bool = True) -> ProcessPoolExecutor:
        """A worker; one that `keeps` analyses for second checks."""
        return ProcessPoolExecutor(1, multiprocessing.get_context("spawn"), _initialize,
                                   (self.linter, self.cache, MAX_KEPT_BYTES if keeps else 0))


def _send(worker: ProcessPoolExecutor, function: Callable[..., _T], *args: object) -> Future[_T]:
    """`worker.submit(function, *args)`, where a worker process that cannot be spawned (the executor
    starts it at its first submit; e.g. under IPython, whose `__main__` has no `__spec__`) is a broken
    pool like one that died, so its files go where a dead worker's go."""
    try:
        return worker.submit(function, *args)
    except BrokenProcessPool:
        raise
    except Exception as exc:  # raised by multiprocessing while spawning, before anything ran
        raise BrokenProcessPool(f"a worker process could not be spawned: {exc}") from exc


def _filled(result: FileOutcome | None) -> FileOutcome:
    assert result is not None, "every task is checked in a worker, alone if a crash left it"
    return result


def _stop(pool: ProcessPoolExecutor) -> None:
    """Shut `pool` down, its worker ended outright: exiting normally, it would first free its whole
    heap (about a second on a large run). Nothing is lost: a worker writes a file's cache entry before
    it returns the file's result (atomically), and the results wanted are in (or the run failed)."""
    for worker in list((getattr(pool, "_processes", None) or {}).values()):  # the executor has no public list
        worker.terminate()
    pool.shutdown(wait=True, cancel_futures=True)


def terminate_workers() -> None:
    """Send SIGTERM to every worker process this process started (on SIGINT or SIGTERM)."""
    for child in multiprocessing.active_children():
        child.terminate()


# ------------------------------------------------------------------------------- worker side
_worker: FileWorker | None = None


def _initialize(linter: FileLinter, cache: ResultCache | None, budget: int) -> None:
    global _worker
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    gc.disable()  # for the worker's life (see the module docstring)
    _worker = FileWorker(linter, cache, isolated=True, budget=budget)


def _ping() -> None:
    """Nothing: a worker that runs it has started."""


def _receive(packed: _PackedSolution) -> None:
    """Keep the solve `packed` (only the latest: a run checks again only with its newest solve); a
    solve that cannot be loaded is left out, and the files checked with it say so."""
    assert _worker is not None
    _worker.solutions = {}
    _worker.solutions = {packed[0]: pickle.loads(packed[1])}


def _check(task: FileTask, solve_number: int | None) -> FileOutcome:
    """Check one file in a worker (storing its outcome); any exception becomes that file's error."""
    assert _worker is not None
    if solve_number is None:
        return _worker.check(task, None)
    solution = _worker.solutions.get(solve_number)
    if solution is None:
        return _worker.linter.failed(task.display_path, "internal error: the worker could not load the project solve")
    return _worker.check(task, solution)
