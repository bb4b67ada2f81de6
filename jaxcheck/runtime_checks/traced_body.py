"""The function JAX traces for a checked function: one per user function object, so JAX's caches answer
for every checked transform of the same function as they would for the bare one (`jax.jit(f)` created
50 times traces `f` once), and the hooks that run during JAX's own trace (never during one of
jaxcheck's: it never traces on its own).

While JAX traces it (and only then): the trace is counted in the session's trace log with what changed
(JAX501), output written by user code is noted (JAX103), reads of hidden state are noted (JAX104),
traced values the user's code stored where they outlive the trace are reported (JAX102), and the globals
the trace read are recorded (JAX101, checked by the forwarders of its checked transforms), and a trace
that a quiet forwarder's call started (see :mod:`forwarder`) gets the note of a tracer error it raises.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import sys
import weakref
from collections.abc import Callable
from typing import Any

from jax._src import api_util
from jax._src.util import fun_name

from jaxcheck.runtime_checks import leaks, library_jits, retrace, stale_globals
from jaxcheck.runtime_checks.frames import called_through_forwarder, user_frame
from jaxcheck.runtime_checks.hidden_state import hidden_state_message, watching
from jaxcheck.runtime_checks.report import RuntimeCheckError, diagnostic
from jaxcheck.runtime_checks.session import current
from jaxcheck.runtime_checks.side_effects import capture_output, trace_output_message

LOG = logging.getLogger(__name__)
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


def function_name(fun: Any) -> str:
    """The name findings give `fun`."""
    return getattr(fun, "__qualname__", None) or getattr(fun, "__name__", None) or type(fun).__name__


class Body:
    """The traced function of one user function object (:attr:`function`), and what its traces left:
    :attr:`fresh` (JAX traced it since the last call's slow path), :attr:`reads` (globals its last trace
    read) and the forwarders that test them (:attr:`forwarders`)."""

    def __init__(self, fun: Callable[..., Any]) -> None:
        self._targets: list[Callable[[], Any]] = []
        self.add_target(fun)
        self.name = function_name(fun)
        self.names = parameter_names(fun)
        self.code = getattr(stale_globals.user_function(fun), "__code__", None)  # no reference to `fun` kept
        self.fresh = False
        self.reads: list[stale_globals.Read] = []
        self.clock = [0]  # calls left before the next comparison of in-place changeable values
        self.mutation_interval = 1
        self.reported_mutations: set[str] = set()
        self.forwarders: weakref.WeakSet[Any] = weakref.WeakSet()  # the CheckedFunctions testing `reads`
        self.instrumented: dict[Any, Callable[..., Any]] = {}  # by (nans, index checks, jit info)
        self.function = TracedFunction(self, fun)

    def add_target(self, fun: Callable[..., Any]) -> None:
        """Call `fun` (or an equal function object held already) when traced; held weakly when possible,
        so that the registry below never keeps a function alive."""
        self._targets = [target for target in self._targets if target() is not None]
        try:
            self._targets.append(weakref.ref(fun))
        except TypeError:
            self._targets.append(lambda: fun)

    def target(self) -> Any:
        """The user's function object this body calls."""
        for target in self._targets:
            fun = target()
            if fun is not None:
                return fun
        raise ReferenceError("the checked function was freed")  # unreachable: a caller holds it

    # -- while JAX traces -------------------------------------------------------------------------
    def run(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Run the user's function for JAX's trace, with the hooks of the module docstring."""
        fun = self.target()
        settings = current().settings
        self.fresh = True
        call = guarded(library_jits.user_call, fun, args, kwargs)  # a library's jit: the user's call inside
        user_fun = stale_globals.user_function(fun if call is None else call[0])
        objects = guarded(stale_globals.callers_objects, user_fun, *(call[1:] if call else (args, kwargs))) \
            if settings.stale_globals and user_fun else None
        reads = (guarded(stale_globals.record_reads, user_fun, 200, objects) or []) \
            if settings.stale_globals and user_fun else []
        trace = guarded(leaks.current_trace)
        try:
            with contextlib.ExitStack() as stack:
                output = stack.enter_context(capture_output()) if settings.side_effects else []
                hidden = stack.enter_context(watching()) if settings.hidden_state else []
                out = fun(*args, **kwargs)
        except Exception as error:
            if not called_through_forwarder(sys._getframe(1)):
                guarded(self._note_error, error, args, kwargs)
            raise
        guarded(self._report_trace_effects, output, hidden)
        if user_fun is not None:
            guarded(leaks.report, self.name, user_fun, *(call[1:] if call else (args, kwargs)), trace)
        self.reads = guarded(stale_globals.with_snapshots, reads) or reads
        self.mutation_interval, self.clock[0] = 1, 1
        self.reported_mutations.clear()  # the new program holds what the values are now
        self.watch_reads()
        guarded(self._count_trace, *(call or (fun, args, kwargs)))
        return out

    def _note_error(self, error: Exception, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """A trace a quiet forwarder's call started failed: no forwarder code runs after it, so the note
        a forwarder would add (see `CheckedFunction.on_error`) is added here, from the arguments the trace
        saw (a traced argument's value is a tracer here, so the note cannot show it)."""
        for checked in list(self.forwarders):
            if checked.quiet:
                checked.on_error(error, args, kwargs)
                return

    def _report_trace_effects(self, output: list[tuple[str, int, str]], hidden: list[tuple[str, int, str]]) -> None:
        reporter = current().reporter
        for path, line, kind in dict.fromkeys(output):
            message, fix = trace_output_message(self.name, kind)
            reporter.emit(diagnostic("JAX103", (path, line), message, fix))
        for path, line, source in dict.fromkeys(hidden):
            message, fix = hidden_state_message(self.name, source)
            reporter.emit(diagnostic("JAX104", (path, line), message, fix))

    def _count_trace(self, fun: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        session = current()
        code = self.code or getattr(stale_globals.user_function(fun), "__code__", None)
        if code is None:
            return
        names = self.names if self.code else parameter_names(fun)
        history, record = session.trace_log.add(code, retrace.signature(args, kwargs, fun, names))
        budget = session.settings.retrace_budget
        if history.count == budget + 1 and record.changed is not None:
            before = history.records[-2].signature
            message = f"`{self.name}` traced {history.count} times (budget {budget}); last change: {record.changed}"
            session.reporter.emit(diagnostic("JAX501", user_frame(sys._getframe(1)), message,
                                             retrace.retrace_fix(before, record.signature)))

    # -- stale globals, on calls ------------------------------------------------------------------
    def watch_reads(self) -> None:
        """Make every forwarder of this function test the identity of :attr:`reads`."""
        for checked in list(self.forwarders):
            checked.watch(self.reads, self.clock)

    def check_reads(self) -> None:
        """A call that did not trace found a recorded global moved, or reached a sampled call: report
        what changed (JAX101)."""
        if stale_globals.moved(self.reads):
            guarded(self._report_stale)
        if self.clock[0] <= 0:  # a sampled call: look for in-place changes
            guarded(self._report_mutated)
            self.mutation_interval = min(2 * self.mutation_interval, MUTATION_CHECK_INTERVAL)
            self.clock[0] = self.mutation_interval

    def _report_stale(self) -> None:
        reporter = current().reporter
        for read, new in stale_globals.changed(self.reads):
            message = (f"`{self.name}` read `{read.shown}` while tracing ({stale_globals.short(read.value)}); it is "
                       f"now {stale_globals.short(new)}, but the cached program still uses the old value")
            fix = f"pass `{read.shown}` as an argument (static if it is a Python value), or call `.clear_cache()`"
            reporter.emit(diagnostic("JAX101", (read.path, read.line), message, fix))
        self.reads = stale_globals.with_snapshots([stale_globals.now_read(read) for read in self.reads])
        self.watch_reads()

    def _report_mutated(self) -> None:
        reporter = current().reporter
        for read, old, now in stale_globals.mutated(self.reads):
            if read.shown in self.reported_mutations:
                continue  # once per global: the program stays stale until it retraces
            self.reported_mutations.add(read.shown)
            message = (f"`{self.name}` read `{read.shown}` while tracing ({stale_globals.short(old)}); it has since "
                       f"been changed in place ({stale_globals.change(old, now)}), but the cached program still "
                       "uses the old contents")
            fix = f"pass `{read.shown}` as an argument (static if it is a Python value), or call `.clear_cache()`"
            reporter.emit(diagnostic("JAX101", (read.path, read.line), message, fix))


class TracedFunction:
    """What JAX traces for a body: calling it runs :meth:`Body.run`. JAX sees the user's function: the
    same name, signature and attributes, and through `__wrapped__` (which holds no reference) the same
    source information (`inspect.unwrap` after partials, as JAX reads it)."""

    __slots__ = ("_body", "__dict__", "__weakref__")

    def __init__(self, body: Body, fun: Callable[..., Any]) -> None:
        self._body = body
        for name in functools.WRAPPER_ASSIGNMENTS:  # as functools.wraps, less `__wrapped__` (a property)
            if hasattr(fun, name):
                setattr(self, name, getattr(fun, name))
        self.__dict__.update(getattr(fun, "__dict__", {}))
        self.__name__ = fun_name(fun)
        self.__qualname__ = getattr(fun, "__qualname__", self.__name__)
        signature = api_util.fun_signature(fun)
        if signature is not None:
            self.__signature__ = signature

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._body.run(args, kwargs)

    @property
    def __wrapped__(self) -> Any:
        inner = self._body.target()
        while isinstance(inner, functools.partial):
            inner = inner.func
        return inspect.unwrap(inner)


_BODIES: weakref.WeakKeyDictionary[Any, Body] = weakref.WeakKeyDictionary()
"""The body of each live function object, found as JAX's caches find it (by hash and equality, held
weakly: an entry goes with its function)."""


def body_of(fun: Callable[..., Any]) -> Body:
    """The body of `fun`: the one of an equal live function object if any (JAX's caches would answer for
    it too), else a new one; a function that cannot be held weakly or hashed gets a body of its own."""
    try:
        body = _BODIES.get(fun)
    except TypeError:
        return Body(fun)
    if body is None:
        body = Body(fun)
        _BODIES[fun] = body
    elif body.target() is not fun:
        body.add_target(fun)
    return body
