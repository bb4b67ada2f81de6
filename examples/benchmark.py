"""A micro-benchmark written for an old JAX. jaxcheck reports JAX601; with `--select JAX9` also JAX901,
JAX902 and JAX903, and with `--extend-select JAX002` the stale `# noqa` below."""

import time

import jax
import jax.numpy as jnp


@jax.jit
def matmul_chain(a, b):
    return jnp.tanh(a @ b) @ b


def make_inputs(n):
    key = jax.random.PRNGKey(0)  # JAX903: a legacy key; `jax.random.key(0)` gets JAX's key checks
    a = jax.random.normal(key, (n, n), dtype=jnp.float64)  # JAX901: float32 unless x64 is enabled
    return a, jnp.eye(n)  # noqa: JAX901  (JAX002: nothing here is float64 any more)


def bench(n=1024, repeats=10):
    a, b = make_inputs(n)
    matmul_chain(a, b).block_until_ready()  # compile outside the timing
    start = time.perf_counter()
    for _ in range(repeats):
        out = matmul_chain(a, b)  # JAX902: nothing waits for `out` before the clock is read
    elapsed = (time.perf_counter() - start) / repeats
    sizes = jax.tree_map(lambda x: x.size, {"a": a, "b": b})  # JAX601: removed in JAX 0.6.0
    return elapsed, sizes
