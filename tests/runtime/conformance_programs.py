"""Programs whose observable behaviour must be the same bare and under every switch of the runtime checks:
outputs (bit for bit), how often each function traced, exceptions (type and message), callbacks fired and
donated buffers. Run as a script (or through `jaxcheck run`, or imported by a test under `pytest
--jaxcheck`), it writes one JSON object per program to the file named by `$CONFORMANCE_OUT`. Programs of
libraries that are not installed say so (`skipped`)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

PROGRAMS: dict[str, Callable[[], dict[str, Any]]] = {}


def program(fun: Callable[[], dict[str, Any]]) -> Callable[[], dict[str, Any]]:
    PROGRAMS[fun.__name__] = fun
    return fun


def values(tree: Any) -> list[Any]:
    """The leaves of a tree of arrays as exact values: dtype, shape and bytes (hex)."""
    return [[str(array.dtype), list(array.shape), array.tobytes().hex()]
            for array in map(np.asarray, jax.tree_util.tree_leaves(tree))]


def outcome(call: Callable[[], Any]) -> list[Any]:
    """`["ok", values]` or `["error", type name, first line of the message]`."""
    try:
        return ["ok", values(jax.block_until_ready(call()))]
    except Exception as error:  # noqa: BLE001 - the outcome compared
        return ["error", type(error).__name__, str(error).splitlines()[0] if str(error) else ""]


@program
def jit_created_in_a_loop() -> dict[str, Any]:
    traced = []

    def f(x):
        traced.append(1)
        return x * 2

    out = [jax.jit(f)(jnp.ones(3)) for _ in range(50)]
    return {"out": values(out[-1]), "traces": len(traced)}


@program
def retraces_on_new_shapes_and_statics() -> dict[str, Any]:
    traced = []

    @partial(jax.jit, static_argnames="n")
    def f(x, n):
        traced.append(1)
        return x * n

    out = [f(jnp.ones(k), n=n) for k in (1, 2, 1, 2) for n in (1, 2)]
    return {"out": values(out), "traces": len(traced), "cache": f._cache_size()}


@program
def keywords_and_negative_static_argnums() -> dict[str, Any]:
    def f(x, n):
        return x * n

    calls = [lambda: jax.jit(f, static_argnums=-1)(jnp.ones(2), n=3),
             lambda: jax.jit(f, static_argnums=-1)(jnp.ones(2), 3),
             lambda: jax.jit(f, static_argnums=1)(jnp.ones(2), n=3),
             lambda: jax.jit(f, static_argnames="n")(x=jnp.ones(2), n=3)]
    return {"out": [outcome(call) for call in calls]}


@program
def donated_buffers() -> dict[str, Any]:
    step = jax.jit(lambda x: x + 1, donate_argnums=0)
    x = jnp.ones(4)
    y = step(x)
    return {"out": values(y), "deleted": x.is_deleted()}


@program
def runtime_error_with_donated_arguments() -> dict[str, Any]:
    fired = []

    def boom(x):
        fired.append(1)
        raise ValueError("bad value")

    def step(x):
        jax.debug.callback(boom, x)
        return x + 1

    x = jnp.ones(2)
    result = outcome(lambda: jax.jit(step, donate_argnums=0)(x))
    jax.effects_barrier()
    return {"out": result, "fired": len(fired)}


@program
def callbacks() -> dict[str, Any]:
    fired = []

    def step(x):
        jax.debug.callback(lambda v: fired.append(1), x)
        y = jax.experimental.io_callback(lambda v: np.asarray(v) * 2, jax.ShapeDtypeStruct(x.shape, x.dtype), x)
        return jnp.where(y > 0, jnp.log(y), 0.0)

    jitted = jax.jit(step)
    out = [jitted(jnp.array([1.0, -1.0])) for _ in range(5)]
    jax.effects_barrier()
    return {"out": values(out[-1]), "fired": len(fired)}


@program
def trace_errors() -> dict[str, Any]:
    def concrete(x):
        return jnp.zeros(int(x))  # noqa: JAX302 (the error compared)

    def branch(x, n):
        return x if n > 1 else -x  # noqa: JAX301 (the error compared)

    leaked = []

    def store(x):
        leaked.append(x)  # noqa: JAX102 (the error compared)
        return x

    jax.jit(store)(jnp.ones(1))
    return {"out": [outcome(lambda: jax.jit(concrete)(jnp.ones(()))),
                    outcome(lambda: jax.jit(branch)(jnp.ones(2), 2)),
                    outcome(lambda: jax.jit(lambda y: y + leaked[0])(jnp.ones(1)))]}  # noqa: JAX101, JAX501


@program
def lax_control_flow() -> dict[str, Any]:
    traced = []

    @jax.jit
    def f(x):
        traced.append(1)
        total, ys = jax.lax.scan(lambda c, v: (c + v, c * v), 0.0, x)
        looped = jax.lax.fori_loop(0, 3, lambda i, c: c + x[i], 0.0)
        counted = jax.lax.while_loop(lambda c: c < 10.0, lambda c: c + 3.0, 0.0)
        branch = jax.lax.cond(total > 1.0, jnp.sin, jnp.cos, total)
        switched = jax.lax.switch(1, [jnp.sin, jnp.cos, jnp.tan], total)
        return total, ys, looped, counted, branch, switched

    out = [f(jnp.arange(4.0)) for _ in range(3)]
    return {"out": values(out[-1]), "traces": len(traced)}


@program
def nested_transforms() -> dict[str, Any]:
    def f(x):
        return jnp.sin(x) * 2

    x = jnp.arange(3.0)
    jitted = jax.jit(f)
    return {"out": values([jax.grad(lambda v: jitted(v).sum())(x), jax.vmap(jitted)(x),
                           jax.jit(jax.grad(lambda v: f(v).sum()))(x),
                           jax.value_and_grad(lambda v: jitted(v).sum())(x)]),
            "jaxprs": [str(jax.make_jaxpr(jitted)(x)), str(jax.make_jaxpr(jax.vmap(jitted))(x))]}


@program
def eager_transforms() -> dict[str, Any]:
    fired = []

    def loss(x):
        jax.debug.callback(lambda v: fired.append(1), x)
        return jnp.where(x > 0, jnp.log(x), 0.0).sum()  # a NaN hidden forward, one in the gradient

    x = jnp.array([1.0, 0.0, -1.0])
    out = [jax.grad(loss)(x), jax.value_and_grad(loss)(x), jax.vmap(loss)(x[:, None]),
           jax.vmap(jax.grad(loss))(x[:, None])]
    jax.effects_barrier()
    return {"out": values(out), "fired": len(fired), "errors": [outcome(lambda: jax.grad(lambda v: v)(x))]}


@program
def shard_map_of_jit() -> dict[str, Any]:
    from jax.sharding import Mesh, PartitionSpec

    def f(x):
        return jnp.sin(x) * 2

    mesh = Mesh(np.array(jax.devices()[:1]), ("i",))
    mapped = jax.shard_map(jax.jit(f), mesh=mesh, in_specs=PartitionSpec("i"), out_specs=PartitionSpec("i"))
    x = jnp.arange(4.0)
    return {"out": values(jax.jit(mapped)(x)), "jaxprs": [str(jax.make_jaxpr(mapped)(x))]}


@program
def methods_and_class_attributes() -> dict[str, Any]:
    class Model:
        def __init__(self) -> None:
            self.traced = 0

        def apply(self, x):
            self.traced += 1  # noqa: JAX102 (counts traces on purpose)
            return x * 3

        double = jax.jit(lambda self, x: x * 2, static_argnums=0)

    model = Model()
    out = [jax.jit(model.apply)(jnp.ones(2)) for _ in range(3)]
    return {"out": values([out[-1], model.double(jnp.ones(2))]), "traces": model.traced}


@program
def optax_adam() -> dict[str, Any]:
    try:
        import optax
    except ImportError:
        return {"skipped": "optax"}
    traced = []
    optimizer = optax.adam(1e-2)
    params = {"w": jnp.ones((4, 1)) * 0.1, "b": jnp.zeros(1)}
    x, y = jnp.linspace(0, 1, 32).reshape(8, 4), jnp.ones((8, 1))

    @jax.jit
    def step(params, state):
        traced.append(1)
        loss, grads = jax.value_and_grad(lambda p: jnp.mean((x @ p["w"] + p["b"] - y) ** 2))(params)
        updates, state = optimizer.update(grads, state, params)
        return optax.apply_updates(params, updates), state, loss

    state = optimizer.init(params)
    for _ in range(5):
        params, state, loss = step(params, state)
    return {"out": values((params, loss)), "traces": len(traced)}


@program
def flax_linen() -> dict[str, Any]:
    try:
        import flax.linen as nn
    except ImportError:
        return {"skipped": "flax"}
    traced = []

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.Dense(1)(nn.relu(nn.Dense(8)(x)))

    model = MLP()
    x = jnp.linspace(-1, 1, 32).reshape(8, 4)
    params = model.init(jax.random.key(0), x)

    @jax.jit
    def step(params):
        traced.append(1)
        grads = jax.grad(lambda p: jnp.mean(model.apply(p, x) ** 2))(params)
        return jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)

    for _ in range(3):
        params = step(params)
    return {"out": values(params), "traces": len(traced)}


@program
def flax_nnx() -> dict[str, Any]:
    try:
        from flax import nnx
    except ImportError:
        return {"skipped": "flax.nnx"}
    traced = []
    model = nnx.Linear(4, 2, rngs=nnx.Rngs(0))

    @nnx.jit
    def step(model, x):
        traced.append(1)
        loss, grads = nnx.value_and_grad(lambda m: jnp.mean(m(x) ** 2))(model)
        nnx.update(model, jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, nnx.state(model, nnx.Param), grads))
        return loss

    losses = [step(model, jnp.ones((3, 4))) for _ in range(3)]
    return {"out": values([losses, nnx.state(model, nnx.Param)]), "traces": len(traced)}


@program
def equinox_filter_jit() -> dict[str, Any]:
    try:
        import equinox as eqx
    except ImportError:
        return {"skipped": "equinox"}
    traced = []
    model = eqx.nn.MLP(4, 1, 8, 2, key=jax.random.key(0))

    @eqx.filter_jit
    def step(model, x, scale):
        traced.append(1)
        grads = eqx.filter_grad(lambda m: jnp.mean(jax.vmap(m)(x) ** 2) * scale)(model)
        return eqx.apply_updates(model, jax.tree_util.tree_map(lambda g: -0.1 * g, grads))

    x = jnp.ones((3, 4))
    for scale in (1.0, 1.0, 2.0):  # a Python float is static under filter_jit: two traces
        model = step(model, x, scale)
    return {"out": values(eqx.filter(model, eqx.is_array)), "traces": len(traced)}


@program
def equinox_keys_and_static_fields() -> dict[str, Any]:
    try:
        import equinox as eqx
    except ImportError:
        return {"skipped": "equinox"}
    traced = []

    class Scaled(eqx.Module):
        w: jax.Array
        power: int = eqx.field(static=True)

    @eqx.filter_jit
    def step(model, key, x):
        traced.append(1)

        def body(carry, _):
            k, total = carry
            k, sub = jax.random.split(k)
            return (k, total + jax.random.normal(sub, x.shape)), None

        (key, noise), _ = jax.lax.scan(body, (key, jnp.zeros_like(x)), None, length=3)
        return (model.w * x) ** model.power + noise, key

    key, out = jax.random.key(0), []
    for power in (1, 1, 2):  # a static field: two traces
        y, key = step(Scaled(jnp.ones(2), power), key, jnp.ones(2))
        out.append(y)
    return {"out": values([out, jax.random.key_data(key)]), "traces": len(traced)}


@program
def nnx_rngs_under_jit() -> dict[str, Any]:
    try:
        from flax import nnx
    except ImportError:
        return {"skipped": "flax.nnx"}
    traced = []
    model = nnx.Dropout(0.5, rngs=nnx.Rngs(dropout=1))

    @nnx.jit
    def step(model, x):
        traced.append(1)
        return model(x)

    out = [step(model, jnp.ones(4)) for _ in range(3)]
    return {"out": values(out), "traces": len(traced)}


@program
def chex_max_traces() -> dict[str, Any]:
    try:
        import chex
    except ImportError:
        return {"skipped": "chex"}

    @jax.jit
    @chex.assert_max_traces(n=2)
    def f(x):
        return x + 1

    return {"out": [outcome(lambda: f(jnp.ones(n))) for n in (1, 2, 1, 3)]}


def observe(path: str) -> None:
    """Run every program and write what it showed to `path`, one JSON object per line."""
    with open(path, "w") as out:
        for name, fun in PROGRAMS.items():
            out.write(json.dumps({"program": name, **fun()}) + "\n")


if __name__ == "__main__":
    observe(os.environ["CONFORMANCE_OUT"])
