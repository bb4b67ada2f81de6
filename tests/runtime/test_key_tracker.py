"""The consumed-key ring: reuse found by identity, equal but distinct keys left alone, a bounded window."""

from __future__ import annotations

import jax

from jaxcheck.runtime_checks.key_reuse import KeyTracker


def test_second_consumption_of_the_same_key_object_is_found():
    tracker, key = KeyTracker(), jax.random.key(0)
    assert tracker.track(key, "a.py", 3) is None
    assert tracker.track(key, "a.py", 9) == ("a.py", 3)  # noqa: JAX401 (the reuse under test)


def test_an_equal_key_that_is_another_object_is_not_a_reuse():
    tracker = KeyTracker()
    assert tracker.track(jax.random.PRNGKey(0), "a.py", 1) is None
    assert tracker.track(jax.random.PRNGKey(0), "a.py", 2) is None


def test_the_window_keeps_the_last_keys_only():
    tracker = KeyTracker(limit=3)
    keys = list(jax.random.split(jax.random.key(1), 5))
    for line, key in enumerate(keys):
        assert tracker.track(key, "a.py", line) is None
    assert tracker.track(keys[0], "a.py", 10) is None  # forgotten: four keys came after it
    assert tracker.track(keys[4], "a.py", 11) == ("a.py", 4)
