"""Opinionated rules (JAX9xx), off by default: 64-bit dtypes without x64, unsynchronized timing, legacy PRNG keys."""
