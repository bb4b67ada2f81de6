"""JAX301 python-branch-on-tracer."""

from __future__ import annotations

import libcst as cst

from jaxcheck.analyzer.rule import Invalid, Rule, RuleContext, Valid, static_hint

_CONSTRUCTS = {cst.If: "`if`", cst.While: "`while`", cst.IfExp: "conditional expression", cst.Assert: "`assert`"}


class PythonBranchOnTracer(Rule):
    """
    ## What it does
    Finds Python control flow that needs the truth value of a traced array inside code run under
    `jax.jit`, `vmap`, `pmap` or a `lax` control-flow body: `if`, `elif`, `while`, conditional
    expressions, `assert`, `and`/`or`/`not`, and the builtins `min`/`max`.
    Code in a `try` whose handler names the error JAX raises (`except TypeError:`, or its `jax.errors`
    subclass) without re-raising it has a fallback for tracers and is not reported (a broad
    `except Exception:` is not such a fallback).

    ## Why is this bad?
    Under these transforms the function runs on abstract tracers that have a shape and dtype but no
    value, so Python cannot decide the branch: JAX raises `TracerBoolConversionError` at trace time.
    Under `jax.grad` alone values stay concrete, so branching there is fine and is not reported.

    ## Example
    ```python
    import jax

    @jax.jit
    def relu(x):
        if x > 0:
            return x
        return 0.0
    ```

    ## Use instead
    ```python
    import jax
    import jax.numpy as jnp

    @jax.jit
    def relu(x):
        return jnp.where(x > 0, x, 0.0)
    ```
    Use `jax.lax.cond`/`lax.switch` for branches with different computations, `lax.while_loop` for
    loops with a traced condition, or mark a configuration argument static with
    `static_argnames=...` so its Python value is known while tracing.

    ## Fix safety
    No fix is offered: the right replacement (`jnp.where`, `lax.cond`, a static argument) depends on
    what the code means.

    ## Runtime check
    At run time, JAX's `TracerBoolConversionError` is re-raised with its own type and a note carrying this
    code, the argument the traced value came from and the user's line; `static_argnames` is suggested only
    when the caller passed a Python value and a re-trace with that argument static succeeded.
    """

    code = "JAX301"
    explains_trace = True
    concretizes = True
    name = "python-branch-on-tracer"
    summary = "Python `if`/`while`/`and`/`or`/`not`/`min`/`max` on a traced value under jit, vmap, pmap or lax bodies"

    VALID = (
        # A project decorator that only registers the function traces nothing.
        Valid("REGISTRY = {}\ndef register(fn):\n    REGISTRY[fn.__name__] = fn\n    return fn\n@register\n"
              "def step(x):\n    if x > 0:\n        return x\n    return -x\n"),
        # A decorating jit's static parameter stays static under another transform and from traced callers.
        Valid("import functools\nimport jax\n@functools.partial(jax.jit, static_argnames=('parallel',))\n"
              "def step(x, *, parallel=True):\n    return x * 2 if parallel else x\n@jax.jit\ndef outer(x, fast):\n"
              "    return step(x, parallel=fast)\nbatched = jax.vmap(step)\n"),
        # A fallback for traced values: the handler catches the error JAX raises (checked under JAX 0.10.2).
        Valid("import jax\n@jax.jit\ndef f(x):\n    try:\n        if x > 0:\n            x = x * 2\n"
              "    except jax.errors.TracerBoolConversionError:\n        x = x * 3\n    return x\n"),
        # A Python step counter kept in a dict beside an array (checked under JAX 0.10.2: runs).
        Valid("import jax\nimport jax.numpy as jnp\n@jax.jit\ndef run(x):\n    state = {'step': 0, 'h': x}\n"
              "    for _ in range(3):\n        state['h'] = jnp.tanh(state['h'])\n        state['step'] += 1\n"
              "    if state['step'] == 3:\n        state['h'] = state['h'] * 2\n    return state['h']\n"),
        # Fields declared static, or of a class that flattens itself, are no leaves.
        Valid("import dataclasses\nimport jax\nimport equinox as eqx\nfrom flax import struct\n@struct.dataclass\n"
              "class A:\n    lr: jax.Array = dataclasses.field(metadata={'pytree_node': False})\n"
              "class B(eqx.Module):\n    t: jax.Array = eqx.static_field()\n"
              "@jax.tree_util.register_pytree_node_class\nclass C:\n    k: jax.Array\n"
              "    def tree_flatten(self):\n        return (), self.k\n"
              "@jax.jit\ndef f(a: A, b: B, c: C, x):\n    if a.lr > 0 and b.t > 0 and c.k > 0:\n        return x\n    return -x\n"),
        # A JVP rule runs only where its function is differentiated: a jitted forward pass never runs it.
        Valid("import jax\nimport jax.numpy as jnp\n@jax.custom_jvp\ndef safe_sqrt(x):\n    return jnp.sqrt(x)\n"
              "@safe_sqrt.defjvp\ndef safe_sqrt_jvp(primals, tangents):\n    (x,), (t,) = primals, tangents\n"
              "    if x > 0:\n        return safe_sqrt(x), t / (2 * safe_sqrt(x))\n    return safe_sqrt(x), 0.0 * t\n"
              "@jax.jit\ndef predict(x):\n    return safe_sqrt(x)\n"),
        # Its non-differentiated arguments stay Python values; without jit, grad passes concrete primals.
        Valid("import jax\nfrom functools import partial\n@partial(jax.custom_jvp, nondiff_argnums=(1,))\n"
              "def scaled(x, mode):\n    return x\n@scaled.defjvp\ndef scaled_jvp(mode, primals, tangents):\n"
              "    if mode == 'double':\n        return primals[0], 2 * tangents[0]\n    return primals[0], tangents[0]\n"
              "@jax.jit\ndef g(x):\n    return jax.grad(lambda y: scaled(y, 'double'))(x)\n"),
        Valid("import jax\nimport jax.numpy as jnp\n@jax.custom_jvp\ndef safe_sqrt(x):\n    return jnp.sqrt(x)\n"
              "@safe_sqrt.defjvp\ndef safe_sqrt_jvp(primals, tangents):\n    (x,), (t,) = primals, tangents\n"
              "    if x > 0:\n        return safe_sqrt(x), t / (2 * safe_sqrt(x))\n    return safe_sqrt(x), 0.0 * t\n"
              "dx = jax.grad(safe_sqrt)(4.0)\n"),
        Valid("import jax\nimport jax.numpy as jnp\n@jax.jit\ndef f(x):\n    with jax.ensure_compile_time_eval():\n"
              "        table = jnp.arange(8) ** 2\n        if table[1] > 0:\n            table = table + 1\n"
              "    return x + table[3]\n"),
        Valid("import jax\nimport jax.numpy as jnp\nimport equinox as eqx\n@eqx.filter_jit\ndef run(x, n):\n"
              "    if n > 2:\n        return x\n    return -x\nrun(jnp.ones(3), 2)\n"),
        # `apply(..., method=Model.embed)` runs `embed`, not `__call__`.
        Valid("import jax\nimport flax.linen as nn\nclass Model(nn.Module):\n    @nn.compact\n"
              "    def __call__(self, x, deterministic: bool = True):\n        if deterministic:\n            return x\n"
              "        return x * 2\n    def embed(self, ids, scale):\n        return ids * scale\nmodel = Model()\n"
              "@jax.jit\ndef embed(v, ids, scale):\n    return model.apply(v, ids, scale, method=Model.embed)\n"),
        # A module attribute or a static argument is a Python value.
        Valid("import jax\nimport flax.linen as nn\nclass Net(nn.Module):\n    training: bool = False\n"
              "    @nn.compact\n    def __call__(self, x):\n        return nn.Dropout(0.1, deterministic=not self.training)(x)\n"
              "net = Net()\n@jax.jit\ndef step(variables, x):\n    return net.apply(variables, x)\n"),
        Valid("import jax\nfrom functools import partial\nimport flax.linen as nn\nclass Net(nn.Module):\n"
              "    @nn.compact\n    def __call__(self, x, is_training):\n"
              "        return nn.Dropout(0.1, deterministic=not is_training)(x)\nnet = Net()\n"
              "@partial(jax.jit, static_argnames='is_training')\ndef step(variables, x, is_training):\n"
              "    return net.apply(variables, x, is_training)\n"),
        Valid("import jax\n@jax.jit\ndef f(x, lo=0, hi=3):\n    ok = lo < x.ndim <= hi\n    return x, ok\n"),
        Valid("import jax\n@jax.jit\ndef f(x):\n    return (0 < x) & (x <= 1)\n"),
        # Only passed arguments are traced: a default no call passes stays a Python value.
        Valid("import jax\n@jax.jit\ndef f(x, debug=False):\n    if debug:\n        x = x + 1\n    return x\ny = f(1.0)\n"),
        Valid("import jax\ndef ess(x, axis=0):\n    if axis < 0:\n        axis = axis + x.ndim\n    return x.sum(axis)\n"
              "def run(xs):\n    return jax.vmap(ess)(xs)\n"),
        # The truth value of a container parameter (annotated dict/list/tuple) is its length.
        Valid("import jax\nfrom typing import Dict, Optional\n@jax.jit\ndef f(x, extras: Optional[Dict] = None):\n"
              "    extras = extras or {}\n    return x, extras\ny = f(1.0, {'a': 1.0})\n"),
        Valid("import jax\n@jax.jit\ndef f(x):\n    if x.shape[0] > 2:\n        return x[:2]\n    return x\n"),
        Valid("import jax\nfrom functools import partial\n@partial(jax.jit, static_argnames=('n',))\n"
              "def f(x, n):\n    if n > 0:\n        return x * n\n    return x\n"),
        Valid("import jax\ndef loss(x):\n    if x > 0:\n        return x ** 2\n    return -x\ng = jax.grad(loss)\n"),
        Valid("import jax\nimport jax.numpy as jnp\n@jax.jit\ndef f(x):\n    return jnp.where(x > 0, x, 0.0)\n"),
        Valid("import jax\n@jax.jit\ndef f(x, mask=None):\n    if mask is None:\n        return x\n    return x * mask\n"),
        # `check and ...` stops at a false flag: bound by `partial`, or a false default no call overrides.
        Valid("import jax\nfrom functools import partial\ndef g(x, check):\n    if check and x.sum() > 0:\n"
              "        return x\n    return -x\ng_fast = jax.jit(partial(g, check=False))\n"),
        Valid("import jax\n@jax.jit\ndef f(x, debug=False):\n    if debug:\n        x = x + 1\n"
              "    if debug and x.sum() > 0:\n        return x\n    return -x\ny = f(1.0)\n"),
        Valid("import jax\n@jax.jit\ndef f(x):\n    if isinstance(x, tuple):\n        x = x[0]\n    return x\n"),
        Valid("import jax\n@jax.jit\ndef f(xs):\n    if len(xs) > 1:\n        return xs[0]\n    return xs\n"),
        Valid("import numba\n@numba.jit\ndef f(x):\n    if x > 0:\n        return x\n    return -x\n"),
        Valid("import jax\n@jax.jit\ndef f(x):\n    n = x.ndim\n    while n > 1:\n        x = x.sum(0)\n        n -= 1\n    return x\n"),
        Valid("import jax\n@jax.jit\ndef f(x):\n    return max(x.shape[0], 1)\n"),
        Valid("import jax\n@jax.jit\ndef f(*masks):\n    kept = [m for m in masks if m is not None]\n"
              "    if not kept:\n        return None\n    return kept[0]\n"),
        Valid("import jax\nimport jax.numpy as jnp\n@jax.jit\ndef f(m):\n    res = jnp.linalg.eigh(m)\n"
              "    if res:\n        return res[0]\n    return m\n"),
        Valid("import jax\n@jax.jit\ndef f(x, names):\n    extra = set(names) - {'a', 'b'}\n    if extra:\n"
              "        raise ValueError(extra)\n    return x\n"),
        # A concrete switch between a Python path and lax control flow: the Python path is the eager one.
        Valid("import jax\nfrom jax import lax\nEAGER = False\ndef cond(pred, operand, f, g):\n    if EAGER:\n"
              "        if pred:\n            return f(operand)\n        return g(operand)\n"
              "    else:\n        return lax.cond(pred, f, g, operand)\n"
              "@jax.jit\ndef step(x):\n    return cond(x.sum() > 0, x, lambda v: v, lambda v: -v)\n"),
        Valid("import jax.numpy as jnp\nimport equinox as eqx\nclass MLP(eqx.Module):\n    w: jnp.ndarray\n"
              "    def __call__(self, x):\n        if x.mean() > 0:\n            return self.w @ x\n        return x\n"
              "def step(model, x):\n    return model(x)\nstep(MLP(jnp.eye(3)), jnp.ones(3))\n"),
        Valid("import jax\nfrom jax import core\n@jax.jit\ndef f(x):\n    if not isinstance(x, core.Tracer):\n"
              "        if x > 0:\n            return x\n    return x * 2\n"),
    )
    INVALID = (
        # A project's own jit wrapper, as a decorator, around a local wrapper that calls the function.
        Invalid("import functools\nimport jax\ndef compile(fn):\n    @functools.wraps(fn)\n    def wrapped(*args):\n"
                "        return fn(*args)\n    return jax.jit(wrapped)\n@compile\ndef step(x):\n    if x > 0:\n"
                "        return x\n    return -x\n", 10, 8),
        # ...or one that binds settings with `functools.partial` before jitting the function it is given.
        Invalid("import functools\nimport jax\ndef compile(fn, cfg):\n    return jax.jit(functools.partial(fn, cfg))\n"
                "def _step(cfg, x):\n    if x > cfg:\n        return x\n    return -x\nstep = compile(_step, 1.0)\n", 6, 8),
        # A transform configured by `functools.partial`, then applied: `f` is traced, `n` static.
        Invalid("import functools\nimport jax\ndef f(x, n):\n    if x > n:\n        return x\n    return -x\n"
                "g = functools.partial(jax.jit, static_argnums=1)(f)\n", 4, 8),
        Invalid("import jax\nimport jax.numpy as jnp\n@jax.jit\ndef run(x):\n    state = {'step': 0, 'h': x}\n"
                "    for _ in range(3):\n        state['step'] += jnp.sum(state['h'])\n    if state['step'] > 3:\n"
                "        return x\n    return x * 2\n", 8, 8),
        # `pmap` traces a broadcast argument (`in_axes=None`) too (checked under JAX 0.10.2 with two CPU devices:
        # TracerBoolConversionError); `vmap` passes it through as a Python value.
        Invalid("import jax\ndef step(x, lr):\n    if lr > 0.5:\n        x = x * 0.5\n    return x\n"
                "p = jax.pmap(step, in_axes=(0, None))\n", 3, 8),
        # A JVP rule runs in the trace of the function it differentiates: under jit, its primals are tracers.
        Invalid("import jax\nimport jax.numpy as jnp\n@jax.custom_jvp\ndef safe_sqrt(x):\n    return jnp.sqrt(x)\n"
                "@safe_sqrt.defjvp\ndef safe_sqrt_jvp(primals, tangents):\n    (x,), (t,) = primals, tangents\n"
                "    if x > 0:\n        return safe_sqrt(x), t / (2 * safe_sqrt(x))\n    return safe_sqrt(x), 0.0 * t\n"
                "@jax.jit\ndef g(x):\n    return jax.grad(safe_sqrt)(x)\n", 9, 8),
        # A field annotated as an array is a leaf of the object: traced when the object is.
        Invalid("import jax\nfrom typing import NamedTuple\nclass State(NamedTuple):\n    params: jax.Array\n"
                "    step: jax.Array\n@jax.jit\ndef update(state: State):\n    if state.step > 10:\n"
                "        return state\n    return state._replace(step=state.step + 1)\n", 8, 8),
        # `filter_jit` traces the arrays it is given: a call passing one shows which.
        Invalid("import jax\nimport jax.numpy as jnp\nimport equinox as eqx\n@eqx.filter_jit\ndef run(x, n):\n"
                "    if x.sum() > n:\n        return x\n    return -x\nrun(jnp.ones(3), 2)\n", 6, 8),
        Invalid("import jax\ndef make_step(f):\n    return jax.jit(f)\ndef branchy(x):\n    if x > 0:\n"
                "        return x\n    return -x\nstep = make_step(branchy)\n", 5, 8),
        # A Flax module's parameters are traced by what `apply` passes, annotated or not.
        Invalid("import jax\nimport flax.linen as nn\nclass Net(nn.Module):\n    @nn.compact\n"
                "    def __call__(self, x):\n        if x.mean() > 0:\n            x = x * 2\n        return x\n"
                "net = Net()\n@jax.jit\ndef step(variables, x):\n    return net.apply(variables, x)\n", 6, 12),
        Invalid("import jax\nimport flax.linen as nn\nclass Net(nn.Module):\n    @nn.compact\n"
                "    def __call__(self, x, is_training):\n        return nn.Dropout(0.1, deterministic=not is_training)(x)\n"
                "def loss(variables, x, is_training):\n    return Net().apply(variables, x, is_training, rngs={})\n"
                "g = jax.jit(loss)\n", 6, 50, "is_training"),
        Invalid("import jax\nimport equinox as eqx\nclass MLP(eqx.Module):\n    w: jax.Array\n"
                "    def __call__(self, x):\n        if x.sum() > 0:\n            return x\n        return self.w @ x\n"
                "@eqx.filter_jit\ndef run(model: MLP, x: jax.Array):\n    return model(x)\n", 6, 12),
        Invalid("import jax\nimport jax.numpy as jnp\nVERBOSE = False\ndef pick(pred, a, b):\n    if VERBOSE:\n"
                "        if pred:\n            return a\n        return b\n    else:\n        return jnp.where(pred, a, b)\n"
                "@jax.jit\ndef step(x):\n    return pick(x.sum() > 0, x, -x)\n", 6, 12),
        Invalid("import jax\n@jax.jit\ndef f(x, names):\n    extra = set(names) - {'a'}\n    if x.sum() > len(extra):\n"
                "        return x\n    return -x\n", 5, 8),
        # A test on the operands themselves is a shape dispatch, not an eager mode switch.
        Invalid("import jax\nfrom jax import lax\n@jax.jit\ndef f(x):\n    if x.ndim == 0:\n"
                "        return x if x > 0 else -x\n    else:\n        return lax.map(lambda v: v, x)\n", 6, 21),
        # Unannotated, the module's class is known from what the calls pass.
        Invalid("import jax\nimport jax.numpy as jnp\nimport equinox as eqx\nclass MLP(eqx.Module):\n    w: jax.Array\n"
                "    def __call__(self, x):\n        if x.mean() > 0:\n            return self.w @ x\n        return x\n"
                "@eqx.filter_jit\ndef step(model, x):\n    return model(x)\nstep(MLP(jnp.eye(3)), jnp.ones(3))\n", 7, 12),
        Invalid("import jax\nimport jax.numpy as jnp\nimport equinox as eqx\nclass MLP(eqx.Module):\n    w: jax.Array\n"
                "    def __call__(self, x):\n        if x.mean() > 0:\n            return self.w @ x\n        return x\n"
                "@eqx.filter_jit\ndef step(model, xs):\n    return jax.vmap(model)(xs)\n"
                "step(MLP(jnp.eye(3)), jnp.ones((4, 3)))\n", 7, 12),
        Invalid("import jax\nfrom jax import lax\n@jax.jit\ndef f(v, lo, hi):\n"
                "    return lax.cond(lo < v <= hi, lambda: v, lambda: -v)\n", 5, 21, "implicit `and`"),
        Invalid("import jax\n@jax.jit\ndef f(v):\n    ok = 0.0 < v <= 1.0\n    return ok\n", 4, 10),
        Invalid("import jax\n@jax.jit\ndef f(v):\n    if 0.0 < v <= 1.0:\n        return v\n    return -v\n", 4, 8, "`if`"),
        Invalid("import jax\n@jax.jit\ndef f(x, debug=False):\n    if debug:\n        x = x + 1\n    return x\n"
                "y = f(1.0, debug=True)\n", 4, 8),
        Invalid("import jax\ndef ess(x, axis=0):\n    if axis < 0:\n        axis = axis + x.ndim\n    return x.sum(axis)\n"
                "def run(xs, axes):\n    return jax.vmap(ess)(xs, axes)\n", 3, 8),
        Invalid("import jax\n@jax.jit\ndef f(x):\n    if x > 0:\n        return x\n    return -x\n", 4, 8, "jnp.where"),
        Invalid("from jax import jit as J\n@J\ndef f(x):\n    return x if x.sum() > 0 else -x\n", 4, 17),
        Invalid("import jax\ndef f(x):\n    while x < 10:\n        x = x * 2\n    return x\ng = jax.jit(f)\n", 3, 11,
                "lax.while_loop"),
        Invalid("import jax\nimport jax.numpy as jnp\n@jax.vmap\ndef f(x):\n    assert jnp.all(x > 0)\n    return x\n",
                5, 12),
        Invalid("import jax\n@jax.jit\ndef f(x, y):\n    if x > 0 and y > 0:\n        return x\n    return y\n", 4, 8),
        # ...but a true flag reaches the traced test.
        Invalid("import jax\nfrom functools import partial\ndef g(x, check):\n    if check and x.sum() > 0:\n"
                "        return x\n    return -x\ng_fast = jax.jit(partial(g, check=True))\n", 4, 18),
        Invalid("import jax\n@jax.jit\ndef f(x):\n    return max(x, 0.0)\n", 4, 12, "jnp.maximum"),
        Invalid("import jax\nfrom jax import lax\ndef body(i, acc):\n    if acc > 100:\n        return acc\n"
                "    return acc + i\nout = lax.fori_loop(0, 10, body, 0)\n", 4, 8),
        Invalid("import jax\n@jax.jit\ndef f(x, n):\n    if n > 0:\n        return x * n\n    return x\n", 4, 8,
                "if 'n' is a Python configuration value, mark it static with `static_argnames=('n',)`"),
        Invalid("import jax\n@jax.jit\ndef f(x):\n    y = x * 2\n    if not y:\n        return x\n    return y\n", 5, 12),
        Invalid("import jax\nimport jax.numpy as jnp\n@jax.jit\ndef f(x):\n    total = 0.0\n    for v in x:\n"
                "        if total > 1.0:\n            break\n        total = total + v\n    return total\n", 7, 12),
    )

    def __init__(self, context: RuleContext) -> None:
        super().__init__(context)
        self._checked: set[int] = set()

    def visit_If(self, node: cst.If) -> None:
        self._check_test(node.test, _CONSTRUCTS[cst.If])

    def visit_While(self, node: cst.While) -> None:
        self._check_test(node.test, _CONSTRUCTS[cst.While])

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._check_test(node.test, _CONSTRUCTS[cst.IfExp])

    def visit_Assert(self, node: cst.Assert) -> None:
        self._check_test(node.test, _CONSTRUCTS[cst.Assert])

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        if id(node) not in self._checked:  # outside a test the last operand is returned, not converted
            self._check_converted(node, None, f"`{_keyword(node)}`")

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
        if isinstance(node.operator, cst.Not) and id(node) not in self._checked:
            self._check_converted(node, None, "`not`")

    def visit_Comparison(self, node: cst.Comparison) -> None:
        """`lo < v <= hi` is `lo < v and v <= hi`: Python converts the first comparison to bool."""
        if len(node.comparisons) < 2 or id(node) in self._checked:
            return
        first = node.comparisons[0]
        if not isinstance(first.operator, _ORDERING):
            return
        if any(self.model.is_traced(side) for side in (node.left, first.comparator)):
            self.report(node, f"a chained comparison is an implicit `and`: Python converts its first comparison to "
                              f"bool, but the value is traced under {self.transform_name()}; use "
                              "`(lo < v) & (v <= hi)`")

    def visit_Call(self, node: cst.Call) -> None:
        name = self.model.call_name(node)
        if name not in ("builtins.min", "builtins.max"):
            return
        for arg in node.args:
            if self.model.is_traced(arg.value):
                builtin = name.rpartition(".")[2]
                replacement = "jnp.maximum" if builtin == "max" else "jnp.minimum"
                self.report(node, f"builtin `{builtin}()` compares traced values with Python `bool` under "
                                  f"{self.transform_name()}; use `{replacement}` (or `jnp.{builtin}` for one array)")
                return

    def _check_test(self, test: cst.BaseExpression, construct: str) -> None:
        """A test is converted with `bool()` operand by operand through `and`/`or`/`not`."""
        self._check_converted(test, construct, construct)

    def _check_converted(self, root: cst.BaseExpression, construct: str | None, label: str) -> None:
        """Report the first operand of the `and`/`or`/`not` tree at `root` that Python converts to bool
        while the value is traced: one finding per tree, however long the chain. With `construct`
        (a test) every operand is converted and named after it; in a value, an operand is converted
        when it is left of an `and`/`or` or under `not`, and named after that operator. Iterative:
        chains may be thousands of operands long."""
        stack: list[tuple[cst.BaseExpression, bool, str]] = [(root, construct is not None, label)]
        while stack:
            node, converted, name = stack.pop()
            if isinstance(node, cst.BooleanOperation):
                self._checked.add(id(node))
                keyword = construct or f"`{_keyword(node)}`"
                stack.append((node.right, converted, name))
                stack.append((node.left, True, keyword))
            elif isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
                self._checked.add(id(node))
                stack.append((node.expression, True, construct or "`not`"))
            elif converted and self._check_operand(node, name):
                return

    def _check_operand(self, operand: cst.BaseExpression, construct: str) -> bool:
        if not self.model.is_traced(operand) or self.model.is_python_container(operand):
            return False  # the truth value of a Python list/tuple/dict is its (static) length
        self._checked.add(id(operand))  # one finding per operand (a chained comparison included)
        hint = "use `jnp.where` or `lax.cond`/`lax.switch`"
        if construct == "`while`":
            hint = "use `lax.while_loop` or `lax.fori_loop`"
        elif construct == "`assert`":
            hint = "use `jax.experimental.checkify` or check outside the traced function"
        hint += static_hint(self.model, operand, self.context.function)
        self.report(operand, f"Python {construct} needs a concrete bool but the value is traced under "
                             f"{self.transform_name()}; {hint}")
        return True


_ORDERING = (cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual, cst.Equal, cst.NotEqual)


def _keyword(node: cst.BooleanOperation) -> str:
    return "and" if isinstance(node.operator, cst.And) else "or"
