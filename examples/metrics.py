"""Metric helpers. Nothing here is decorated: they are traced because jitted code calls them."""

import jax.numpy as jnp


def clipped_error(error, threshold=1.0):
    # Fine: jnp.where keeps the branch inside the traced program.
    return jnp.where(jnp.abs(error) < threshold, error**2, threshold * jnp.abs(error))


def summarize(residual):
    worst = jnp.max(jnp.abs(residual))
    # JAX301: `evaluate` in train_step.py passes a tracer, so `worst` is traced.
    if worst > 10.0:
        return jnp.inf
    # JAX302: .item() pulls a concrete value out of a tracer.
    return residual.mean().item()
