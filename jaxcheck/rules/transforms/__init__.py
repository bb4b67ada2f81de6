"""JAX5xx: transformation misuse, such as re-jitting a new function on every iteration."""
