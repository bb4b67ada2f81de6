"""Array updates and random sampling written the NumPy way. jaxcheck reports JAX201, JAX202, JAX203 and JAX401."""

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


def init_and_perturb(model, key, x):
    params = model.init(key, x)
    noise = jax.random.normal(key, x.shape)  # JAX401: `key` was already consumed by `model.init`
    return params, x + noise


def dropout_masks(key, shape, steps):
    masks = []
    for _ in range(steps):
        masks.append(jax.random.bernoulli(key, 0.9, shape))  # JAX401: same mask every step
    return masks


def mark_last_class():
    scores = jnp.zeros((4, 10))
    return scores.at[0, 10].set(1.0)  # JAX203: column 10 of 10 is out of range; JAX drops the write
