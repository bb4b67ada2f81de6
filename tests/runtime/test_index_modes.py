"""Index checks through `jnp.take`'s modes (issue 33): JAX documents `mode="fill"` as `jnp.take`'s and
`jnp.take_along_axis`'s default, returning NaN for floats out of bounds; an out-of-bounds index under
that default is reported (JAX203), while a mode the user chose (`"fill"` with a fill value, `"clip"`,
`"wrap"`) is not. Operations inside JAX's own jitted functions are reported at the user's call."""

from __future__ import annotations

import inspect
from typing import Any

import jax
import jax.numpy as jnp

import jaxcheck.runtime as rt


def _line(fun: Any, text: str) -> int:
    lines, start = inspect.getsourcelines(fun)
    return start + next(n for n, line in enumerate(lines) if text in line)


def taken(x, i):
    a = jnp.take(x, i)
    b = jnp.take_along_axis(x, i[None], axis=0)
    return a + b.sum()


def taken_with_a_chosen_mode(x, i):
    a = jnp.take(x, i, mode="clip") + jnp.take(x, i, mode="wrap")
    b = jnp.take(x, i, mode="fill", fill_value=0.0)
    return a + b + jnp.take_along_axis(x, i[None], axis=0, mode="clip").sum()


def _found(fun: Any, i: int) -> list[tuple[int, str]]:
    with rt.checking(mode="collect", index_checks=True) as findings:
        jax.block_until_ready(jax.jit(fun)(jnp.arange(4.0), jnp.array(i)))
    assert all(d.code == "JAX203" for d in findings)
    return sorted((d.range.start.line, d.message) for d in findings)


def test_take_out_of_bounds_under_its_default_fill_mode_is_reported_at_the_users_line():
    found = _found(taken, 5)
    assert [line for line, _ in found] == [_line(taken, "jnp.take("), _line(taken, "take_along_axis")]
    assert all("index 5 is out of bounds for axis 0 with size 4" in message for _, message in found)
    assert all("JAX returned the fill value (NaN for floats)" in message for _, message in found)
    assert _found(taken, 3) == []


def test_take_with_a_mode_the_user_chose_is_not_reported():
    assert _found(taken_with_a_chosen_mode, 5) == []
    assert _found(taken_with_a_chosen_mode, -7) == []


def normed(x):
    return jnp.linalg.norm(x)


def test_a_nan_made_inside_a_jax_function_is_reported_at_the_users_call():
    with rt.checking(mode="collect", nans=True) as findings:
        jax.jit(jax.grad(normed))(jnp.zeros(2))
    assert [(d.code, d.range.start.line) for d in findings] == [("JAX701", _line(normed, "jnp.linalg.norm"))]
    assert "backward pass (gradient) of `normed`" in findings[0].message


@jax.checkpoint
def picked_under_checkpoint(x, i):
    return x[i]


@jax.custom_jvp
def picked_with_a_rule(x, i):
    return x[i]


picked_with_a_rule.defjvp(lambda primals, tangents: (picked_with_a_rule(*primals), tangents[0][primals[1]]))


@jax.custom_vjp
def picked_with_a_backward_rule(x, i):
    return x[i] * 2.0


picked_with_a_backward_rule.defvjp(lambda x, i: (picked_with_a_backward_rule(x, i), (x, i)),
                                   lambda saved, g: (jnp.zeros_like(saved[0]), None))


def test_indexing_under_checkpoint_and_in_a_custom_derivatives_function_is_checked():
    for fun in (picked_under_checkpoint, picked_with_a_rule, picked_with_a_backward_rule):
        assert [line for line, _ in _found(fun, 6)] == [_line(fun, "x[i]")], fun.__name__
        assert _found(fun, 3) == []


def _tilted(x):
    return jnp.tanh(jnp.exp(x) * 0.3) @ jnp.ones(x.shape[-1])


def test_the_shadow_evaluation_leaves_a_custom_derivatives_results_bit_for_bit():
    tilted = jax.custom_jvp(_tilted)
    tilted.defjvp(lambda primals, tangents: (tilted(*primals), tangents[0].sum()))

    def step(x, i):
        return jax.checkpoint(tilted)(x) + tilted(x * x[i])

    x = jnp.linspace(-3.0, 3.0, 4096).reshape(64, 64)
    bare = jax.jit(step)(x, jnp.array(2))
    with rt.checking(mode="collect", index_checks=True, nans=True) as findings:
        checked = jax.jit(step)(x, jnp.array(2))
    assert findings == []
    assert bare.tobytes() == checked.tobytes()
