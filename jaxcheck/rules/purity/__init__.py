"""JAX1xx: purity. Traced code that reads changing Python state or has side effects at trace time."""
