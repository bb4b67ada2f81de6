"""JAX3xx: Python control flow, concretization and value-dependent shapes on traced values."""
