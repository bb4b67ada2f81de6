"""One checked jit or pmap object: the bare transform of the function's shared body (see
:mod:`traced_body`), and the per-call work of its forwarder.

Per call (the generated forwarder): an identity check of the recorded globals, the call, and the slow
path only when something happened: a new trace (keys the program consumes), a changed global (stale
read), keys to track, NaN flags and bounds tables to read; none at all once the forwarder is quiet (see
:mod:`forwarder`). Nothing here traces: the programs analysed are the ones JAX traced and cached for the
call.
"""

from __future__ import annotations

import sys
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any

import jax

from jaxcheck.runtime_checks import bounds, key_reuse, library_jits, nans, originals, rule_lines, stale_globals
from jaxcheck.runtime_checks.forwarder import Forwarder, make_forwarder, watch_reads
from jaxcheck.runtime_checks.hidden_state import eqn_line
from jaxcheck.runtime_checks.frames import caller_of_jaxcheck, traceback_user_frame, user_frame
from jaxcheck.runtime_checks.instrumented import instrumented
from jaxcheck.runtime_checks.jaxprs import has_tracer, pmap_program, program_of
from jaxcheck.runtime_checks.pmap_axis import axis_excess
from jaxcheck.runtime_checks.report import RuntimeCheckError, diagnostic, display_path
from jaxcheck.runtime_checks.session import ACTIVE, current
from jaxcheck.runtime_checks.traced_body import body_of, guarded
from jaxcheck.runtime_checks.tracer_errors import explain

LIVE: weakref.WeakSet[CheckedFunction] = weakref.WeakSet()
WAITING: dict[int, CheckedFunction] = {}
"""Checked functions with flags or tables not read yet (by id, oldest first): kept alive until read, even
when the user dropped them (`jax.jit(f)(x)`)."""
WAITING_KEPT = 64
"""More functions waiting than this: the oldest one's flags are read at once."""
_NONFINITE = originals.jit(lambda leaves: nans.nan_flag([], leaves))
"""A pmap call's NaN flag: any NaN/Inf in its outputs."""


class CheckedFunction:
    """`transform(fun, **options)` with the runtime checks; :func:`checked` makes what users call."""

    def __init__(self, fun: Callable[..., Any], transform: Callable[..., Any], transform_name: str,
                 args: tuple[Any, ...], options: dict[str, Any]) -> None:
        self.fun, self.transform_name, self.options = fun, transform_name, options
        self.body = body_of(fun)
        self.watch_keys = False  # keys to track on every call
        self.slow = False  # the forwarder calls `after` on every call (keys are watched)
        self.may_go_quiet = transform_name == "jax.jit" and all(
            options.get(name) is None for name in ("static_argnums", "static_argnames"))
        """Whether its forwarder may go quiet (see :mod:`forwarder`). Not a pmap's: its call-time errors
        get notes (JAX702). Not a jit with static arguments: a new static value can trace a program that
        consumes keys the earlier ones did not, and the key of the quiet call that traced it would go
        untracked (a new shape rarely changes which inputs a program consumes)."""
        self.quiet_class: type[Forwarder] | None = None  # see `forwarder.quiet_class`
        self.clean_calls = 0  # calls that left nothing to do (see `forwarder.QUIET_AFTER`)
        self.key_positions: tuple[tuple[int | str, int | None], ...] = ()  # (argument, leaf index in it)
        self.pending: deque[tuple[Any, Any, tuple[Any, ...] | None, dict[str, Any]]] = deque()
        """Per instrumented call: its NaN flag and bounds table, and its arguments (None when donated)."""
        self.call = transform(self.body.function, *args, **options)
        self._instrumented: dict[tuple[bool, bool], Callable[..., Any]] = {}  # by (nans, index_checks)
        self._nan_reported = False  # one NaN finding per function: later flags are not located again
        forwarder = make_forwarder(self)
        self._forwarder = weakref.ref(forwarder)  # weak: see `Forwarder`
        for name in ("__module__", "__name__", "__qualname__", "__doc__", "__dict__"):
            _copy_metadata(forwarder, fun, name)
        forwarder.__wrapped__ = fun  # type: ignore[attr-defined]
        forwarder._fun = fun  # type: ignore[attr-defined]
        if hasattr(self.call, "_jit_info"):
            forwarder._jit_info = self.call._jit_info  # type: ignore[attr-defined]
        self.body.forwarders.add(self)
        if self.body.reads:
            self.watch(self.body.reads, self.body.clock)
        LIVE.add(self)
        self._made: Forwarder | None = forwarder  # handed out once by `checked`, then held weakly only

    def watch(self, reads: list[stale_globals.Read], clock: list[int]) -> None:
        """Test the identity of `reads` on every call (see :func:`forwarder.watch_reads`)."""
        forwarder = self._forwarder()
        if forwarder is not None:
            watch_reads(forwarder, reads, clock)

    @property
    def quiet(self) -> bool:
        """Whether its forwarder is quiet (see :mod:`forwarder`): calls run none of jaxcheck's code."""
        return self.quiet_class is not None and type(self._forwarder()) is self.quiet_class

    # -- per call ------------------------------------------------------------------------------
    def after(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """The slow path of a call: see the module docstring."""
        body = self.body
        if body.fresh:
            body.fresh = False
            if not has_tracer((args, kwargs)):
                guarded(self._after_trace, args, kwargs)
        elif body.reads:
            body.check_reads()
        if self.key_positions:
            site = caller_of_jaxcheck(sys._getframe(1))
            self._track_keys(args, kwargs, user_frame(site) or (site.f_code.co_filename, site.f_lineno))

    def _after_trace(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if not current().settings.key_reuse:
            return
        if self.transform_name == "jax.jit":
            program = program_of(self.call, args, kwargs)  # JAX's cache: the call just traced it
            self._check_keys_in(program.closed, program.constants, args, kwargs)
        elif hasattr(self.call, "trace"):
            self._check_keys_in(self.call.trace(*args, **kwargs).jaxpr, 0, args, kwargs)

    def _check_keys_in(self, closed: Any, skipped: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Report keys consumed twice inside the program, and watch the arguments it consumes as keys;
        `skipped` leading inputs of the program are constants."""
        name, reporter = self.body.name, current().reporter
        for uses in key_reuse.reuse_within(closed):
            lines = key_reuse.lines_of(uses)
            if len(lines) < 2:
                continue
            message = (f"a PRNG key is consumed twice in `{name}`: first on line {lines[0][1]}, "
                       f"again here; both draws give correlated numbers")
            reporter.emit(diagnostic("JAX401", lines[1], message, "split it first: `key, sub = jax.random.split(key)`"))
        for use in key_reuse.reuse_in_loops(closed):
            message = (f"a PRNG key is consumed on every iteration of a loop in `{name}` (closed over by the body, "
                       "or carried through it unchanged): every iteration draws the same numbers")
            fix = "split a new key each iteration: carry the key and `key, sub = jax.random.split(key)` in the body"
            reporter.emit(diagnostic("JAX401", eqn_line(use) or _definition(self.fun), message, fix))
        consumed = {index - skipped for index in key_reuse.consumed_inputs(closed)}
        positions: list[tuple[int | str, int | None]] = []
        index = 0
        for position, value in self._dynamic_arguments(args, kwargs):
            leaves = jax.tree_util.tree_leaves(value)
            positions.extend((position, None if leaf is value else offset) for offset, leaf in enumerate(leaves)
                             if index + offset in consumed and key_reuse.is_key(leaf))
            index += len(leaves)
        if index == len(closed.jaxpr.invars) - skipped:
            self.key_positions = tuple(positions)
            self.watch_keys = self.slow = bool(positions)

    def _dynamic_arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[tuple[int | str, Any]]:
        """`(position or name, value)` of the arguments jit traces, in the order of the program's inputs."""
        names_of = self.body.names
        nums = self.options.get("static_argnums") or ()
        nums = {nums} if isinstance(nums, int) else set(nums)
        names = self.options.get("static_argnames") or ()
        names = {names} if isinstance(names, str) else set(names)
        nums |= {i for i, name in enumerate(names_of) if name in names}
        names |= {names_of[i] for i in nums if 0 <= i < len(names_of)}
        return [*((i, a) for i, a in enumerate(args) if i not in nums and i - len(args) not in nums),
                *((k, kwargs[k]) for k in sorted(kwargs) if k not in names)]

    def _track_keys(self, args: tuple[Any, ...], kwargs: dict[str, Any], where: tuple[str, int]) -> None:
        """Look the keys passed up among those consumed; `where`: the user's line of the call (under a
        library's jit, the line that called the library)."""
        session = ACTIVE.session
        for position, offset in self.key_positions:
            key = args[position] if isinstance(position, int) and position < len(args) else kwargs.get(str(position))
            if offset is not None:  # a key inside a pytree argument: flatten only that argument
                leaves = jax.tree_util.tree_leaves(key)
                key = leaves[offset] if offset < len(leaves) else None
            if key is None or isinstance(key, jax.core.Tracer):
                continue
            before = session.keys.track(key, *where)
            if before is not None:
                names = self.body.names
                name = names[position] if isinstance(position, int) and position < len(names) else position
                name = guarded(library_jits.argument_path, self.fun, args, kwargs, key) or name
                message = (f"the PRNG key passed to `{self.body.name}` as {name!r} was already consumed on line "
                           f"{before[1]} of {display_path(before[0])}; reusing it repeats the same random numbers")
                fix = "pass a fresh key each call: `key, sub = jax.random.split(key)` and pass `sub`"
                session.reporter.emit(diagnostic("JAX401", where, message, fix))

    def on_error(self, error: BaseException, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Annotate a tracer error (or a pmap axis error) with a note; never replaces the exception."""
        if isinstance(error, RuntimeCheckError) or not isinstance(error, Exception):
            return
        static = self.transform_name == "jax.jit"
        found = guarded(explain, error, self.fun, static, args, kwargs, self.transform_name)
        if found is not None:
            error.add_note(current().reporter.note(found))
        elif self.transform_name == "jax.pmap":
            excess = guarded(axis_excess, args, self.options.get("in_axes", 0), self.body.names,
                             self.options.get("devices"))
            if excess is not None:
                message, fix = excess
                where = traceback_user_frame(error.__traceback__) or user_frame(sys._getframe(1))
                error.add_note(current().reporter.note(diagnostic("JAX702", where, message, fix)))

    # -- NaN and index-check modes ------------------------------------------------------------------
    def instrumented_call(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Call through the program instrumented for the session's NaN and index checks (the bare one
        inside another trace, or for pmap); read earlier results that are ready."""
        settings = current().settings
        key = (settings.nans, settings.index_checks)
        if self.transform_name == "jax.pmap" and settings.nans and not has_tracer((args, kwargs)):
            return self._pmap_call(args, kwargs)
        if self.transform_name != "jax.jit" or not any(key) or has_tracer((args, kwargs)):
            return self.call(*args, **kwargs)
        checked = self._instrumented.get(key)
        if checked is None:
            shared = (*key, self.call._jit_info)  # one instrumented function per program: JAX's caches hit
            function = self.body.instrumented.get(shared)
            if function is None:
                rule_lines.install()
                function = self.body.instrumented[shared] = instrumented(self.call, *key)
            checked = self._instrumented[key] = originals.jit(function, **self.options)
        out, flag, table = checked(*args, **kwargs)
        donated = self.options.get("donate_argnums") is not None or self.options.get("donate_argnames") is not None
        self.pending.append((flag if settings.nans else None, table if table.shape[0] else None,
                             None if donated else args, {} if donated else kwargs))
        self.poll(block=False)
        return out

    def _pmap_call(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A pmap call in NaN mode: a NaN/Inf in its outputs is flagged (read as a jit's flag is) and
        located by replaying its program shard by shard."""
        out = self.call(*args, **kwargs)
        donated = self.options.get("donate_argnums") not in (None, ())
        self.pending.append((_NONFINITE(jax.tree_util.tree_leaves(out)), None, None if donated else args,
                             {} if donated else kwargs))
        self.poll(block=False)
        return out

    def poll(self, block: bool) -> None:
        """Read the NaN flags and bounds tables that are ready (all of them when `block`, the oldest when
        more than two wait); a function with flags unread is kept (in :data:`WAITING`) until they are."""
        self._read(block)
        WAITING.pop(id(self), None)
        if self.pending:
            WAITING[id(self)] = self
            if len(WAITING) > WAITING_KEPT:
                next(iter(WAITING.values())).poll(block=True)

    def _read(self, block: bool) -> None:
        while self.pending and (block or len(self.pending) > 2 or all(
                value.is_ready() for value in self.pending[0][:2] if value is not None)):
            flag, table, args, kwargs = self.pending.popleft()
            for found in (guarded(bounds.findings, table) or []) if table is not None else []:
                message, fix = bounds.describe(found, self.body.name)
                current().reporter.emit(diagnostic("JAX203", found.site.where, message, fix))
            if flag is not None and not self._nan_reported and bool(flag):
                self._nan_reported = True
                self._report_nan(args, kwargs)

    def _report_nan(self, args: tuple[Any, ...] | None, kwargs: dict[str, Any]) -> None:
        """Locate the NaN the flag saw by replaying the call's program; a replay that finds none (the
        same program on the same inputs) is no finding. Donated inputs, and programs with side-effecting
        callbacks, are not replayed: the finding then names the function only."""
        name = self.body.name
        find = pmap_program if self.transform_name == "jax.pmap" else program_of
        program = None if args is None else guarded(find, self.call, args, kwargs)
        if program is None or not nans.replayable(program.closed.jaxpr):
            why = "its inputs were donated" if args is None else "its program has side-effecting callbacks"
            current().reporter.emit(diagnostic("JAX701", _definition(self.fun), f"NaN or Inf in `{name}` (not "
                                               f"located: {why})", "run without donation or callbacks to locate it"))
            return
        origin = guarded(nans.locate, program)
        if origin is None and self.transform_name == "jax.pmap":
            current().reporter.emit(diagnostic("JAX701", _definition(self.fun), f"NaN or Inf in `{name}` (not located: "
                                               "its shards cannot be replayed one by one, e.g. they exchange values)",
                                               "run the function under `jax.jit` or `jax.vmap` to locate it"))
        elif origin is not None:
            message, fix = nans.describe(origin, name)
            current().reporter.emit(diagnostic("JAX701", origin.where or _definition(self.fun), message, fix))

    def cache_size(self) -> int:
        """The compiled programs the calls use: the bare object's, or in NaN or index-check mode the
        instrumented one's (the larger)."""
        return max(int(call._cache_size()) for call in (self.call, *self._instrumented.values()))

    def clear_cache(self) -> None:
        """Clear the compiled programs (the checked ones included)."""
        for call in (self.call, *self._instrumented.values()):
            clear = getattr(call, "clear_cache", None)
            if clear is not None:
                clear()


def checked(fun: Callable[..., Any], transform: Callable[..., Any], transform_name: str, args: tuple[Any, ...],
            options: dict[str, Any]) -> Forwarder:
    """What users call for `transform(fun, *args, **options)` with the runtime checks."""
    state = CheckedFunction(fun, transform, transform_name, args, options)
    forwarder, state._made = state._made, None
    assert forwarder is not None
    return forwarder


def _definition(fun: Any) -> tuple[str, int] | None:
    """Where the user's function behind `fun` is defined."""
    code = getattr(stale_globals.user_function(fun), "__code__", None)
    return (code.co_filename, code.co_firstlineno) if code is not None else None


def _copy_metadata(forwarder: Forwarder, fun: Any, name: str) -> None:
    if name == "__dict__":
        forwarder.__dict__.update(getattr(fun, "__dict__", {}))
    elif hasattr(fun, name):
        setattr(forwarder, name, getattr(fun, name))


def flush() -> None:
    """Read every pending NaN flag now (at the end of a session)."""
    for checked in list(LIVE):
        checked.poll(block=True)
