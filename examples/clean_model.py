"""The patterns from the other examples, written the way JAX wants them. jaxcheck finds nothing."""

from functools import partial

import jax
import jax.numpy as jnp
from jax import lax


@partial(jax.jit, static_argnames=("clip",))
def train_step(params, x, y, clip=True):
    def loss_fn(p):
        return jnp.mean((x @ p - y) ** 2)

    loss, grads = jax.value_and_grad(loss_fn)(params)
    if clip:  # a static Python flag: fine
        grads = jnp.clip(grads, -1.0, 1.0)
    # Branch on a traced value inside the program.
    scale = lax.cond(loss > 1e3, lambda: 0.1, lambda: 1.0)
    return params - 0.01 * scale * grads, loss


@jax.jit
def evaluate(residual):
    outliers = jnp.where(jnp.abs(residual) > 3.0, residual, 0.0)
    (index,) = jnp.nonzero(outliers, size=8, fill_value=-1)
    n = residual.shape[0]  # shapes are static
    return outliers.sum() / n, index


@jax.jit
def window(sequence, start):
    return lax.dynamic_slice(sequence, (start,), (4,))


def report(params, x, y):
    # Outside traced code, concrete values are fine.
    new_params, loss = train_step(params, x, y)
    print(f"loss = {float(loss):.4f}")
    return new_params
