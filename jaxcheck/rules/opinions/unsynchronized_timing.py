"""JAX902 unsynchronized-timing."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import libcst as cst

from jaxcheck.analyzer import codegen
from jaxcheck.analyzer.rule import Invalid, NodeFix, Rule, Valid
from jaxcheck.analyzer.semantics.jax_api import TIMERS
from jaxcheck.analyzer.tree import child_nodes

_TIMEIT = frozenset({"timeit.timeit", "timeit.repeat"})
_NESTED_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


@dataclass(slots=True)
class _Work:
    """JAX work dispatched and not waited for yet: the call, and the names its result is bound to."""

    call: cst.Call
    names: frozenset[str]


class UnsynchronizedTiming(Rule):
    """
    ## What it does
    Finds JAX work timed between two clock reads without waiting for its result: `t0 = time.time()`
    (or `perf_counter()`, `monotonic()`, `timeit.default_timer()`, ...), then a call of a jitted function
    (`@jax.jit`, `step = jax.jit(f)`, `jax.jit(f)(x)`) or of a `jax.numpy`/`lax`/`random` function,
    then the second clock read, with nothing in between that waits for the call's result:
    `.block_until_ready()`, `jax.block_until_ready(...)`, a host transfer (`np.asarray(y)`, `y.item()`,
    `float(y)`, `print(y)`) or any other use of the result outside JAX calls. The same holds for
    `timeit.timeit(lambda: f(x))`, whose lambda returns the unfinished result.

    The finding is the last such call before the second clock read (the one whose result nobody waited
    for). Only straight-line code of one body is read: the clock reads must be statements of the same
    block (loops, `with` and `if` blocks between them are read in order; statements a `;` joins on one
    line one by one). Code that passes the result
    anywhere else (a list, a helper, a logger) is left alone, since that may wait for it.

    ## Why is this bad?
    JAX dispatches work asynchronously: the call returns as soon as the computation is queued, long
    before it finishes. The measured time is the dispatch time (plus whatever happened to finish), not
    the computation, and benchmarks built this way report impossible speedups.

    ## Example
    ```python
    import time
    import jax

    @jax.jit
    def step(x):
        return x @ x

    t0 = time.perf_counter()
    y = step(x)
    elapsed = time.perf_counter() - t0
    ```

    ## Use instead
    ```python
    t0 = time.perf_counter()
    y = jax.block_until_ready(step(x))
    elapsed = time.perf_counter() - t0
    ```

    ## Fix safety
    The fix wraps the call in `jax.block_until_ready(...)`, which waits for any pytree of arrays (a tuple
    such as `loss, grads = step(p)` or `jnp.linalg.eigh(m)` too, where `.block_until_ready()` would raise
    `AttributeError`). It is written with the module's own name for `jax` (`import jax as J` gives
    `J.block_until_ready(...)`, `from jax import block_until_ready` the bare name); when the module imports
    neither at its top level, no fix is offered. It is unsafe: inside a loop it waits on every iteration,
    which measures something slightly different from waiting once at the end.
    """

    code = "JAX902"
    name = "unsynchronized-timing"
    summary = "timing JAX work without `block_until_ready()`: asynchronous dispatch makes it measure nothing"
    default_enabled = False
    _waiter: str | None = None

    VALID = (
        Valid("import time\nimport jax\n@jax.jit\ndef f(x):\n    return x * 2\n"
              "t0 = time.time()\ny = f(1.0).block_until_ready()\nt1 = time.time()\n"),
        Valid("import time\nimport jax\n@jax.jit\ndef f(x):\n    return x * 2\n"
              "t0 = time.time()\ny = f(1.0)\njax.block_until_ready(y)\nt1 = time.time()\n"),
        Valid("import time\nimport numpy as np\nimport jax.numpy as jnp\n"
              "t0 = time.perf_counter()\ny = jnp.dot(a, b)\nz = np.asarray(y)\nt1 = time.perf_counter()\n"),
        Valid("import time\nimport jax.numpy as jnp\nstart = time.time()\ny = jnp.sum(x)\nprint(y)\n"
              "print(time.time() - start)\n"),
        Valid("import time\nimport numpy as np\nt0 = time.time()\ny = np.dot(a, b)\nt1 = time.time()\n"),
        Valid("import time\ndef f(x):\n    return x\nt0 = time.time()\ny = f(1)\nt1 = time.time()\n"),
        Valid("import time\nimport jax.numpy as jnp\nt0 = time.time()\ny = float(jnp.sum(x))\nt1 = time.time()\n"),
        Valid("import time\nimport jax\nstep = jax.jit(g)\nt0 = time.time()\nfor _ in range(10):\n"
              "    state = step(state)\nstate.block_until_ready()\nt1 = time.time()\n"),
        Valid("import time\nimport jax.numpy as jnp\ny = jnp.ones(3)\nt0 = time.time()\nt1 = time.time()\n"),
        Valid("import timeit\nimport jax.numpy as jnp\n"
              "timeit.timeit(lambda: jnp.dot(a, b).block_until_ready(), number=10)\n"),
        # key management is not work worth timing
        Valid("import time\nimport jax\nt0 = time.time()\nbatch = next(it)\nkey, sub = jax.random.split(key)\n"
              "t1 = time.time()\n"),
    )
    INVALID = (
        Invalid("import time\nimport jax\n@jax.jit\ndef f(x):\n    return x * 2\n"
                "t0 = time.time()\ny = f(1.0)\nt1 = time.time()\n", 7, 5, "line 8",
                fix="import time\nimport jax\n@jax.jit\ndef f(x):\n    return x * 2\n"
                    "t0 = time.time()\ny = jax.block_until_ready(f(1.0))\nt1 = time.time()\n"),
        # `jax` itself is not imported: no fix
        Invalid("import time\nimport jax.numpy as jnp\ndef bench(a, b):\n    start = time.perf_counter()\n"
                "    c = jnp.dot(a, b)\n    return time.perf_counter() - start\n", 5, 9),
        Invalid("import time\nimport jax as J\nimport jax.numpy as jnp\ndef bench(a, b):\n"
                "    start = time.perf_counter()\n    c = jnp.dot(a, b)\n    return time.perf_counter() - start\n", 6, 9,
                fix="import time\nimport jax as J\nimport jax.numpy as jnp\ndef bench(a, b):\n"
                    "    start = time.perf_counter()\n    c = J.block_until_ready(jnp.dot(a, b))\n"
                    "    return time.perf_counter() - start\n"),
        # a tuple result: `.block_until_ready()` would raise AttributeError
        Invalid("import time\nimport jax\nimport jax.numpy as jnp\nt0 = time.time()\nw, v = jnp.linalg.eigh(m)\n"
                "t1 = time.time()\n", 5, 8,
                fix="import time\nimport jax\nimport jax.numpy as jnp\nt0 = time.time()\n"
                    "w, v = jax.block_until_ready(jnp.linalg.eigh(m))\nt1 = time.time()\n"),
        Invalid("import time\nimport jax\nstep = jax.jit(g)\nt0 = time.time()\nfor _ in range(10):\n"
                "    state = step(state)\nt1 = time.time()\n", 6, 13),
        Invalid("import time\nimport jax\nt0 = time.time()\njax.jit(g)(x)\nprint(time.time() - t0)\n", 4, 1),
        Invalid("from timeit import default_timer as timer\nimport jax\n@jax.jit\ndef f(x):\n    return x\n"
                "if __name__ == '__main__':\n    t = timer()\n    out = f(x)\n    print(f'{timer() - t:.3f}s')\n",
                8, 11),
        Invalid("import time\nimport jax.numpy as jnp\nt0 = time.time()\ny = jnp.sum(x)\nz = jnp.exp(y)\n"
                "t1 = time.time()\n", 5, 5),
        Invalid("import time\nimport jax\n@jax.jit\ndef step(p):\n    return p, p\nt0 = time.monotonic()\n"
                "loss, grads = step(p)\nlog.info('step done')\nt1 = time.monotonic()\n", 7, 15,
                fix="import time\nimport jax\n@jax.jit\ndef step(p):\n    return p, p\nt0 = time.monotonic()\n"
                    "loss, grads = jax.block_until_ready(step(p))\nlog.info('step done')\nt1 = time.monotonic()\n"),
        Invalid("import time\nimport jax\nf = jax.vmap(g)\nt0 = time.time()\nfor i in range(3):\n    f(xs)\n"
                "dt = time.time() - t0\n", 6, 5,
                fix="import time\nimport jax\nf = jax.vmap(g)\nt0 = time.time()\nfor i in range(3):\n"
                    "    jax.block_until_ready(f(xs))\ndt = time.time() - t0\n"),
        # statements on one line, as a notebook's `%time y = f(x)` reads
        Invalid("import time\nimport jax.numpy as jnp\nt0 = time.time(); y = jnp.sum(x); t1 = time.time()\n", 3, 23,
                "line 3"),
        Invalid("import timeit\nfrom jax import block_until_ready\nimport jax.numpy as jnp\n"
                "timeit.timeit(lambda: jnp.dot(a, b), number=10)\n", 4, 23,
                fix="import timeit\nfrom jax import block_until_ready\nimport jax.numpy as jnp\n"
                    "timeit.timeit(lambda: block_until_ready(jnp.dot(a, b)), number=10)\n"),
    )

    def visit_Module(self, node: cst.Module) -> None:
        self._waiter = self._block_until_ready_name(node)
        self._block(node.body)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._block(node.body)

    def visit_Call(self, node: cst.Call) -> None:
        if self.model.call_name(node) not in _TIMEIT or self.function_trace is not None:
            return
        stmt = node.args[0].value if node.args and node.args[0].keyword is None else None
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value == "stmt":
                stmt = arg.value
        if isinstance(stmt, cst.Lambda) and isinstance(stmt.body, cst.Call) and self.model.runs_jax_work(stmt.body):
            self._report(stmt.body, "`timeit` discards the lambda's result without waiting for it")

    # --------------------------------------------------------------------------------- one block
    def _block(self, statements: Sequence[cst.BaseStatement]) -> None:
        if self.function_trace is not None:
            return  # timing inside traced code is JAX104's concern
        # The statements in order, those of a line (`t0 = time.time(); y = f(x); t1 = time.time()`) one by one.
        steps: list[cst.CSTNode] = [small for statement in statements for small in (
            statement.body if isinstance(statement, cst.SimpleStatementLine) else (statement,))]
        start: int | None = None
        for index, step in enumerate(steps):
            if start is not None and index > start and self._reads_clock(step):
                self._check(steps[start + 1 : index], step)
                start = None
            if self._starts_clock(step):
                start = index

    def _starts_clock(self, step: cst.CSTNode) -> bool:
        """`t0 = time.time()`: a clock read assigned to a name."""
        return (
            isinstance(step, cst.Assign) and len(step.targets) == 1 and isinstance(step.targets[0].target, cst.Name)
            and isinstance(step.value, cst.Call) and self.model.call_name(step.value) in TIMERS
        )

    def _reads_clock(self, step: cst.CSTNode) -> bool:
        return isinstance(step, cst.BaseSmallStatement) and any(
            self.model.call_name(call) in TIMERS for call in _calls(step)
        )

    def _check(self, between: Sequence[cst.CSTNode], end: cst.CSTNode) -> None:
        pending: _Work | None = None
        for small in _small_statements(between):
            pending = self._step(small, pending)
        if pending is not None:
            line = self.model.position(end).start.line
            self._report(pending.call, f"its result is not waited for before the clock is read on line {line}")

    def _step(self, node: cst.CSTNode, pending: _Work | None) -> _Work | None:
        """The unfinished work after `node` runs (a small statement, or the header of a compound one)."""
        value: cst.BaseExpression | None = None
        targets: list[cst.BaseExpression] = []
        if isinstance(node, cst.Assign):
            value, targets = node.value, [target.target for target in node.targets]
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign)):
            value, targets = node.value, [node.target]
        elif isinstance(node, cst.Expr):
            value = node.value
        if isinstance(value, cst.Call) and self.model.runs_jax_work(value):
            names = _target_names(targets)
            if names is not None:
                return _Work(value, names)  # a JAX call consuming the pending result: this one is what remains
            return None  # stored into an attribute or item: whether anyone waits is not visible here
        if pending is not None and pending.names & _loaded_names(node):
            return None  # the result is used on the host (converted, printed, passed on): assume it waits
        return pending

    def _report(self, call: cst.Call, why: str) -> None:
        callee = codegen.source(call.func)
        callee = callee if len(callee) <= 40 else callee[:37] + "..."
        waiter = self._waiter
        fix = None if waiter is None else NodeFix(
            f"Wrap in `{waiter}(...)`", ((call, f"{waiter}({codegen.source(call)})"),), "unsafe"
        )
        self.report(call, f"`{callee}(...)` returns before its JAX computation finishes and {why}: the timing "
                          "measures dispatch, not the computation; wait with `.block_until_ready()` or "
                          "`jax.block_until_ready(...)` first", fix)

    def _block_until_ready_name(self, module: cst.Module) -> str | None:
        """How this module spells `jax.block_until_ready` through its own top-level imports (`jax.`, `J.`
        after `import jax as J`, the bare name after `from jax import block_until_ready`); None when
        neither `jax` nor the function is imported there."""
        module_name: str | None = None
        for statement in module.body:
            if not isinstance(statement, cst.SimpleStatementLine):
                continue
            for small in statement.body:
                if not isinstance(small, (cst.Import, cst.ImportFrom)) or isinstance(small.names, cst.ImportStar):
                    continue
                for alias in small.names:
                    target = self.model.import_target(alias)
                    local = alias.evaluated_alias
                    if isinstance(small, cst.ImportFrom):
                        if target == "jax.block_until_ready":
                            return local or "block_until_ready"
                    elif local is not None:
                        if target == "jax" and module_name is None:
                            module_name = local
                    elif target is not None and (target == "jax" or target.startswith("jax.")):
                        module_name = "jax"  # `import jax.numpy` binds `jax` too
        return None if module_name is None else f"{module_name}.block_until_ready"


def _small_statements(statements: Sequence[cst.CSTNode]) -> Iterator[cst.CSTNode]:
    """The small statements of a block in program order, descending into compound statements (whose
    headers, such as a `for` loop's iterable or an `if` test, come first as themselves)."""
    for statement in statements:
        if isinstance(statement, cst.BaseSmallStatement):
            yield statement
        elif isinstance(statement, cst.SimpleStatementLine):
            yield from statement.body
        elif isinstance(statement, _NESTED_SCOPES):
            continue
        elif isinstance(statement, cst.BaseCompoundStatement):
            for header in _headers(statement):
                yield header
            for child in child_nodes(statement):
                if isinstance(child, (cst.IndentedBlock, cst.SimpleStatementSuite)):
                    yield from _small_statements(list(child.body))
                elif isinstance(child, (cst.Else, cst.Finally, cst.ExceptHandler, cst.If)):
                    yield from _small_statements([child])


def _headers(statement: cst.CSTNode) -> list[cst.CSTNode]:
    if isinstance(statement, (cst.If, cst.While)):
        return [statement.test]
    if isinstance(statement, cst.For):
        return [statement.iter]
    if isinstance(statement, cst.With):
        return [item.item for item in statement.items]
    return []


def _target_names(targets: Sequence[cst.BaseExpression]) -> frozenset[str] | None:
    """The names an assignment binds (`y`, `loss, grads`); None when it stores elsewhere."""
    names: set[str] = set()
    for target in targets:
        if isinstance(target, cst.Name):
            names.add(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            inner = _target_names([e.value for e in target.elements])
            if inner is None:
                return None
            names |= inner
        elif isinstance(target, cst.StarredElement) and isinstance(target.value, cst.Name):
            names.add(target.value.value)
        else:
            return None
    return frozenset(names)


def _loaded_names(node: cst.CSTNode) -> set[str]:
    names: set[str] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Name):
            names.add(current.value)
        elif isinstance(current, cst.Attribute):
            stack.append(current.value)
        elif not isinstance(current, _NESTED_SCOPES[:2]):
            stack.extend(child_nodes(current))
    return names


def _calls(node: cst.CSTNode) -> Iterator[cst.Call]:
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Call):
            yield current
        if not isinstance(current, _NESTED_SCOPES):
            stack.extend(child_nodes(current))
