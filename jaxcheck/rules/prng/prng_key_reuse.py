"""JAX401 prng-key-reuse."""

from __future__ import annotations

import libcst as cst

from jaxcheck.analyzer.rule import Invalid, Rule, Valid
from jaxcheck.analyzer.semantics import KeyReuse
from jaxcheck.analyzer.semantics.jax_api import KEY_FOLD, KEY_SPLIT

_SPLIT = "split it first: `key, subkey = jax.random.split(key)`"


class PrngKeyReuse(Rule):
    """
    ## What it does
    Finds a PRNG key that is consumed twice on some path through a function: two samplers on the
    same key, a use after `jax.random.split(key)` without rebinding `key`, a consumption inside a loop
    of a key that is not re-split in the loop, a key re-created from the same seed in every iteration
    (or in a compiled function called in a loop), or a key passed to another consumer (a model `init`, a helper) after it was used;
    a traced function (or a `lax` loop body) that returns, unchanged, a key it drew from; a key parameter
    whose default (`key=jax.random.key(0)`, made once) calls in a loop leave in place; and a key that
    `jax.vmap(f, in_axes=(None, ...))` (a call, a decorator, a `functools.partial`) leaves unmapped while
    `f` draws from it: every example draws the same bits. (Not under `pmap`, where replicas initialised
    alike may be the point.) Keys are
    values of `jax.random.key`/`PRNGKey`/`split`/`fold_in`, names passed as keys to `jax.random`, and
    parameters named `key`, `rng`, `*_key` or `prng*`.

    ## Why is this bad?
    JAX's random functions are deterministic in their key: the same key gives the same numbers.
    Reusing a key silently correlates draws that should be independent (identical dropout masks,
    identical noise in every step). JAX's runtime check covers typed keys only and names no line.

    ## Example
    ```python
    import jax

    def noisy(key, x):
        noise = jax.random.normal(key, x.shape)
        mask = jax.random.bernoulli(key, 0.5, x.shape)
        return x * mask + noise
    ```

    ## Use instead
    ```python
    import jax

    def noisy(key, x):
        noise_key, mask_key = jax.random.split(key)
        noise = jax.random.normal(noise_key, x.shape)
        mask = jax.random.bernoulli(mask_key, 0.5, x.shape)
        return x * mask + noise
    ```

    ## Fix safety
    No fix is offered: which consumer should get a fresh subkey is the author's choice.

    ## Runtime check
    At run time, typed and legacy (`PRNGKey`) keys are checked: a key consumed twice inside one compiled
    program (a loop body or one `cond` branch included; a key consumed in either branch counts once, as
    `jax_debug_key_reuse` counts it) is reported with both lines, a key a loop body closes over or carries
    unchanged is reported, and a key object passed again to a function that consumes it is reported with
    the line of both calls, also under `eqx.filter_jit` and `nnx.jit`.
    """

    code = "JAX401"
    name = "prng-key-reuse"
    summary = "a PRNG key consumed twice: two samplers, use after `split`, or in a loop without re-splitting"

    VALID = (
        # A default key for a function called once (a reproducible `initialize`), or one every loop call overrides.
        Valid("import jax\ndef initialize(shape, key=jax.random.PRNGKey(0)):\n    return jax.random.normal(key, shape)\n"
              "params = initialize((3,))\n"),
        Valid("import jax\ndef add_noise(x, key=jax.random.PRNGKey(0)):\n    return x + jax.random.normal(key, x.shape)\n"
              "def run(x, key, steps):\n    for _ in range(steps):\n        key, sub = jax.random.split(key)\n"
              "        x = add_noise(x, sub)\n    return x\n"),
        # A compiled function that returns the new half of a split, or a key it never drew from.
        Valid("import jax\n@jax.jit\ndef sample(key, x):\n    key, sub = jax.random.split(key)\n"
              "    return x + jax.random.normal(sub, x.shape), key\n"),
        Valid("import jax\n@jax.jit\ndef shift(key, x):\n    return x + 1, key\n"),
        # Called once, a compiled function's fixed seed gives one draw.
        Valid("import jax\n@jax.jit\ndef noisy(x):\n    key = jax.random.PRNGKey(0)\n"
              "    return x + jax.random.normal(key, x.shape)\ndef main(x):\n    return noisy(x)\n"),
        # A key every device folds its own index into draws per device; under pmap one key may be meant to
        # initialise every replica alike (checked under JAX 0.10.2: identical replicas).
        Valid("import functools\nimport jax\n@functools.partial(jax.pmap, axis_name='b', in_axes=(0, None))\n"
              "def step(x, key):\n    key = jax.random.fold_in(key, jax.lax.axis_index('b'))\n"
              "    return x + jax.random.normal(key, x.shape)\n"),
        Valid("import jax\ndef init_params(key, x):\n    return {'w': jax.random.normal(key, (x.shape[-1], 3))}\n"
              "p_init = jax.pmap(init_params, axis_name='batch', in_axes=(None, 0))\n"),
        # A `@property` that splits on each read, a global object another function refreshes, a table that
        # goes elsewhere (`{"model": rngs}`) and is refreshed there: each read may give a new key.
        Valid("import jax\nclass Sampler:\n    @property\n    def rng(self):\n        self._key, sub = jax.random.split(self._key)\n"
              "        return sub\n    def sample(self, shape):\n        return jax.random.normal(self.rng, shape), "
              "jax.random.normal(self.rng, shape)\n"),
        Valid("import jax\nfrom types import SimpleNamespace\nSTATE = SimpleNamespace(key=jax.random.key(0))\n"
              "def advance():\n    STATE.key, _ = jax.random.split(STATE.key)\ndef sample(shape):\n"
              "    a = jax.random.normal(STATE.key, shape)\n    advance()\n    return a, jax.random.normal(STATE.key, shape)\n"),
        Valid("import jax\ndef advance(rngs):\n    for k, v in rngs.items():\n        rngs[k] = jax.random.fold_in(v, 1)\n"
              "def two(rngs, shape):\n    streams = {'model': rngs}\n    a = jax.random.normal(rngs['noise'], shape)\n"
              "    advance(streams['model'])\n    return a, jax.random.normal(rngs['noise'], shape)\n"),
        # A helper that only logs a key, or looks at its data's shape, draws nothing (checked under JAX 0.10.2
        # with jax_debug_key_reuse: no KeyReuseError).
        Valid("import jax\nimport logging\ndef log_key(key):\n    logging.info('key %s', jax.random.key_data(key))\n"
              "def describe(key):\n    return jax.random.key_data(key).shape\ndef main(key):\n    log_key(key)\n"
              "    info = describe(key)\n    return jax.random.normal(key, (3,)), info\n"),
        # ...nor does one that only derives keys with `fold_in` (JAX's checker: folding consumes nothing).
        Valid("import jax\ndef layer_keys(key, n):\n    return [jax.random.fold_in(key, i) for i in range(n)]\n"
              "def init(key):\n    ks = layer_keys(key, 2)\n    key, sub = jax.random.split(key)\n    return ks, key, sub\n"),
        # ...nor does one that saves its data in a checkpoint (checked the same way).
        Valid("import jax\nimport pickle\nimport numpy as np\ndef save(path, rng):\n"
              "    state = {'rng': np.asarray(jax.random.key_data(rng))}\n    with open(path, 'wb') as f:\n"
              "        pickle.dump(state, f)\ndef main(key):\n    for step in range(4):\n"
              "        key, sub = jax.random.split(key)\n        save('ckpt.pkl', key)\n    return key\n"),
        # A key held in an attribute: a store to it, or a method call that may store one, refreshes it; a
        # vmapped function's own argument holds a key per example.
        Valid("import jax\nclass Trainer:\n    def _next(self):\n        self.rng, sub = jax.random.split(self.rng)\n"
              "        return sub\n    def sample(self, shape):\n        a = jax.random.normal(self.rng, shape)\n"
              "        self._next()\n        b = jax.random.normal(self.rng, shape)\n        self.rng = jax.random.fold_in(self.rng, 1)\n"
              "        c = jax.random.normal(self.rng, shape)\n        return a, b, c\n"),
        Valid("import jax\ndef step(state, action):\n    key_st, key_ep = jax.random.split(state.key)\n"
              "    return state.replace(key=key_ep), jax.random.normal(key_st)\nbatched = jax.vmap(step)\n"),
        # A table of keys: each string key is a key of its own, and storing a new one there refreshes it.
        Valid("import jax\ndef make_rngs(key):\n    p, d = jax.random.split(key)\n    return {'params': p, 'dropout': d}\n"
              "def f(key):\n    rngs = make_rngs(key)\n    a = jax.random.normal(rngs['params'], (2,))\n"
              "    b = jax.random.normal(rngs['dropout'], (2,))\n    rngs['dropout'] = jax.random.fold_in(key, 1)\n"
              "    c = jax.random.normal(rngs['dropout'], (2,))\n    return a, b, c\n"),
        # A key split in the carry each step, folded in with the step, or bound by an enclosing per-example function.
        Valid("import jax\nfrom jax import lax\ndef body(carry, x):\n    key, w = carry\n"
              "    key, sub = jax.random.split(key)\n    return (key, w + jax.random.normal(sub, w.shape)), None\n"
              "out = lax.scan(body, (jax.random.key(0), w0), xs)\n"),
        Valid("import jax\nfrom jax import lax\ndef body(carry, x):\n    key, w = carry\n    key, _ = jax.random.split(key)\n"
              "    return (key, w + jax.random.normal(key, w.shape)), None\n"
              "out = lax.scan(body, (jax.random.key(0), w0), xs)\n"),
        Valid("import jax\nfrom jax import lax\ndef run(key, x0):\n    def body(i, x):\n"
              "        sub = jax.random.split(key, 10)[i]\n        return x + jax.random.normal(sub, x.shape)\n"
              "    return lax.fori_loop(0, 10, body, x0)\n"),
        Valid("import jax\nfrom jax import lax\ndef run(key, x0):\n    def body(i, x):\n"
              "        return x + jax.random.normal(jax.random.fold_in(key, i), x.shape)\n"
              "    return lax.fori_loop(0, 10, body, x0)\n"),
        Valid("import jax\ndef per_example(key, x):\n    def sample():\n        return jax.random.normal(key, x.shape)\n"
              "    return x + sample()\ndef run(keys, xs):\n    return jax.vmap(per_example)(keys, xs)\n"),
        Valid("import jax\nfrom jax import lax\ndef body(carry, x):\n    key, w = carry\n"
              "    noise = jax.random.normal(key, w.shape)\n    return (jax.random.fold_in(key, 1), w + noise), key\n"
              "out = lax.scan(body, (jax.random.key(0), w0), xs)\n"),
        # A seed that differs per example (a mapped argument), or a fixed seed outside vmap.
        Valid("import jax\ndef noisy(seed, x):\n    key = jax.random.PRNGKey(seed)\n    return x + jax.random.normal(key)\n"
              "def batch(seeds, xs):\n    return jax.vmap(noisy)(seeds, xs)\n"),
        Valid("import jax\n@jax.jit\ndef noisy(x):\n    key = jax.random.PRNGKey(7)\n    return x + jax.random.normal(key)\n"),
        Valid("import jax\ndef sample(state, key=None, u=None):\n    if u is None:\n        u = jax.random.uniform(key)\n"
              "    return state * u\ndef batch(state, us):\n    return jax.vmap(sample, in_axes=(None, None, 0))(state, None, us)\n"),
        # One key per example, or a shared key folded with the example's index.
        Valid("import jax\ndef noisy(key, x):\n    return x + jax.random.normal(key)\n"
              "def batch(key, xs):\n    keys = jax.random.split(key, xs.shape[0])\n    return jax.vmap(noisy)(keys, xs)\n"),
        Valid("import jax\ndef noisy(key, i, x):\n    return x + jax.random.normal(jax.random.fold_in(key, i))\n"
              "def batch(key, xs):\n    return jax.vmap(noisy, in_axes=(None, 0, 0))(key, jax.numpy.arange(3), xs)\n"),
        # A project's own record type stores the `key=` it is given; it draws nothing.
        Valid("from typing import NamedTuple\nclass State(NamedTuple):\n    key: object\n"
              "def reset(key):\n    return State(key=key), State(key=key)\n"),
        # A helper that never draws from its key parameter consumes nothing.
        Valid("import jax\nclass Env:\n    def noise(self, key, x):\n        return x + jax.random.normal(key)\n"
              "    def observe(self, key, x):\n        del key\n        return x\n"
              "    def step(self, key, x):\n        return self.observe(key, self.noise(key, x))\n"),
        Valid("import jax\ndef f(k):\n    ks = jax.random.split(k, 4)\n    a = jax.random.normal(ks[0])\n"
              "    b = jax.random.uniform(ks[1])\n    ks = jax.random.split(ks[3], 4)\n    return a + b + jax.random.normal(ks[0])\n"),
        # A key bound into `partial` is consumed where the partial is called.
        Valid("import jax\nfrom functools import partial\ndef f(key, x):\n    draw = partial(jax.random.normal, key)\n"
              "    if x:\n        return draw()\n    return jax.random.uniform(key)\n"),
        # Abstract evaluation draws nothing.
        Valid("import jax\nimport equinox as eqx\ndef init(key, x):\n    return jax.random.normal(key, x.shape)\n"
              "def f(key, x):\n    shapes = eqx.filter_eval_shape(init, key, x)\n    jaxpr = jax.make_jaxpr(init)(key, x)\n"
              "    return init(key, x)\n"),
        # Also through a helper that only evaluates abstractly, and a jitted function's `lower`/`trace`.
        Valid("import jax\ndef init(key):\n    return jax.random.normal(key, (3,))\ndef shapes(key):\n"
              "    return jax.eval_shape(init, key)\ndef main():\n    key = jax.random.key(0)\n    s = shapes(key)\n"
              "    return s, init(key)\n"),
        Valid("import jax\ndef init(key):\n    return jax.random.normal(key, (3,))\ndef main():\n"
              "    key = jax.random.key(0)\n    lowered = jax.jit(init).lower(key)\n    traced = jax.jit(init).trace(key)\n"
              "    return lowered, traced, init(key)\n"),
        # A predicate in an `assert` checks the key, it draws nothing.
        Valid("import jax\nfrom numpyro.util import is_prng_key\ndef sample(key, shape):\n    assert is_prng_key(key)\n"
              "    return jax.random.normal(key, shape)\n"),
        # Storing a key in a copy of a state (`dataclasses.replace`, a struct's `.replace`) draws nothing.
        Valid("import dataclasses\nimport jax\ndef start(state, key):\n    init_key, run_key = jax.random.split(key)\n"
              "    state = dataclasses.replace(state, key=run_key, goal_key=run_key)\n"
              "    return state.replace(noise=jax.random.normal(run_key)), jax.random.normal(init_key)\n"),
        Valid("import jax\ndef f(key):\n    key, sub = jax.random.split(key)\n    a = jax.random.normal(sub)\n"
              "    key, sub = jax.random.split(key)\n    return a + jax.random.normal(sub)\n"),
        Valid("import jax\ndef f(key, c):\n    if c:\n        return jax.random.normal(key)\n"
              "    else:\n        return jax.random.uniform(key)\n"),
        Valid("import jax\ndef f(key, n):\n    return [jax.random.normal(k) for k in jax.random.split(key, n)]\n"),
        Valid("import jax\ndef f(key, n):\n    out = []\n    for k in jax.random.split(key, n):\n"
              "        out.append(jax.random.normal(k))\n    return out\n"),
        Valid("import jax\ndef f(key, n):\n    for i in range(n):\n        k = jax.random.fold_in(key, i)\n"
              "        print(jax.random.normal(k))\n"),
        Valid("import jax\ndef f(key):\n    print(key)\n    data = jax.random.key_data(key)\n    return jax.random.normal(key)\n"),
        Valid("import jax\ndef f(key, n):\n    for i in range(n):\n        key, sub = jax.random.split(key)\n"
              "        print(jax.random.normal(sub))\n"),
        Valid("import numpy as np\ndef f(rng):\n    a = np.random.split(rng)\n    return np.random.split(rng)\n"),
        Valid("import jax\ndef f(table, key):\n    a = jax.random.normal(jax.random.PRNGKey(0))\n"
              "    return table[key], len(key), str(key)\n"),
        Valid("import jax\ndef f(seed, n):\n    for i in range(n):\n        key = jax.random.PRNGKey(seed + i)\n"
              "        print(jax.random.normal(key))\n"),
        Valid("import jax\ndef f(key, xs):\n    keys = jax.random.split(key, 2)\n"
              "    return jax.random.normal(keys[0]), jax.random.normal(keys[1])\n"),
        Valid("import jax\ndef f(key):\n    a = jax.random.normal(key)\n    key = jax.random.PRNGKey(1)\n"
              "    return a + jax.random.normal(key)\n"),
        Valid("import jax\ndef f(key, n):\n    k = 0\n    while k < n:\n        k += 1\n"
              "        key2 = jax.random.fold_in(key, 3)\n        x, key = jax.random.normal(key), key2\n"),
        Valid("import jax\ndef f(key, n):\n    for _ in range(n):\n        if n:\n            key, sub = jax.random.split(key)\n"
              "            print(jax.random.normal(sub))\n            continue\n        break\n"),
        # A project helper that only probes its key (type, shape, `is None`) draws nothing from it.
        Valid("import jax\ndef init(key, n):\n    return jax.random.normal(key, (n,))\ndef two(k):\n"
              "    k1, k2 = jax.random.split(k)\n    return init(k1, 3), init(k2, 3)\n"),
        Valid("def shape_of(a, n):\n    return (n,) + a.shape\ndef two(k):\n    return shape_of(k, 1), shape_of(k, 2)\n"),
        Valid("import itertools\nimport jax\ndef by_len(w):\n    return len(w)\ndef group(words, more, key):\n"
              "    x = jax.random.normal(key, (3,))\n    a = itertools.groupby(words, key=by_len)\n"
              "    b = itertools.groupby(more, key=by_len)\n    return x, a, b\n"),
        Valid("import jax\nclass Sampler:\n    def __init__(self, n):\n        self.n = n\n    def check(self, key):\n"
              "        assert key.shape == (2,) and self.n > 0\n    def draw(self, key):\n        self.check(key)\n"
              "        return jax.random.normal(key, (self.n,))\n"),
        Valid("import jax\ndef is_prng_key(key):\n    return key.shape == (2,) and key.dtype == jax.numpy.uint32\n"
              "def sample(key):\n    assert is_prng_key(key)\n    return jax.random.normal(key)\n"),
        Valid("import jax\ndef check(rng_key, x):\n    if rng_key is None or isinstance(rng_key, int):\n        raise ValueError\n"
              "    return x\ndef run(rng_key, x):\n    x = check(rng_key, x)\n    return jax.random.normal(rng_key) + x\n"),
        Valid("import jax\ndef init(key, n):\n    return n\ndef f(key):\n    m = init(key, 3)\n    return jax.random.normal(key, (m,))\n"),
        # A helper that maps a type test over its argument only probes it: the key is not drawn from.
        Valid("import jax\nimport numpy as np\ndef is_array(x):\n"
              "    return jax.tree.all(jax.tree.map(lambda y: isinstance(y, np.ndarray), x))\n"
              "def f(key):\n    if is_array(key):\n        key, sub = jax.random.split(key)\n    return key\n"),
        # A step that folds its step count into the base key it is given draws new bits at each step.
        Valid("import jax\n@jax.jit\ndef step(w, i, x, rng):\n    rng = jax.random.fold_in(rng, i)\n"
              "    return w - jax.random.bernoulli(rng, 0.9, x.shape).mean(), i + 1\n"
              "def train(w, xs, seed):\n    rng, i = jax.random.key(seed), 0\n    for x in xs:\n        w, i = step(w, i, x, rng)\n"
              "    return w\n"),
        Valid("import jax\ndef step(state, x, rng):\n    k = jax.random.fold_in(rng, state.step)\n"
              "    return x * jax.random.normal(k, x.shape)\ndef two(s1, s2, x, seed):\n"
              "    rng = jax.random.key(seed)\n    return step(s1, x, rng), step(s2, x, rng)\n"),
        Valid("import jax\ndef noisy(key, xs):\n    keys = jax.random.split(key, xs.shape[0])\n"
              "    return jax.vmap(lambda k, x: x + jax.random.normal(k, x.shape))(keys, xs)\n"),
        Valid("import jax\ndef train(key, x, epochs, steps):\n    for epoch in range(epochs):\n"
              "        for step in range(steps):\n            k = jax.random.fold_in(jax.random.fold_in(key, epoch), step)\n"
              "            x = x + jax.random.normal(k, x.shape)\n    return x\n"),
        Valid("import jax\ndef step(x, rng, i, worker):\n    rng = jax.random.fold_in(rng, i)\n"
              "    rng = jax.random.fold_in(rng, worker)\n    return jax.random.normal(rng, x.shape)\n"
              "def train(xs, seed):\n    rng = jax.random.key(seed)\n    for i, x in enumerate(xs):\n"
              "        x = step(x, rng, i, 0)\n"),
        # Attention's `key=` is no PRNG key: a name is a key only on other evidence.
        Valid("import haiku as hk\ndef attend(query, embeddings):\n    block = hk.MultiHeadAttention(num_heads=2, key_size=4)\n"
              "    a = block(query=query, key=embeddings, value=embeddings)\n"
              "    return block(query=a, key=embeddings, value=embeddings)\n"),
        # The statement a test expects to raise never yields what it draws.
        Valid("import jax\nimport pytest\ndef test_shape(key):\n    x = jax.random.normal(key, (3,))\n"
              "    with pytest.raises(ValueError):\n        jax.random.normal(key, (-1,))\n"),
        Valid("import unittest\nimport jax\nclass T(unittest.TestCase):\n    def test_shape(self):\n"
              "        key = jax.random.key(0)\n        x = jax.random.normal(key, (3,))\n"
              "        with self.assertRaises(ValueError): jax.random.normal(key, (-1,))\n"),
        # A loop over a one-element list runs once: a key made in it, or drawn from in it, is used once.
        Valid("import jax\ndef f(key, x0):\n    for x in [x0]:\n        k = jax.random.key(0)\n"
              "        y = jax.random.normal(key, x.shape) + jax.random.normal(k, x.shape)\n    return y\n"),
    )
    INVALID = (
        # A default key is made once, when the `def` runs: every call in the loop that leaves it draws the
        # same noise (checked under JAX 0.10.2).
        Invalid("import jax\ndef add_noise(x, key=jax.random.PRNGKey(0)):\n    return x + jax.random.normal(key, x.shape)\n"
                "def run(x, steps):\n    for _ in range(steps):\n        x = add_noise(x)\n    return x\n", 3, 16,
                "default makes once"),
        # A compiled function that draws from the key it received and hands it back: the caller's next draw
        # from it repeats the bits (checked under JAX 0.10.2: the same noise twice).
        Invalid("import jax\n@jax.jit\ndef sample(key, x):\n    noise = jax.random.normal(key, x.shape)\n"
                "    return x + noise, key\n", 4, 13, "returned unchanged"),
        # A compiled function called in a loop that makes its key from a fixed seed: the same bits each call.
        Invalid("import jax\n@jax.jit\ndef noisy(x):\n    key = jax.random.PRNGKey(0)\n"
                "    return x + jax.random.normal(key, x.shape)\ndef train(xs):\n    return [noisy(x) for x in xs]\n",
                5, 16, "called repeatedly"),
        # A draw inside an `assert`'s comparison is a draw.
        Invalid("import jax\ndef test_sample(key, flow):\n    cond = jax.random.normal(key, (2,))\n"
                "    assert flow.sample(key, cond).shape == (2,)\n", 4, 12, "line 3"),
        # Drawing from a key and splitting it too: different bits, but no guarantee of independence.
        Invalid("import jax\ndef f(key):\n    a = jax.random.normal(key)\n    k1, k2 = jax.random.split(key)\n"
                "    return a, k1\n", 4, 14, "not guaranteed independent"),
        # A helper drawing from `fold_in(key, 0)` derives the same key on every call: two calls, one key.
        Invalid("import jax\ndef init_linear(key, n):\n    k = jax.random.fold_in(key, 0)\n"
                "    return jax.random.normal(k, (n,))\ndef init(key):\n    w1 = init_linear(key, 3)\n"
                "    return w1, init_linear(key, 3)\n", 7, 16),
        # Saving a key's data and then drawing from it still draws.
        Invalid("import jax\nimport numpy as np\ndef save_and_draw(key):\n    np.save('k.npy', jax.random.key_data(key))\n"
                "    return jax.random.normal(key)\ndef main(key):\n    a = save_and_draw(key)\n"
                "    return a, jax.random.normal(key)\n", 8, 15),
        # Looking at a table (`in`, `len`, `.keys()`) changes nothing in it.
        Invalid("import jax\ndef add_noise(x, rngs):\n    if 'noise' not in rngs or not len(rngs):\n        return x\n"
                "    a = x + jax.random.normal(rngs['noise'], x.shape)\n    b = x + jax.random.normal(rngs['noise'], x.shape)\n"
                "    return a, b\n", 6, 13, "rngs['noise']"),
        Invalid("import jax\ndef show(key):\n    print(key)\n    return jax.random.normal(key, (2,))\ndef main(key):\n"
                "    a = show(key)\n    return a, jax.random.normal(key, (2,))\n", 7, 15),
        Invalid("import jax\nclass Trainer:\n    def __init__(self, seed):\n        self.rng = jax.random.key(seed)\n"
                "    def sample(self, shape):\n        a = jax.random.normal(self.rng, shape)\n"
                "        b = jax.random.normal(self.rng, shape)\n        return a, b\n", 7, 13, "self.rng"),
        # The same item of a table of keys drawn from twice (checked under JAX 0.10.2: identical draws).
        Invalid("import jax\ndef make_rngs(key):\n    p, n = jax.random.split(key)\n    return {'params': p, 'noise': n}\n"
                "def f(key):\n    rngs = make_rngs(key)\n    a = jax.random.normal(rngs['noise'], (2,))\n"
                "    b = jax.random.normal(rngs['noise'], (2,))\n    return a, b\n", 8, 9, "rngs['noise']"),
        # A name handed to a helper that draws from it, or to a library layer's `key=`, is a key.
        Invalid("import jax\ndef init(key, n):\n    return jax.random.normal(key, (n,))\ndef two(k):\n"
                "    w1 = init(k, 3)\n    w2 = init(k, 3)\n    return w1, w2\n", 6, 10, "`k`"),
        Invalid("import equinox as eqx\ndef layers(k):\n    a = eqx.nn.Linear(2, 2, key=k)\n"
                "    b = eqx.nn.Linear(2, 2, key=k)\n    return a, b\n", 4, 9, "`k`"),
        Invalid("import jax\nfrom jax import lax\ndef body(carry, x):\n    key, w = carry\n"
                "    noise = jax.random.normal(key, w.shape)\n    return (key, w + noise), None\n"
                "out = lax.scan(body, (jax.random.key(0), w0), xs)\n", 5, 13, "carry"),
        Invalid("import jax\nfrom jax import lax\ndef body(i, key):\n    print(jax.random.uniform(key))\n    return key\n"
                "lax.fori_loop(0, 10, body, jax.random.key(1))\n", 4, 11, "next step"),
        Invalid("import jax\nfrom jax import lax\ndef run(key, x0):\n    def body(i, x):\n"
                "        return x + jax.random.normal(key, x.shape)\n    return lax.fori_loop(0, 10, body, x0)\n",
                5, 20, "outside"),
        Invalid("import jax\ndef noisy(key, xs):\n    def one(x):\n        return x + jax.random.normal(key, x.shape)\n"
                "    return jax.vmap(one)(xs)\n", 4, 20, "every run"),
        Invalid("import jax\ndef step(i, x):\n    key = jax.random.PRNGKey(0)\n    return x + jax.random.normal(key)\n"
                "def run(x):\n    return jax.lax.fori_loop(0, 10, step, x)\n", 4, 16, "loop step"),
        Invalid("import jax\ndef noisy(x):\n    key = jax.random.PRNGKey(7)\n    return x + jax.random.normal(key)\n"
                "def batch(xs):\n    return jax.vmap(noisy)(xs)\n", 4, 16, "once per example"),
        # An unmapped key drawn from in a vmapped function: one draw shared by the whole batch.
        Invalid("import jax\ndef noisy(key, x):\n    return x + jax.random.normal(key)\n"
                "def batch(key, xs):\n    return jax.vmap(noisy, in_axes=(None, 0))(key, xs)\n", 5, 12, "unmapped"),
        # The same for a `functools.partial` of the function (checked under JAX 0.10.2: four identical chains).
        Invalid("import functools\nimport jax\ndef run_chain(scale, key, x0):\n"
                "    return x0 + scale * jax.random.normal(key, x0.shape)\n"
                "chains = jax.vmap(functools.partial(run_chain, 1.0), in_axes=(None, 0))\n", 5, 10, "`key`"),
        # The same as a decorator, and through `functools.partial`.
        Invalid("import functools\nimport jax\n@functools.partial(jax.vmap, in_axes=(0, None))\n"
                "def noisy(x, key):\n    return x + jax.random.normal(key, x.shape)\n", 3, 2, "unmapped"),
        Invalid("import functools\nimport jax\ndef noisy(x, key):\n    return x + jax.random.normal(key, x.shape)\n"
                "batched = functools.partial(jax.vmap, in_axes=(0, None))(noisy)\n", 5, 11, "unmapped"),
        # A library layer taking `key=` draws its initial weights from it.
        Invalid("import equinox as eqx\ndef make(key):\n    l1 = eqx.nn.Linear(2, 2, key=key)\n"
                "    l2 = eqx.nn.Linear(2, 2, key=key)\n    return l1, l2\n", 4, 10),
        # A project helper that draws from its key, called twice with one key (no `jax.random` call here).
        Invalid("import jax\ndef init(key, n):\n    return jax.random.normal(key, (n,))\n"
                "def build(key):\n    w1 = init(key, 3)\n    w2 = init(key, 4)\n    return w1, w2\n", 6, 10),
        Invalid("import jax\ndef f(k):\n    ks = jax.random.split(k, 4)\n    a = jax.random.normal(ks[2])\n"
                "    b = jax.random.uniform(ks[2])\n    return a + b\n", 5, 9, "ks[2]"),
        Invalid("import jax\nfrom functools import partial\ndef f(key):\n    draw = partial(jax.random.normal, key)\n"
                "    a = draw()\n    return a + draw()\n", 6, 16),
        Invalid("import jax\nimport equinox as eqx\ndef init(key, x):\n    return jax.random.normal(key, x.shape)\n"
                "def f(key, x):\n    shapes = eqx.filter_eval_shape(init, key, x)\n    w = jax.random.normal(key)\n"
                "    return init(key, x)\n", 8, 12, "line 7"),
        Invalid("import jax\ndef init(key, n):\n    return jax.random.normal(key, (n,))\ndef f(key):\n"
                "    w1 = init(key, 3)\n    b = jax.random.normal(key)\n    return w1, b\n", 6, 9, "line 5"),
        # A key stored in a state and drawn from twice is still reused.
        Invalid("import dataclasses\nimport jax\ndef start(state, key):\n    state = dataclasses.replace(state, key=key)\n"
                "    return state, jax.random.normal(key), jax.random.uniform(key)\n", 5, 43, "line 5"),
        # Running the jitted function draws (only `lower`/`trace`/`eval_shape` do not).
        Invalid("import jax\ndef init(key):\n    return jax.random.normal(key, (3,))\ndef main():\n"
                "    key = jax.random.key(0)\n    compiled = jax.jit(init)(key)\n    return compiled, init(key)\n",
                7, 22, "line 6"),
        Invalid("import jax\ndef noise(key, x):\n    if key.shape == (2,):\n        return x + jax.random.normal(key)\n"
                "    return x\ndef f(key, x):\n    y = noise(key, x)\n    return y + jax.random.uniform(key)\n", 8, 16),
        Invalid("import jax\ndef f(key):\n    a = jax.random.normal(key)\n    b = jax.random.uniform(key)\n"
                "    return a + b\n", 4, 9, "line 3"),
        Invalid("import jax\ndef f(key):\n    k1, k2 = jax.random.split(key)\n    return jax.random.normal(key)\n",
                4, 12, "line 3"),
        Invalid("import jax\ndef f(key, n):\n    out = []\n    for i in range(n):\n"
                "        out.append(jax.random.normal(key))\n    return out\n", 5, 20, "loop"),
        Invalid("import jax\ndef f(n):\n    for i in range(n):\n        key = jax.random.PRNGKey(0)\n"
                "        print(jax.random.normal(key))\n", 5, 15, "same seed"),
        Invalid("import jax\nfrom jax import random\nkey = random.PRNGKey(0)\nparams = model.init(key, x)\n"
                "noise = random.normal(key, (3,))\n", 5, 9, "line 4"),
        Invalid("import jax\ndef f(rng, x):\n    y = helper(rng, x)\n    return jax.random.bernoulli(rng, 0.5) * y\n",
                4, 12),
        Invalid("import jax\ndef f(key, n):\n    return [jax.random.normal(key) for _ in range(n)]\n", 3, 13, "loop"),
        Invalid("import jax\ndef f(key, c):\n    if c:\n        a = jax.random.normal(key)\n    else:\n        a = 0.0\n"
                "    return a + jax.random.uniform(key)\n", 7, 16, "line 4"),
        Invalid("from jax import random as jr\ndef f(prng_key, shape):\n    x = jr.normal(prng_key, shape)\n"
                "    y = jr.permutation(prng_key, x)\n    return y\n", 4, 9),
        Invalid("import jax\ndef f(key, n):\n    k = 0\n    while k < n:\n        k += 1\n"
                "        x = jax.random.normal(key)\n", 6, 13, "loop"),
        Invalid("import jax\ndef f(key, params):\n    key, sub = jax.random.split(key)\n    a = jax.random.normal(sub)\n"
                "    b = jax.random.normal(sub)\n    return a, b\n", 5, 9, "line 4"),
        Invalid("import jax\ndef f(seed):\n    key = jax.random.key(seed)\n    a = jax.random.normal(key)\n"
                "    key2 = key\n    return a + jax.random.normal(key2)\n", 6, 16),
        # A helper that maps a drawing function over its argument draws from it.
        Invalid("import jax\ndef noisy(x):\n    return jax.tree.map(lambda y: jax.random.normal(y), x)\n"
                "def f(key):\n    a = noisy(key)\n    return a, jax.random.normal(key)\n", 6, 15, "line 5"),
        # Only the last statement of a `pytest.raises` block is expected to raise.
        Invalid("import jax\nimport pytest\ndef test_check(key):\n    a = jax.random.normal(key, (3,))\n"
                "    with pytest.raises(ValueError):\n        b = jax.random.normal(key, (3,))\n        check(a, b)\n",
                6, 13, "line 4"),
        # Folding in a constant derives the same key at every call: in the helper, left as a default, or
        # passed as a literal.
        Invalid("import jax\ndef noise(x, rng, i=0):\n    rng = jax.random.fold_in(rng, i)\n"
                "    return x * jax.random.normal(rng, x.shape)\n"
                "def train(xs, seed):\n    rng = jax.random.key(seed)\n    for x in xs:\n        x = noise(x, rng)\n", 8, 13,
                "every iteration"),
        Invalid("import jax\ndef derive(rng, i):\n    return jax.random.fold_in(rng, i)\ndef f(seed, x):\n"
                "    rng = jax.random.key(seed)\n    a = jax.random.normal(derive(rng, 1), x.shape)\n"
                "    b = jax.random.normal(derive(rng, 1), x.shape)\n    return a + b\n", 7, 27, "line 6"),
        # A key folded from the same key and data in every iteration is the same key.
        Invalid("import jax\ndef train(key, x, epochs, steps):\n    for epoch in range(epochs):\n"
                "        for step in range(steps):\n            k = jax.random.fold_in(key, epoch)\n"
                "            x = x + jax.random.normal(k, x.shape)\n    return x\n", 6, 21, "same key and data"),
        # A real draw before the fold, or a probe after it, still counts.
        Invalid("import jax\ndef step(x, rng, i):\n    a = jax.random.normal(rng, x.shape)\n"
                "    rng = jax.random.fold_in(rng, i)\n    rng = jax.random.fold_in(rng, 2)\n"
                "    return a + jax.random.normal(rng, x.shape)\ndef train(xs, seed):\n    rng = jax.random.key(seed)\n"
                "    for i, x in enumerate(xs):\n        x = step(x, rng, i)\n", 10, 13, "every iteration"),
        Invalid("import jax\ndef noise(x, rng):\n    rng = jax.random.fold_in(rng, 0)\n"
                "    return x * jax.random.normal(rng, x.shape)\n"
                "def train(xs, seed):\n    rng = jax.random.key(seed)\n    for x in xs:\n        x = noise(x, rng)\n", 8, 13,
                "every iteration"),
        # A library layer object called twice with one `key=` draws the same mask twice.
        Invalid("import equinox as eqx\ndrop = eqx.nn.Dropout(0.5)\ndef g(x, key):\n    a = drop(x, key=key)\n"
                "    return drop(a, key=key)\n", 5, 12, "line 4"),
        Invalid("import equinox as eqx\nclass Net(eqx.Module):\n    drop: eqx.nn.Dropout\n    def __init__(self):\n"
                "        self.drop = eqx.nn.Dropout(0.5)\n    def __call__(self, x, *, key):\n"
                "        x = self.drop(x, key=key)\n        return self.drop(x, key=key)\n", 8, 16, "line 7"),
        # A lambda body is a function body of its own: a vmapped lambda drawing from a captured key.
        Invalid("import jax\ndef noisy(key, xs):\n    return jax.vmap(lambda x: x + jax.random.normal(key, x.shape))(xs)\n",
                3, 35, "comes from outside"),
        Invalid("import jax\ndef f(key):\n    g = lambda: jax.random.normal(key) + jax.random.normal(key)\n"
                "    return g()\n", 3, 42, "line 3"),
        # A loop that runs once still draws twice from one key in its body.
        Invalid("import jax\ndef f(key, x0):\n    for x in [x0]:\n        a = jax.random.normal(key)\n"
                "        b = jax.random.normal(key)\n    return a + b\n", 5, 13, "line 4"),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self._check(self.model.key_reuses(node))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._check(self.model.key_reuses(node))

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self._check(self.model.key_reuses(node))

    def visit_Call(self, node: cst.Call) -> None:
        for parameter in self.model.unmapped_keys(node):
            self.report(node, f"PRNG key parameter `{parameter}` is left unmapped (`in_axes` None) but drawn from, so "
                              "every example of the batch draws the same random bits; map over one key per "
                              "example: `jax.random.split(key, n)` with `in_axes=0`")

    def _splits(self, node: cst.CSTNode) -> bool:
        """Whether a consumption is `jax.random.split(...)`: drawing from a key and splitting it too gives
        different bits, yet the streams are not guaranteed independent."""
        return isinstance(node, cst.Call) and self.model.call_name(node) == KEY_SPLIT

    def _folded(self, node: cst.CSTNode) -> bool:
        """Whether a reuse's first site is `jax.random.fold_in(...)` (not a seeded `key(...)`)."""
        return isinstance(node, cst.Call) and self.model.call_name(node) == KEY_FOLD

    def _check(self, reuses: list[KeyReuse]) -> None:
        for reuse in reuses:
            key = f"`{reuse.key}`"
            first_line = self.model.position(reuse.first).start.line
            if reuse.kind == "again" and (self._splits(reuse.first) or self._splits(reuse.node)):
                message = (f"PRNG key {key} was already consumed on line {first_line} and is split or drawn from "
                           "again here: the streams are not guaranteed independent (JAX's key-reuse checker "
                           f"raises `KeyReuseError`); {_SPLIT}")
            elif reuse.kind == "again":
                message = (f"PRNG key {key} was already consumed on line {first_line} and is consumed again "
                           f"here, so both draw the same random bits; {_SPLIT}")
            elif reuse.kind == "loop":
                message = (f"PRNG key {key} is consumed in every iteration of this loop but never re-split in "
                           f"it, so every iteration draws the same random bits; {_SPLIT} inside the loop")
            elif reuse.kind == "per_item":
                message = (f"PRNG key {key} is created from the same seed (line {first_line}) on every run of a "
                           "function run once per example or loop step (vmap, scan, fori_loop), so every run "
                           "draws the same random bits; pass one key per example, or fold in the step "
                           "(`jax.random.fold_in(key, i)`)")
            elif reuse.kind == "per_call":
                message = (f"PRNG key {key} is created from the same seed (line {first_line}) in a compiled function "
                           "that is called repeatedly (in a loop), so every call draws the same random bits; pass "
                           "a key in and split it per call")
            elif reuse.kind == "captured":
                message = (f"PRNG key {key} comes from outside a function run once per example or loop step "
                           "(vmap, scan, fori_loop) and is drawn from on every run, so every run draws the same "
                           "random bits; pass one key per example, or fold in the step (`jax.random.fold_in(key, i)`)")
            elif reuse.kind == "carried":
                message = (f"PRNG key {key} is drawn from here and returned unchanged in the loop carry (line "
                           f"{first_line}), so the next step draws the same random bits; split it and carry the new "
                           "key: `key, sub = jax.random.split(key)`")
            elif reuse.kind == "default":
                message = (f"PRNG key {key} is drawn from the key its default makes once from a fixed seed (line "
                           f"{first_line}), and calls run many times (in a loop) leave it in place, so every such "
                           "call draws the same random bits; pass a fresh key on each call (`key, sub = "
                           "jax.random.split(key)`)")
            elif reuse.kind == "returned":
                message = (f"PRNG key {key} is drawn from here and returned unchanged (line {first_line}), so the "
                           "caller gets back a key whose bits are spent and its next draw repeats them; split it, "
                           "draw from the subkey and return the new key: `key, sub = jax.random.split(key)`")
            elif self._folded(reuse.first):
                message = (f"PRNG key {key} is derived from the same key and data (line {first_line}) in every "
                           "iteration of this loop, so every iteration draws the same random bits; fold in what "
                           "changes per iteration (`jax.random.fold_in(key, i)`) or split the key inside the loop")
            else:
                message = (f"PRNG key {key} is re-created from the same seed (line {first_line}) in every "
                           "iteration of this loop, so every iteration draws the same random bits; create it "
                           "once before the loop and split it inside")
            first = _FIRST_NOTES.get(reuse.kind)
            if first is not None and self._folded(reuse.first):
                first = "{key} is derived from the same key and data here"
            self.report(reuse.node, message, related=((first.format(key=key), reuse.first),) if first else ())


_FIRST_NOTES = {
    "again": "{key} is first consumed here",
    "per_item": "{key} is created from the same seed here",
    "per_call": "{key} is created from the same seed here",
    "reseeded": "{key} is re-created from the same seed here",
    "carried": "{key} is returned unchanged in the carry here",
    "returned": "{key} is returned unchanged here",
    "default": "{key} defaults to this key, made once when the function is defined",
}
"""The note at `KeyReuse.first`, per kind (none where `first` is the finding's own call)."""
