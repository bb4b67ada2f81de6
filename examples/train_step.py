"""A small regression model trained with a jitted step. Contains tracing bugs on purpose."""

from functools import partial

import jax
import jax.numpy as jnp
import optax

from metrics import clipped_error, summarize


def predict(params, x):
    return x @ params["w"] + params["b"]


def loss_fn(params, x, y):
    error = predict(params, x) - y
    return jnp.mean(clipped_error(error))


@partial(jax.jit, static_argnames=("optimizer",))
def train_step(params, opt_state, x, y, optimizer):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    # JAX301: `loss` is a tracer here; Python cannot branch on it.
    if loss > 1e3:
        grads = jax.tree_util.tree_map(lambda g: g * 0.1, grads)
    updates, opt_state = optimizer.update(grads, opt_state)
    params = optax.apply_updates(params, updates)
    # JAX302: float() needs a concrete value.
    report = {"loss": float(loss)}
    return params, opt_state, report


@jax.jit
def evaluate(params, x, y):
    residual = predict(params, x) - y
    # JAX303: boolean-mask indexing has a data-dependent shape.
    outliers = residual[jnp.abs(residual) > 3.0]
    return summarize(residual), outliers.size
