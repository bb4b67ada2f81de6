"""JAX103 print-in-traced-function."""

from __future__ import annotations

import ast

import libcst as cst

from jaxcheck.analyzer import codegen
from jaxcheck.analyzer.rule import Invalid, NodeFix, Rule, Valid

_OUTPUT_CALLS = {
    "builtins.print": "`print`",
    "builtins.open": "`open`",
    "builtins.input": "`input`",
    "sys.stdout.write": "`sys.stdout.write`",
    "sys.stderr.write": "`sys.stderr.write`",
}
_LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "fatal", "log"})
_PATH_WRITES = frozenset({"write_text", "write_bytes", "touch", "mkdir", "unlink", "rename", "replace", "rmdir"})


class PrintInTracedFunction(Rule):
    """
    ## What it does
    Finds output and I/O in code traced by `jax.jit`, `pmap`, `lax` bodies and other caching
    transforms: `print`, `logging` calls and logger methods, `open`, `sys.stdout`/`sys.stderr`
    writes and `pathlib` writes; `warnings.warn` only when its message formats a traced value. Python shows
    a warning once per place anyway, so warning while tracing about a static shape or dtype (JAX's own
    idiom) is what the user sees untraced.

    ## Why is this bad?
    Python side effects run while JAX traces the function, not when the compiled program runs. They
    happen once (showing tracers such as `Traced<ShapedArray(float32[])>` rather than values) and
    never again on the cached calls, so logs and files silently stop updating.

    ## Example
    ```python
    import jax

    @jax.jit
    def step(x):
        print("x =", x)
        return x * 2
    ```

    ## Use instead
    ```python
    import jax

    @jax.jit
    def step(x):
        jax.debug.print("x = {}", x)
        return x * 2
    ```
    `jax.debug.print` and `jax.debug.callback` run on every call with concrete values. Log outside the
    traced function, from returned values.

    ## Fix safety
    `print(a, b)` becomes `jax.debug.print("{} {}", a, b)` (f-strings become format arguments, and
    `import jax` is added when missing). The fix is unsafe: output then happens on every call, from the
    device, possibly out of order. No fix is offered for `sep=`/`end=`/`file=`, starred arguments,
    byte strings, nested format specs and other output calls.

    ## Runtime check
    At run time, output that user code writes while a jitted function traces (`print`,
    `sys.stdout`/`sys.stderr` writes, logging records from user files) is reported at the line that wrote
    it.
    """

    code = "JAX103"
    explains_trace = True
    name = "print-in-traced-function"
    summary = "`print`, logging, `open()` and file writes in traced code run once while tracing, not per call"

    VALID = (
        # A warning about a static shape, once per trace: Python shows it once per place anyway (checked
        # under JAX 0.10.2: one warning for n=32, none for n=30).
        Valid("import jax\nimport warnings\n@jax.jit\ndef dealias(u):\n    n = u.shape[-1]\n    if n % 3:\n"
              "        warnings.warn(f'grid size {n} is not a multiple of 3')\n    return u\n"),
        # A branch under `if debug:` that every trace skips (a false default no call overrides) never
        # runs while tracing, nor does the helper it calls.
        Valid("import jax\ndef dump(x):\n    print('value', x)\n@jax.jit\ndef f(x, debug=False):\n"
              "    if debug:\n        dump(x)\n        print('debug', x)\n    return x\ny = f(1.0)\n"),
        Valid("import jax\n@jax.jit\ndef f(x, debug=False):\n    if debug:\n        def show():\n"
              "            print('show', x)\n        show()\n    return x\ny = f(1.0)\n"),
        Valid("import jax\ndef loss(p):\n    print('loss', p)\n    return p * p\ndef step(p):\n"
              "    return jax.grad(loss)(p)\n"),
        # Host callbacks run on the host with concrete values, on every call.
        Valid("import jax\n@jax.jit\ndef step(x):\n    def log(v):\n        print('value', v)\n"
              "    jax.debug.callback(log, x)\n    return x * 2\n"),
        Valid("import jax\nfrom jax.experimental import io_callback\n@jax.jit\ndef step(x):\n"
              "    io_callback(lambda v: print(v), None, x)\n    return x * 2\n"),
        Valid("import jax\n@jax.jit\ndef f(x):\n    jax.debug.print('x = {}', x)\n    return x\n"),
        Valid("import jax\ndef f(x):\n    print(x)\n    return x\n"),
        Valid("import jax\n@jax.jit\ndef f(x):\n    return x\nprint(f(1.0))\n"),
        Valid("import jax\ndef loss(w):\n    print('computing')\n    return w * w\ng = jax.grad(loss)\n"),
        Valid("import jax\nfrom jax.experimental import io_callback\n@jax.jit\ndef f(x):\n"
              "    jax.debug.callback(print, x)\n    return x\n"),
        Valid("import jax\nimport logging\nlogger = logging.getLogger(__name__)\ndef run(x):\n"
              "    logger.info('running')\n    return step(x)\n@jax.jit\ndef step(x):\n    return x\n"),
        Valid("import jax\n@jax.vmap\ndef f(x):\n    return x + 1\n"),
        Valid("import jax\ndef apply(f, x):\n    return f(x)\ndef loss(x):\n    print('loss')\n    return (x ** 2).sum()\n"
              "@jax.jit\ndef step(x):\n    return x\napply(loss, 1.0)\n"),
        Valid("import jax\nclass Printer:\n    def print(self, x):\n        return x\np = Printer()\n@jax.jit\n"
              "def f(x):\n    return p.print(x)\n"),
    )
    INVALID = (
        # A warning formatting a traced value shows the tracer, once (checked under JAX 0.10.2: untraced,
        # each call warns with its value).
        Invalid("import jax\nimport warnings\n@jax.jit\ndef f(x):\n    total = x.sum()\n"
                "    warnings.warn(f'total is {total}')\n    return x\n", 6, 5, "sees tracers"),
        # The message says it sees tracers only when what it prints holds one (an f-string's fields too).
        Invalid("import jax\n@jax.jit\ndef f(x):\n    print('tracing', x.shape)\n    return x\n", 4, 5,
                "never on cached calls; use"),
        Invalid("import jax\n@jax.jit\ndef f(x):\n    print(f'x={x}')\n    return x\n", 4, 5, "sees tracers"),
        # ...but a static flag passed True runs it at trace time, so does a flag the body sets, one bound
        # True by `partial`, and one read again in a loop that rebinds it.
        Invalid("import jax\n@jax.jit\ndef f(x, verbose=None):\n    if verbose is None:\n        verbose = True\n"
                "    if verbose:\n        print('x', x)\n    return x\ny = f(1.0)\n", 7, 9),
        Invalid("import jax\nfrom functools import partial\ndef f(x, debug=False):\n    if debug:\n"
                "        print('f', x)\n    return x\nfast = jax.jit(partial(f, debug=True))\n", 5, 9),
        Invalid("import jax\ndef f(x, debug=False):\n    if debug:\n        print('f', x)\n    return x\n"
                "jf = jax.jit(f, static_argnames='debug')\ny = jf(1.0, debug=True)\n", 4, 9),
        Invalid("import jax\n@jax.jit\ndef f(x, debug=False, other=True):\n    for i in range(3):\n"
                "        if debug:\n            print('f', i)\n        debug = other\n    return x\n", 6, 13),
        Invalid("import jax\nfrom functools import partial\n@partial(jax.jit, static_argnames=('debug',))\n"
                "def g(x, debug=False):\n    if debug:\n        print('g', x)\n    return x\ny = g(1.0, debug=True)\n",
                6, 9),
        Invalid("import jax\ndef dump(x):\n    print('value', x)\ndef f(x, debug=False):\n"
                "    if debug:\n        dump(x)\n    return x\nf_debug = jax.jit(lambda x: f(x, True))\n", 3, 5),
        Invalid("import jax\nimport equinox as eqx\nclass MLP(eqx.Module):\n    w: jax.Array\n"
                "    def __call__(self, x):\n        print('forward')\n        return self.w @ x\n"
                "@eqx.filter_jit\ndef run(model: MLP, x):\n    return jax.vmap(model)(x)\n", 6, 9),
        # A differentiation rule runs in the trace of the function it differentiates.
        Invalid("import jax\nimport jax.numpy as jnp\n@jax.custom_vjp\ndef clip(x, lo):\n    return x\n"
                "def clip_fwd(x, lo):\n    return x, lo\ndef clip_bwd(lo, g):\n    print('bwd', g)\n"
                "    return jnp.clip(g, lo, None), None\nclip.defvjp(clip_fwd, clip_bwd)\n"
                "@jax.jit\ndef step(x):\n    return jax.grad(lambda y: clip(y, 0.0).sum())(x)\n", 9, 5),
        # A function passed to a helper that calls it runs under the helper's trace.
        Invalid("import jax\ndef apply(f, x):\n    return f(x)\ndef loss(x):\n    print('loss')\n    return (x ** 2).sum()\n"
                "@jax.jit\ndef step(x):\n    return apply(loss, x)\n", 5, 5),
        Invalid("import jax\ndef loss(p):\n    print('loss', p)\n    return p * p\n@jax.jit\ndef step(p):\n"
                "    return jax.grad(loss)(p)\n", 3, 5),
        Invalid("import jax\n@jax.jit\ndef step(x):\n    def log(v):\n        print('value', v)\n"
                "    log(x)\n    return x * 2\n", 5, 9),
        Invalid("import jax\ndef announce():\n    print('step starts')\n@jax.jit\ndef step(x):\n"
                "    announce()\n    return x * 2\n", 3, 5),
        Invalid("import jax\n@jax.jit\ndef f(x):\n    print(x)\n    return x\n", 4, 5, "jax.debug.print",
                fix="import jax\n@jax.jit\ndef f(x):\n    jax.debug.print('{}', x)\n    return x\n"),
        Invalid("from jax import jit\n@jit\ndef f(x, step):\n    print(f'step {step}: loss={x:.3f} {{ok}}', 'done', x.sum())\n"
                "    return x\n", 4, 5,
                fix="import jax\nfrom jax import jit\n@jit\ndef f(x, step):\n"
                    "    jax.debug.print('step {}: loss={:.3f} {{ok}} done {}', step, x, x.sum())\n    return x\n"),
        Invalid("import jax as J\n@J.jit\ndef f(x):\n    print('x =', x, '\\n{}')\n    return x\n", 4, 5,
                fix="import jax as J\n@J.jit\ndef f(x):\n    J.debug.print('x = {} \\n{{}}', x)\n    return x\n"),
        Invalid("import jax\n@jax.jit\ndef f(x):\n    print(x, end='')\n    return x\n", 4, 5, "jax.debug.print"),
        Invalid('import jax\n@jax.jit\ndef f(x):\n    print("it\'s", x)\n    return x\n', 4, 5,
                fix='import jax\n@jax.jit\ndef f(x):\n    jax.debug.print("it\'s {}", x)\n    return x\n'),
        Invalid('import jax\n@jax.jit\ndef f(x):\n    print(f"x={x}")\n    return x\n', 4, 5,
                fix='import jax\n@jax.jit\ndef f(x):\n    jax.debug.print("x={}", x)\n    return x\n'),
        Invalid("import jax\nimport logging\n@jax.jit\ndef f(x):\n    logging.info('x=%s', x)\n    return x\n", 5, 5),
        Invalid("import jax\nimport logging\nlog = logging.getLogger(__name__)\n@jax.jit\ndef f(x):\n"
                "    log.warning('step')\n    return x\n", 6, 5, "logger"),
        Invalid("import jax\n@jax.jit\ndef f(x):\n    with open('out.txt', 'w') as fh:\n        fh.write('x')\n"
                "    return x\n", 4, 10),
        Invalid("import jax\nimport sys\n@jax.jit\ndef f(x):\n    sys.stderr.write('tracing\\n')\n    return x\n", 5, 5),
        Invalid("import jax\nfrom pathlib import Path\n@jax.jit\ndef f(x):\n    Path('log.txt').write_text('hi')\n"
                "    return x\n", 5, 5),
        Invalid("import jax\nfrom jax import lax\ndef body(c, x):\n    print('carry', c)\n    return c + x, x\n"
                "lax.scan(body, 0.0, xs)\n", 4, 5),
        Invalid("import jax\ndef report(v):\n    print('value', v)\n@jax.jit\ndef f(x):\n    report(x)\n    return x\n",
                3, 5),
    )

    def _shows_tracer(self, value: cst.BaseExpression) -> bool:
        """Whether printing `value` shows a tracer (an f-string shows its fields; `x.shape` shows none)."""
        if isinstance(value, cst.FormattedString):
            return any(self._shows_tracer(part.expression) for part in value.parts
                       if isinstance(part, cst.FormattedStringExpression))
        if isinstance(value, cst.ConcatenatedString):
            return self._shows_tracer(value.left) or self._shows_tracer(value.right)
        return self.model.holds_tracer(value)

    def visit_Call(self, node: cst.Call) -> None:
        trace = self.trace
        if trace is None or not trace.cached:
            return
        what = self._output(node)
        if what is None and self.model.call_name(node) == "warnings.warn" and node.args \
                and self._shows_tracer(node.args[0].value):
            what = "`warnings.warn`"  # a warning that formats a tracer shows it, once, not the values
        if what is None:
            return
        hint = "use `jax.debug.print`" if what == "`print`" else "use `jax.debug.print`/`jax.debug.callback`"
        fix = self._debug_print_fix(node) if what == "`print`" else None
        sees = ", and sees tracers instead of values" if any(self._shows_tracer(a.value) for a in node.args) else ""
        self.report(node, f"{what} runs once while tracing under {self.transform_name()}, never on cached "
                          f"calls{sees}; {hint} or do it outside the traced function", fix)

    def _debug_print_fix(self, node: cst.Call) -> NodeFix | None:
        arguments = debug_print_arguments(node)
        if arguments is None:
            return None
        jax_name = next((name for name, target in self.model.summary.exports.items() if target == "jax"), None)
        replacements: list[tuple[cst.CSTNode, str]] = []
        if jax_name is None:
            anchor = _first_import(self.model.module)
            if anchor is None:
                return None
            jax_name = "jax"
            replacements.append((anchor, f"import jax\n{codegen.source(anchor)}"))
        replacements.append((node, f"{jax_name}.debug.print({arguments})"))
        return NodeFix("Use jax.debug.print", tuple(replacements), "unsafe")

    def _output(self, node: cst.Call) -> str | None:
        name = self.model.call_name(node)
        if name is not None:
            if name in _OUTPUT_CALLS:
                return _OUTPUT_CALLS[name]
            module, _, function = name.rpartition(".")
            return f"`{name}`" if module == "logging" and function in _LOG_METHODS else None
        func = node.func
        if not isinstance(func, cst.Attribute):
            return None
        method = func.attr.value
        if method in _LOG_METHODS and self.model.is_logger(func.value):
            return f"logger call `.{method}()`"
        if method in _PATH_WRITES and self.model.is_filesystem_path(func.value):
            return f"`pathlib` `.{method}()`"
        return None


def debug_print_arguments(node: cst.Call) -> str | None:
    """The arguments of `jax.debug.print` equivalent to `print(...)` with default `sep` and `end`:
    a format string then the values, e.g. `'step {}: {:.3f}', step, loss`; None when not expressible."""
    pieces: list[str] = []
    values: list[str] = []
    for arg in node.args:
        if arg.keyword is not None or arg.star:
            return None
        piece = _format_piece(arg.value, values)
        if piece is None:
            return None
        pieces.append(piece)
    quote = next((arg.value.quote[0] for arg in node.args
                  if isinstance(arg.value, (cst.SimpleString, cst.FormattedString))), "'")
    return ", ".join([_string_literal(" ".join(pieces), quote), *values])


def _string_literal(text: str, quote: str) -> str:
    """`text` as a string literal in the file's own quote character (`'` or `"`)."""
    literal = repr(text)
    if quote == '"' and literal.startswith("'"):
        return '"' + literal[1:-1].replace("\\'", "'").replace('"', '\\"') + '"'
    return literal


def _format_piece(value: cst.BaseExpression, values: list[str]) -> str | None:
    """One print argument as format-string text, appending the values it needs to `values`."""
    if isinstance(value, cst.SimpleString):
        text = value.evaluated_value
        return text.replace("{", "{{").replace("}", "}}") if isinstance(text, str) else None
    if isinstance(value, cst.FormattedString):
        if "b" in value.prefix.lower():
            return None
        literal_prefix = value.prefix.lower().replace("f", "")
        parts: list[str] = []
        for part in value.parts:
            if isinstance(part, cst.FormattedStringText):
                # Text keeps its `{{`/`}}` escapes, which mean the same in a format string.
                parts.append(ast.literal_eval(f"{literal_prefix}{value.quote}{part.value}{value.quote}"))
                continue
            assert isinstance(part, cst.FormattedStringExpression)
            if part.equal is not None or (part.format_spec and any(
                    isinstance(spec, cst.FormattedStringExpression) for spec in part.format_spec)):
                return None
            conversion = f"!{part.conversion}" if part.conversion else ""
            spec = "".join(spec.value for spec in part.format_spec or () if isinstance(spec, cst.FormattedStringText))
            parts.append("{" + conversion + (f":{spec}" if spec else "") + "}")
            values.append(codegen.argument(part.expression))
        return "".join(parts)
    values.append(codegen.argument(value))
    return "{}"


def _first_import(module: cst.Module) -> cst.BaseSmallStatement | None:
    """The first top-level import that is not `from __future__`, where `import jax` can go before."""
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Import):
                return small
            if isinstance(small, cst.ImportFrom) and not (
                isinstance(small.module, cst.Name) and small.module.value == "__future__"
            ):
                return small
    return None
