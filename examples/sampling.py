"""Array updates and random sampling written the NumPy way. jaxcheck reports JAX201, JAX202 and JAX401."""

import jax
import jax.numpy as jnp


def one_hot_rows(labels, classes):
    out = jnp.zeros((labels.shape[0], classes))
    for row, label in enumerate(labels):
        out[row, label] = 1.0  # JAX201: JAX arrays are immutable
    return out


@jax.jit
def clip_first(weights):
    weights.at[0].set(jnp.clip(weights[0], -1.0, 1.0))  # JAX202: the result is thrown away
    return weights
