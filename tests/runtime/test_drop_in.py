"""Nothing changes but the report (issue 33): checked transforms trace as often as bare JAX, keep keywords,
attributes and nesting, never run the user's program or touch donated buffers a second time, and raise
the user's error once, without jaxcheck's frames."""

from __future__ import annotations

import traceback
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcheck.runtime as rt
from jaxcheck.runtime_checks.forwarder import QUIET_AFTER

MODES = [{}, {"nans": True}, {"index_checks": True}]
MODE_IDS = ["defaults", "nans", "index_checks"]


def _outcome(call: Any) -> tuple[str, Any]:
    """`("ok", value as nested lists)` or `("error", type name, message first line)`."""
    try:
        value = call()
    except Exception as error:  # noqa: BLE001 - the outcome under test
        return "error", (type(error).__name__, str(error).splitlines()[0])
    return "ok", jax.tree_util.tree_map(lambda leaf: np.asarray(leaf).tolist(), value)


def _counted() -> tuple[Any, list[int]]:
    """A new function object (JAX's caches hold nothing for it) and the list each of its traces appends to."""
    traced: list[int] = []

    def f(x):
        traced.append(1)
        return x * 2

    return f, traced


@pytest.mark.parametrize("settings", MODES, ids=MODE_IDS)
def test_jit_created_in_a_loop_traces_once_as_bare(settings: dict[str, Any]):
    x = jnp.ones(3)
    f, bare = _counted()
    for _ in range(50):
        jax.jit(f)(x)
    g, checked = _counted()
    with rt.checking(mode="collect", **settings) as findings:
        for _ in range(50):
            jax.jit(g)(x)
        assert rt.traces(g).count == 1
    assert len(bare) == len(checked) == 1  # JAX's own cache answered for every checked wrapper
    assert findings == []


@pytest.mark.parametrize("settings", MODES, ids=MODE_IDS)
def test_every_trace_is_jaxs_own(settings: dict[str, Any]):
    traced = []

    def f(x):
        traced.append(1)
        return jnp.where(x > 0, jnp.log(x), 0.0)[0] * x

    with rt.checking(mode="collect", **settings):
        checked = jax.jit(f)
        for n in (1, 2, 1, 2):
            checked(jnp.ones(n))
        checked(-jnp.ones(2))
        checked.lower(jnp.ones(1))
        jax.make_jaxpr(checked)(jnp.ones(2))
        assert rt.traces(f).count == 2
    assert len(traced) == 2  # one per shape: not re-traced to look, to locate or to compare


@pytest.mark.parametrize(("options", "call"), [
    ({"static_argnums": -1}, lambda f: f(jnp.ones(2), n=3)),
    ({"static_argnums": -1}, lambda f: f(jnp.ones(2), 3)),
    ({"static_argnums": 1}, lambda f: f(jnp.ones(2), n=3)),
    ({"static_argnames": "n"}, lambda f: f(jnp.ones(2), n=3)),
    ({}, lambda f: f(x=jnp.ones(2), n=3)),
])
def test_keywords_stay_keywords(options: dict[str, Any], call: Any):
    def f(x, n):
        return x * n

    bare = _outcome(lambda: call(jax.jit(f, **options)))
    with rt.checking(mode="collect"):
        checked = _outcome(lambda: call(jax.jit(f, **options)))
    assert checked == bare


def test_attributes_of_the_jit_object_are_kept():
    def f(x):
        return x + 1

    bare = jax.jit(f)
    with rt.checking(mode="collect"):
        checked = jax.jit(f)
        for wrapped in (bare, checked):
            wrapped(jnp.ones(2))
            wrapped(jnp.ones(3))
        assert checked._fun is f and checked.__wrapped__ is f
        assert checked._cache_size() == bare._cache_size() == 2
        assert str(checked.trace(jnp.ones(2)).jaxpr) == str(bare.trace(jnp.ones(2)).jaxpr)
        assert checked.eval_shape(jnp.ones(2)) == bare.eval_shape(jnp.ones(2))
        assert checked.lower(jnp.ones(2)).as_text() == bare.lower(jnp.ones(2)).as_text()
        checked.clear_cache()
        assert checked._cache_size() == 0
        assert isinstance(checked, jax.stages.Wrapped)


def test_nesting_inside_other_transforms_is_as_bare():
    def f(x):
        return jnp.sin(x) * 2

    x = jnp.arange(3.0)
    outer = [jax.make_jaxpr, lambda g: jax.make_jaxpr(jax.grad(lambda x: g(x).sum())),
             lambda g: jax.make_jaxpr(jax.vmap(g))]
    bare = [str(transform(jax.jit(f))(x)) for transform in outer]
    with rt.checking(mode="collect", nans=True):
        checked = [str(transform(jax.jit(f))(x)) for transform in outer]
    assert checked == bare
    assert "pjit" in checked[0] or "jit" in checked[0]


@pytest.mark.parametrize("settings", MODES, ids=MODE_IDS)
def test_a_runtime_error_with_donated_arguments_is_the_users(settings: dict[str, Any]):
    fired = []

    def boom(x):
        fired.append(1)
        raise ValueError("the user's own error")

    def step(x):
        jax.debug.callback(boom, x)
        return x + 1

    bare = _outcome(lambda: jax.block_until_ready(jax.jit(step, donate_argnums=0)(jnp.ones(2))))
    bare_fired = len(fired)
    with rt.checking(mode="collect", **settings):
        checked = _outcome(lambda: jax.block_until_ready(jax.jit(step, donate_argnums=0)(jnp.ones(2))))
    assert checked == bare and bare[0] == "error"
    assert "deleted" not in str(checked)
    assert len(fired) == 2 * bare_fired  # the failing program ran once, as bare


@pytest.mark.parametrize("settings", MODES, ids=MODE_IDS)
def test_callbacks_fire_as_often_as_bare_even_when_a_nan_is_located(settings: dict[str, Any]):
    fired = []

    def step(x):
        jax.debug.callback(lambda v: fired.append(1), x)
        return jnp.where(x > 0, jnp.log(x), 0.0)

    x = jnp.array([1.0, -1.0])
    with rt.checking(mode="collect", **settings) as findings:
        checked_step = jax.jit(step)
        for _ in range(3):
            checked_step(x)
    jax.effects_barrier()
    assert len(fired) == 3
    assert [d.code for d in findings] == (["JAX701"] if settings.get("nans") else [])


def test_a_trace_error_is_raised_once_without_jaxchecks_frames():
    def f(x):
        return int(x)  # noqa: JAX302 (the bug under test)

    with rt.checking(mode="collect", nans=True):
        with pytest.raises(jax.errors.ConcretizationTypeError) as caught:
            jax.jit(f)(jnp.ones(()))
    error = caught.value
    assert error.__context__ is None and error.__cause__ is None  # not chained to a second run
    text = "".join(traceback.format_exception(error))
    assert "runtime_checks" not in text and "jaxcheck-forwarder" not in text
    frames = [frame.name for frame in traceback.extract_tb(error.__traceback__)]
    assert frames[-1] == "f"  # the user's frame on top
    assert any("JAX302" in note for note in error.__notes__)


def test_a_leaked_tracer_points_to_the_users_function():
    leaked = []

    def store(x):
        leaked.append(x)  # noqa: JAX102 (the bug under test)
        return x

    with rt.checking(mode="collect"):
        jax.jit(store)(jnp.ones(2))
        with pytest.raises(jax.errors.UnexpectedTracerError) as caught:
            jax.jit(lambda y: y + leaked[0])(jnp.ones(2))  # noqa: JAX101 (the bug under test)
    text = "".join(traceback.format_exception(caught.value))
    assert "hidden_state" not in text and "runtime_checks" not in text
    assert f"store at {__file__}" in str(caught.value)


def test_hidden_state_is_seen_during_jaxs_own_trace():
    traced = []

    def f(x):
        traced.append(1)
        return x + np.random.rand()  # noqa: JAX104 (the bug under test)

    with rt.checking(mode="collect") as findings:
        jax.jit(f)(jnp.ones(2))
    assert len(traced) == 1
    assert [d.code for d in findings] == ["JAX104"] and "np.random.rand" in findings[0].message


def test_a_program_with_io_callbacks_is_not_replayed_to_locate_a_nan():
    fired = []

    def double(v):
        fired.append(1)
        return np.asarray(v) * 2

    def step(x):
        y = jax.experimental.io_callback(double, jax.ShapeDtypeStruct(x.shape, x.dtype), x)
        return jnp.where(y > 0, jnp.log(y), 0.0)

    with rt.checking(mode="collect", nans=True) as findings:
        checked = jax.jit(step)
        for _ in range(3):
            checked(jnp.array([1.0, -1.0]))
    assert len(fired) == 3  # as bare: the NaN is reported, the program is not run again to locate it
    findings = [d for d in findings if d.code == "JAX701"]  # (JAX101 also reports `fired` growing: left alone)
    assert len(findings) == 1
    assert "not located: its program has side-effecting callbacks" in findings[0].message
    assert findings[0].range.start.line == step.__code__.co_firstlineno


def _runtime_code_run_by(call: Any) -> list[str]:
    """The functions of jaxcheck's runtime (and its generated forwarders) that `call()` enters."""
    entered: list[str] = []

    def profile(frame: Any, event: str, _arg: Any) -> None:
        path = frame.f_code.co_filename
        if event == "call" and ("runtime_checks" in path or path == "<jaxcheck-forwarder>"):
            entered.append(frame.f_code.co_name)

    import sys

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return entered


def test_a_call_with_nothing_to_check_runs_no_code_of_jaxchecks():
    def f(x):
        return x * 0.5 + 1.0

    x = jnp.ones(8)
    with rt.checking(mode="collect"):
        checked = jax.jit(f)
        assert _runtime_code_run_by(lambda: checked(x)) != []  # the first call: the trace's checks
        for _ in range(QUIET_AFTER):
            checked(x)
        assert _runtime_code_run_by(lambda: checked(x)) == []  # then the bare object's call, from C
        np.testing.assert_array_equal(checked(x), jax.jit(f)(x))
        assert "<PjitFunction" in repr(checked)
    with rt.checking(mode="collect", nans=True):  # NaN checks need the forwarder's code on every call
        assert _runtime_code_run_by(lambda: checked(x)) != []


def test_a_function_with_work_per_call_keeps_its_checks():
    scale = 2.0

    def reads_a_global(x):
        return x * scale

    def takes_a_key(key):
        return jax.random.normal(key)

    with rt.checking(mode="collect") as findings:
        with_global, with_key, with_static = (jax.jit(reads_a_global), jax.jit(takes_a_key),
                                              jax.jit(lambda x, n: x * n, static_argnums=1))
        key, x = jax.random.key(0), jnp.ones(3)
        for call in (lambda: with_global(x), lambda: with_key(key), lambda: with_static(x, 2)):
            call()
            assert _runtime_code_run_by(call) != []
    assert [d.code for d in findings] == ["JAX401"]  # the key passed twice (the third call above)


def test_a_new_trace_of_a_quiet_function_is_checked_as_the_first():
    def f(x):
        if x.shape[0] == 4 and x.sum() > 0:  # noqa: JAX301 (the bug under test, on 4 elements only)
            return x
        return x * 2

    with rt.checking(mode="collect"):
        checked = jax.jit(f)
        for _ in range(QUIET_AFTER + 1):
            checked(jnp.ones(3))  # quiet from here
        with pytest.raises(jax.errors.TracerBoolConversionError) as caught:
            checked(jnp.ones(4))  # traces: the error is the user's, with the note, once
    error = caught.value
    text = "".join(traceback.format_exception(error))
    assert "runtime_checks" not in text and "jaxcheck-forwarder" not in text
    assert [frame.name for frame in traceback.extract_tb(error.__traceback__)][-1] == "f"
    with rt.checking(mode="collect"):
        with pytest.raises(jax.errors.TracerBoolConversionError) as first:
            jax.jit(f)(jnp.ones(4))  # the same error on a first call
    ours = [note for note in error.__notes__ if note.startswith("jaxcheck")]
    assert ours == [note for note in first.value.__notes__ if note.startswith("jaxcheck")] and len(ours) == 1

    def draws(x, key):
        return x + (jax.random.normal(key, x.shape) if x.shape[0] == 4 else 0.0)

    key = jax.random.key(0)
    with rt.checking(mode="collect") as findings:
        checked = jax.jit(draws)
        for _ in range(QUIET_AFTER + 1):
            checked(jnp.ones(3), key)  # noqa: JAX401 (quiet: this program consumes no key)
        checked(jnp.ones(4), key)  # noqa: JAX401 (a quiet call traces one that does: the next call reads it)
        checked(jnp.ones(4), key)  # noqa: JAX401 (the reuse under test)
        checked(jnp.ones(4), key)  # noqa: JAX401 (the reuse under test)
    assert [d.code for d in findings] == ["JAX401"]


def test_a_quiet_jit_object_is_wrapped_by_custom_rules_as_the_bare_one():
    def f(x, y):
        return x * y

    def wrapped_call() -> Any:
        rule = jax.custom_jvp(jax.jit(f))
        rule.defjvp(lambda primals, tangents: (f(*primals), tangents[0] * primals[1]))
        for _ in range(QUIET_AFTER + 1):
            rule(jnp.ones(2), y=jnp.ones(2))  # the jit object goes quiet
        return rule(jnp.ones(2), y=jnp.full(2, 3.0))  # keywords resolved by the jit object's signature

    bare = _outcome(wrapped_call)
    with rt.checking(mode="collect"):
        assert _outcome(wrapped_call) == bare == ("ok", [3.0, 3.0])
