"""PRNG rules (JAX4xx): linear use of `jax.random` keys."""
