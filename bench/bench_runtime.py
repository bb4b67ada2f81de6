"""Steady-state cost of jaxcheck's runtime checks against bare `jax.jit`, measured in one run.

    python bench/bench_runtime.py [--rounds 15] [--calls 200]

Variants of each workload are timed in interleaved rounds (each round times every variant three times,
alternating, `calls` calls each, blocking at the end, and keeps each variant's fastest block) and compared
by the median over rounds of each round's ratio to bare `jax.jit`, printed with its spread (the lowest
and the highest round's ratio). Workloads: a dispatch-bound tiny function, a 1M-element function, an MLP training step
(Optax Adam when installed, else hand-written SGD), an indexing step (a gather, a dynamic slice and a
scatter-add per call), and a key-consuming sampler fed by `split`. Variants: the default checks, NaN mode,
index-check mode, `jax_debug_nans`, checkify float and index checks, and `jax_debug_key_reuse`; the tiny and
1M rows time bare `jax.jit` once more last, against itself: its ratio is the run's noise floor. Targets:
defaults at most 1.10x (tiny) and 1.02x (1M); NaN mode at most 1.5x on the MLP step. Machines are shared
and noisy: compare ratios from one run, not seconds across runs. `--workloads indexing,mlp` runs a subset.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import jax
import jax.numpy as jnp
from jax.experimental import checkify

import jaxcheck.runtime as rt

Step = Callable[[Any], Any]  # state -> state; a workload calls it `calls` times


@contextmanager
def _nothing() -> Iterator[None]:
    yield


@contextmanager
def _checks(**settings: Any) -> Iterator[None]:
    rt.install(mode="collect", **settings)
    try:
        yield
    finally:
        rt.uninstall()


@contextmanager
def _flag(name: str) -> Iterator[None]:
    jax.config.update(name, True)
    try:
        yield
    finally:
        jax.config.update(name, False)


def _time(step: Step, state: Any, calls: int, context: Any) -> tuple[float, Any]:
    """Seconds per call of `calls` calls (the garbage collector paused, as `timeit` does), and the state."""
    with context:
        jax.block_until_ready(state)
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter()
            for _ in range(calls):
                state = step(state)
            jax.block_until_ready(state)
            return (time.perf_counter() - start) / calls, state
        finally:
            gc.enable()


def compare(title: str, variants: dict[str, tuple[Step, Callable[[], Any]]], state: Any, rounds: int,
            calls: int, blocks: int = 3) -> dict[str, tuple[float, float, float]]:
    """Print, per variant, the median per-call time and the median of its per-round ratios to the first
    variant (bare `jax.jit`) with their spread (lowest and highest round); return `{name: (ratio, low,
    high)}`. Each round times every variant `blocks` times, alternating, `calls` calls each, and keeps each
    variant's fastest block: a ratio compares blocks timed moments apart, so load that comes and goes on
    a shared machine shifts both sides."""
    states = {name: state for name in variants}
    for name, (step, context) in variants.items():  # warm up: compile every variant
        _, states[name] = _time(step, states[name], 3, context())
    times: dict[str, list[float]] = {name: [] for name in variants}
    ratios: dict[str, list[float]] = {name: [] for name in variants}
    base_name = next(iter(variants))
    for _ in range(rounds):
        best = {name: float("inf") for name in variants}
        for _ in range(blocks):
            for name, (step, context) in variants.items():
                elapsed, states[name] = _time(step, states[name], calls, context())
                best[name] = min(best[name], elapsed)
        for name in variants:
            times[name].append(best[name])
            ratios[name].append(best[name] / best[base_name])
    print(f"\n{title}  (median of {rounds} interleaved rounds; spread: lowest-highest round)")
    summary = {}
    for name in variants:
        ratio = statistics.median(ratios[name])
        summary[name] = (ratio, min(ratios[name]), max(ratios[name]))
        print(f"  {name:<28} {statistics.median(times[name]) * 1e6:10.1f} us/call  {ratio:6.3f}x  "
              f"[{summary[name][1]:.3f}-{summary[name][2]:.3f}]")
    return summary


def _array_variants(f: Callable[[Any], Any]) -> dict[str, tuple[Step, Callable[[], Any]]]:
    """Bare jit, the default checks, NaN mode and `jax_debug_nans` for a one-array function."""
    bare, checked = jax.jit(f), rt.jit(f)
    return {
        "bare jax.jit": (bare, _nothing),
        "jaxcheck defaults": (checked, _checks),
        "jaxcheck nans": (checked, lambda: _checks(nans=True)),
        "jaxcheck index_checks": (checked, lambda: _checks(index_checks=True)),
        "jax_debug_nans": (bare, lambda: _flag("jax_debug_nans")),
        "bare jax.jit, again": (bare, _nothing),
    }


def tiny(rounds: int, calls: int) -> None:
    def f(x):
        return x * 0.5 + 1.0

    # Dispatch-bound: a block lasts about a millisecond, as long as a slice of another process's time on a
    # shared machine, so each round keeps the fastest of many short blocks (the 1M row does the same).
    compare("tiny function (8 floats, dispatch-bound)", _array_variants(f), jnp.ones(8), rounds,
            max(calls // 2, 50), blocks=9)


def million(rounds: int, calls: int) -> None:
    def f(x):
        return jnp.sin(x) * 0.5 + x * 0.5

    compare("1M-element function", _array_variants(f), jnp.linspace(0.0, 1.0, 1_000_000), rounds,
            max(calls // 20, 5), blocks=7)


def _mlp() -> tuple[Callable[..., Any], Any, str]:
    """A training step `(carry, x, y) -> carry`, its initial carry, and the optimizer's name."""
    key = jax.random.key(0)
    sizes = [(128, 256), (256, 256), (256, 10)]
    keys = jax.random.split(key, len(sizes))
    params = [(jax.random.normal(k, shape) * 0.05, jnp.zeros(shape[1])) for k, shape in zip(keys, sizes)]

    def loss(params, x, y):
        for w, b in params[:-1]:
            x = jax.nn.relu(x @ w + b)
        w, b = params[-1]
        return jnp.mean((x @ w + b - y) ** 2)

    try:
        import optax
    except ImportError:
        def sgd_step(carry, x, y):
            params, = carry
            grads = jax.grad(loss)(params, x, y)
            return (jax.tree_util.tree_map(lambda p, g: p - 1e-2 * g, params, grads),)

        return sgd_step, (params,), "SGD (optax not installed)"
    optimizer = optax.adam(1e-3)

    def adam_step(carry, x, y):
        params, opt_state = carry
        grads = jax.grad(loss)(params, x, y)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state

    return adam_step, (params, optimizer.init(params)), "Adam"


def mlp(rounds: int, calls: int) -> None:
    step, state, optimizer = _mlp()
    x_y = _mlp_data()
    bare, checked = jax.jit(step), rt.jit(step)
    checkified = jax.jit(checkify.checkify(step, errors=checkify.float_checks))

    def with_checkify(carry):
        error, carry = checkified(carry, *x_y)
        error.throw()
        return carry

    compare(f"MLP training step (128-256-256-10, batch 64, {optimizer})", {
        "bare jax.jit": (lambda c: bare(c, *x_y), _nothing),
        "jaxcheck defaults": (lambda c: checked(c, *x_y), _checks),
        "jaxcheck nans": (lambda c: checked(c, *x_y), lambda: _checks(nans=True)),
        "jaxcheck index_checks": (lambda c: checked(c, *x_y), lambda: _checks(index_checks=True)),
        "jax_debug_nans": (lambda c: bare(c, *x_y), lambda: _flag("jax_debug_nans")),
        "checkify float_checks": (with_checkify, _nothing),
    }, state, rounds, max(calls // 4, 5))


def _mlp_data() -> tuple[Any, Any]:
    keys = jax.random.split(jax.random.key(1))
    return jax.random.normal(keys[0], (64, 128)), jax.random.normal(keys[1], (64, 10))


def indexing(rounds: int, calls: int) -> None:
    """Index-check mode against bare jit and checkify's index checks on a step that indexes: a gather of
    256 positions, a dynamic slice and a scatter-add into a 10k-element array."""
    positions = jax.random.randint(jax.random.key(2), (256,), 0, 10_000)

    def step(x):
        start = (jnp.argmax(x[:16]) * 7) % 9_000
        window = jax.lax.dynamic_slice(x, (start,), (1_000,))
        return x.at[positions].add(x[positions] * 1e-3 + window[:256] * 1e-3)

    bare, checked = jax.jit(step), rt.jit(step)
    checkified = jax.jit(checkify.checkify(step, errors=checkify.index_checks))

    def with_checkify(x):
        error, x = checkified(x)
        error.throw()
        return x

    compare("indexing step (gather 256, dynamic_slice 1000, scatter-add 256 into 10k floats)", {
        "bare jax.jit": (bare, _nothing),
        "jaxcheck defaults": (checked, _checks),
        "jaxcheck index_checks": (checked, lambda: _checks(index_checks=True)),
        "checkify index_checks": (with_checkify, _nothing),
    }, jnp.linspace(0.0, 1.0, 10_000), rounds, calls)


def keys(rounds: int, calls: int) -> None:
    def sample(key):
        return jax.random.normal(key, (8,)).sum()

    bare, checked = jax.jit(sample), rt.jit(sample)
    split = jax.jit(jax.random.split)  # the same bare split in every variant

    def feeding(fun: Callable[[Any], Any]) -> Step:
        def step(state):
            key, total = state
            key, sub = split(key)
            return key, total + fun(sub)
        return step

    compare("key-consuming sampler in a loop (split, then sample with the new key)", {
        "bare jax.jit": (feeding(bare), _nothing),
        "jaxcheck defaults": (feeding(checked), _checks),
        "jax_debug_key_reuse": (feeding(bare), lambda: _flag("jax_debug_key_reuse")),
    }, (jax.random.key(0), jnp.zeros(())), rounds, calls)


WORKLOADS: dict[str, Callable[[int, int], None]] = {
    "tiny": tiny, "million": million, "mlp": mlp, "indexing": indexing, "keys": keys,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds (default 15)")
    parser.add_argument("--calls", type=int, default=200, help="calls per variant per round (default 200)")
    parser.add_argument("--workloads", default=",".join(WORKLOADS),
                        help=f"comma-separated subset of {', '.join(WORKLOADS)} (default: all)")
    args = parser.parse_args()
    chosen = [name.strip() for name in args.workloads.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workload(s): {', '.join(unknown)}")
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}")
    for name in chosen:
        WORKLOADS[name](args.rounds, args.calls)


if __name__ == "__main__":
    main()
