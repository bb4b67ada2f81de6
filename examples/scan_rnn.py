"""An Elman RNN over a sequence with lax.scan. Contains tracing bugs on purpose."""

import jax
import jax.numpy as jnp
from jax import lax


def rnn_cell(params, hidden, x):
    return jnp.tanh(params["wh"] @ hidden + params["wx"] @ x)


def run_rnn(params, xs, hidden0):
    def step(hidden, x):
        hidden = rnn_cell(params, hidden, x)
        # JAX302: the carry is a tracer inside the scan body.
        norm = float(jnp.linalg.norm(hidden))
        return hidden / max(norm, 1.0), hidden

    return lax.scan(step, hidden0, xs)


@jax.jit
def window(sequence, start):
    # JAX303: a slice with a traced start has no static shape; use lax.dynamic_slice.
    return sequence[start : start + 4]
