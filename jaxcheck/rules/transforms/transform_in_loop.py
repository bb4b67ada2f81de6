"""JAX501 transform-in-loop."""

from __future__ import annotations

import libcst as cst

from jaxcheck.analyzer.rule import Invalid, Rule, Valid
from jaxcheck.analyzer.semantics.records import TransformSite

_CREATED = {
    "lambda": "a lambda",
    "def": "a function defined",
    "partial": "a `functools.partial`",
    "transform": "another transform's result",
    "method": "a bound method",
    "wrapper": "a function through `nnx.jit`, whose compiled program lives in the wrapper it returns,",
}


class TransformInLoop(Rule):
    """
    ## What it does
    Finds `jax.jit`, `pmap` or `equinox.filter_jit` (also wrapped around `vmap`, `grad` or
    `value_and_grad`) applied to a callable that is created anew each time: a lambda, a local `def`,
    a `functools.partial`, another transform's result, or a bound method (`self.step`: reading it makes a
    new bound method each time, even of the same object; `obj.step` of an object made anew), either
    inside a loop body or inside a function body that evidently runs many times (it is called in a loop),
    or called right away inside one that evidently runs more than once (at two call sites one run of its
    caller reaches). `flax.nnx.jit` keeps its compiled
    program in the wrapper it returns, so applying it there recompiles even a module-level function.

    ## Why is this bad?
    JAX caches compiled programs per function object. A new function object on every iteration or
    call misses the cache, so the code is traced and compiled again each time: training loops that
    should take milliseconds per step take seconds.

    ## Example
    ```python
    import jax

    def train(params, batches, lr):
        for batch in batches:
            step = jax.jit(lambda p: p - lr * batch)
            params = step(params)
        return params
    ```

    ## Use instead
    ```python
    import jax

    @jax.jit
    def step(p, batch, lr):
        return p - lr * batch

    def train(params, batches, lr):
        for batch in batches:
            params = step(params, batch, lr)
        return params
    ```
    Apply the transform once, at module level or outside the loop, and pass what changes as arguments.

    ## Known problems
    `jax.grad` or `jax.vmap` alone are not reported: outside `jit` they trace on every call whether
    or not the function is new. Transforms applied inside traced code run once per trace and are fine.
    Neither are functions kept for later calls: stored in a cache slot its guard finds empty
    (`if n not in cache: cache[n] = jax.jit(...)`, `if self._f is None:`, `f = cache.get(n)` then
    `if f is None:`), or, in a loop, in a table entry per iteration (`table[name] = jax.jit(...)`).

    ## Fix safety
    No fix is offered: hoisting the function needs its free variables turned into parameters.

    ## Runtime check
    At run time, a function traced more than `retrace-budget` times (default 10; new function objects of the
    same code count together) is reported with what changed between the last two traces: shapes, dtypes,
    weak types, static values, callables, a new function object or a new jit wrapper.
    """

    code = "JAX501"
    name = "transform-in-loop"
    summary = "`jax.jit`/`vmap`/`grad` applied in a loop or per call to a freshly created callable: retraced every time"

    VALID = (
        # A loop over a fixed list of settings compiles once per setting, a handful of times; a function
        # kept in a table entry, or kept and handed to a driver that calls it many times, compiles once.
        Valid("import jax\ndef test_both_branches(prior, x):\n    for cov in ('dense', 'diagonal'):\n"
              "        fn = jax.jit(lambda t, c=cov: prior(t, covariance=c))\n        fn(x)\n"),
        Valid("import jax\nSIZES = [200, 500]\ndef make(n):\n    return jax.jit(lambda x: x * n)\nfor n in SIZES:\n"
              "    make(n)(1.0)\n"),
        Valid("import jax\nclass Wrapper:\n    def __init__(self, spaces):\n"
              "        self.samplers = {a: jax.jit(jax.vmap(s.sample)) for a, s in spaces.items()}\n"),
        Valid("import jax\nfrom scipy.optimize import minimize\ndef fit(loss, x0):\n    @jax.jit\n    def objective(x):\n"
              "        return jax.value_and_grad(loss)(x)\n    return minimize(fun=objective, x0=x0, jac=True)\n"
              "def sweep(loss, starts):\n    return [fit(loss, x0) for x0 in starts]\n"),
        # Inside a jitted function this runs once per trace, also in a branch no trace runs.
        Valid("import jax\n@jax.jit\ndef f(x, debug=False):\n    if debug:\n        for _ in range(3):\n"
              "            x = jax.jit(lambda y: y + 1)(x)\n    return x\n"),
        Valid("import jax\ndef f(x):\n    return x * 2\nfast = jax.jit(f)\ndef run(xs):\n    for x in xs:\n"
              "        fast(x)\n"),
        Valid("import jax\ndef f(x):\n    return x * 2\ndef run(xs):\n    g = jax.jit(f)\n    for x in xs:\n        g(x)\n"),
        Valid("import jax\ndef f(x):\n    return x * 2\ndef run(xs):\n    for x in xs:\n        jax.jit(f)(x)\n"),
        Valid("import jax\ndef run(xs):\n    step = jax.jit(lambda x: x * 2)\n    for x in xs:\n        step(x)\n"),
        Valid("import jax\nsquare = jax.jit(lambda x: x * x)\n"),
        # A staticmethod read through `self` is one function; `pmap` and `filter_jit` hit their cache with
        # equal bound methods (checked under JAX 0.10.2: one trace in five iterations each).
        Valid("import jax\nclass A:\n    @staticmethod\n    def f(x):\n        return x\n    def run(self, xs):\n"
              "        for x in xs:\n            jax.jit(self.f)(x)\n"),
        Valid("import jax\nclass A:\n    def m(self, x):\n        return x\n    def run(self, xs):\n"
              "        for x in xs:\n            jax.pmap(self.m)(x)\n"),
        # `obj.step` may be a function field (a NamedTuple of functions, as blackjax and haiku return): the
        # same object each time, so it is not reported unless the object is made anew.
        Valid("import jax\ndef run(algorithm, xs):\n    for x in xs:\n        jax.jit(algorithm.step)(x)\n"),
        Valid("import jax\ndef make(scale):\n    return jax.jit(lambda x: x * scale)\n"),
        Valid("import jax\ndef run(xs):\n    def body(x):\n        return x + 1\n    f = jax.vmap(body)\n"
              "    for x in xs:\n        f(x)\n"),
        Valid("import jax\ndef outer():\n    for n in range(3):\n        pass\n    return jax.jit(lambda x: x)\n"),
        Valid("import jax\ndef run(ws):\n    for w in ws:\n        jax.grad(lambda v: v * w)(w)\n"),
        Valid("import jax\n@jax.jit\ndef step(p):\n    def loss(q):\n        return q * q\n    return jax.grad(loss)(p)\n"),
        # One-shot calls: nothing evidently runs the enclosing function twice (calls in alternative branches
        # run one of them); a factory called twice makes two functions, each compiled once and kept.
        Valid("import jax\ndef make_step(lr):\n    return jax.jit(lambda p: p - lr)\ndef main(p):\n"
              "    fast, slow = make_step(0.1), make_step(0.01)\n    return fast(p), slow(p)\n"),
        Valid("import jax\ndef step(x):\n    return jax.jit(lambda v: v + 1)(x)\ndef main(x, train):\n"
              "    if train:\n        return step(x)\n    else:\n        return step(-x)\n"),
        Valid("import jax\ndef step(x):\n    return jax.jit(lambda v: v + 1)(x)\ndef main(x, train):\n"
              "    return step(x) if train else step(-x)\n"),
        Valid("import jax\ndef step(x):\n    return jax.jit(lambda v: v + 1)(x)\n"),
        Valid("import jax\ndef main():\n    def inner(v):\n        return v * 2\n    print(jax.jit(inner)(3.0))\n"
              "if __name__ == '__main__':\n    main()\n"),
        Valid("import jax\nclass Model:\n    def apply(self, x):\n        return x\ndef test_apply():\n"
              "    assert jax.jit(Model().apply)(1.0) == 1.0\n"),
        Valid("import jax\nclass Trainer:\n    def __init__(self):\n        self._step = jax.jit(self.step)\n"
              "    def step(self, x):\n        return x\n"),
        # Inside code that is itself jitted, nothing recompiles per call.
        Valid("import jax\nfrom functools import partial\n@jax.jit\ndef outer(xs):\n    f = partial(jax.lax.scan, lambda c, x: (c, x))\n"
              "    return jax.jit(f)(0.0, xs)\ndef run(batches):\n    for b in batches:\n        outer(b)\n"),
        # A memoized factory runs once per distinct argument.
        Valid("import functools\nimport jax\n@functools.lru_cache\ndef compiled(n):\n    return jax.jit(lambda x: x * n)\n"
              "def run(xs):\n    for x in xs:\n        compiled(2)(x)\n"),
        # Functions kept for later calls: one per cache slot its guard finds empty (checked under JAX 0.10.2
        # with `jax_log_compiles`: one compile per distinct key however often the function runs), or one
        # per table entry built in a loop.
        Valid("import jax\n_CACHE = {}\ndef get_fn(n):\n    if n not in _CACHE:\n        _CACHE[n] = jax.jit(lambda x: x ** n)\n"
              "    return _CACHE[n]\ndef run(xs):\n    return [get_fn(2)(x) for x in xs]\n"),
        Valid("import jax\n_fwd = None\ndef predict(x):\n    global _fwd\n    if _fwd is None:\n"
              "        _fwd = jax.jit(lambda v: v * 2)\n    return _fwd(x)\ndef run(xs):\n    return [predict(x) for x in xs]\n"),
        Valid("import jax\n_compiled = {}\ndef get_step(n):\n    fn = _compiled.get(n)\n    if fn is None:\n"
              "        def step(x):\n            return x * n\n        fn = _compiled[n] = jax.jit(step)\n    return fn\n"
              "def run(xs):\n    return [get_step(2)(x) for x in xs]\n"),
        Valid("import jax\nclass Model:\n    def __init__(self):\n        self._cache = {}\n    def fn(self, n):\n"
              "        if n in self._cache:\n            return self._cache[n]\n        self._cache[n] = jax.jit(lambda x: x * n)\n"
              "        return self._cache[n]\n    def run(self, xs):\n        for x in xs:\n            self.fn(2)(x)\n"),
        Valid("import jax\nclass Model:\n    def _impl(self, x):\n        return x\n    def fn(self):\n"
              "        if not hasattr(self, '_fn'):\n            self._fn = jax.jit(self._impl)\n        return self._fn\n"
              "    def run(self, xs):\n        for x in xs:\n            self.fn()(x)\n"),
        Valid("import jax\nimport jax.numpy as jnp\nACTS = {'relu': jax.nn.relu, 'tanh': jnp.tanh}\nJITTED = {}\n"
              "for name, fn in ACTS.items():\n    JITTED[name] = jax.jit(lambda x, fn=fn: fn(x) * 2)\n"),
        # A module-level loop that creates nothing per iteration.
        Valid("import jax\ndef f(x):\n    return x\nfor x in range(3):\n    jax.jit(f)(x)\n"),
        Valid("from flax import nnx\ndef eval_step(model, x):\n    return model(x).sum()\nfast = nnx.jit(eval_step)\n"
              "def evaluate(model, batches):\n    for x in batches:\n        fast(model, x)\n"),
        # A loop over a one-element list runs its body once.
        Valid("import jax\nfor scale in [2.0]:\n    jax.jit(lambda v: v * scale)(1.0)\n"),
    )
    INVALID = (
        # A method that pmaps a fresh lambda, called twice by another (checked under JAX 0.10.2: two traces).
        Invalid("import jax\nclass Buffer:\n    def size(self):\n        return jax.pmap(lambda x: x.sum())(self.buf)\n"
                "    def report(self):\n        print(self.size())\n        return self.size() > 0\n", 4, 16,
                "twice in a row"),
        # A fixed list of settings inside a function that runs per item still compiles per item.
        Invalid("import jax\ndef step(x):\n    for c in (1, 2):\n        jax.jit(lambda v, c=c: v * c)(x)\n"
                "def run(xs):\n    for x in xs:\n        step(x)\n", 4, 9, "runs repeatedly"),
        # `nnx.jit` caches in the wrapper it returns (checked under Flax 0.12.8: traced once per iteration).
        Invalid("import jax.numpy as jnp\nfrom flax import nnx\ndef eval_step(model, x):\n    return model(x).sum()\n"
                "def evaluate(model, batches):\n    for x in batches:\n        nnx.jit(eval_step)(model, x)\n", 7, 9,
                "nnx.jit"),
        Invalid("import jax\ndef run(xs):\n    for x in xs:\n        f = jax.jit(lambda v: v * 2)\n        f(x)\n", 4, 13,
                "lambda"),
        Invalid("import jax\ndef run(xs, lr):\n    for x in xs:\n        def step(p):\n            return p - lr\n"
                "        step = jax.jit(step)\n        step(x)\n", 6, 16),
        Invalid("import jax\nfrom functools import partial\ndef loss(w, x):\n    return w * x\ndef run(ws, xs):\n"
                "    for x in xs:\n        g = jax.jit(partial(loss, x=x))\n        g(ws)\n", 7, 13, "partial"),
        Invalid("import jax\ndef loss(w):\n    return w * w\ndef run(ws):\n    while ws:\n"
                "        g = jax.jit(jax.grad(loss))\n        g(ws.pop())\n", 6, 13),
        Invalid("import jax\ndef step(x):\n    return jax.jit(lambda v: v + 1)(x)\ndef train(xs):\n    for x in xs:\n"
                "        step(x)\n", 3, 12, "runs repeatedly"),
        Invalid("import jax\ndef step(x):\n    def inner(v):\n        return v * 2\n    return jax.jit(inner)(x)\n"
                "def epoch(xs):\n    return [step(x) for x in xs]\n", 5, 12),
        Invalid("import jax\ndef helper(x):\n    return jax.jit(lambda v: v + 1)(x)\ndef step(x):\n    return helper(x)\n"
                "def train(xs):\n    while True:\n        step(xs)\n", 3, 12, "runs repeatedly"),
        Invalid("import jax\nfor scale in range(3):\n    jax.jit(lambda v: v * scale)(1.0)\n", 3, 5, "inside the loop"),
        # A cache the function makes anew on each call, or a slot no guard finds empty, keeps nothing.
        Invalid("import jax\nimport jax.numpy as jnp\nACTS = {'relu': jax.nn.relu, 'tanh': jnp.tanh}\nJITTED = {}\n"
                "for epoch in range(3):\n    for name, fn in ACTS.items():\n        JITTED[name] = jax.jit(lambda x, fn=fn: fn(x))\n"
                "        JITTED[name](1.0)\n", 7, 24, "inside the loop"),
        Invalid("import jax\n_fwd = None\ndef warm(xs):\n    global _fwd\n    if _fwd is None:\n        for x in xs:\n"
                "            _fwd = jax.jit(lambda v: v * 2)\n            _fwd(x)\n", 7, 20, "inside the loop"),
        Invalid("import jax\ndef get_fn(n):\n    cache = {}\n    if n not in cache:\n        cache[n] = jax.jit(lambda x: x ** n)\n"
                "    return cache[n]\ndef run(xs):\n    return [get_fn(2)(x) for x in xs]\n", 5, 20, "runs repeatedly"),
        Invalid("import jax\n_fwd = None\ndef predict(x):\n    global _fwd\n    _fwd = jax.jit(lambda v: v * 2)\n"
                "    return _fwd(x)\ndef run(xs):\n    return [predict(x) for x in xs]\n", 5, 12, "runs repeatedly"),
        Invalid("import jax\nfns = {}\nfor scale in range(3):\n    fns['f'] = jax.jit(lambda v: v * scale)\n    fns['f'](1.0)\n",
                4, 16, "inside the loop"),
        Invalid("import jax\nclass Agent:\n    def _impl(self, x):\n        return x\n    def act(self, x):\n"
                "        return jax.jit(self._impl)(x)\n    def run(self, xs):\n        for x in xs:\n"
                "            self.act(x)\n", 6, 16, "bound method"),
        Invalid("import jax\ndef make_step(lr):\n    @jax.jit\n    def step(p):\n        return p - lr\n    return step\n"
                "def train(p, lrs):\n    for lr in lrs:\n        p = make_step(lr)(p)\n", 3, 5),
        Invalid("import jax\nclass Model:\n    def apply(self, x):\n        return x\ndef run(xs):\n    for x in xs:\n"
                "        model = Model()\n        jax.jit(model.apply)(x)\n", 8, 9, "bound method"),
        # Reading `self.method` makes a new bound method each time, even of the same object: each iteration
        # compiles again (checked under JAX 0.10.2: five iterations, five traces).
        Invalid("import jax\nclass Agent:\n    def _impl(self, x):\n        return x\n    def run(self, xs):\n"
                "        for x in xs:\n            jax.jit(self._impl)(x)\n", 7, 13, "bound method"),
        Invalid("import jax\ndef run(xs):\n    for x in xs:\n        @jax.jit\n        def f(v):\n            return v + x\n"
                "        f(x)\n", 4, 9),
        Invalid("import jax\nimport equinox as eqx\ndef run(xs):\n    for x in xs:\n"
                "        eqx.filter_jit(lambda v: v)(x)\n", 5, 9),
    )

    def visit_Call(self, node: cst.Call) -> None:
        self._check(node, self.model.transform_site(node), self.model.is_called_immediately(node))

    def visit_Decorator(self, node: cst.Decorator) -> None:
        site = self.model.transform_site(node)  # type: ignore[arg-type]  # decorators are recorded too (issue 9)
        self._check(node, site, called=False)

    def _check(self, node: cst.CSTNode, site: TransformSite | None, called: bool) -> None:
        if site is None or site.origin is None or not site.caches:
            return  # grad/vmap alone trace on every call anyway
        if self.function_trace is not None and self.function_trace.cached:
            return  # inside a cached trace this runs once per trace, and the outer program is reused
        origin = site.origin
        created = _CREATED.get(origin.kind, "a callable")
        if site.memoized:
            return  # one function per cache slot, however often this runs
        if site.reused:
            return  # kept and called many times by the code that made it: one compile serves them all
        if origin.loops and site.loops[: len(origin.loops)] == origin.loops and not site.tabled \
                and self.model.repeats(origin.loops):
            self.report(node, f"transform applied to {created} inside the loop: every iteration creates a new "
                              "function, so JAX retraces and recompiles it each time; apply the transform once "
                              "outside the loop and pass changing values as arguments")
        elif self.model.runs_repeatedly(site.function):
            use = "and called at once " if called else ""
            self.report(node, f"transform applied to {created} {use}in a function that runs repeatedly (it is "
                              "called in a loop): every call creates a new function, so JAX retraces and "
                              "recompiles it each time; apply the transform once at module level")
        elif called and self.model.runs_more_than_once(site.function):
            self.report(node, f"transform applied to {created} and called at once in a function that runs more "
                              "than once (it is called twice in a row): every call creates a new function, so "
                              "JAX retraces and recompiles it each time; apply the transform once at module level")
