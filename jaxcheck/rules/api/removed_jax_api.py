"""JAX601 removed-jax-api."""

from __future__ import annotations

import libcst as cst

from jaxcheck.analyzer import codegen
from jaxcheck.analyzer.rule import Invalid, NodeFix, Rule, RuleContext, Valid
from jaxcheck.analyzer.semantics.jax_api import EAGER_MODULES, PARTIAL
from jaxcheck.analyzer.semantics.removed_api import RemovedApi, removed_api, removed_keyword, renamed
from jaxcheck.analyzer.tree import descendants

_DISTRIBUTION_VERSION = frozenset({"importlib.metadata.version", "importlib_metadata.version"})
_ATTRIBUTE_TESTS = frozenset({"builtins.hasattr", "builtins.getattr"})


def _names_release(name: str) -> bool:
    """Whether a qualified name reads JAX's release (`jax.__version__`, `importlib.metadata.version`)."""
    return (_is_jax(name) and "version" in name.lower()) or name in _DISTRIBUTION_VERSION


def _is_jax(name: str | None) -> bool:
    return name is not None and name.split(".", 1)[0] in ("jax", "jaxlib")


_COMPAT_ERRORS = frozenset(
    f"builtins.{name}" for name in ("ImportError", "ModuleNotFoundError", "AttributeError", "Exception", "BaseException")
)


class RemovedJaxApi(Rule):
    """
    ## What it does
    Finds uses of APIs that JAX has removed: the top-level `jax.tree_*` aliases (`jax.tree_map`,
    `jax.tree_flatten`, ...), `jax.tree_util.tree_multimap`, `jax.experimental.host_callback`,
    `jax.experimental.maps.xmap`, `DeviceArray` (`jax.numpy.DeviceArray`,
    `jax.interpreters.xla.DeviceArray`), `jax.random.KeyArray`, `jax.ops.index_update` and the other
    `jax.ops.index_*` functions, `jax.experimental.optimizers`/`stax`, `jax.linear_util`,
    `jax.abstract_arrays`, `jax.lax.tie_in`, `from jax.config import config`, pjit's
    `in_axis_resources`/`out_axis_resources` keywords, and the other removals listed in JAX's changelog.
    Each message names the JAX release that removed the API and what replaces it.

    Names are resolved through imports and aliases, so `import jax.numpy as jnp; jnp.DeviceArray`
    is found and a project's own `tree_map` (or `optax.tree_map`, `jaxtyping.PRNGKeyArray`) is not.
    A removed name is reported once, where it is spelled out in full: at the import that binds it
    (`from jax import tree_map`, `import jax.experimental.host_callback as hcb`), whose later uses
    (`tree_map(...)`, `hcb.id_tap(...)`) are not reported again, and at each dotted use that reaches
    it through a live module (`jax.tree_map(...)`). Code guarded for older JAX releases is left alone:
    inside `try` statements that catch `ImportError`/`AttributeError`, and under `if` tests that
    call `hasattr`/`getattr` on a JAX module or on a value JAX made (`aval = jax.typeof(x)`, then
    `hasattr(aval, "to_tangent_aval")`) or read JAX's release (`jax.__version__`,
    `jaxlib.version`, `jax.lib.xla_extension_version`, `importlib.metadata.version("jax")`, or a
    variable of this module computed from one, such as `Version(jax.__version__)`); a test of another
    version (`sys.version_info`) is no JAX guard. Imports from JAX's private modules (`from jax._src.pjit
    import PartitionSpec`) are JAX's own business and are read as written, not as the public names
    they stand for.

    ## Why is this bad?
    The code fails on every JAX release since the removal: an `ImportError` at import time, or an
    `AttributeError` or `TypeError` (an unknown keyword) the first time the line runs.

    ## Example
    ```python
    import jax
    from jax.experimental.pjit import pjit

    grads = jax.tree_map(lambda g: g / n, grads)
    step = pjit(update, in_axis_resources=spec, out_axis_resources=spec)
    ```

    ## Use instead
    ```python
    import jax
    from jax.experimental.pjit import pjit

    grads = jax.tree.map(lambda g: g / n, grads)
    step = pjit(update, in_shardings=spec, out_shardings=spec)
    ```

    ## Fix safety
    A fix is offered only where the changelog names a one-to-one rename: it rewrites an import
    with a single name (`from jax import tree_map` becomes `from jax.tree import map as tree_map`, so
    the local name stays), the module of a renamed module's import (`jax.experimental.optimizers`
    becomes `jax.example_libraries.optimizers`), a dotted use whose replacement `import jax` already
    loads (`jax.tree_map` becomes `jax.tree.map`, `jnp.product` becomes `jnp.prod`), and a removed
    keyword that the call does not already pass under its new name. The fixes are safe: the old name
    no longer exists, and the new one behaves the same. They need a JAX release that has the new name
    (`jax.tree` appeared in JAX 0.4.25). Removals without a one-to-one replacement
    (`host_callback.id_tap`, `xmap`, `jax.ops.index_update`, `KeyArray`, whose runtime test differs
    from `isinstance(x, jax.Array)`) get no fix, only the suggestion in the message.
    """

    code = "JAX601"
    name = "removed-jax-api"
    summary = "an API JAX has removed (`jax.tree_map`, `host_callback`, `DeviceArray`, `xmap`, ...)"

    VALID = (
        Valid("import jax\ny = jax.tree.map(f, x)\n"),
        Valid("import jax\ny = jax.tree_util.tree_map(f, x)\n"),
        Valid("from jax.tree_util import tree_map, tree_flatten\ny = tree_map(f, x)\n"),
        Valid("import optax\ny = optax.tree_map(f, x)\n"),
        Valid("def tree_map(f, x):\n    return f(x)\ny = tree_map(abs, -1)\n"),
        Valid("from jaxtyping import PRNGKeyArray\ndef f(key: PRNGKeyArray):\n    return key\n"),
        Valid("import jax\ndef f(x: jax.Array) -> jax.Array:\n    return x\n"),
        Valid("from jax.experimental import io_callback\nimport jax\njax.debug.callback(print, 1)\n"),
        Valid("from jax.experimental.pjit import pjit\nf = pjit(g, in_shardings=None, out_shardings=None)\n"),
        Valid("from jax import config\nconfig.update('jax_enable_x64', True)\n"),
        Valid("import jax\ncount = jax.host_count()\n"),
        Valid("try:\n    from jax.experimental import host_callback as hcb\nexcept ImportError:\n    hcb = None\n"),
        Valid("import jax\nif hasattr(jax, 'tree_map'):\n    tree_map = jax.tree_map\n"),
        Valid("import jax\nif jax.__version__ < '0.4.26':\n    from jax import tree_map\n"),
        Valid("import jax\nfrom packaging.version import Version\nJAX_VERSION = Version(jax.__version__)\n"
              "if JAX_VERSION < Version('0.4.26'):\n    tree_map = jax.tree_map\n"),
        Valid("import jax\ns = 'jax.tree_map'\n"),
        Valid("import jax.example_libraries.optimizers as optimizers\n"),
        Valid("from jax._src.pjit import PartitionSpec as P\n"),
        Valid("from jax._src import core as jax_core\np = jax_core.Primitive('p')\n"),
        Valid("import jax\ndef zero(x):\n    aval = jax.typeof(x)\n    if hasattr(aval, 'to_tangent_aval'):\n"
              "        return aval.to_tangent_aval()\n    else:\n        return jax.core.raise_to_shaped(aval)\n"),
    )
    INVALID = (
        # `hasattr` on a value JAX did not make is no JAX release test.
        Invalid("import jax\nclass Trainer:\n    def step(self, g):\n        if hasattr(self, 'params'):\n"
                "            return jax.tree_map(lambda p: p - g, self.params)\n", 5, 20, "jax.tree_map"),
        Invalid("import jax\ny = jax.tree_map(f, x)\n", 2, 5, "removed in JAX 0.6.0",
                fix="import jax\ny = jax.tree.map(f, x)\n"),
        Invalid("import jax\nxs = jax.device_put_replicated(x, jax.devices())\n", 2, 6, "removed in JAX 0.10.0"),
        Invalid("import jax\nlower = jax.scipy.linalg.tril(m)\n", 2, 9, "removed in JAX 0.4.24",
                fix="import jax\nlower = jax.numpy.tril(m)\n"),
        Invalid("from jax.experimental import pallas as pl\ndef kernel(x_ref, o_ref):\n    pl.store(o_ref, (), pl.load(x_ref, ()))\n",
                3, 5, "assign through the ref instead", also=((3, 25),)),
        # Python's version says nothing about JAX's
        Invalid("import sys\nif sys.version_info >= (3, 9):\n    from jax import tree_map\n", 3, 21),
        Invalid("import numpy as np\nimport jax\nif hasattr(np, 'tree_map') or np.__version__ > '2':\n"
                "    y = jax.tree_map(f, x)\n", 4, 9),
        Invalid("import jax as J\nleaves = J.tree_leaves(t)\n", 2, 10, "`jax.tree.leaves`",
                fix="import jax as J\nleaves = J.tree.leaves(t)\n"),
        Invalid("from jax import tree_map\ny = tree_map(f, x)\nz = tree_map(g, y)\n", 1, 17, "jax.tree_map",
                fix="from jax.tree import map as tree_map\ny = tree_map(f, x)\nz = tree_map(g, y)\n"),
        Invalid("from jax import tree_multimap as tmm\n", 1, 17, "0.3.16",
                fix="from jax.tree import map as tmm\n"),
        Invalid("from jax import jit, tree_flatten\n", 1, 22, "jax.tree.flatten"),
        Invalid("from jax.tree_util import tree_multimap\n", 1, 27,
                fix="from jax.tree_util import tree_map as tree_multimap\n"),
        Invalid("import jax.experimental.host_callback as hcb\nhcb.id_tap(print, x)\n", 1, 8, "0.4.35"),
        Invalid("from jax.experimental.host_callback import id_tap, id_print\n", 1, 6, "jax.debug.callback"),
        Invalid("import jax\njax.experimental.host_callback.id_tap(print, x)\n", 2, 1, "jax.debug.callback"),
        Invalid("from jax.experimental.maps import xmap\n", 1, 6, "0.4.31"),
        Invalid("import jax.numpy as jnp\ndef f(x: jnp.DeviceArray) -> jnp.DeviceArray:\n    return x\n", 2, 10,
                "jax.Array", also=((2, 30),)),
        Invalid("from jax.interpreters.xla import DeviceArray\n", 1, 34,
                fix="from jax import Array as DeviceArray\n"),
        Invalid("import jax\nKey = jax.random.KeyArray\n", 2, 7, "0.4.24"),
        Invalid("import jax\nfrom typing import Optional\ndef f(key: Optional[jax.random.KeyArray]):\n    return key\n",
                3, 21, "KeyArray"),
        Invalid("import jax\ny = jax.ops.index_update(x, jax.ops.index[0], 1.0)\n", 2, 5, "x.at[idx].set(y)",
                also=((2, 29),)),
        Invalid("from jax.experimental import optimizers\n", 1, 30,
                fix="from jax.example_libraries import optimizers\n"),
        Invalid("from jax.experimental.stax import Dense, Relu\n", 1, 6,
                fix="from jax.example_libraries.stax import Dense, Relu\n"),
        Invalid("import jax.experimental.optimizers as opt\n", 1, 8,
                fix="import jax.example_libraries.optimizers as opt\n"),
        Invalid("from jax.config import config\nconfig.update('jax_enable_x64', True)\n", 1, 24,
                fix="from jax import config\nconfig.update('jax_enable_x64', True)\n"),
        Invalid("import jax.numpy as jnp\ny = jnp.product(x)\n", 2, 5, fix="import jax.numpy as jnp\ny = jnp.prod(x)\n"),
        Invalid("from jax import lax\ny = lax.tie_in(x, y)\n", 2, 5, "0.4.29"),
        Invalid("import jax.linear_util as lu\n", 1, 8, fix="import jax.extend.linear_util as lu\n"),
        Invalid("from jax.experimental.pjit import pjit\nf = pjit(g, in_axis_resources=s, out_axis_resources=s)\n",
                2, 13, "in_shardings",
                fix="from jax.experimental.pjit import pjit\nf = pjit(g, in_shardings=s, out_shardings=s)\n",
                also=((2, 34),)),
        Invalid("from functools import partial\nfrom jax.experimental import pjit\n"
                "@partial(pjit.pjit, out_axis_resources=None)\ndef f(x):\n    return x\n", 3, 21,
                fix="from functools import partial\nfrom jax.experimental import pjit\n"
                    "@partial(pjit.pjit, out_shardings=None)\ndef f(x):\n    return x\n"),
        Invalid("from jax.experimental.pjit import pjit\nf = pjit(g, in_axis_resources=s, in_shardings=s)\n", 2, 13),
        Invalid("import jax\ndef f(x):\n    return isinstance(x, jax.xla.DeviceArray)\n", 3, 26,
                fix="import jax\ndef f(x):\n    return isinstance(x, jax.Array)\n"),
    )

    def __init__(self, context: RuleContext) -> None:
        super().__init__(context)
        self._covered: set[int] = set()
        self._guards: list[bool] = []
        self._guarded = 0
        self._version_names: frozenset[str] = frozenset()
        self._reads_release = False
        self._tests_attributes = False

    # -------------------------------------------------------------------- compatibility guards
    def visit_Try(self, node: cst.Try) -> None:
        self._enter_guard(any(self._catches_removal(handler) for handler in node.handlers))

    def leave_Try(self, node: cst.Try) -> None:
        self._leave_guard()

    def visit_If(self, node: cst.If) -> None:
        self._enter_guard(self._tests_version(node.test))

    def leave_If(self, node: cst.If) -> None:
        self._leave_guard()

    def _enter_guard(self, guarded: bool) -> None:
        self._guards.append(guarded)
        self._guarded += guarded

    def _leave_guard(self) -> None:
        self._guarded -= self._guards.pop()

    def _catches_removal(self, handler: cst.ExceptHandler) -> bool:
        if handler.type is None:
            return True
        types = handler.type.elements if isinstance(handler.type, cst.Tuple) else (handler.type,)
        for entry in types:
            expression = entry.value if isinstance(entry, cst.Element) else entry
            if isinstance(expression, cst.Name) and f"builtins.{expression.value}" in _COMPAT_ERRORS:
                return True
        return False

    def visit_Module(self, node: cst.Module) -> None:
        referenced = self.model.referenced_names()
        self._reads_release = any(_names_release(name) for name in referenced)
        self._tests_attributes = not referenced.isdisjoint(_ATTRIBUTE_TESTS)
        self._version_names = self._jax_version_variables()

    def _tests_version(self, test: cst.BaseExpression) -> bool:
        """`hasattr(jax, "tree_map")`, `jax.__version__ < ...`: a test that picks code by JAX release
        (neither when the module calls neither `hasattr` nor `getattr` and reads no release)."""
        if not (self._reads_release or self._tests_attributes):
            return False
        for node in descendants(test):
            if isinstance(node, cst.Call) and self.model.call_name(node) in _ATTRIBUTE_TESTS:
                first = node.args[0].value if node.args else None
                if first is not None and (_is_jax(self.model.qualified_name(first)) or self._made_by_jax(first)):
                    return True  # a JAX module's feature, or a JAX value's (`hasattr(aval, "to_tangent_aval")`)
            if self._reads_release and self._reads_jax_version(node):
                return True
        return False

    def _made_by_jax(self, node: cst.BaseExpression) -> bool:
        """A name every assignment of which in the module is a call of a JAX function (`aval =
        jax.typeof(x)`, `aval = jax.core.get_aval(x)`) or of a method of what it holds (`aval =
        aval.to_tangent_aval()`): testing its features tests JAX's release."""
        if not isinstance(node, cst.Name):
            return False
        values = [value for names, value in self.model.name_assignments() if node.value in names]
        return bool(values) and all(isinstance(value, cst.Call) and (
            _is_jax(self.model.call_name(value))
            or isinstance(value.func, cst.Attribute) and isinstance(value.func.value, cst.Name)
            and value.func.value.value == node.value) for value in values)

    def _reads_jax_version(self, node: cst.CSTNode) -> bool:
        """`jax.__version__`, `jaxlib.version`, `jax.lib.xla_extension_version`, `version("jax")`, or a
        name of this module assigned from one of them (`JAX_VERSION = Version(jax.__version__)`)."""
        if isinstance(node, (cst.Name, cst.Attribute)):
            name = self.model.qualified_name(node)
            if name is not None:
                return _is_jax(name) and "version" in name.lower()
            return isinstance(node, cst.Name) and node.value in self._version_names
        if isinstance(node, cst.Call) and self.model.call_name(node) in _DISTRIBUTION_VERSION and node.args:
            first = node.args[0].value
            return isinstance(first, cst.SimpleString) and first.evaluated_value in ("jax", "jaxlib")
        return False

    def _jax_version_variables(self) -> frozenset[str]:
        """Names assigned anywhere in the module from an expression that reads JAX's release (to a fixed point:
        `V = jax.__version__; MAJOR = int(V.split('.')[0])` gives both)."""
        self._version_names = frozenset()
        if not self._reads_release:
            return frozenset()  # nothing in the module reads JAX's release
        assignments = self.model.name_assignments()
        found: set[str] = set()
        changed = True
        while changed:
            changed = False
            for names, value in assignments:
                if set(names) <= found or not any(self._reads_jax_version(node) for node in descendants(value)):
                    continue
                found.update(names)
                self._version_names = frozenset(found)
                changed = True
        return frozenset(found)

    # ----------------------------------------------------------------------------------- imports
    def visit_Import(self, node: cst.Import) -> None:
        if self._guarded:
            return
        for alias in node.names:
            target = self.model.import_target(alias)
            api = removed_api(target) if target is not None else None
            if target is None or api is None:
                continue
            new = renamed(target, api) if api.module else None
            fix = NodeFix(f"Import `{new}`", ((alias.name, new),)) if new is not None else None
            self.report(alias, self._message(target, api), fix)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if self._guarded:
            return
        module = self.model.import_module(node)
        if module is None or not module:
            return
        module_api = removed_api(module)
        if module_api is not None and node.module is not None:
            new = renamed(module, module_api) if not node.relative else None
            fix = NodeFix(f"Import from `{new}`", ((node.module, new),)) if new is not None else None
            self.report(node.module, self._message(module, module_api), fix)
            return
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            target = self.model.import_target(alias)
            api = removed_api(target) if target is not None else None
            if target is None or api is None:
                continue
            self.report(alias, self._message(target, api), self._import_fix(node, alias, target, api))

    def _import_fix(self, node: cst.ImportFrom, alias: cst.ImportAlias, target: str, api: RemovedApi) -> NodeFix | None:
        """`from jax import tree_map as tm` -> `from jax.tree import map as tm`: one name per statement only,
        keeping the local name; never across comments inside the statement."""
        new = renamed(target, api)
        if new is None or node.relative or len(node.names) != 1 or "#" in codegen.source(node):  # type: ignore[arg-type]
            return None
        asname = alias.asname.name if alias.asname is not None else None
        local = asname.value if isinstance(asname, cst.Name) else target.rpartition(".")[2]
        parent, _, last = new.rpartition(".")
        text = f"from {parent} import {last}" if parent else f"import {last}"
        if local != last or not parent:
            text += f" as {local}" if local != new else ""
        return NodeFix(f"Import `{new}`", ((node, text),))

    # -------------------------------------------------------------------------------------- uses
    def visit_Attribute(self, node: cst.Attribute) -> None:
        if self._guarded or id(node) in self._covered:
            return
        name = self.model.qualified_name(node)
        api = removed_api(name) if name is not None else None
        if name is None or api is None:
            return
        inner: cst.BaseExpression = node.value
        while isinstance(inner, cst.Attribute):
            self._covered.add(id(inner))
            inner = inner.value
        root = self.model.qualified_name(inner)
        if root is None or removed_api(root) is not None:
            return  # reached through an import of a removed name: that import is the finding
        if root.startswith("jax._src."):
            return  # `from jax._src import core as jax_core; jax_core.Primitive`: JAX's own business
        self.report(node, self._message(name, api), self._use_fix(node, name, api))

    def _use_fix(self, node: cst.Attribute, name: str, api: RemovedApi) -> NodeFix | None:
        """Rename `jax.tree_map` to `jax.tree.map` through the same receiver, when `import jax` loads the
        replacement's module (any other module would need an import the fix cannot add safely)."""
        new = renamed(name, api)
        part: cst.BaseExpression | None = node.value
        while new is not None and isinstance(part, (cst.Attribute, cst.Name)):
            prefix = self.model.qualified_name(part)
            if prefix is not None and new.startswith(prefix + "."):
                rest = new[len(prefix) + 1 :]
                module = f"{prefix}.{rest.rpartition('.')[0]}" if "." in rest else prefix
                if module not in EAGER_MODULES:
                    return None
                return NodeFix(f"Use `{new}`", ((node, f"{codegen.source(part)}.{rest}"),))
            part = part.value if isinstance(part, cst.Attribute) else None
        return None

    def visit_Call(self, node: cst.Call) -> None:
        if self._guarded:
            return
        callee = self.model.call_name(node)
        if callee in PARTIAL and node.args:  # `partial(pjit, in_axis_resources=...)`
            first = node.args[0].value
            callee = self.model.qualified_name(first) if isinstance(first, (cst.Name, cst.Attribute)) else None
        if callee is None:
            return
        passed = {arg.keyword.value for arg in node.args if arg.keyword is not None}
        for arg in node.args:
            entry = removed_keyword(callee, arg.keyword.value) if arg.keyword is not None else None
            if entry is None or arg.keyword is None:
                continue
            fix = None
            if entry.replacement not in passed:
                fix = NodeFix(f"Pass `{entry.replacement}=`", ((arg.keyword, entry.replacement),))
            self.report(arg.keyword, f"the `{entry.keyword}=` argument of `{callee}` was removed in JAX "
                                     f"{entry.removed_in}; pass `{entry.replacement}=`", fix)

    @staticmethod
    def _message(name: str, api: RemovedApi) -> str:
        where = f"`{name}` was removed in JAX {api.removed_in}"
        if name != api.name:
            where += f" with `{api.name}`"
        if api.replacement is not None and (api.one_to_one or not api.note):
            where += f"; use `{renamed(name, api) or api.replacement}`"
        elif api.replacement is not None:
            where += f"; use `{api.replacement}`: {api.note}"
            return where
        return where + (f" ({api.note})" if api.note else "")
