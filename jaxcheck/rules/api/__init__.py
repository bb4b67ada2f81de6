"""API migration rules (JAX6xx): APIs that JAX has removed or renamed."""
