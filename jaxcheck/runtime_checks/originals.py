"""JAX's own transforms, captured when jaxcheck's runtime is first imported, before `install()` can patch
`jax.jit` and friends: jaxcheck's internal traces must never go through its own wrappers."""

from __future__ import annotations

import jax

jit = jax.jit
grad = jax.grad
value_and_grad = jax.value_and_grad
vmap = jax.vmap
pmap = jax.pmap
