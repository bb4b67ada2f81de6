"""The trace history tests read (`jaxcheck.runtime.traces`), and the bounds of every store the companion
keeps: findings collapsed per source line, the consumed-key tracker, the trace log. Counts, not timings."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

import jaxcheck.runtime as rt
from jaxcheck.runtime_checks import retrace
from jaxcheck.runtime_checks.key_reuse import KeyTracker
from jaxcheck.runtime_checks.report import MESSAGES_PER_LINE, Reporter, diagnostic


def test_traces_counts_each_trace_and_says_what_changed():
    def f(x, scale, fn):
        return fn(x) * scale

    with rt.checking(mode="collect"):
        checked = partial(jax.jit, static_argnames=("scale", "fn"))(f)
        checked(jnp.ones(2), 1.0, jnp.sin)
        checked(jnp.ones(2), 1.0, jnp.sin)  # cached: no trace
        checked(jnp.ones(3), 1.0, jnp.sin)  # shape
        checked(jnp.ones(3, jnp.int32), 1.0, jnp.sin)  # dtype
        checked(3.0, 1.0, jnp.sin)  # weak type
        checked(3.0, 2.0, jnp.sin)  # static value
        checked(3.0, 2.0, jnp.cos)  # callable
        history = rt.traces(f)
    assert history.count == 6 and rt.traces(checked).count == 6
    changes = history.changes
    assert len(changes) == 5
    assert "x: float32[2] -> float32[3]" in changes[0]
    assert "x: float32[3] -> int32[3]" in changes[1]
    assert "int32[3] -> float32[] weak" in changes[2]
    assert "scale: static float 1.0 -> static float 2.0" in changes[3]
    assert "fn: callable" in changes[4] and "cos" in changes[4]
    assert rt.traces(f).count == 6  # still readable after the block


def test_a_history_keeps_the_latest_records_and_the_log_the_latest_functions():
    history = retrace.TraceHistory()
    for n in range(retrace.RECORDS_KEPT + 10):
        history.add(retrace.Signature((("x", f"float32[{n}]"),), 0))
    assert history.count == retrace.RECORDS_KEPT + 10 and len(history.records) == retrace.RECORDS_KEPT
    log = retrace.TraceLog()
    codes = [compile(f"x{n} = 1", f"<f{n}>", "exec") for n in range(retrace.FUNCTIONS_KEPT + 5)]
    for code in codes:
        log.add(code, retrace.Signature((), 0))
    assert len(log) == retrace.FUNCTIONS_KEPT
    assert log.history(codes[0]).count == 0 and log.history(codes[-1]).count == 1


def test_repeated_findings_at_one_line_are_counted_not_kept():
    reporter = Reporter(mode="collect")
    for index in range(100_000):
        reporter.emit(diagnostic("JAX203", ("prog.py", 7), f"index {index} is out of bounds"))
    reporter.emit(diagnostic("JAX203", ("prog.py", 8), "index 5 is out of bounds"))
    assert len(reporter.findings) == MESSAGES_PER_LINE + 1
    assert reporter.count(reporter.findings[0]) == 100_000
    assert reporter.count(reporter.findings[-1]) == 1


def test_a_bad_index_hit_many_times_with_other_values_is_one_line():
    def f(x, i):
        return x[i]

    with rt.checking(mode="collect", index_checks=True) as findings:
        checked = jax.jit(f)
        for i in range(300):
            checked(jnp.arange(5.0), 5 + i)
    assert 1 <= len(findings) <= MESSAGES_PER_LINE
    assert {d.range.start.line for d in findings} == {f.__code__.co_firstlineno + 1}


def test_the_key_tracker_holds_a_bounded_number_of_keys():
    tracker = KeyTracker(limit=1_000, element_limit=10_000)
    batches = [jax.random.split(jax.random.key(n), 1024) for n in range(50)]
    for line, batch in enumerate(batches):
        assert tracker.track(batch, "a.py", line) is None
    arrays, elements = tracker.held
    assert elements <= 10_000 and arrays == 10_000 // 1024
    assert tracker.track(batches[-1], "a.py", 99) == ("a.py", 49)  # the latest batches are still known
    assert tracker.track(jax.random.split(jax.random.key(0), 20_000), "a.py", 1) is None  # too large to hold
    assert tracker.held[1] <= 10_000


def test_a_dropped_checked_function_leaves_nothing_behind():
    import gc
    import weakref

    from jaxcheck.runtime_checks import traced_body

    with rt.checking(mode="collect"):
        gc.collect()
        before = len(traced_body._BODIES)
        kept = []
        for _ in range(20):
            fun = lambda x: x * 2  # noqa: E731 - a new function object per iteration, as users write
            kept.append(weakref.ref(fun))
            jax.jit(fun)(jnp.ones(2))  # noqa: JAX501 (the pattern under test)
        del fun
        gc.collect()
        assert len(traced_body._BODIES) == before
    assert all(ref() is None for ref in kept)  # the functions go, as with bare JAX (and its caches forget them)
