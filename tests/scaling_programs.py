"""Generated families of ordinary JAX code, each as a function of a size `n`, for the cost bounds: the
step-count test (`test_scaling.py`, deterministic) and the scaling benchmark (`bench/bench_scaling.py`,
time and memory). Each family returns a project as {relative path: source}; doubling `n` doubles the
code, so a model whose cost is linear in the code costs twice as much.

Every family plants a bug at its far end where it can (a Python `if` on a traced value reached only
through all of the generated code), so a run that gives up early is seen, not only a slow one.
"""

from __future__ import annotations

from collections.abc import Callable

Project = dict[str, str]


def helper_chain_conditional(n: int) -> Project:
    """Issue 30's physics step: values threaded through helper pairs (`a, b = f(a, b), g(b, a)`), ending in
    a conditional expression; the dependency DAG has 2^n paths. The bug: `get` branches on its traced
    argument."""
    helpers = ["import jax.numpy as jnp", ""]
    for i in range(n):
        helpers += [f"def f{i}(sys, a, b):", "    return a * sys + b", "",
                    f"def g{i}(sys, a, b):", "    return jnp.sin(a) + b", ""]
    helpers += ["def get(sys, a):", "    if a > 0:", "        return a", "    return -a", ""]
    step = ["import jax", "from pkg import helpers as h", "",
            "def step(sys, state, act, debug=False):",
            "    a = h.f0(sys, state, act)", "    b = h.g0(sys, a, state)"]
    step += [f"    a, b = h.f{i}(sys, a, b), h.g{i}(sys, b, a)" for i in range(1, n)]
    step += ["    c = h.get(sys, a) if debug else None", "    d = h.get(sys, b)", "    return a, b, c, d", "",
             "step_jit = jax.jit(step)", ""]
    return {"pkg/__init__.py": "", "pkg/helpers.py": "\n".join(helpers), "pkg/step.py": "\n".join(step)}


def threaded_state_guarded(n: int) -> Project:
    """State threaded through `n` helper steps with `if debug:` and `if x is None:` blocks between them."""
    lines = ["import jax", "import jax.numpy as jnp", "", "def advance(state, force, dt):",
             "    return state + dt * force", "", "def check(state):", "    if state.sum() > 0:",
             "        return state", "    return -state", "",
             "def step(state, force, dt, debug=False, damping=None):"]
    for i in range(n):
        lines += [f"    state = advance(state, force, dt * {i + 1})", f"    force = jnp.cos(state) * {i}"]
        if i % 3 == 0:
            lines += ["    if debug:", "        state = check(state)"]
        if i % 5 == 0:
            lines += ["    if damping is None:", "        force = force * 0.5"]
    lines += ["    return check(state)", "", "step_jit = jax.jit(step)", ""]
    return {"physics.py": "\n".join(lines)}


def nested_branches(n: int) -> Project:
    """`n` blocks of branches nested three deep in one jitted function."""
    lines = ["import jax", "import jax.numpy as jnp", "", "@jax.jit", "def f(x, y, flag=True):",
             "    a, b = x, y"]
    for i in range(n):
        lines += ["    if flag:", f"        a = jnp.tanh(a) + {i}", "        if a.ndim == 1:",
                  "            b = b * a", "            if b.shape[0] > 2:", "                a = a - b",
                  "            else:", "                b = a", "        else:", "            a = b",
                  "    else:", "        b = jnp.exp(a)"]
    lines += ["    if a.sum() > 0:", "        return a", "    return b", ""]
    return {"branches.py": "\n".join(lines)}


def long_jitted(n: int) -> Project:
    """One jitted function of `4n` straight-line statements."""
    lines = ["import jax", "import jax.numpy as jnp", "", "@jax.jit", "def f(x, w):"]
    for i in range(n):
        lines += [f"    h{i} = jnp.dot(w, x) + {i}", f"    x = jax.nn.relu(h{i})",
                  f"    w = w * 0.9 + x[:, None] * {i}", f"    s{i} = x.sum() + w.mean()"]
    lines += [f"    if s{n - 1} > 0:", "        return x", "    return w", ""]
    return {"model.py": "\n".join(lines)}


def key_split_loops(n: int) -> Project:
    """`n` loops that split a key and draw from it (correct code), then a reuse at the end."""
    lines = ["import jax", "", "def sample(key, x):"]
    for i in range(n):
        lines += ["    for _ in range(3):", "        key, sub = jax.random.split(key)",
                  "        x = x + jax.random.normal(sub, x.shape)"]
        if i % 4 == 0:
            lines += ["    key, sub = jax.random.split(key)", "    x = x * jax.random.uniform(sub, x.shape)"]
    lines += ["    noise = jax.random.normal(key, x.shape)", "    more = jax.random.normal(key, x.shape)",
              "    return x + noise + more", ""]
    return {"sampling.py": "\n".join(lines)}


def deep_loops(depth: int) -> str:
    """A jitted function whose loops are nested `depth` deep (at most 20: CPython's limit), each splitting
    a key, ending in a bug. A fixpoint per loop would interpret the innermost body 2^depth times."""
    lines = ["import jax", "", "@jax.jit", "def f(x, key):"]
    for level in range(1, depth + 1):
        lines += ["    " * level + f"for i{level} in range(3):",
                  "    " * (level + 1) + "key, sub = jax.random.split(key)",
                  "    " * (level + 1) + "x = x + jax.random.normal(sub)"]
    lines += ["    if x > 0:", "        return x", "    return -x", ""]
    return "\n".join(lines)


def nested_loops(n: int) -> Project:
    """`n` files, each a function with loops nested 12 deep (see :func:`deep_loops`)."""
    return {f"loops{i}.py": deep_loops(12) for i in range(n)}


def module_chain(n: int) -> Project:
    """`n` modules, each calling the next; the jitted root in the first, the bug in the last."""
    files = {"chain/__init__.py": ""}
    for i in range(n):
        if i < n - 1:
            body = [f"from chain import m{i + 1}", "", "def f(x):", f"    return m{i + 1}.f(x * 2)", ""]
        else:
            body = ["def f(x):", "    if x > 0:", "        return x", "    return -x", ""]
        files[f"chain/m{i}.py"] = "\n".join(body)
    files["main.py"] = "\n".join(["import jax", "from chain import m0", "", "run = jax.jit(m0.f)", ""])
    return files


def wide_modules(n: int) -> Project:
    """A jitted main step calling into `n` modules, each of which uses a shared utility module."""
    files = {"wide/__init__.py": "",
             "wide/util.py": "import jax.numpy as jnp\n\ndef norm(x):\n    return x / jnp.linalg.norm(x)\n"}
    calls = []
    for i in range(n):
        files[f"wide/part{i}.py"] = "\n".join(["from wide import util", "", "def apply(x):",
                                               f"    y = util.norm(x) * {i}", "    if y.sum() > 0:",
                                               "        return y", "    return x", ""])
        calls.append(f"    x = part{i}.apply(x)")
    imports = [f"from wide import part{i}" for i in range(n)]
    files["main.py"] = "\n".join(["import jax", *imports, "", "@jax.jit", "def step(x):", *calls,
                                  "    return x", ""])
    return files


def many_small_files(n: int) -> Project:
    """`n` independent small files, each with a jitted function and a bug."""
    return {f"scripts/s{i}.py": "\n".join(["import jax", "import jax.numpy as jnp", "", "@jax.jit",
                                            "def f(x):", f"    y = jnp.sin(x) * {i}", "    if y > 0:",
                                            "        return y", "    return x", ""])
            for i in range(n)}


def big_literals(n: int) -> Project:
    """A module with a dict of `n` entries and a table of `4n` numbers read by a jitted function."""
    entries = [f"    'w{i}': {i}.5," for i in range(n)]
    table = ", ".join(str(i) for i in range(4 * n))
    lines = ["import jax", "import jax.numpy as jnp", "", "CONFIG = {", *entries, "}",
             f"TABLE = [{table}]", "", "@jax.jit", "def f(x):", "    y = x * CONFIG['w0'] + jnp.asarray(TABLE).sum()",
             "    if y > 0:", "        return y", "    return x", ""]
    return {"tables.py": "\n".join(lines)}


FAMILIES: dict[str, Callable[[int], Project]] = {
    "helper_chain_conditional": helper_chain_conditional,
    "threaded_state_guarded": threaded_state_guarded,
    "nested_branches": nested_branches,
    "long_jitted": long_jitted,
    "key_split_loops": key_split_loops,
    "nested_loops": nested_loops,
    "module_chain": module_chain,
    "wide_modules": wide_modules,
    "many_small_files": many_small_files,
    "big_literals": big_literals,
}
"""Every family, by name."""
