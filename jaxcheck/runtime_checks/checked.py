"""One checked jit or pmap: the instrumented body JAX traces, and the per-call work of the forwarder.

Per call (the generated forwarder): an identity check of the recorded globals, the call, and the slow
path only when something happened: a new trace (side effects, retrace budget, hidden state, keys the
program consumes), a changed global (stale read), keys to track, NaN flags and bounds tables to read.
"""

from __future__ import annotations

import functools
import inspect
import logging
import sys
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from types import FrameType
from typing import Any

import jax

from jaxcheck.runtime_checks import bounds, key_reuse, nans, retrace, stale_globals
from jaxcheck.runtime_checks.forwarder import make_forwarder, watch_reads
from jaxcheck.runtime_checks.frames import traceback_user_frame, user_frame
from jaxcheck.runtime_checks.hidden_state import eqn_line, first_difference, trace_quietly
from jaxcheck.runtime_checks.jaxprs import has_tracer
from jaxcheck.runtime_checks.pmap_axis import axis_excess
from jaxcheck.runtime_checks.report import RuntimeCheckError, diagnostic, display_path
from jaxcheck.runtime_checks.session import ACTIVE, current
from jaxcheck.runtime_checks.side_effects import capture_output, trace_output_message
from jaxcheck.runtime_checks.tracer_errors import explain

LOG = logging.getLogger(__name__)
LIVE: weakref.WeakSet[CheckedFunction] = weakref.WeakSet()
MUTATION_CHECK_INTERVAL = 1024
"""After a trace, values that can change in place are compared on calls 1, 3, 7, ... then every 1024th."""


def guarded(action: Callable[..., Any], *args: Any) -> Any:
    """Run one of jaxcheck's own analyses: a failure in it is logged and never breaks the user's program
    (a finding raised in mode `raise` still propagates). Returns the action's result, None on failure."""
    try:
        return action(*args)
    except RuntimeCheckError:
        raise
    except Exception:  # noqa: BLE001 - see the docstring
        LOG.debug("jaxcheck runtime analysis %s failed", getattr(action, "__name__", action), exc_info=True)
        return None


def parameter_names(fun: Callable[..., Any]) -> tuple[str, ...]:
    """The names of `fun`'s positional parameters ("" when there is no signature)."""
    try:
        return tuple(p.name for p in inspect.signature(fun).parameters.values()
                     if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))
    except (TypeError, ValueError):
        return ()


class CheckedFunction:
    """`transform(fun, **options)` with the runtime checks; :attr:`forwarder` is what users call."""

    def __init__(self, fun: Callable[..., Any], transform: Callable[..., Any], transform_name: str,
                 args: tuple[Any, ...], options: dict[str, Any]) -> None:
        self.fun, self.transform_name, self.options = fun, transform_name, options
        self.names = parameter_names(fun)
        self.user_fun = stale_globals.user_function(fun)
        self.code = getattr(self.user_fun, "__code__", None)
        self.reads: list[stale_globals.Read] = []
        self._clock = [0]  # calls left before the next comparison of in-place changeable values
        self._reported_mutations: set[str] = set()
        self._mutation_interval = 1
        self.traced = False  # set by each trace, cleared by the next call's slow path
        self.watch = False  # keys to track on every call
        self.slow = False  # traced or watch: the forwarder then calls `after`
        self._analysing = False  # jaxcheck's own trace for the program: not a user trace
        self.key_positions: tuple[tuple[int | str, int | None], ...] = ()  # (argument, leaf index in it)
        self.pending: deque[tuple[Any, Any, tuple[Any, ...] | None, dict[str, Any]]] = deque()
        """Per instrumented call: its NaN flag and bounds table (None when not checked), and its arguments."""
        self.call = transform(_function(fun, self._body), *args, **options)
        self._instrumented: dict[tuple[bool, bool], Callable[..., Any]] = {}  # by (nans, index_checks)
        self._nan_reported = False  # one NaN finding per function: later flags are not located again
        self._unsupported: set[tuple[bool, bool]] = set()
        self._transform, self._transform_args = transform, args
        self.forwarder = functools.wraps(fun)(make_forwarder(fun, self, ACTIVE))
        for attribute in ("lower", "trace", "eval_shape"):
            if hasattr(self.call, attribute):
                setattr(self.forwarder, attribute, getattr(self.call, attribute))
        self.forwarder.clear_cache = self.clear_cache  # type: ignore[attr-defined]
        LIVE.add(self)

    # -- while tracing ---------------------------------------------------------------------------
    def _body(self, *args: Any, **kwargs: Any) -> Any:
        if self._analysing:
            return self.fun(*args, **kwargs)
        session = current()
        settings = session.settings
        self.traced = self.slow = True
        reads = (guarded(stale_globals.record_reads, self.user_fun) or []) if settings.stale_globals else []
        if settings.side_effects:
            with capture_output() as sites:
                out = self.fun(*args, **kwargs)
            for path, line, kind in dict.fromkeys(sites):
                message, fix = trace_output_message(self._name, kind)
                session.reporter.emit(diagnostic("JAX103", (path, line), message, fix))
        else:
            out = self.fun(*args, **kwargs)
        self.reads = guarded(stale_globals.with_snapshots, reads) or reads
        self._mutation_interval, self._clock[0] = 1, 1
        self._reported_mutations.clear()  # the new program holds what the values are now
        watch_reads(self.forwarder, self.reads, self._clock)
        guarded(self._count_trace, args, kwargs)
        return out

    def _count_trace(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        session = current()
        if self.code is None:
            return
        new = retrace.signature(args, kwargs, self.fun, self, self.names)
        count, last = session.trace_log.get(self.code, (0, None))
        session.trace_log[self.code] = (count + 1, new)
        budget = session.settings.retrace_budget
        if count + 1 == budget + 1 and last is not None:
            where = _call_site()
            message = (f"`{self._name}` traced {count + 1} times (budget {budget}); "
                       f"last change: {retrace.what_changed(last, new)}")
            session.reporter.emit(diagnostic("JAX501", where, message, retrace.retrace_fix(last, new)))

    # -- per call ------------------------------------------------------------------------------
    def after(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """The slow path of a call: see the module docstring."""
        if self.traced:
            if not has_tracer((args, kwargs)):
                guarded(self._after_trace, args, kwargs)
            self.traced, self.slow = False, self.watch  # after: the analysis may trace again
        elif self.reads:
            if stale_globals.moved(self.reads):
                guarded(self._report_stale)
            if self._clock[0] <= 0:  # a sampled call: look for in-place changes
                guarded(self._report_mutated)
                self._mutation_interval = min(2 * self._mutation_interval, MUTATION_CHECK_INTERVAL)
                self._clock[0] = self._mutation_interval
        if self.key_positions:
            self._track_keys(args, kwargs, sys._getframe(2))  # after <- forwarder <- the user's call

    def _report_stale(self) -> None:
        reporter = current().reporter
        for read, new in stale_globals.changed(self.reads):
            message = (f"`{self._name}` read `{read.name}` while tracing ({stale_globals.short(read.value)}); it is "
                       f"now {stale_globals.short(new)}, but the cached program still uses the old value")
            fix = f"pass `{read.name}` as an argument (static if it is a Python value), or call `.clear_cache()`"
            reporter.emit(diagnostic("JAX101", (read.path, read.line), message, fix))
        self.reads = stale_globals.with_snapshots([replace(read, value=read.now()) for read in self.reads])
        watch_reads(self.forwarder, self.reads, self._clock)

    def _report_mutated(self) -> None:
        reporter = current().reporter
        for read, old, now in stale_globals.mutated(self.reads):
            if read.name in self._reported_mutations:
                continue  # once per global: the program stays stale until it retraces
            self._reported_mutations.add(read.name)
            message = (f"`{self._name}` read `{read.name}` while tracing ({stale_globals.short(old)}); it has since "
                       f"been changed in place ({stale_globals.change(old, now)}), but the cached program still "
                       "uses the old contents")
            fix = f"pass `{read.name}` as an argument (static if it is a Python value), or call `.clear_cache()`"
            reporter.emit(diagnostic("JAX101", (read.path, read.line), message, fix))

    def _after_trace(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        settings = current().settings
        if not (settings.key_reuse or settings.hidden_state) or not hasattr(self.call, "trace"):
            return
        self._analysing = True
        try:
            with capture_output(forward=False):
                closed = self.call.trace(*args, **kwargs).jaxpr  # a cache hit unless NaN mode made the call
        finally:
            self._analysing = False
        if settings.key_reuse:
            self._check_keys_in(closed, args, kwargs)
        if settings.hidden_state:
            self._check_hidden_state(closed, args, kwargs)

    def _check_keys_in(self, closed: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        reporter = current().reporter
        for uses in key_reuse.reuse_within(closed):
            lines = key_reuse.lines_of(uses)
            if len(lines) < 2:
                continue
            message = (f"a PRNG key is consumed twice in `{self._name}`: first on line {lines[0][1]}, "
                       f"again here; both draws give correlated numbers")
            reporter.emit(diagnostic("JAX401", lines[1], message, "split it first: `key, sub = jax.random.split(key)`"))
        consumed = key_reuse.consumed_inputs(closed)
        positions: list[tuple[int | str, int | None]] = []
        index = 0
        dynamic = self._dynamic_arguments(args, kwargs)
        for position, value in dynamic:
            leaves = jax.tree_util.tree_leaves(value)
            positions.extend((position, None if len(leaves) == 1 else offset) for offset, leaf in enumerate(leaves)
                             if index + offset in consumed and key_reuse.is_key(leaf))
            index += len(leaves)
        if index == len(closed.jaxpr.invars):
            self.key_positions = tuple(positions)
            self.watch = self.slow = bool(positions)

    def _dynamic_arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[tuple[int | str, Any]]:
        """`(position or name, value)` of the arguments jit traces, in the order of the program's inputs."""
        nums = self.options.get("static_argnums") or ()
        nums = {nums} if isinstance(nums, int) else set(nums)
        names = self.options.get("static_argnames") or ()
        names = {names} if isinstance(names, str) else set(names)
        nums |= {i for i, name in enumerate(self.names) if name in names}
        names |= {self.names[i] for i in nums if 0 <= i < len(self.names)}
        return [*((i, a) for i, a in enumerate(args) if i not in nums and i - len(args) not in nums),
                *((k, kwargs[k]) for k in sorted(kwargs) if k not in names)]

    def _track_keys(self, args: tuple[Any, ...], kwargs: dict[str, Any], site: FrameType) -> None:
        session = ACTIVE.session
        for position, offset in self.key_positions:
            key = args[position] if isinstance(position, int) and position < len(args) else kwargs.get(str(position))
            if offset is not None:  # a key inside a pytree argument: flatten only that argument
                leaves = jax.tree_util.tree_leaves(key)
                key = leaves[offset] if offset < len(leaves) else None
            if key is None or isinstance(key, jax.core.Tracer):
                continue
            before = session.keys.track(key, site.f_code.co_filename, site.f_lineno)
            if before is not None:
                where = (site.f_code.co_filename, site.f_lineno)
                name = self.names[position] if isinstance(position, int) and position < len(self.names) else position
                message = (f"the PRNG key passed to `{self._name}` as {name!r} was already consumed on line "
                           f"{before[1]} of {display_path(before[0])}; reusing it repeats the same random numbers")
                fix = "pass a fresh key each call: `key, sub = jax.random.split(key)` and pass `sub`"
                session.reporter.emit(diagnostic("JAX401", where, message, fix))

    def _check_hidden_state(self, closed: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        second = trace_quietly(self.fun, self.options, args, kwargs)
        difference = first_difference(closed, second)
        if difference is None:
            return
        eqn, what = difference
        where = (eqn_line(eqn) if eqn is not None else None) or _call_site()
        message = (f"tracing `{self._name}` twice gives different programs ({what}): it reads hidden Python state "
                   f"(np.random, time, a counter) whose value is frozen into each compiled program")
        fix = "compute the value with JAX from an argument (e.g. `jax.random` with a key), or pass it in"
        current().reporter.emit(diagnostic("JAX104", where, message, fix))

    def on_error(self, error: BaseException, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Annotate a tracer error (or a pmap axis error) with a note; never replaces the exception."""
        if isinstance(error, RuntimeCheckError) or not isinstance(error, Exception):
            return
        options = self.options if self.transform_name == "jax.jit" else None
        found = guarded(explain, error, self.fun, options, args, kwargs, self.transform_name)
        if found is not None:
            error.add_note(current().reporter.note(found))
        elif self.transform_name == "jax.pmap":
            excess = guarded(axis_excess, args, self.options.get("in_axes", 0), self.names, self.options.get("devices"))
            if excess is not None:
                message, fix = excess
                where = traceback_user_frame(error.__traceback__) or user_frame(sys._getframe(1))
                error.add_note(current().reporter.note(diagnostic("JAX702", where, message, fix)))

    # -- NaN and index-check modes ------------------------------------------------------------------
    def instrumented_call(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Call through the program instrumented for the session's NaN and index checks; read earlier
        results that are ready."""
        settings = current().settings
        key = (settings.nans, settings.index_checks)
        if self.transform_name != "jax.jit" or key in self._unsupported or not any(key) \
                or has_tracer((args, kwargs)):
            return self.call(*args, **kwargs)
        instrumented = self._instrumented.get(key)
        if instrumented is None:
            body = _function(self.fun, self._body)
            body = bounds.checking(body) if settings.index_checks else body
            body = nans.flagging(body) if settings.nans else body
            instrumented = self._instrumented[key] = self._transform(body, *self._transform_args, **self.options)
        try:
            out = instrumented(*args, **kwargs)
        except RuntimeCheckError:
            raise
        except Exception:
            out = self.call(*args, **kwargs)  # the user's own error raises here again, unchanged
            self._unsupported.add(key)  # the program runs but its instrumented version does not
            LOG.debug("jaxcheck cannot instrument %s", self._name, exc_info=True)
            return out
        flag = table = None
        if settings.nans:
            out, flag = out
        if settings.index_checks:
            out, table = out
            table = table if table.shape[0] else None  # a program that indexes nothing has nothing to read
        if flag is None and table is None:
            return out
        donated = self.options.get("donate_argnums") is not None or self.options.get("donate_argnames") is not None
        self.pending.append((flag, table, None if donated else args, {} if donated else kwargs))
        self.poll(block=False)
        return out

    def poll(self, block: bool) -> None:
        """Read the NaN flags and bounds tables that are ready (all of them when `block`, the oldest when
        more than two wait)."""
        while self.pending and (block or len(self.pending) > 2 or all(
                value.is_ready() for value in self.pending[0][:2] if value is not None)):
            flag, table, args, kwargs = self.pending.popleft()
            for found in (guarded(bounds.findings, table) or []) if table is not None else []:
                message, fix = bounds.describe(found, self._name)
                current().reporter.emit(diagnostic("JAX203", found.site.where, message, fix))
            if flag is not None and not self._nan_reported and bool(flag):
                self._nan_reported = True
                self._report_nan(args, kwargs)

    def _report_nan(self, args: tuple[Any, ...] | None, kwargs: dict[str, Any]) -> None:
        origin = None
        if args is not None:
            with capture_output(forward=False):
                origin = guarded(nans.locate, self.fun, args, kwargs, self.names)
        if origin is None:
            message = f"NaN or Inf in `{self._name}` (not located: its inputs were donated or the replay was clean)"
            fix = "run without donation to locate it"
            current().reporter.emit(diagnostic("JAX701", None, message, fix))
            return
        message, fix = nans.describe(origin, self._name)
        current().reporter.emit(diagnostic("JAX701", origin.where, message, fix))

    def clear_cache(self) -> None:
        """Clear the compiled programs (the checked ones included)."""
        for call in (self.call, *self._instrumented.values()):
            clear = getattr(call, "clear_cache", None)
            if clear is not None:
                clear()

    @property
    def _name(self) -> str:
        return getattr(self.fun, "__qualname__", None) or getattr(self.fun, "__name__", None) or type(self.fun).__name__


def _function(fun: Callable[..., Any], body: Callable[..., Any]) -> Callable[..., Any]:
    """A plain function running `body` that carries `fun`'s metadata and signature (JAX reads it to
    resolve `static_argnames`)."""

    @functools.wraps(fun)
    def traced(*args: Any, **kwargs: Any) -> Any:
        return body(*args, **kwargs)

    return traced


def _call_site() -> tuple[str, int] | None:
    return user_frame(sys._getframe(1))


def flush() -> None:
    """Read every pending NaN flag now (at the end of a session)."""
    for checked in list(LIVE):
        checked.poll(block=True)
