"""The checked transforms are drop-in: same signatures, metadata, pytrees, jit object methods and
bit-identical outputs, real training steps included."""

from __future__ import annotations

import inspect
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxcheck.runtime as rt


def _same(a, b) -> None:
    leaves_a, tree_a = jax.tree_util.tree_flatten(a)
    leaves_b, tree_b = jax.tree_util.tree_flatten(b)
    assert tree_a == tree_b
    for x, y in zip(leaves_a, leaves_b):
        assert x.dtype == y.dtype and x.shape == y.shape
        assert np.asarray(x).tobytes() == np.asarray(y).tobytes()


def scaled(params, x, *, power=2):
    """Docstring kept."""
    return {"y": params["w"] * x ** power, "n": jnp.sum(x)}


def test_metadata_and_signature_are_kept():
    checked = rt.jit(scaled, static_argnames=("power",))
    assert checked.__name__ == "scaled" and checked.__doc__ == "Docstring kept."
    assert inspect.signature(checked) == inspect.signature(scaled)
    assert inspect.signature(rt.jit) == inspect.signature(jax.jit)


def test_pytrees_static_arguments_and_jit_methods():
    params, x = {"w": jnp.arange(3.0)}, jnp.linspace(0, 1, 3)
    checked, bare = rt.jit(scaled, static_argnames=("power",)), jax.jit(scaled, static_argnames=("power",))
    with rt.checking(mode="raise"):
        _same(checked(params, x, power=3), bare(params, x, power=3))
        assert checked.eval_shape(params, x) == bare.eval_shape(params, x)
        assert checked.lower(params, x).as_text() == bare.lower(params, x).as_text()
        assert str(checked.trace(params, x).jaxpr) == str(bare.trace(params, x).jaxpr)
        checked.clear_cache()
        _same(checked(params, x), bare(params, x))


def test_decorator_forms_default_arguments_and_donation():
    @rt.jit(static_argnums=1)
    def f(x, n=2):
        return x * n

    @partial(rt.jit, donate_argnums=0)
    def g(x):
        return x + 1

    with rt.checking(mode="raise"):
        _same(f(jnp.ones(2)), jnp.full(2, 2.0))
        _same(f(jnp.ones(2), 3), jnp.full(2, 3.0))
        _same(g(jnp.ones(2)), jnp.full(2, 2.0))


def test_grad_value_and_grad_and_vmap_keywords():
    def loss(w, x):
        return jnp.sum((w * x) ** 2), w * 2

    w, x = jnp.array([1.0, 2.0]), jnp.array([3.0, 4.0])
    with rt.checking(mode="raise"):
        _same(rt.grad(loss, has_aux=True)(w, x), jax.grad(loss, has_aux=True)(w, x))
        _same(rt.value_and_grad(loss, argnums=1, has_aux=True)(w, x),
              jax.value_and_grad(loss, argnums=1, has_aux=True)(w, x))
        batch = jnp.ones((3, 2))
        _same(rt.vmap(loss, in_axes=(None, 0))(w, batch), jax.vmap(loss, in_axes=(None, 0))(w, batch))


def test_library_functions_get_jax_itself():
    assert type(rt.jit(jnp.sin)) is type(jax.jit(jnp.sin))


def test_install_patches_and_uninstall_restores():
    original = jax.jit
    rt.install(mode="collect")
    try:
        assert jax.jit is rt.jit and jax.grad is rt.grad
    finally:
        rt.uninstall()
    assert jax.jit is original


def test_settings_are_validated():
    with pytest.raises(ValueError):
        rt.install(retrace_budget=0)
    with pytest.raises(ValueError):
        rt.install(bogus=True)


def _mlp_batch():
    key = jax.random.key(0)
    return jax.random.normal(key, (16, 8)), jax.random.normal(jax.random.fold_in(key, 1), (16, 1))


@pytest.mark.parametrize("nans", [False, True])
def test_optax_training_step_is_bit_identical(nans: bool):
    optax = pytest.importorskip("optax")
    x, y = _mlp_batch()
    params = {"w": jnp.ones((8, 1)) * 0.1, "b": jnp.zeros(1)}
    optimizer = optax.adam(1e-2)

    def step(params, state, x, y):
        loss, grads = jax.value_and_grad(lambda p: jnp.mean((x @ p["w"] + p["b"] - y) ** 2))(params)
        updates, state = optimizer.update(grads, state, params)
        return optax.apply_updates(params, updates), state, loss

    def train(jit):
        p, s = params, optimizer.init(params)
        run = jit(step)
        for _ in range(3):
            p, s, loss = run(p, s, x, y)
        return p, s, loss

    expected = train(jax.jit)
    with rt.checking(mode="raise", nans=nans):
        got = train(jax.jit)
    _same(got, expected)


def test_flax_training_step_is_bit_identical():
    nn = pytest.importorskip("flax.linen")
    x, y = _mlp_batch()

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.Dense(1)(nn.relu(nn.Dense(16)(x)))

    model = MLP()
    params = model.init(jax.random.key(0), x)

    def step(params, x, y):
        grads = jax.grad(lambda p: jnp.mean((model.apply(p, x) - y) ** 2))(params)
        return jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)

    expected = jax.jit(step)(params, x, y)
    with rt.checking(mode="raise", nans=True):
        got = jax.jit(step)(params, x, y)
    _same(got, expected)


def test_equinox_training_step_is_bit_identical():
    eqx = pytest.importorskip("equinox")
    x, y = _mlp_batch()
    model = eqx.nn.MLP(8, 1, 16, 2, key=jax.random.key(0))

    def step(model, x, y):
        grads = eqx.filter_grad(lambda m: jnp.mean((jax.vmap(m)(x) - y) ** 2))(model)
        return eqx.apply_updates(model, jax.tree_util.tree_map(lambda g: -0.1 * g, grads))

    expected = eqx.filter_jit(step)(model, x, y)
    with rt.checking(mode="raise", nans=True):
        got = eqx.filter_jit(step)(model, x, y)
        params, static = eqx.partition(model, eqx.is_array)
        via_jax = jax.jit(lambda p, x, y: eqx.partition(step(eqx.combine(p, static), x, y), eqx.is_array)[0])
        via_jax_result = via_jax(params, x, y)
    _same(eqx.filter(got, eqx.is_array), eqx.filter(expected, eqx.is_array))
    _same(via_jax_result, eqx.partition(expected, eqx.is_array)[0])


@pytest.mark.parametrize("nans", [False, True])
def test_jaxchecks_own_traces_do_not_count_against_the_budget(nans: bool):
    for shapes, expected in ((3, []), (4, ["JAX501"])):
        def f(x):  # a new function object per session: JAX's caches hold nothing for it yet
            return x.sum()

        with rt.checking(mode="collect", nans=nans, retrace_budget=3) as findings:
            checked = jax.jit(f)
            for n in range(1, shapes + 1):
                checked(jnp.ones(n))
        assert [d.code for d in findings] == expected
        assert rt.traces(f).count == shapes


class _Scaler:
    def __init__(self, factor):
        self.factor = factor

    def scale(self, x):
        return x * self.factor

    def __call__(self, x):
        return x + self.factor


def _flexible(x, *rest, bias=1.0, **named):
    return x * len(rest) + bias + sum(named.values())


def test_methods_callable_objects_partials_and_flexible_signatures():
    x = jnp.arange(3.0)
    cases = [
        (_Scaler(2.0).scale, (x,), {}, {}),
        (_Scaler(3.0), (x,), {}, {}),
        (partial(_flexible, bias=2.0), (x, 1, 2), {"c": 3.0}, {}),
        (_flexible, (x,), {"bias": 4.0}, {"static_argnames": ("bias",)}),
    ]
    with rt.checking(mode="raise", nans=True):
        for fun, args, kwargs, options in cases:
            _same(rt.jit(fun, **options)(*args, **kwargs), jax.jit(fun, **options)(*args, **kwargs))


def test_names_that_could_clash_with_the_generated_forwarder():
    def _call(_st, _h0, x):
        return x + _st + _h0

    with rt.checking(mode="raise"):
        assert float(rt.jit(_call)(1.0, 2.0, 3.0)) == 6.0


class _Unprintable:
    def __repr__(self):
        raise RuntimeError("no repr")

    def __hash__(self):
        return 0

    def __eq__(self, other):
        return isinstance(other, _Unprintable)


def test_a_failing_analysis_never_breaks_the_program():
    def f(x, config):
        return x * 2

    with rt.checking(mode="raise", nans=True) as findings:
        out = rt.jit(f, static_argnums=1)(jnp.ones(2), _Unprintable())
    _same(out, jnp.full(2, 2.0))
    assert findings == []


def test_output_of_other_threads_while_tracing_is_not_a_finding():
    import threading

    started, release = threading.Event(), threading.Event()

    def chatter():
        started.set()
        release.wait(5)
        print("from another thread")

    worker = threading.Thread(target=chatter)
    worker.start()
    started.wait(5)

    def f(x):
        release.set()
        worker.join(5)  # the other thread prints while this function traces
        return x + 1

    with rt.checking(mode="collect") as findings:
        rt.jit(f)(jnp.ones(2))
    assert [d.code for d in findings] == []
