"""JAX102 outer-state-mutation."""

from __future__ import annotations

import libcst as cst

from jaxcheck.analyzer.rule import Invalid, Rule, Valid
from jaxcheck.analyzer.semantics.bindings import MUTATING_METHODS
from jaxcheck.analyzer.semantics.syntax import chain_root
from jaxcheck.analyzer.semantics.scopes import BindingKind


class OuterStateMutation(Rule):
    """
    ## What it does
    Finds traced code that stores traced values into state living outside the traced function:
    `global`/`nonlocal` assignments, mutating calls on outer lists, dicts and sets (`.append`,
    `.update`, ...), item and attribute assignment and `setattr` on module-level or enclosing objects,
    and on `self` in a traced method. Variables of the traced function itself are not outer state for
    a closure that runs within its trace (one with no transform of its own, such as a callback it calls).

    ## Why is this bad?
    The writes happen once, while tracing, and store tracers: the abstract values of that trace. Code
    that later reads them gets `UnexpectedTracerError` ("an intermediate value leaked"), and calls
    served from the compile cache do not write anything at all.

    ## Example
    ```python
    import jax

    losses = []

    @jax.jit
    def step(w, g):
        losses.append(w.sum())
        return w - 0.1 * g
    ```

    ## Use instead
    ```python
    import jax

    @jax.jit
    def step(w, g):
        return w - 0.1 * g, w.sum()

    losses = []
    w, loss = step(w, g)
    losses.append(loss)
    ```
    Return new values from the traced function and update state outside it (under `jax.grad`, return
    them as auxiliary data with `has_aux=True`). Leaks are reported under `grad`, `jvp` and the other
    differentiating transforms too: values stay concrete there, but they are tracers. Objects created inside
    the traced function are its own and may be mutated freely. Storing a plain Python value leaks no
    tracer, but under a caching transform an update such as `n_calls += 1` (global, `nonlocal`, an
    attribute or an item) runs once per trace, not per call, and is reported too; a trace-time memo table
    (`table[n] = ...` with a static key) and counters bumped in the host loop are not, nor are updates of a
    Flax NNX module's Variables under NNX transforms (`self.count.value += 1` under `nnx.jit`), which the
    transform carries out of the trace on every call.

    ## Fix safety
    No fix is offered: moving state out of a traced function changes its interface.

    ## Runtime check
    At run time, a traced value stored where it outlives its trace (a global list, `self.cache = h`, a list
    on `self`, a class attribute, a stored closure, through `jax.remat`, under `grad`/`vmap`) is reported at
    the line that stored it when the trace ends, if one line alone can have stored it. The
    `UnexpectedTracerError` it causes later keeps JAX's type and message; when it passes through a checked
    transform it gets a note carrying this code, the user's line and the store's line.
    """

    code = "JAX102"
    explains_trace = True
    name = "outer-state-mutation"
    summary = "Traced code writes outer state (`global`, `outer.append`, `outer[k] = v`, `self.attr = v`): tracers leak"

    VALID = (
        # Writing to an object the trace made itself writes to no outer state.
        Valid("import jax\nclass Ball:\n    def __init__(self, x):\n        self.x = x\n    def move(self, dt):\n"
              "        self.x = self.x + dt\n        return self.x\n@jax.jit\ndef update(s):\n    ball = Ball(s)\n"
              "    return ball.move(0.2)\n"),
        # NNX transforms carry the updates of a module's Variables out of the trace, once per call.
        Valid("import jax.numpy as jnp\nfrom flax import nnx\nclass Model(nnx.Module):\n    def __init__(self):\n"
              "        self.count = nnx.BatchStat(jnp.array(0))\n    def __call__(self, x):\n"
              "        self.count[...] += 1\n        return x\n@nnx.jit\ndef f(m: Model, x):\n    return m(x)\n"),
        # A closure handed to `jax.tree.map` runs inside the trace that owns the variable it counts in.
        Valid("import jax\n@jax.jit\ndef h(params):\n    n_leaves = 0\n    def visit(x):\n        nonlocal n_leaves\n"
              "        n_leaves += 1\n        return x * 2\n    return jax.tree.map(visit, params), n_leaves\n"),
        Valid("import jax.numpy as jnp\nfrom flax import nnx\nclass Model(nnx.Module):\n    def __init__(self):\n"
              "        self.count = nnx.BatchStat(jnp.array(0))\n        self.ema = nnx.BatchStat(jnp.zeros(3))\n"
              "    def __call__(self, x):\n        self.count.value += 1\n"
              "        self.ema.value = 0.9 * self.ema.value + 0.1 * x\n        return x\n"
              "@nnx.jit\ndef f(m: Model, x):\n    return m(x)\n"),
        # Counters bumped in the host loop, and trace-time memo tables keyed by static values.
        Valid("import jax\nn_calls = 0\n@jax.jit\ndef f(x):\n    return x * 2\ndef train(xs):\n    global n_calls\n"
              "    for x in xs:\n        f(x)\n        n_calls += 1\n"),
        Valid("import jax\n_tables = {}\n@jax.jit\ndef f(x):\n    n = x.shape[0]\n    _tables[n] = n * 2\n"
              "    return x * _tables[n]\n"),
        Valid("import jax\ncounter = 0\ndef log(x):\n    global counter\n    counter += 1\n    return x\ng = jax.grad(log)\n"),
        # Pallas kernels write their outputs through mutable Refs, also from loop bodies inside them.
        Valid("import jax\nfrom jax import lax\nfrom jax.experimental import pallas as pl\n"
              "def kernel(x_ref, o_ref):\n    def body(i, c):\n        o_ref[i] = x_ref[i] * 2\n        return c\n"
              "    lax.fori_loop(0, 8, body, 0)\n"
              "def double(x):\n    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)\n"),
        Valid("import jax\n@jax.jit\ndef f(x):\n    out = []\n    out.append(x)\n    return out\n"),
        Valid("import jax\n@jax.jit\ndef f(x):\n    d = {}\n    d['a'] = x\n    return d\n"),
        Valid("import jax\nlog = []\ndef f(x):\n    log.append(x)\n    return x\n"),
        Valid("import flax.linen as nn\nclass M(nn.Module):\n    def setup(self):\n        self.dense = nn.Dense(3)\n"
              "    def __call__(self, x):\n        return self.dense(x)\n"),
        Valid("import jax\n@jax.jit\ndef f(x):\n    acc = [x]\n    def add(v):\n        acc.append(v)\n"
              "    add(x)\n    return acc\n"),
        Valid("import jax\nlosses = []\n@jax.jit\ndef f(x):\n    return x * 2\nlosses.append(f(1.0))\n"),
        Valid("import jax\nclass Trainer:\n    def fit(self, x):\n        self.steps = 0\n        return step(x)\n"
              "@jax.jit\ndef step(x):\n    return x\n"),
        Valid("import jax\nimport jax.numpy as jnp\n@jax.jit\ndef f(x):\n    y = jnp.zeros(3)\n"
              "    y = y.at[0].set(x)\n    return y\n"),
        Valid("import jax\ncounter = 0\n@jax.jit\ndef f(x):\n    counter = x + 1\n    return counter\n"),
        # A helper that differentiates the function it is given never changes what a plain call does.
        Valid("import jax\nlast = None\ndef loss(w):\n    global last\n    last = w * 2\n    return w * w\n"
              "def report(fn, w):\n    return fn(w)\ny = report(loss, 1.0)\n"),
        # One element of an opaque result may be metadata (a treedef), and an element of a helper's tuple a shape.
        Valid("import jax\nimport optree\nclass Model:\n    def __init__(self):\n        self.f = jax.jit(self._f)\n"
              "    def _f(self, params):\n        leaves, self.treedef = optree.tree_flatten(params)\n        return leaves\n"),
        Valid("import jax\ndef prep(x):\n    return x * 2, x.shape[0]\nclass Runner:\n    def __init__(self):\n"
              "        self.batch = 0\n        self.f = jax.jit(self._f)\n    def _f(self, x):\n        y, n = prep(x)\n"
              "        self.batch = n\n        return y\n"),
        Valid("import jax\nclass Trainer:\n    def __init__(self):\n        self.step = jax.jit(self._step)\n"
              "    def _step(self, batch):\n        self.names = sorted(batch.keys())\n        return batch\n"),
        # `grad` differentiates `argnums` only: `n` stays a Python value.
        Valid("import jax\nlast_n = 0\ndef loss(w, n):\n    global last_n\n    last_n = n\n    return w * n\n"
              "g = jax.grad(loss)(1.0, 3)\n"),
        Valid("import jax\nlast = None\ndef loss(w, n):\n    global last\n    last = w\n    return w * n\n"
              "g = jax.grad(loss, argnums=1)\n"),
        # A library result stored from the host loop, and one computed from static values only.
        Valid("import jax\nimport optax\nlast = {}\n@jax.jit\ndef step(g):\n    return g\n"
              "def train(g):\n    last['gnorm'] = optax.global_norm(step(g))\n"),
        Valid("import jax\nimport optax\nschedule = {}\n@jax.jit\ndef step(g):\n"
              "    schedule['lr'] = optax.cosine_decay_schedule(0.1, 100)\n    return g\n"),
        Valid("import jax\nimport optax\ndef make(inner):\n    @jax.jit\n    def f(g, s):\n"
              "        return inner.update(g, s)\n    return f\n"),
        # A closure traced only as part of its jitted function writes that function's variables in the same trace.
        Valid("import jax\n@jax.jit\ndef f(x, run):\n    best = None\n    def keep():\n        nonlocal best\n"
              "        best = x * 2\n    run(keep)\n    return best\n"),
        Valid("import jax\n@jax.jit\ndef f(x, run):\n    count = 0\n    def inc():\n        nonlocal count\n"
              "        count += 1\n    run(inc)\n    return x * count\n"),
    )
    INVALID = (
        # An attribute every store makes a list is a list: appending a tracer to it leaks.
        Invalid("import jax\nfrom functools import partial\nclass Model:\n    def __init__(self):\n"
                "        self.history = []\n    @partial(jax.jit, static_argnums=0)\n    def f(self, x):\n"
                "        self.history.append(x.mean())\n        return x * 2\n", 8, 9, "`.append()`"),
        # Under plain jax.jit the module is flattened into a copy: its Variable updates are lost.
        Invalid("import jax\nimport jax.numpy as jnp\nfrom flax import nnx\nclass Model(nnx.Module):\n"
                "    def __init__(self):\n        self.ema = nnx.BatchStat(jnp.zeros(3))\n"
                "    def __call__(self, x):\n        self.ema.value = 0.9 * self.ema.value + 0.1 * x\n        return x\n"
                "@jax.jit\ndef f(m: Model, x):\n    return m(x)\n", 8, 9),
        # grad's tracers stay tracers under `if verbose:` (true by default): storing them leaks one.
        Invalid("import jax\nimport jax.numpy as jnp\nLOG = []\ndef loss(params, x, verbose=True):\n"
                "    if verbose:\n        LOG.append(params)\n    return (params['w'] * x).sum()\n"
                "g = jax.grad(loss)({'w': jnp.ones(3)}, jnp.ones(3))\n", 6, 9),
        Invalid("import jax\nn_calls = 0\n@jax.jit\ndef f(x):\n    global n_calls\n    n_calls += 1\n    return x\n", 6, 5,
                "once per trace"),
        Invalid("import jax\nfrom functools import partial\nclass Model:\n    calls = 0\n"
                "    @partial(jax.jit, static_argnums=0)\n    def step(self, x):\n        self.calls += 1\n        return x\n",
                7, 9, "once per trace"),
        Invalid("import jax\nfrom jax import lax\nhits = [0]\ndef body(c):\n    hits[0] += 1\n    return c + 1\n"
                "out = lax.while_loop(lambda c: c < 3, body, 0)\n", 5, 5),
        Invalid("import jax\nfrom jax import lax\ndef run(x, out):\n    def body(i, c):\n        out[i] = x[i] * 2\n"
                "        return c\n    lax.fori_loop(0, 8, body, 0)\n    return out\n", 5, 9),
        Invalid("import jax\nlosses = []\n@jax.jit\ndef f(x):\n    losses.append(x)\n    return x\n", 5, 5, "losses"),
        Invalid("import jax\ncounter = 0\n@jax.jit\ndef f(x):\n    global counter\n    counter = x\n    return x\n",
                6, 5, "global"),
        Invalid("import jax\ncache = {}\n@jax.jit\ndef f(x):\n    cache['last'] = x\n    return x\n", 5, 5),
        Invalid("import jax\nfrom functools import partial\nclass Model:\n    @partial(jax.jit, static_argnums=0)\n"
                "    def step(self, x):\n        self.last = x\n        return x\n", 6, 9, "self"),
        Invalid("import jax\ndef outer():\n    total = 0\n    @jax.jit\n    def f(x):\n        nonlocal total\n"
                "        total = x\n        return x\n    return f\n", 7, 9),
        Invalid("import jax\nfrom jax import lax\nseen = set()\ndef body(c, x):\n    seen.add(x)\n    return c, x\n"
                "lax.scan(body, 0, xs)\n", 5, 5),
        Invalid("import jax\nclass State:\n    pass\nstate = State()\n@jax.jit\ndef f(x):\n"
                "    setattr(state, 'value', x)\n    return x\n", 7, 5),
        Invalid("import jax\nbuffers = {'a': [0]}\n@jax.vmap\ndef f(x):\n    buffers['a'][0] = x\n    return x\n", 5, 5),
        Invalid("import jax\nregistry = {}\ndef remember(v):\n    registry.update(v=v)\n@jax.jit\ndef f(x):\n"
                "    remember(x)\n    return x\n", 4, 5),
        Invalid("import jax\ncounter = 0\n@jax.jit\ndef f(x):\n    global counter\n    counter += x\n    return x\n",
                6, 5),
        # Under grad alone values stay concrete, but they are tracers: stored outside, they leak.
        Invalid("import jax\nlast = None\ndef loss(w):\n    global last\n    last = w * 2\n    return (w * w).sum()\n"
                "g = jax.grad(loss)(1.0)\n", 5, 5, "jax.grad"),
        Invalid("import jax\nlast = None\ndef loss(w):\n    global last\n    last = w * 2\n    return w * w\n"
                "def fit(loss_fn, w):\n    return jax.grad(loss_fn)(w)\ng = fit(loss, 1.0)\n", 5, 5, "jax.grad"),
        Invalid("import jax\nlosses = []\ndef record(v):\n    losses.append(v)\ndef loss(w):\n    l = (w * w).sum()\n"
                "    record(l)\n    return l\ng = jax.value_and_grad(loss)\n", 4, 5, "losses"),
        Invalid("import jax\nimport optax\nclass Log:\n    pass\nlog = Log()\n@jax.jit\ndef step(g):\n"
                "    log.gnorm = optax.global_norm(g)\n    return g\n", 8, 5, "log"),
        Invalid("import jax\nout = None\ndef run(net, w):\n    @jax.jit\n    def f(x):\n        global out\n"
                "        out = net.apply(w, x)\n        return x\n    return f\n", 7, 9, "leaks"),
        # A loop body traced by a transform of its own leaks its tracers into the enclosing trace.
        Invalid("import jax\nfrom jax import lax\n@jax.jit\ndef f(x):\n    last = x\n    def body(i, c):\n"
                "        nonlocal last\n        last = c\n        return c + 1\n    return lax.fori_loop(0, 3, body, x), last\n",
                8, 9, "fori_loop"),
    )

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._check_store(target.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if not self._check_counter(node.target, node.value):
            self._check_store(node.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._check_store(node.target, node.value)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        stored = [arg.value for arg in node.args]
        if isinstance(func, cst.Attribute) and func.attr.value in MUTATING_METHODS:
            if self.model.is_python_container(func.value) or self.model.is_python_container(chain_root(func.value)):
                self._check_object(func.value, node, f"`.{func.attr.value}()`", stored, method=True)
        elif self.model.call_name(node) == "builtins.setattr" and len(node.args) == 3:
            self._check_object(node.args[0].value, node, "`setattr`", stored[2:], method=True)

    def _check_counter(self, target: cst.BaseExpression, value: cst.BaseExpression) -> bool:
        """`n_calls += 1`, `self.calls += 1`, `hits[0] += 1` on outer state with a Python value under a
        caching transform: it runs once per trace, not per call, so the count is silently wrong."""
        trace = self.trace
        if trace is None or not trace.cached or self.model.holds_tracer(value):
            return False
        if self.model.lifts_state(target, self.context.function):
            return False
        if isinstance(target, cst.Name):
            if not (self.model.is_outer_write(target)
                    and self.model.writes_outside_trace(target, self.context.function)):
                return False
            owner, name = "through `global`/`nonlocal`", target.value
        else:
            receiver = chain_root(target)
            owner_text = self._outer_owner(receiver, allow_module=False) if isinstance(receiver, cst.Name) else None
            if owner_text is None or not isinstance(receiver, cst.Name):
                return False
            owner, name = f"on {owner_text}", receiver.value
        self.report(target, f"traced code updates `{name}` {owner} under {self.transform_name()}: the update runs "
                            "once per trace, not once per call, so the count is silently wrong; count outside the "
                            "jitted function or return the new value")
        return True

    def _check_store(self, target: cst.BaseExpression, value: cst.BaseExpression, unpacked: bool = False) -> None:
        """Report a tracer stored outside; for one element of an unpacked value (`leaves, self.treedef =
        tree_flatten(p)`), only when the whole value is provably traced, not merely an opaque result."""
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._check_store(element.value, value, unpacked=True)
        elif isinstance(target, cst.Name):
            if (self.model.is_outer_write(target) and self.trace is not None
                    and self.model.writes_outside_trace(target, self.context.function)
                    and self._stores_tracer(value, unpacked)):
                self.report(target, f"traced code assigns a tracer to `{target.value}` through `global`/`nonlocal` "
                                    f"under {self.transform_name()}: it leaks out of the trace; return the value "
                                    "instead")
        elif isinstance(target, (cst.Subscript, cst.Attribute)):
            kind = "item assignment" if isinstance(target, cst.Subscript) else "attribute assignment"
            self._check_object(target.value, target, kind, [value], method=False, unpacked=unpacked)

    def _stores_tracer(self, value: cst.BaseExpression, unpacked: bool) -> bool:
        return self.model.is_traced(value) if unpacked else self.model.holds_tracer(value)

    def _check_object(self, receiver: cst.BaseExpression, node: cst.CSTNode, action: str,
                      stored: list[cst.BaseExpression], method: bool, unpacked: bool = False) -> None:
        """Report when a tracer is stored into an object that lives outside the traced function."""
        receiver = chain_root(receiver)
        if not isinstance(receiver, cst.Name) or self.trace is None:
            return
        if not any(self._stores_tracer(value, unpacked) for value in stored):
            return  # bookkeeping with Python values leaks no tracer
        if isinstance(node, cst.BaseExpression) and self.model.lifts_state(node, self.context.function):
            return  # an NNX Variable's value: the NNX transform carries it out
        owner = self._outer_owner(receiver, allow_module=not method)
        if owner is None:
            return
        self.report(node, f"{action} on `{receiver.value}` ({owner}) inside traced code under "
                          f"{self.transform_name()}: it runs once while tracing and leaks tracers; return new "
                          "values instead")

    def _outer_owner(self, name: cst.Name, allow_module: bool) -> str | None:
        if self.model.is_ref(name):
            return None  # a Pallas Ref: writing through it is how kernels produce output
        if self.model.is_self(name, self.context.function):
            return "the method's `self`"
        outer = self.model.outer_state(name)
        if outer is not None:
            return "a module-level object" if outer.module_level else "an object of the enclosing function"
        imported = self.model.outer_name(name)
        if allow_module and imported is not None and imported.kind is BindingKind.IMPORT:
            return "a module"
        return None

