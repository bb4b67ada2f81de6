"""JAX101 stale-global-read."""

from __future__ import annotations

import libcst as cst

from jaxcheck.analyzer.rule import Invalid, Rule, Valid, keeper_name
from jaxcheck.analyzer.semantics.jax_api import CACHING_TRANSFORMS


class StaleGlobalRead(Rule):
    """
    ## What it does
    Finds traced code (under `jax.jit`, `pmap`, `lax` bodies and other caching transforms) that reads
    a module-level or enclosing-function variable which is reassigned, updated or mutated elsewhere.

    ## Why is this bad?
    JAX traces the Python function once and caches the compiled program. A global read while tracing
    becomes a constant of that program: when the variable later changes, the compiled function keeps
    using the old value, silently, until something forces a retrace.

    ## Example
    ```python
    import jax

    learning_rate = 0.1

    @jax.jit
    def update(w, g):
        return w - learning_rate * g

    def decay():
        global learning_rate
        learning_rate = learning_rate * 0.5
    ```

    ## Use instead
    ```python
    import jax

    @jax.jit
    def update(w, g, learning_rate):
        return w - learning_rate * g
    ```
    Pass changing values as arguments (or mark a configuration argument static with
    `static_argnames=...` so a change retraces deliberately).

    A change counts only when it can happen after the function was first traced while its compiled
    program is still reused: in a function that can run at any time (`def set_rate(r): global rate`),
    or in module (or enclosing-function) code between two calls that reach the traced function. A
    function that provably runs before anything may trace the function is setup too: a setter only
    `main()` calls, once, before training, or `main()` setting a global from its arguments first.
    An attribute of an imported module or object read in traced code (`config.DT`) counts the same way
    when this module stores it (`config.DT = 0.5` between two calls).
    Constants bound once, imports, functions and `typing.Final` names are never reported, nor setup
    that finishes before any call (straight-line module code, a finished module-level loop, a registry
    filled at import time), nor a store after the last call (for module code: unless another module
    calls the function, and may do so after the import), nor a store to another attribute
    (`FLAGS.a = 1` does not change `FLAGS.b`) or to another constant key (`CONFIG["lr"] *= 0.9` does not
    change `CONFIG["wd"]`), nor a store that only adds an entry (`table[k] = v` under
    `if k not in table:` or after `if k in table: raise`: a memo or a registry never changes an entry
    a trace has read). A lax body made anew each time the lax call runs (a lambda or `partial(...)`
    written in the call, a function defined beside it) is traced again each time: it goes stale only
    when the function making the call is itself cached (jitted).

    ## Fix safety
    No fix is offered: turning a global into a parameter changes every call site.

    ## Runtime check
    `jaxcheck run`, `pytest --jaxcheck` and `jaxcheck.runtime.checking()` record the globals and closure
    cells a jitted function (and the user helpers it calls) reads while tracing, and check them by identity
    on every call: a value rebound to a different value on a call that reuses the compiled program is
    reported with its name and both values. Attributes read while tracing are checked the same way:
    `self.lr` of a jitted method (or a static `self`), `config.lr` of an object a global holds, a class
    attribute, a user module's `LR`. Config-like values (a dict or list of numbers and strings, a NumPy
    array) changed in place are found on a doubling schedule of calls.
    """

    code = "JAX101"
    explains_trace = True
    name = "stale-global-read"
    summary = "Traced code reads module-level or enclosing state that is rebound or mutated, so it goes stale"

    VALID = (
        # An object made inside the trace lives and dies in it: its attributes cannot go stale.
        Valid("import jax\nclass Ball:\n    def __init__(self, x):\n        self.x = x\n    def move(self, dt):\n"
              "        self.x = self.x + dt\n        return self.x\nclass Game:\n    def __init__(self, s):\n"
              "        self.ball = Ball(s)\n    def step(self):\n        return self.ball.move(0.1)\n@jax.jit\n"
              "def update(s):\n    game = Game(s)\n    game.ball.move(0.2)\n    return game.step()\n"),
        # After the last call, only methods of library objects and containers run.
        Valid("import jax\nimport logging\nlr = 0.1\n@jax.jit\ndef update(w):\n    return w * lr\nlosses = []\n"
              "w = update(1.0)\nlr = 0.01\nlosses.append(w)\nlogging.getLogger(__name__).info('lr {}'.format(lr))\n"),
        # Methods of arrays called after the store (`.item()`, `.tolist()`) run no project function.
        Valid("import jax\nimport jax.numpy as jnp\nX = jnp.ones((8, 3))\n@jax.jit\ndef loss(w):\n    return jnp.mean(X @ w)\n"
              "w = jnp.zeros(3)\nprint(loss(w).item())\nX = jnp.full((4, 3), 2.0)\nprint((X @ w).tolist(), X.mean().item())\n"),
        # An object's attribute set by module code before the first call, or after the last one.
        Valid("import jax\nclass Agent:\n    def __init__(self):\n        self.epsilon = 1.0\n"
              "        self._act = jax.jit(self._act_impl)\n    def _act_impl(self, q):\n        return q * self.epsilon\n"
              "    def act(self, q):\n        return self._act(q)\na = Agent()\na.epsilon = 0.5\nprint(a.act(1.0))\n"
              "a.epsilon = 0.1\n"),
        # A store after the module's last call (a notebook's later section reusing a name): nothing calls
        # `loss` again, unless another module imports it.
        Valid("import jax\nimport jax.numpy as jnp\nX = jnp.ones((8, 3))\n@jax.jit\ndef loss(w):\n"
              "    return jnp.mean(X @ w)\nw = jnp.zeros(3)\nfor i in range(50):\n    w = w - 0.1 * loss(w)\n"
              "X = jnp.full((4, 3), 2.0)\nprint(X @ w)\n"),
        # ...also when a later section builds and initializes another Flax module under the same name: its
        # `init` and `apply` run that module's `__call__`, nothing that traces `mse`.
        Valid("import jax\nimport flax.linen as nn\nmodel = nn.Dense(features=5)\n@jax.jit\ndef mse(params, x):\n"
              "    return model.apply(params, x)\nprint(mse(params0, x0))\nclass MLP(nn.Module):\n"
              "    @nn.compact\n    def __call__(self, x):\n        return nn.Dense(3)(x)\nmodel = MLP()\n"
              "params = model.init(jax.random.key(0), x0)\ny = model.apply(params, x0)\n"),
        # Under `if debug:` where every trace passes debug=False, nothing is read while tracing.
        Valid("import jax\nSCALE = 1.0\n@jax.jit\ndef f(x, debug=False):\n    if debug:\n        x = x * SCALE\n"
              "    return x\ndef set_scale(s):\n    global SCALE\n    SCALE = s\ny = f(1.0)\n"),
        # Set only while constructing; a dataclass (hashed by its fields); a traced `self` (a pytree).
        Valid("import jax\nfrom functools import partial\nclass Schedule:\n    def __init__(self, base):\n"
              "        self.base = base\n    @partial(jax.jit, static_argnums=0)\n    def lr(self, t):\n"
              "        return self.base * t\n"),
        Valid("import jax\nclass Model:\n    def __init__(self, cfg):\n        self._configure(cfg)\n"
              "        self._fwd = jax.jit(self._forward)\n    def _configure(self, cfg):\n        self.scale = cfg['scale']\n"
              "    def _forward(self, x):\n        return x * self.scale\n"),
        Valid("import jax\nfrom functools import partial\nfrom dataclasses import dataclass\n@dataclass(frozen=True)\n"
              "class Schedule:\n    base: float\n    @partial(jax.jit, static_argnums=0)\n    def lr(self, t):\n"
              "        return self.base * t\n    def warm(self):\n        return Schedule(3.0)\n"),
        Valid("import jax\nfrom functools import partial\nclass Schedule:\n    def __init__(self):\n"
              "        self.base = 1.0\n    def __hash__(self):\n        return hash(self.base)\n"
              "    def __eq__(self, other):\n        return self.base == other.base\n    def warm(self):\n"
              "        self.base = 3.0\n    @partial(jax.jit, static_argnums=0)\n    def lr(self, t):\n"
              "        return self.base * t\n"),
        Valid("import jax\nSCALE = 2.0\n@jax.jit\ndef f(x):\n    return x * SCALE\n"),
        Valid("import jax\nimport jax.numpy as jnp\n@jax.jit\ndef f(x):\n    return jnp.sin(x)\n"),
        Valid("import jax\ndef helper(x):\n    return x\ndef helper2(x):\n    return x\n@jax.jit\ndef f(x):\n"
              "    return helper(x)\n"),
        Valid("import jax\nfrom typing import Final\nRATE: Final = 0.1\n@jax.jit\ndef f(x):\n    return x * RATE\n"),
        Valid("import jax\nimport os\nif os.environ.get('X'):\n    MODE = 1\nelse:\n    MODE = 2\n@jax.jit\n"
              "def f(x):\n    return x * MODE\n"),
        Valid("import jax\nhistory = []\ndef f(x):\n    return x * len(history)\nhistory.append(1)\n"),
        Valid("import jax\nstate = {'n': 0}\ndef log(x):\n    state['n'] += 1\n    return x\ng = jax.grad(log)\n"),
        Valid("import jax\n@jax.jit\ndef f(x):\n    total = 0\n    for i in range(3):\n        total = total + x\n"
              "    return total\n"),
        Valid("import jax\ndef make(scale):\n    @jax.jit\n    def f(x):\n        return x * scale\n    return f\n"),
        Valid("import jax\nREGISTRY = {}\nREGISTRY['relu'] = 1.0\n@jax.jit\ndef f(x):\n    return x * REGISTRY['relu']\n"),
        # Write-once entries (a memo filled on a miss, a registry that refuses to overwrite) never change
        # an entry a trace has read.
        Valid("import jax\n_cache = {}\ndef table(n):\n    if n not in _cache:\n        _cache[n] = n * 2\n"
              "    return _cache[n]\n@jax.jit\ndef f(x):\n    return x * table(3)\n"),
        Valid("import jax\n_cache = {}\ndef table(n, m):\n    if (n, m) not in _cache:\n        _cache[n, m] = n * m\n"
              "    return _cache[n, m]\n@jax.jit\ndef f(x):\n    return x * table(2, 3)\n"),
        Valid("import jax\nREG = {}\ndef register(name, fn):\n    if name in REG:\n        raise ValueError(name)\n"
              "    REG[name] = fn\n@jax.jit\ndef f(x):\n    return REG['relu'](x)\n"),
        Valid("import jax\ndef make(scale, shift):\n    scale = scale * 2\n    @jax.jit\n    def f(x):\n"
              "        return x * scale\n    return f\n"),
        Valid("import jax\ntry:\n    LIMIT = 10\nexcept ImportError:\n    LIMIT = 5\n@jax.jit\ndef f(x):\n"
              "    return x * LIMIT\n"),
        # Program order: straight-line setup that finishes before any call, or a store after the last call.
        Valid("import jax\nscale = 1.0\nscale = 2.0\n@jax.jit\ndef f(x):\n    return x * scale\n"),
        Valid("import jax\nstep = 0\nfor epoch in range(3):\n    step = step + 1\n@jax.jit\ndef f(x):\n"
              "    return x + step\n"),
        Valid("import jax\nfrom jax import lax\ncount = 0\ndef body(c, x):\n    return c + x * count, x\n"
              "count += 1\nlax.scan(body, 0.0, xs)\n"),
        Valid("import jax\nfrom functools import partial\nbias = 0.0\ndef inner(x):\n    return x + bias\n"
              "@partial(jax.jit, static_argnums=1)\ndef f(x, n):\n    return inner(x) * n\nbias = 1.0\n"),
        Valid("import jax\ndef energy(s):\n    return s * 2\nenergy = jax.jit(energy)\n@jax.jit\ndef step(s):\n"
              "    return energy(s)\n"),
        Valid("import jax\ndef run(x1, x2, make):\n    kernel = make(1)\n    k = jax.jit(lambda a: kernel(a))\n"
              "    k(x1)\n    k(x2)\n    kernel = make(2)\n    k = jax.jit(lambda a: kernel(a))\n    k(x1)\n"),
        # A lax body made per call is traced again each time the eager function runs.
        Valid("import jax\nfrom jax import lax\nREG = {}\ndef register(name, fn):\n    REG[name] = fn\ndef run(x):\n"
              "    def body(c):\n        return REG['f'](c)\n    return lax.while_loop(lambda c: c < 3, body, x)\n"),
        Valid("import jax\nfrom jax import lax\nscale = 1.0\ndef train(xs):\n    global scale\n    for x in xs:\n"
              "        lax.scan(lambda c, x: (c + x * scale, None), 0.0, x)\n        scale = scale * 0.5\n"),
        # Attribute paths: a store to another attribute does not change what is read.
        Valid("import jax\nclass Flags:\n    a = 0\n    b = 1\nFLAGS = Flags()\n@jax.jit\ndef f(x):\n"
              "    return x * FLAGS.b\ndef setup():\n    FLAGS.a = 1\n"),
        Valid("import jax\nCONFIG = {'lr': 0.1, 'wd': 1e-4}\n@jax.jit\ndef step(w, g):\n"
              "    return w - 0.1 * (g + CONFIG['wd'] * w)\ndef train(w, gs):\n    for g in gs:\n"
              "        w = step(w, g)\n        CONFIG['lr'] *= 0.9\n    return w\n"),
        Valid("import jax\nclass Wrapper:\n    def __init__(self, env):\n        self._env = env\n"
              "        def step(s):\n            return self._env.step(s)\n        self._step = jax.jit(step)\n"
              "    def run(self, s):\n        self._state = self._step(s)\n"),
        # A setter (or `main()` itself) that runs once, before anything may trace the reader: setup.
        Valid("import jax\nimport argparse\nLR = 0.1\n@jax.jit\ndef update(w):\n    return w - LR\ndef main():\n"
              "    global LR\n    LR = argparse.ArgumentParser().parse_args().lr\n    w = 1.0\n    for _ in range(3):\n"
              "        w = update(w)\nif __name__ == '__main__':\n    main()\n"),
        Valid("import jax\nLR = 0.1\ndef set_lr(lr):\n    global LR\n    LR = lr\n@jax.jit\ndef update(w):\n"
              "    return w - LR\ndef main():\n    set_lr(0.5)\n    for _ in range(3):\n        update(1.0)\nmain()\n"),
        # An imported config module's attribute set before any call, or by `main()` first.
        Valid("import jax\nimport config\nconfig.DT = 0.5\n@jax.jit\ndef step(x):\n    return x + config.DT\n"
              "for _ in range(3):\n    step(1.0)\nconfig.DT = 0.9\n"),
        Valid("import argparse\nimport jax\nimport config\n@jax.jit\ndef step(x):\n    return x * config.HP['lr']\n"
              "def main():\n    config.HP['lr'] = argparse.ArgumentParser().parse_args().lr\n    for _ in range(3):\n"
              "        step(1.0)\nif __name__ == '__main__':\n    main()\n"),
    )
    INVALID = (
        # ...but a method of the project's class that runs the reader again, after the change, sees it stale.
        Invalid("import jax\nimport flax.linen as nn\nmodel = nn.Dense(features=5)\n@jax.jit\ndef mse(params, x):\n"
                "    return model.apply(params, x)\nprint(mse(params0, x0))\nclass Trainer:\n"
                "    def evaluate(self, params, x):\n        return mse(params, x)\nmodel = nn.Dense(features=3)\n"
                "Trainer().evaluate(params0, x0)\n", 6, 12, "reassigned"),
        # The same class, with an object made outside the trace: the change after tracing goes stale.
        Invalid("import jax\nclass Ball:\n    def __init__(self, x):\n        self.x = x\n    def move(self, dt):\n"
                "        return self.x + dt\n    def reset(self):\n        self.x = 0.0\nBALL = Ball(1.0)\n@jax.jit\n"
                "def shared(t):\n    return BALL.move(t)\n", 6, 16, "changed at line 8"),
        # An imported config module's attribute changed between calls (checked under JAX 0.10.2: both calls
        # print 1.1, the second should print 1.5), in module code or by a setter called in the loop.
        Invalid("import jax\nimport config\n@jax.jit\ndef step(x):\n    return x + config.DT\nprint(step(1.0))\n"
                "config.DT = 0.5\nprint(step(1.0))\n", 5, 16, "imported `config`"),
        Invalid("import jax\nimport config\n@jax.jit\ndef step(x):\n    return x + config.DT\ndef set_dt(v):\n"
                "    config.DT = v\nfor v in (0.1, 0.5):\n    set_dt(v)\n    print(step(1.0))\n", 5, 16, "line 7"),
        # ...nor when the setter also escapes as a value (a callback may run it between calls), or is a
        # generator resuming after a call (checked under JAX 0.10.2: the compiled program keeps LR = 0.1).
        Invalid("import jax\nLR = 0.1\ndef set_lr(lr):\n    global LR\n    LR = lr\n@jax.jit\ndef update(w):\n"
                "    return w - LR\ndef fit(step, w, on_epoch_end):\n    for epoch in range(3):\n        w = step(w)\n"
                "        on_epoch_end(0.1 / (epoch + 1))\n    return w\ndef main():\n    set_lr(0.5)\n"
                "    fit(update, 1.0, on_epoch_end=set_lr)\nmain()\n", 8, 16),
        Invalid("import jax\nLR = 0.1\ndef schedule():\n    global LR\n    for lr in (0.1, 0.01):\n        LR = lr\n"
                "        yield\n@jax.jit\ndef update(w):\n    return w - LR\ndef main():\n    steps = schedule()\n"
                "    next(steps)\n    w = update(1.0)\n    next(steps)\n    return update(w)\nmain()\n", 10, 16),
        # ...but not when it runs again, or after a call (checked under JAX 0.10.2: both calls print 0.9).
        Invalid("import jax\nLR = 0.1\n@jax.jit\ndef update(w):\n    return w - LR\ndef main(lr):\n    global LR\n"
                "    LR = lr\n    print(update(1.0))\nmain(0.1)\nmain(0.5)\n", 5, 16),
        Invalid("import jax\nLR = 0.1\ndef set_lr(lr):\n    global LR\n    LR = lr\n@jax.jit\ndef update(w):\n"
                "    return w - LR\ndef main():\n    print(update(1.0))\n    set_lr(0.5)\n    print(update(1.0))\n"
                "if __name__ == '__main__':\n    main()\n", 8, 16),
        # A helper reading the global object, called between changes (checked under JAX 0.10.2: the action
        # never changes while epsilon decays).
        Invalid("import jax\nclass Agent:\n    def __init__(self):\n        self.epsilon = 1.0\n"
                "        self._act = jax.jit(self._act_impl)\n    def _act_impl(self, q):\n        return q * self.epsilon\n"
                "    def act(self, q):\n        return self._act(q)\nagent = Agent()\ndef run_episode():\n"
                "    return agent.act(1.0)\nfor episode in range(3):\n    run_episode()\n    agent.epsilon *= 0.5\n",
                7, 20),
        # A call the model cannot name after the store (here a `partial` of the reader) may run it again
        # (checked under JAX 0.10.2: the second call prints 2.0, the stale value).
        Invalid("import jax\nimport functools\nX = 1.0\n@jax.jit\ndef loss(w, s):\n    return w * X * s\n"
                "step = functools.partial(loss, s=2.0)\nprint(loss(1.0, s=2.0))\nX = 3.0\nprint(step(1.0))\n", 6, 16),
        # Module code changing an attribute between two calls that reuse the program (checked under JAX
        # 0.10.2: the second call still uses the first epsilon).
        Invalid("import jax\nclass Agent:\n    def __init__(self):\n        self.epsilon = 1.0\n"
                "        self._act = jax.jit(self._act_impl)\n    def _act_impl(self, q):\n        return q * self.epsilon\n"
                "    def act(self, q):\n        return self._act(q)\na = Agent()\nprint(a.act(1.0))\na.epsilon = 0.1\n"
                "print(a.act(1.0))\n", 7, 20, "changed at line 12"),
        Invalid("import jax\nfrom functools import partial\nclass Sampler:\n    def __init__(self):\n"
                "        self.temperature = 1.0\n    @partial(jax.jit, static_argnums=0)\n    def scale(self, logits):\n"
                "        return logits / self.temperature\ns = Sampler()\nprint(s.scale(1.0))\ns.temperature = 0.5\n"
                "print(s.scale(1.0))\n", 8, 25, "changed at line 11"),
        Invalid("import jax\nfrom functools import partial\nclass Schedule:\n    def __init__(self):\n"
                "        self.base = 1.0\n    @partial(jax.jit, static_argnums=0)\n    def lr(self, t):\n"
                "        return self.base * t\n    def warm(self):\n        self.base = 3.0\n", 8, 16, "line 10"),
        Invalid("import jax\nclass Scaler:\n    scale = 1.0\n    @staticmethod\n    @jax.jit\n    def apply(x):\n"
                "        return x * Scaler.scale\n    @classmethod\n    def shrink(cls, f):\n        cls.scale *= f\n",
                7, 20, "static object"),
        Invalid("import jax\nclass Model:\n    def __init__(self):\n        self.temp = 1.0\n"
                "        self._step = jax.jit(self._impl)\n    def _impl(self, x):\n        return x / self.temp\n"
                "    def anneal(self):\n        self.temp *= 0.9\n", 7, 20),
        Invalid("import jax\nlr = 0.1\n@jax.jit\ndef update(w):\n    return w * lr\nw = update(1.0)\nlr = 0.01\n"
                "w = update(w)\n", 5, 16, "line 7"),
        Invalid("import jax\nlr = 0.1\ndef update(w):\n    return w * lr\nstep = jax.jit(update)\nw = 1.0\n"
                "for epoch in range(10):\n    w = step(w)\n    lr = lr * 0.5\n", 4, 16),
        Invalid("import jax\nclass Flags:\n    b = 1\nFLAGS = Flags()\n@jax.jit\ndef f(x):\n"
                "    return x * FLAGS.b\ndef setup():\n    FLAGS.b = 2\n", 7, 16),
        Invalid("import jax\nCONFIG = {'lr': 0.1, 'wd': 1e-4}\n@jax.jit\ndef step(w, g):\n"
                "    return w - CONFIG['lr'] * (g + CONFIG['wd'] * w)\ndef train(w, gs):\n    for g in gs:\n"
                "        w = step(w, g)\n        CONFIG['lr'] *= 0.9\n    return w\n", 5, 16),
        # `jax.tree.map` calls its function right there, in the trace.
        Invalid("import jax\nLR = 0.1\n@jax.jit\ndef sgd(params, grads):\n"
                "    return jax.tree.map(lambda p, g: p - LR * g, params, grads)\nparams, grads = {'w': 1.0}, {'w': 1.0}\n"
                "for epoch in range(10):\n    params = sgd(params, grads)\n    LR = LR * 0.9\n", 5, 42),
        # A method may read any item; a config object serves `cfg.lr` and `cfg['lr']` alike.
        Invalid("import jax\nCONFIG = {'lr': 0.1, 'wd': 1e-4}\n@jax.jit\ndef step(w, g):\n"
                "    return w - 0.1 * (g + CONFIG.get('wd', 0.0) * w)\ndef train(w, gs):\n    for g in gs:\n"
                "        w = step(w, g)\n        CONFIG['wd'] *= 0.9\n    return w\n", 5, 27),
        Invalid("import jax\nimport ml_collections\ncfg = ml_collections.ConfigDict({'lr': 0.1})\n@jax.jit\n"
                "def step(w, g):\n    return w - cfg.lr * g\ndef train(w, gs):\n    for g in gs:\n"
                "        w = step(w, g)\n        cfg['lr'] *= 0.9\n    return w\n", 6, 16),
        Invalid("import jax\nrate = 0.1\n@jax.jit\ndef f(x):\n    return x * rate\ndef set_rate(r):\n"
                "    global rate\n    rate = r\n", 5, 16, "line 8"),
        Invalid("import jax\nweights = [1.0, 2.0]\n@jax.jit\ndef f(x):\n    return x * weights[0]\n"
                "def grow():\n    weights.append(3.0)\n", 5, 16, "mutated at line 7"),
        Invalid("import jax\nconfig = {'k': 1}\n@jax.jit\ndef f(x):\n    return x * config['k']\n"
                "def tweak():\n    config['k'] = 2\n", 5, 16),
        Invalid("import jax\nREG = {}\ndef register(name, fn, force=False):\n    if force:\n        pass\n"
                "    elif name in REG:\n        raise KeyError(name)\n    REG[name] = fn\n@jax.jit\ndef f(x):\n"
                "    return REG['relu'](x)\n", 11, 12, "mutated at line 8"),
        Invalid("import jax\nREG = {}\ndef register(name, fn):\n    REG[name] = fn\n@jax.jit\ndef f(x):\n"
                "    return REG['relu'](x)\n", 7, 12, "mutated at line 4"),
        Invalid("import jax\ndef train(xs):\n    scale = 1.0\n    @jax.jit\n    def f(x):\n        return x * scale\n"
                "    for x in xs:\n        f(x)\n        scale = scale * 0.9\n", 6, 20),
        # ...but a jitted function keeps what its per-call body read, and a body made once is cached.
        Invalid("import jax\nfrom jax import lax\nREG = {}\ndef register(name, fn):\n    REG[name] = fn\n@jax.jit\n"
                "def run(x):\n    def body(c):\n        return REG['f'](c)\n"
                "    return lax.while_loop(lambda c: c < 3, body, x)\n", 9, 16, "mutated at line 5: jax.jit keeps"),
        Invalid("import jax\nfrom jax import lax\nREG = {}\ndef register(name, fn):\n    REG[name] = fn\n@jax.jit\n"
                "def run(x):\n    def body(c):\n        return helper(c)\n"
                "    return lax.while_loop(lambda c: c < 3, body, x)\ndef helper(c):\n    return REG['f'](c)\n",
                12, 12, "mutated at line 5: jax.jit keeps"),
        Invalid("import jax\nfrom jax import lax\nscale = 1.0\ndef train(xs):\n    global scale\n    def body(c, x):\n"
                "        return c + x * scale, None\n    for x in xs:\n        lax.scan(body, 0.0, x)\n"
                "        scale = scale * 0.5\n", 7, 24, "line 10: jax.lax.scan keeps"),
        Invalid("import jax\nclass Cfg:\n    pass\ncfg = Cfg()\n@jax.jit\ndef f(x):\n"
                "    return x * cfg.alpha\ndef configure(a):\n    cfg.alpha = a\n", 7, 16),
    )

    def visit_Module(self, node: cst.Module) -> None:
        # The model lists every read of an outer variable with its function: no per-name visit needed.
        for name, function in self.model.outer_variable_reads():
            self._check(name, function)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        trace = self.trace
        if trace is None or not trace.cached:
            return
        if not isinstance(node.value, cst.Name):
            return
        imported = self.model.imported_attribute_change(node, self.context.function)
        if imported is not None:
            line = self.model.position(imported).start.line
            self.report(node, f"attribute `{node.attr.value}` of the imported `{node.value.value}` is read in traced code "
                              f"but changed at line {line}: {keeper_name(trace)} keeps the value from the first trace; "
                              "pass it as an argument",
                        related=((f"`{node.value.value}.{node.attr.value}` is changed here", imported),))
            return
        change = self.model.attribute_change(node, self.context.function)
        if change is None:
            return
        line = self.model.position(change).start.line
        self.report(node, f"attribute `{node.attr.value}` of `{node.value.value}` is read in traced code but changed "
                          f"at line {line}: {keeper_name(trace)} keeps the value from the first trace (a static "
                          "object is hashed by identity, so the change does not retrace); pass it as an argument",
                    related=((f"`{node.value.value}.{node.attr.value}` is changed here", change),))

    def _check(self, node: cst.Name, function: str) -> None:
        outer = self.model.outer_state(node)
        trace = self.model.enclosing_trace(function)
        if outer is None or trace is None or not trace.cached or not self.model.runs_traced(node):
            return
        if self.model.is_mutated_here(node):
            return  # writing through a global is outer-state-mutation (JAX102), not a stale read
        if not outer.module_level:
            if self.model.recreated_between(function, outer.scope):
                return  # a function created per loop iteration is traced afresh each time
            if not trace.transforms & CACHING_TRANSFORMS:
                return  # a lax body defined in the function is traced where it is passed, once
        change = self.model.change_of(outer, node.value, function, node)
        if change is None:
            return
        where = "module-level" if outer.module_level else "enclosing"
        line = self.model.position(change.node).start.line
        related: list[tuple[str, cst.CSTNode]] = []
        after = self.model.change_after(outer, change, function)
        if after is not None:
            related.append((f"this call may trace the reader of `{node.value}` before the change", after))
        related.append((f"`{node.value}` is {change.kind.value} here", change.node))
        self.report(node, f"{where} variable `{node.value}` is read in traced code but {change.kind.value} at line "
                          f"{line}: {keeper_name(trace)} keeps the value from the first trace; pass it as an "
                          "argument", related=tuple(related), function=function)
