"""Checks inside loop and branch bodies and custom-derivative rules (issue 33): a NaN made inside a
`scan`, `fori_loop`, `while_loop`, `cond` or `switch` body, or a `custom_vjp`/`custom_jvp` rule, is
reported at the body's line, forward or backward pass named; each clean twin gives nothing."""

from __future__ import annotations

import inspect
from typing import Any

import jax
import jax.numpy as jnp
import pytest

import jaxcheck.runtime as rt


def _line(fun: Any, text: str) -> int:
    """The line of `fun`'s source holding `text`."""
    lines, start = inspect.getsourcelines(fun)
    return start + next(n for n, line in enumerate(lines) if text in line)


def _found(fun: Any, *args: Any, **settings: Any) -> list[tuple[str, int, str]]:
    with rt.checking(mode="collect", **settings) as findings:
        jax.block_until_ready(jax.jit(fun)(*args))
    return [(d.code, d.range.start.line, d.message) for d in findings]


def scanned(x):
    def body(c, v):
        return c + jnp.sqrt(v - 1.5), None
    return jax.lax.scan(body, 0.0, x)[0]


def fori(x):
    return jax.lax.fori_loop(0, 3, lambda i, c: c + jnp.log(x[i]), 0.0)


def whiled(x):
    return jax.lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] + jnp.log(x[c[0]])), (0, 0.0))[1]


def conded(x):
    return jax.lax.cond(x.sum() > 0, lambda v: jnp.log(v).sum(), lambda v: v.sum(), x)


def switched(x):
    return jax.lax.switch(1, [lambda v: v.sum(), lambda v: jnp.arcsin(v).sum()], x)


@pytest.mark.parametrize(("fun", "text", "primitive"), [
    (scanned, "jnp.sqrt", "sqrt"), (fori, "jnp.log", "log"), (whiled, "jnp.log(x[c[0]])", "log"),
    (conded, "jnp.log", "log"), (switched, "jnp.arcsin", "asin")], ids=["scan", "fori", "while", "cond", "switch"])
def test_a_nan_made_in_a_body_is_located_at_the_bodys_line(fun: Any, text: str, primitive: str):
    found = _found(fun, jnp.array([1.0, 2.0, -1.0]), nans=True)
    assert [(code, line) for code, line, _ in found] == [("JAX701", _line(fun, text))]
    assert f"`{primitive}` in the forward pass of `{fun.__name__}`" in found[0][2]
    assert _found(fun, jnp.array([0.6, 0.5, 0.25]) if fun is not scanned else jnp.array([2.0, 3.0, 4.0]),
                  nans=True) == []


def scan_of_where(x):
    def body(c, v):
        return c + jnp.where(v > 0, jnp.log(v), 0.0), None
    return jax.lax.scan(body, 0.0, x)[0]


def scan_of_safe_where(x):
    def body(c, v):
        return c + jnp.where(v > 0, jnp.log(jnp.where(v > 0, v, 1.0)), 0.0), None
    return jax.lax.scan(body, 0.0, x)[0]


def test_a_nan_in_the_backward_pass_of_a_scan_body_is_named_backward():
    found = _found(jax.grad(scan_of_where), jnp.array([1.0, 0.0]), nans=True)
    assert [(code, line) for code, line, _ in found] == [("JAX701", _line(scan_of_where, "jnp.log"))]
    assert "backward pass (gradient)" in found[0][2]
    assert _found(jax.grad(scan_of_safe_where), jnp.array([1.0, 0.0]), nans=True) == []


@jax.custom_vjp
def clipped_log(x):
    return jnp.log(jnp.maximum(x, 1.0))


def _clipped_log_fwd(x):
    return clipped_log(x), x


def _clipped_log_bwd(x, g):
    return (g * jnp.sqrt(x - 1.5),)  # NaN for x < 1.5


def _clipped_log_safe_bwd(x, g):
    return (g * jnp.sqrt(jnp.maximum(x - 1.5, 0.0)),)


clipped_log.defvjp(_clipped_log_fwd, _clipped_log_bwd)
safe_clipped_log = jax.custom_vjp(lambda x: jnp.log(jnp.maximum(x, 1.0)))
safe_clipped_log.defvjp(lambda x: (safe_clipped_log(x), x), _clipped_log_safe_bwd)


@jax.custom_jvp
def soft(x):
    return jnp.sin(x)


@soft.defjvp
def _soft_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return jnp.sin(x), t * jnp.log(x)


def test_a_nan_in_a_custom_vjp_backward_rule_is_located_at_the_rules_line():
    found = _found(jax.grad(lambda x: clipped_log(x).sum()), jnp.array([1.0, 2.0]), nans=True)
    assert [(code, line) for code, line, _ in found] == [("JAX701", _line(_clipped_log_bwd, "jnp.sqrt"))]
    assert "`sqrt` in the backward pass (gradient)" in found[0][2]
    assert _found(jax.grad(lambda x: safe_clipped_log(x).sum()), jnp.array([1.0, 2.0]), nans=True) == []


def test_a_nan_in_a_custom_jvp_rule_is_located_at_the_rules_line():
    found = _found(jax.grad(lambda x: soft(x).sum()), jnp.array([1.0, -2.0]), nans=True)
    assert [(code, line) for code, line, _ in found] == [("JAX701", _line(_soft_jvp, "jnp.log"))]
    assert _found(jax.grad(lambda x: soft(x).sum()), jnp.array([1.0, 2.0]), nans=True) == []


def sqrt_hidden(x):
    return jnp.where(x > 0, jnp.sqrt(x), 0.0).sum()


def test_a_nan_under_checkpoint_is_located_inside_it():
    found = _found(jax.grad(jax.checkpoint(sqrt_hidden)), jnp.array([0.0, 1.0]), nans=True)
    assert [(code, line) for code, line, _ in found] == [("JAX701", _line(sqrt_hidden, "jnp.sqrt"))]
    assert "backward pass (gradient)" in found[0][2]
    assert _found(jax.grad(jax.checkpoint(sqrt_hidden)), jnp.array([2.0, 1.0]), nans=True) == []


def gather_in_scan(x, idx):
    def body(c, i):
        return c + x[i], None
    return jax.lax.scan(body, 0.0, idx)[0]


def read_in_fori(x, n):
    return jax.lax.fori_loop(0, n, lambda i, c: c + x[i + 2], 0.0)


def read_in_while(x, n):
    return jax.lax.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, c[1] + x[c[0] + 1]), (0, 0.0))[1]


def update_in_cond(x, i):
    return jax.lax.cond(i > 0, lambda: x.at[i].add(1.0), lambda: x)


@pytest.mark.parametrize(("fun", "text", "bad", "good"), [
    (gather_in_scan, "x[i]", jnp.array([0, 5, 1]), jnp.array([0, 3, 1])),
    (read_in_fori, "x[i + 2]", 3, 2),
    (read_in_while, "x[c[0] + 1]", 4, 3),
    (update_in_cond, "x.at[i]", 7, 2)], ids=["scan", "fori", "while", "cond"])
def test_an_index_out_of_bounds_in_a_body_is_reported_at_the_bodys_line(fun: Any, text: str, bad: Any, good: Any):
    found = _found(fun, jnp.arange(4.0), bad, index_checks=True)
    assert [(code, line) for code, line, _ in found] == [("JAX203", _line(fun, text))]
    assert "out of bounds for axis 0 with size 4" in found[0][2]
    assert _found(fun, jnp.arange(4.0), good, index_checks=True) == []


def test_a_nan_hidden_inside_a_scan_body_is_flagged_and_located():
    found = _found(scan_of_where, jnp.array([1.0, -1.0]), nans=True)
    assert [(code, line) for code, line, _ in found] == [("JAX701", _line(scan_of_where, "jnp.log"))]
    assert "then hidden by `jnp.where`" in found[0][2]
    assert _found(scan_of_safe_where, jnp.array([1.0, -1.0]), nans=True) == []
