"""JAX903 legacy-prng-key."""

from __future__ import annotations

import libcst as cst

from jaxcheck.analyzer import codegen
from jaxcheck.analyzer.rule import Invalid, NodeFix, Rule, Valid


class LegacyPrngKey(Rule):
    """
    ## What it does
    Finds calls of `jax.random.PRNGKey(seed)`, which makes a legacy key: a plain `uint32[2]` array.

    ## Why is this bad?
    `jax.random.key(seed)` makes a typed key (dtype `key<fry>`) that JAX can check: arithmetic on a key,
    indexing its raw words or passing it where an array of numbers is expected raises an error, and
    `jax_debug_key_reuse` (JAX's runtime key-reuse checker) tracks only typed keys. A legacy key is
    just numbers, so all of these mistakes pass silently.

    No single finding is a bug: a legacy key works. The rule matters when a project moves to typed keys
    to get those checks (a large codebase gives a finding per `PRNGKey` call, over a thousand in some);
    that is why it is off by default. Misuse of a key is JAX401's business, legacy or typed.

    ## Example
    ```python
    import jax

    key = jax.random.PRNGKey(0)
    ```

    ## Use instead
    ```python
    import jax

    key = jax.random.key(0)
    ```

    ## Fix safety
    The fix replaces `PRNGKey` with `key` in `jax.random.PRNGKey(...)` (through whatever name the
    module `jax.random` is bound to here, `random.PRNGKey` becoming `random.key`). It is unsafe: the
    key's type changes, so code that reads `key.shape` (now `()` instead of `(2,)`), indexes the key
    (`key[0]`), converts it with `np.asarray`, saves its raw words or passes it to a library that expects
    a legacy key changes meaning or fails; use `jax.random.key_data(key)` for the raw words. A
    `PRNGKey` imported by name (`from jax.random import PRNGKey`) gets no fix, since `key` would need an
    import of its own.
    """

    code = "JAX903"
    name = "legacy-prng-key"
    summary = "`jax.random.PRNGKey(seed)` where `jax.random.key(seed)` gets JAX's own key checks"
    default_enabled = False

    VALID = (
        Valid("import jax\nkey = jax.random.key(0)\n"),
        Valid("import jax\nkey = jax.random.key(0, impl='rbg')\n"),
        Valid("import numpy as np\nrng = np.random.default_rng(0)\n"),
        Valid("class random:\n    @staticmethod\n    def PRNGKey(seed):\n        return seed\nkey = random.PRNGKey(0)\n"),
        Valid("import jax\nkeys = jax.random.split(jax.random.key(0), 3)\n"),
        Valid("import jax\nkind = jax.random.PRNGKey\n"),
        Valid("import jax\nraw = jax.random.key_data(jax.random.key(0))\n"),
        Valid("import jax.random as jr\nkey = jr.key(1)\nkey, sub = jr.split(key)\n"),
    )
    INVALID = (
        Invalid("import jax\nkey = jax.random.PRNGKey(0)\n", 2, 7, "jax.random.key",
                fix="import jax\nkey = jax.random.key(0)\n"),
        Invalid("from jax import random\nkey = random.PRNGKey(seed)\n", 2, 7,
                fix="from jax import random\nkey = random.key(seed)\n"),
        Invalid("import jax.random as jr\nkeys = jr.split(jr.PRNGKey(42), 4)\n", 2, 17,
                fix="import jax.random as jr\nkeys = jr.split(jr.key(42), 4)\n"),
        Invalid("from jax.random import PRNGKey\nkey = PRNGKey(0)\n", 2, 7),
        Invalid("import jax\ndef init(seed):\n    return jax.random.PRNGKey(seed, impl='threefry2x32')\n", 3, 12,
                fix="import jax\ndef init(seed):\n    return jax.random.key(seed, impl='threefry2x32')\n"),
        Invalid("import jax\nkeys = [jax.random.PRNGKey(i) for i in range(3)]\n", 2, 9,
                fix="import jax\nkeys = [jax.random.key(i) for i in range(3)]\n"),
        Invalid("import jax\n@jax.jit\ndef f(seed):\n    return jax.random.PRNGKey(seed)\n", 4, 12),
        Invalid("from jax import random as jrandom\nkey = jrandom.PRNGKey(0)\n", 2, 7,
                fix="from jax import random as jrandom\nkey = jrandom.key(0)\n"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if self.model.call_name(node) != "jax.random.PRNGKey":
            return
        fix = None
        func = node.func
        if isinstance(func, cst.Attribute) and self.model.qualified_name(func.value) == "jax.random":
            fix = NodeFix("Use `jax.random.key`", ((func, f"{codegen.source(func.value)}.key"),), "unsafe")
        self.report(node, "`jax.random.PRNGKey` makes a legacy `uint32[2]` key (not a bug by itself); "
                          "`jax.random.key(...)` makes a typed key that JAX checks (misuse raises, and "
                          "`jax_debug_key_reuse` tracks it)", fix)
