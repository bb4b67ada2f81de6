"""A file with a syntax error: jaxcheck reports it (JAX001) and checks the other files."""

import jax


@jax.jit
def step(x:
    return x * 2
