"""JAX104 impure-call-in-traced-function."""

from __future__ import annotations

import libcst as cst

from jaxcheck.analyzer.rule import Invalid, Rule, Valid

_IMPURE_MODULES = ("numpy.random.", "random.", "time.", "uuid.", "secrets.")
_PURE_CONSTRUCTORS = frozenset(
    {
        "numpy.random.default_rng", "numpy.random.Generator", "numpy.random.RandomState",
        "numpy.random.SeedSequence", "numpy.random.PCG64", "numpy.random.Philox", "random.Random", "uuid.UUID",
    }
)
_IMPURE_CALLS = frozenset(
    {"datetime.datetime.now", "datetime.datetime.today", "datetime.datetime.utcnow", "datetime.date.today",
     "os.urandom", "os.getrandom"}
)


class ImpureCallInTracedFunction(Rule):
    """
    ## What it does
    Finds calls whose result changes from call to call inside code traced by `jax.jit`, `pmap`,
    `lax` bodies and other caching transforms: `numpy.random` functions and `Generator` methods (not
    those of a generator the traced code makes with an explicit seed: it draws the same numbers on
    every trace), the `random` module, `time.*`, `datetime.now`/`today`, `os.urandom`, `uuid.*`, and `next()` on an
    iterator that lives outside the traced function.

    ## Why is this bad?
    The call runs once, while tracing, and its result becomes a constant of the compiled program:
    every later call reuses the same "random" number, timestamp or batch.

    ## Example
    ```python
    import jax
    import numpy as np

    @jax.jit
    def add_noise(x):
        return x + np.random.normal(size=x.shape)
    ```

    ## Use instead
    ```python
    import jax

    @jax.jit
    def add_noise(x, key):
        return x + jax.random.normal(key, x.shape)
    ```
    Pass a `jax.random` key (split it for every call), pass timestamps and batches as arguments.

    ## Fix safety
    No fix is offered: a `jax.random` key must be threaded through the callers.

    ## Runtime check
    At run time, on each compile the function is traced twice more through fresh wrappers; when the two
    programs differ (a literal, a captured constant, the operations), the first differing operation's line
    is reported, whatever the hidden state was (`np.random`, `time.time()`, a counter).
    """

    code = "JAX104"
    explains_trace = True
    name = "impure-call-in-traced-function"
    summary = "`np.random`, `random`, `time`, `datetime.now`, `os.urandom`, `uuid`, outer `next()` frozen at trace time"

    VALID = (
        Valid("import jax\n@jax.jit\ndef f(x, key):\n    return x + jax.random.normal(key, x.shape)\n"),
        Valid("import numpy as np\ndef f(x):\n    return x + np.random.normal()\n"),
        Valid("import jax\nimport time\n@jax.jit\ndef f(x):\n    return x\nstart = time.time()\nf(1.0)\n"),
        Valid("import jax\nimport numpy as np\n@jax.jit\ndef f(x):\n    return x * np.pi\n"),
        Valid("import jax\n@jax.jit\ndef f(xs):\n    it = iter(xs)\n    return next(it)\n"),
        Valid("import jax\nimport random\ndef loss(w):\n    return w * random.random()\ng = jax.grad(loss)\n"),
        Valid("import jax\nimport numpy as np\nrng = np.random.default_rng(0)\nnoise = rng.normal(size=3)\n"
              "@jax.jit\ndef f(x):\n    return x + noise\n"),
        Valid("import jax\nfrom jax import random\n@jax.jit\ndef f(key):\n    return random.uniform(key)\n"),
        # A generator made in the trace with a fixed seed gives the same constants on every trace.
        Valid("import jax\nimport numpy as np\n@jax.jit\ndef features(x):\n    rng = np.random.default_rng(0)\n"
              "    return x @ rng.normal(size=(x.shape[-1], 8))\n"),
        Valid("import jax\nimport datetime\n@jax.jit\ndef f(x):\n    return x * datetime.timedelta(days=1).days\n"),
        Valid("import jax\nimport numpy as np\ndef jitter():\n    return np.random.rand()\n"
              "@jax.jit\ndef f(x):\n    return x\ny = f(1.0) + jitter()\n"),
    )
    INVALID = (
        Invalid("import jax\nimport numpy as np\n@jax.jit\ndef f(x):\n    return x + np.random.rand()\n", 5, 16,
                "jax.random"),
        Invalid("import jax\nimport random\n@jax.jit\ndef f(x):\n    return x * random.random()\n", 5, 16),
        Invalid("import jax\nimport time\n@jax.jit\ndef f(x):\n    return x + time.time()\n", 5, 16),
        Invalid("import jax\nimport numpy as np\nrng = np.random.default_rng(0)\n@jax.jit\ndef f(x):\n"
                "    return x + rng.normal()\n", 6, 16),
        Invalid("import jax\nimport numpy as np\n@jax.jit\ndef f(x):\n    rng = np.random.default_rng()\n"
                "    return x + rng.normal()\n", 6, 16),
        # A seed that is a name may be None (entropy); a module-level generator keeps its state across traces.
        Invalid("import jax\nimport numpy as np\nfrom functools import partial\n"
                "@partial(jax.jit, static_argnames='seed')\ndef f(x, seed=None):\n    rng = np.random.default_rng(seed)\n"
                "    return x + rng.normal()\n", 7, 16),
        Invalid("import jax\nimport numpy as np\nRNG = np.random.default_rng(0)\n@jax.jit\ndef f(x):\n    rng = RNG\n"
                "    return x + rng.normal()\n", 7, 16),
        Invalid("import jax\nfrom datetime import datetime\n@jax.jit\ndef f(x):\n    t = datetime.now()\n"
                "    return x\n", 5, 9),
        Invalid("import jax\nimport os\n@jax.jit\ndef f(x):\n    seed = os.urandom(4)\n    return x\n", 5, 12),
        Invalid("import jax\nimport uuid\n@jax.jit\ndef f(x):\n    run_id = uuid.uuid4()\n    return x\n", 5, 14),
        Invalid("import jax\nbatches = iter(range(10))\n@jax.jit\ndef f(x):\n    return x + next(batches)\n", 5, 16,
                "next"),
        Invalid("import jax\nfrom jax import lax\nimport numpy as np\ndef body(c, x):\n"
                "    return c + np.random.uniform(), x\nlax.scan(body, 0.0, xs)\n", 5, 16),
        Invalid("import jax\nimport numpy as np\ndef jitter():\n    return np.random.rand()\n"
                "@jax.jit\ndef f(x):\n    return x + jitter()\n", 4, 12),
        Invalid("import jax\nimport numpy as np\ndef noise(n, scale):\n    return np.random.normal(size=n) * scale\n"
                "@jax.jit\ndef f(x):\n    return x + noise(x.shape[0], 4)\n", 4, 12),
    )

    def visit_Call(self, node: cst.Call) -> None:
        trace = self.trace
        if trace is None or not trace.cached:
            return
        what = self._impure(node)
        if what is not None:
            self.report(node, f"{what} is evaluated once while tracing under {self.transform_name()}: every call of "
                              "the compiled function reuses that value; pass a `jax.random` key (or the value) "
                              "as an argument")

    def _impure(self, node: cst.Call) -> str | None:
        name = self.model.call_name(node)
        if name is not None:
            if name in _IMPURE_CALLS or (name.startswith(_IMPURE_MODULES) and name not in _PURE_CONSTRUCTORS):
                return f"`{name}`"
            if name == "builtins.next" and node.args and isinstance(node.args[0].value, cst.Name):
                return self._outer_iterator(node.args[0].value)
            return None
        func = node.func
        if (isinstance(func, cst.Attribute) and self.model.is_numpy_generator(func.value)
                and not self.model.is_fresh_seeded_generator(func.value)):
            return f"NumPy generator method `.{func.attr.value}()`"
        return None

    def _outer_iterator(self, name: cst.Name) -> str | None:
        if self.model.outer_state(name) is None:
            return None
        return f"`next({name.value})` on an iterator outside the traced function"
