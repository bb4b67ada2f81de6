"""Small programs, one per runtime check: a positive (the line that must be reported ends with
`# <CODE>`) and a near-miss negative that must produce no finding at all. Each runs as a script, under
every switch (context manager, `jaxcheck run`, `pytest --jaxcheck`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

HEADER = "import jax, jax.numpy as jnp, numpy as np\n"
_MARK = re.compile(r"#\s*(JAX\d{3})\s*$")


@dataclass(frozen=True)
class Program:
    name: str
    source: str
    nans: bool = False
    index_checks: bool = False

    @property
    def text(self) -> str:
        return HEADER + self.source.strip("\n") + "\n"

    @property
    def expected(self) -> set[tuple[str, int]]:
        """`(code, line)` of every marked line of :attr:`text`."""
        return {(m.group(1), n) for n, line in enumerate(self.text.splitlines(), 1) if (m := _MARK.search(line))}


POSITIVE = [
    Program("stale_global", """
scale = 2.0
@jax.jit
def f(x):
    return x * scale  # JAX101
f(jnp.ones(3))
scale = 3.0
f(jnp.ones(3))
"""),
    Program("stale_global_read_by_a_helper", """
offset = np.zeros(3)
def shift(x):
    return x + offset  # JAX101
@jax.jit
def f(x):
    return shift(x) * 2
f(jnp.ones(3))
offset = np.ones(3)
f(jnp.ones(3))
"""),
    Program("stale_global_changed_in_place", """
CONFIG = {"lr": 0.1}
@jax.jit
def f(x):
    return x * CONFIG["lr"]  # JAX101
f(jnp.ones(3))
CONFIG["lr"] = 0.01
f(jnp.ones(3))
"""),
    Program("print_while_tracing", """
@jax.jit
def f(x):
    print("x is", x)  # JAX103
    return x + 1
f(jnp.ones(2)); f(jnp.ones(2))
"""),
    Program("hidden_state", """
@jax.jit
def f(x):
    return x + np.random.rand()  # JAX104
f(jnp.ones(2))
"""),
    Program("retrace_budget", """
@jax.jit
def f(x):
    return x.sum()
for n in range(1, 13):
    f(jnp.ones(n))  # JAX501
"""),
    Program("jit_of_a_fresh_lambda_per_iteration", """
for step in range(12):
    jax.jit(lambda x: x * 2)(jnp.ones(3))  # JAX501
"""),
    Program("legacy_key_reused_across_calls", """
@jax.jit
def sample(key):
    return jax.random.normal(key, (2,))
key = jax.random.PRNGKey(0)
a = sample(key)
b = sample(key)  # JAX401
"""),
    Program("key_in_a_pytree_reused_across_calls", """
@jax.jit
def sample(state):
    return state["w"] + jax.random.normal(state["key"], (2,))
state = {"w": jnp.zeros(2), "key": jax.random.key(3)}
sample(state)
sample(state)  # JAX401
"""),
    Program("typed_key_reused_in_one_program", """
@jax.jit
def noise(key):
    a = jax.random.normal(key, (2,))
    return a + jax.random.uniform(key, (2,))  # JAX401
noise(jax.random.key(1))
"""),
    Program("branch_on_python_scalar", """
@jax.jit
def f(x, mode):
    if mode > 1:  # JAX301
        return x
    return -x
try:
    f(jnp.ones(2), 2)
except jax.errors.TracerBoolConversionError as error:
    assert "static_argnames=('mode',)" in error.__notes__[-1], error.__notes__
"""),
    Program("int_of_traced_array", """
@jax.jit
def f(x):
    return jnp.zeros(3) + int(x[0])  # JAX302
try:
    f(jnp.ones(2))
except jax.errors.ConcretizationTypeError as error:
    assert "static_argnames" not in error.__notes__[-1] and "JAX302" in error.__notes__[-1]
"""),
    Program("boolean_mask_index", """
@jax.jit
def f(x):
    return x[x > 0].sum()  # JAX303
try:
    f(jnp.ones(2))
except jax.errors.NonConcreteBooleanIndexError as error:
    assert "JAX303" in error.__notes__[-1]
"""),
    Program("leaked_tracer", """
leaked = []
@jax.jit
def f(x):
    leaked.append(x)  # JAX102
    return x
f(jnp.ones(2))
g = jax.jit(lambda y: y + leaked[0])  # JAX102
try:
    g(jnp.ones(2))
except jax.errors.UnexpectedTracerError as error:
    assert "JAX102" in error.__notes__[-1] and "stored on line" in error.__notes__[-1], error.__notes__
"""),
    Program("nan_masked_by_where", """
@jax.jit
def f(x):
    y = jnp.where(x > 0, jnp.log(x), 0.0)  # JAX701
    return y.sum()
f(jnp.array([1.0, -2.0]))
f(jnp.array([1.0, 2.0]))
""", nans=True),
    Program("nan_in_backward_pass", """
def norm(x):
    return jnp.sum(jnp.where(x > 0, jnp.sqrt(x), 0.0))  # JAX701
step = jax.jit(jax.grad(norm))
step(jnp.array([0.0, 1.0]))
""", nans=True),
    Program("nan_in_an_eager_gradient", """
def loss(x):
    return jnp.where(x > 0, jnp.log(x), 0.0).sum()  # JAX701
jax.grad(loss)(jnp.array([1.0, 0.0]))
""", nans=True),
]

POSITIVE += [
    Program("key_closed_over_by_a_loop_body", """
@jax.jit
def f(key, x):
    def body(i, total):
        return total + jax.random.normal(key, ())  # JAX401
    return jax.lax.fori_loop(0, 3, body, x)
f(jax.random.key(0), 0.0)
"""),
    Program("key_carried_unchanged_through_a_scan", """
@jax.jit
def f(key, x):
    def body(carry, _):
        k, total = carry
        return (k, total + jax.random.normal(k, ())), None  # JAX401
    return jax.lax.scan(body, (key, x), None, length=3)[0][1]
f(jax.random.key(0), 0.0)
"""),
    Program("out_of_bounds_index", """
@jax.jit
def f(x, i):
    y = x[i]  # JAX203
    z = x.at[i - 1].add(1.0)  # JAX203
    return y + z.sum()
f(jnp.arange(5.0), 2)
f(jnp.arange(5.0), 6)
""", index_checks=True),
    Program("out_of_bounds_in_a_scan_body_and_take", """
@jax.jit
def f(x, idx):
    def body(total, i):
        return total + x[i], None  # JAX203
    return jax.lax.scan(body, 0.0, idx)[0] + jnp.take(jnp.arange(4), idx).sum()  # JAX203
f(jnp.arange(4.0), jnp.array([0, 1]))
f(jnp.arange(4.0), jnp.array([0, 5]))
""", index_checks=True),
]

NEGATIVE = [
    Program("stale_global_rebound_to_equal_value", """
scale = 2.0
@jax.jit
def f(x):
    return x * scale
f(jnp.ones(3))
scale = float("2.0")  # a new object with an equal value
f(jnp.ones(3))
scale = 3.0
f(jnp.ones(4))  # retraces: the new program reads the new value
"""),
    Program("cache_filled_in_place", """
CACHE = {}
STEPS = [1, 2]
@jax.jit
def f(x):
    CACHE.setdefault("fn", jnp.sin)
    return x * len(STEPS)
f(jnp.ones(3))
CACHE["other"] = object()  # a cache of objects, not data the trace baked in
STEPS[0] = 1  # the same contents
f(jnp.ones(3)); f(jnp.ones(3)); f(jnp.ones(3))
"""),
    Program("unread_items_changed_in_place", """
CONFIG = {"lr": 0.1, "epoch": 0}
BUF = np.zeros((4, 3))
@jax.jit
def f(x):
    return x * CONFIG["lr"] + jnp.zeros(BUF.shape[1])
for epoch in range(8):
    CONFIG["epoch"] = epoch  # an item the trace never read
    BUF[epoch % 4] = epoch  # read only for its shape
    f(jnp.ones(3))
"""),
    Program("debug_print", """
@jax.jit
def f(x):
    jax.debug.print("x is {}", x)
    return x + 1
f(jnp.ones(2)); f(jnp.ones(2))
"""),
    Program("random_from_a_key", """
@jax.jit
def f(x, key):
    return x + jax.random.uniform(key) + np.float32(0.5)
f(jnp.ones(2), jax.random.key(0))
"""),
    Program("retraces_within_budget", """
@jax.jit
def f(x):
    return x.sum()
for n in range(1, 11):
    f(jnp.ones(n))
for _ in range(20):
    f(jnp.ones(3))
"""),
    Program("jit_applied_once_outside_the_loop", """
double = jax.jit(lambda x: x * 2)
for step in range(12):
    double(jnp.ones(3))
"""),
    Program("legacy_key_split_each_call", """
@jax.jit
def sample(key):
    return jax.random.normal(key, (2,))
key = jax.random.PRNGKey(0)
for _ in range(3):
    key, sub = jax.random.split(key)
    sample(sub)
"""),
    Program("key_in_a_pytree_replaced_each_call", """
@jax.jit
def sample(state):
    key, sub = jax.random.split(state["key"])
    return {"w": state["w"] + jax.random.normal(sub, (2,)), "key": key}
state = {"w": jnp.zeros(2), "key": jax.random.key(3)}
for _ in range(3):
    state = sample(state)
"""),
    Program("typed_key_split_in_one_program", """
@jax.jit
def noise(key):
    a_key, b_key = jax.random.split(key)
    return jax.random.normal(a_key, (2,)) + jax.random.uniform(b_key, (2,))
noise(jax.random.key(1))
noise(jax.random.key(2))
"""),
    Program("key_split_in_each_loop_iteration", """
@jax.jit
def f(key, x):
    def body(carry, _):
        k, total = carry
        k, sub = jax.random.split(k)
        return (k, total + jax.random.normal(sub, ())), None
    return jax.lax.scan(body, (key, x), None, length=3)[0][1]
f(jax.random.key(0), 0.0)
"""),
    Program("branch_on_static_argument", """
from functools import partial
@partial(jax.jit, static_argnames=("mode",))
def f(x, mode):
    if mode > 1:
        return x
    return -x
f(jnp.ones(2), 2)
"""),
    Program("static_shape_of_traced_array", """
@jax.jit
def f(x):
    return jnp.zeros(3) + int(x.shape[0])
f(jnp.ones(2))
"""),
    Program("mask_with_where", """
@jax.jit
def f(x):
    return jnp.where(x > 0, x, 0.0).sum()
f(jnp.ones(2))
"""),
    Program("tracer_returned_not_leaked", """
@jax.jit
def f(x):
    return x * 2
kept = [f(jnp.ones(2))]
g = jax.jit(lambda y: y + kept[0])
g(jnp.ones(2))
"""),
    Program("log_made_safe", """
@jax.jit
def f(x):
    safe = jnp.where(x > 0, x, 1.0)
    return jnp.where(x > 0, jnp.log(safe), 0.0).sum()
f(jnp.array([1.0, -2.0]))
f(jnp.array([1.0, 2.0]))
""", nans=True),
    Program("sqrt_made_safe_in_backward_pass", """
def norm(x):
    safe = jnp.where(x > 0, x, 1.0)
    return jnp.sum(jnp.where(x > 0, jnp.sqrt(safe), 0.0))
step = jax.jit(jax.grad(norm))
step(jnp.array([0.0, 1.0]))
""", nans=True),
    Program("eager_gradient_made_safe", """
def loss(x):
    safe = jnp.where(x > 0, x, 1.0)
    return jnp.where(x > 0, jnp.log(safe), 0.0).sum()
jax.grad(loss)(jnp.array([1.0, 0.0]))
jax.vmap(jax.value_and_grad(loss))(jnp.array([[1.0, 0.0]]))
""", nans=True),
    Program("none_default_guarded", """
def loss(x, scale=None):
    if scale is None:
        scale = jnp.ones_like(x)
    return (jnp.sqrt(jnp.maximum(x, 0.0) + 1e-6) * scale).sum()
step = jax.jit(jax.value_and_grad(loss))
for _ in range(3):
    step(jnp.array([1.0, -1.0]))
    step(jnp.array([1.0, -1.0]), None)
    jax.grad(loss)(jnp.array([1.0, -1.0]), scale=None)
    jax.vmap(loss)(jnp.array([[1.0, -1.0]]))
""", nans=True),
    Program("in_bounds_in_a_scan_body_and_take_with_a_mode", """
@jax.jit
def f(x, idx):
    def body(total, i):
        return total + x[i], None
    return jax.lax.scan(body, 0.0, idx)[0] + jnp.take(x, idx + 3, mode="clip").sum()
f(jnp.arange(4.0), jnp.array([0, 3]))
""", index_checks=True),
    Program("index_in_bounds_or_mode_chosen", """
@jax.jit
def f(x, i):
    y = x[i]
    z = x.at[i + 1].set(0.0, mode="drop")
    w = x.at[i + 1].get(mode="fill", fill_value=0.0)
    s = jax.ops.segment_sum(x, jnp.array([0, 1, 2, 3, 9]), 5)
    return y + z.sum() + w + s.sum()
f(jnp.arange(5.0), 4)
f(jnp.arange(5.0), -5)
""", index_checks=True),
]
