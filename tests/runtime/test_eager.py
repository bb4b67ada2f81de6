"""NaN mode outside `jit` (issue 33): a checked `grad`, `value_and_grad` or `vmap` called eagerly reports
the first NaN/Inf at the user's line, forward or backward pass named, also when `jnp.where` hides it; the
clean twin of each program gives nothing, and the call returns, raises and fires callbacks as bare."""

from __future__ import annotations

import inspect
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax._src import core as jax_core

import jaxcheck.runtime as rt


def _line(fun: Any, text: str) -> int:
    """The line of `fun`'s source holding `text`."""
    lines, start = inspect.getsourcelines(fun)
    return start + next(n for n, line in enumerate(lines) if text in line)


def _findings(call: Any) -> list[tuple[int, str]]:
    with rt.checking(mode="collect", nans=True) as findings:
        call()
    assert all(d.code == "JAX701" and d.path.endswith("test_eager.py") for d in findings), findings
    return [(d.range.start.line, d.message) for d in findings]


def log_hidden(x):
    return jnp.where(x > 0, jnp.log(x), 0.0).sum()


def log_made_safe(x):
    safe = jnp.where(x > 0, x, 1.0)
    return jnp.where(x > 0, jnp.log(safe), 0.0).sum()


def test_a_nan_in_an_eager_gradient_is_located_in_the_backward_pass():
    found = _findings(lambda: jax.grad(log_hidden)(jnp.array([1.0, 0.0])))
    assert [line for line, _ in found] == [_line(log_hidden, "jnp.log")]
    assert "backward pass (gradient) of `log_hidden`" in found[0][1]
    assert _findings(lambda: jax.grad(log_made_safe)(jnp.array([1.0, 0.0]))) == []


def test_a_nan_hidden_by_where_in_an_eager_forward_pass():
    found = _findings(lambda: jax.value_and_grad(log_hidden)(jnp.array([1.0, -1.0])))
    assert [line for line, _ in found] == [_line(log_hidden, "jnp.log")]
    assert "`log` in the forward pass of `log_hidden`, then hidden by `jnp.where`" in found[0][1]
    assert _findings(lambda: jax.value_and_grad(log_made_safe)(jnp.array([1.0, -1.0]))) == []


def test_eager_vmap_and_nested_transforms():
    def scaled(x):
        return jnp.sqrt(x) * 2.0

    def safe(x):
        return jnp.sqrt(jnp.maximum(x, 0.0)) * 2.0

    found = _findings(lambda: jax.vmap(scaled)(jnp.array([1.0, -1.0])))
    assert [line for line, _ in found] == [_line(scaled, "jnp.sqrt")]
    assert "`sqrt` in the forward pass of `test_eager_vmap_and_nested_transforms.<locals>.scaled`" in found[0][1]
    nested = _findings(lambda: jax.vmap(jax.grad(log_hidden))(jnp.array([[1.0, 0.0]])))
    assert [line for line, _ in nested] == [_line(log_hidden, "jnp.log")] and "backward" in nested[0][1]
    assert _findings(lambda: jax.vmap(safe)(jnp.array([1.0, -1.0]))) == []
    assert _findings(lambda: jax.vmap(jax.grad(log_made_safe))(jnp.array([[1.0, 0.0]]))) == []


def test_a_nan_passed_in_is_named_by_its_argument():
    found = _findings(lambda: jax.grad(lambda w, b: (w * b).sum())(jnp.ones(2), jnp.array([np.nan, 1.0])))
    assert len(found) == 1 and "<lambda>` in argument 'b'" in found[0][1]


def test_the_eager_call_is_as_bare_and_the_watch_is_gone_after_it():
    fired: list[int] = []

    def step(x):
        jax.debug.callback(lambda v: fired.append(1), x)
        return jnp.where(x > 0, jnp.log(x), 0.0).sum()

    x = jnp.array([1.0, -1.0, 0.0])
    bare = [jax.value_and_grad(step)(x), jax.vmap(step)(x[:, None])]
    jax.effects_barrier()
    bare_fired, fired[:] = len(fired), []
    with rt.checking(mode="collect", nans=True) as findings:
        checked = [jax.value_and_grad(step)(x), jax.vmap(step)(x[:, None])]
        jax.effects_barrier()
    assert len(fired) == bare_fired
    for got, expected in zip(jax.tree_util.tree_leaves(checked), jax.tree_util.tree_leaves(bare)):
        assert np.asarray(got).tobytes() == np.asarray(expected).tobytes()
    assert {d.range.start.line for d in findings} == {_line(step, "jnp.log")}
    assert jax_core.EvalTrace.process_primitive.__module__ == "jax._src.core"
    with rt.checking(mode="collect") as defaults:  # NaN mode off: nothing is watched
        jax.grad(log_hidden)(jnp.array([1.0, 0.0]))
    assert defaults == []


def sqrt_hidden(x):
    return jnp.where(x > 0, jnp.sqrt(x), 0.0).sum()


def sqrt_made_safe(x):
    return jnp.where(x > 0, jnp.sqrt(jnp.where(x > 0, x, 1.0)), 0.0).sum()


def test_a_users_jit_under_an_eager_grad_is_located_inside_it():
    found = _findings(lambda: jax.grad(jax.jit(sqrt_hidden))(jnp.array([0.0, 1.0])))
    assert [line for line, _ in found] == [_line(sqrt_hidden, "jnp.sqrt")] and "backward" in found[0][1]
    assert _findings(lambda: jax.grad(jax.jit(sqrt_made_safe))(jnp.array([0.0, 1.0]))) == []


@jax.custom_vjp
def clipped_sqrt(x):
    return jnp.sqrt(jnp.maximum(x, 1.0))


def _clipped_sqrt_bwd(x, g):  # the rule's operations run compiled: the rule is reported at its definition
    return (g * jnp.log(x - 1.5),)


def _clipped_sqrt_safe_bwd(x, g):
    return (g * jnp.log(jnp.maximum(x - 1.5, 1.0)),)


clipped_sqrt.defvjp(lambda x: (clipped_sqrt(x), x), _clipped_sqrt_bwd)
safe_clipped_sqrt = jax.custom_vjp(lambda x: jnp.sqrt(jnp.maximum(x, 1.0)))
safe_clipped_sqrt.defvjp(lambda x: (safe_clipped_sqrt(x), x), _clipped_sqrt_safe_bwd)


def test_a_nan_made_by_a_custom_vjp_rule_in_an_eager_gradient_names_the_rule():
    found = _findings(lambda: jax.grad(lambda x: clipped_sqrt(x).sum())(jnp.array([1.0, 2.0])))
    assert [line for line, _ in found] == [_clipped_sqrt_bwd.__code__.co_firstlineno]
    assert "`_clipped_sqrt_bwd` in the backward pass (gradient)" in found[0][1]
    assert _findings(lambda: jax.grad(lambda x: safe_clipped_sqrt(x).sum())(jnp.array([1.0, 2.0]))) == []


def draw(key):
    return jax.random.normal(key, (2,))


def draw_twice(key):
    return jax.random.normal(key, (2,)) + jax.random.uniform(key, (2,))  # noqa: JAX401 (the bug under test)


def draw_split(key):
    first, second = jax.random.split(key)
    return jax.random.normal(first, (2,)) + jax.random.uniform(second, (2,))


def _key_findings(call: Any) -> list[tuple[int, str]]:
    with rt.checking(mode="collect") as findings:
        call()
    assert all(d.code == "JAX401" for d in findings), findings
    return [(d.range.start.line, d.message) for d in findings]


def test_keys_reused_by_an_eager_vmap_are_reported():
    keys = jax.random.split(jax.random.key(0), 3)

    def twice_across_calls():
        jax.vmap(draw)(keys)
        jax.vmap(draw)(keys)  # the reuse

    found = _key_findings(twice_across_calls)
    assert [line for line, _ in found] == [_line(twice_across_calls, "# the reuse")]
    assert f"already consumed on line {_line(draw, 'jax.random.normal')}" in found[0][1]
    within = _key_findings(lambda: jax.vmap(draw_twice)(keys))
    assert [line for line, _ in within] == [_line(draw_twice, "jax.random.uniform")]


def test_keys_split_for_each_eager_call_are_not_reported():
    def fresh_keys_each_call():
        key = jax.random.key(1)
        for _ in range(3):
            key, batch, single = jax.random.split(key, 3)
            jax.vmap(draw_split)(jax.random.split(batch, 3))
            jax.grad(lambda w, k: (w * draw(k)).sum())(jnp.ones(2), single)

    assert _key_findings(fresh_keys_each_call) == []


def test_a_legacy_raw_key_reused_by_an_eager_grad_is_reported():
    def loss(w, key):
        return ((w + draw(key)) ** 2).sum()

    def reused_every_step():
        key, w = jax.random.PRNGKey(0), jnp.ones(2)
        for _ in range(2):
            w = w - 0.1 * jax.grad(loss)(w, key)  # noqa: JAX401 (the bug under test)

    def split_every_step():
        key, w = jax.random.PRNGKey(0), jnp.ones(2)
        for _ in range(2):
            key, sub = jax.random.split(key)
            w = w - 0.1 * jax.grad(loss)(w, sub)

    found = _key_findings(reused_every_step)
    assert [line for line, _ in found] == [_line(reused_every_step, "jax.grad(loss)(w, key)")]
    assert f"already consumed on line {_line(draw, 'jax.random.normal')}" in found[0][1]
    within = _key_findings(lambda: jax.grad(lambda w, k: (w * draw_twice(k)).sum())(jnp.ones(2), jax.random.PRNGKey(1)))
    assert [line for line, _ in within] == [_line(draw_twice, "jax.random.uniform")]
    assert _key_findings(split_every_step) == []
