"""Array mutation rules (JAX2xx): in-place updates of immutable JAX arrays, discarded functional updates, constant indices out of range."""
