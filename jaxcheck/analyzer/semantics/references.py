"""References to imported names, and what a module's strings and names say about 64-bit mode.

A mixin of :class:`jaxcheck.analyzer.semantics.builder.ModelBuilder`: every name or attribute that resolves
through an import is recorded with its qualified name (in code and in annotations, which the model does not
otherwise evaluate), so rules such as JAX601 read imports as the module wrote them; strings that mention
`jax_enable_x64` or name a 64-bit dtype set the module's x64 facts.
"""

from __future__ import annotations

import libcst as cst

import jaxcheck.analyzer.semantics.jax_api as jax_api
from jaxcheck.analyzer.semantics.records import ModuleRecords
from jaxcheck.analyzer.semantics.scopes import BindingKind, Scope, qualified_name
from jaxcheck.analyzer.semantics.values import UNKNOWN, Value
from jaxcheck.analyzer.tree import child_nodes


class ReferenceReader:
    """Records imported references and the module's x64 facts while the one traversal runs."""

    scope: Scope
    records: ModuleRecords
    enables_x64: bool
    """Some string mentions `jax_enable_x64` (a config update, an environment variable)."""
    wide_dtypes: bool
    """Some reference or string names a 64-bit dtype."""

    def _reference(self, node: cst.Name | cst.Attribute, target: str) -> None:
        """Record that `node` refers to the imported (or imported-from) qualified name `target`."""
        self.records.references[id(node)] = target
        if target in jax_api.WIDE_DTYPES:
            self.wide_dtypes = True

    def _string(self, node: cst.CSTNode) -> Value:
        assert isinstance(node, cst.SimpleString)
        # The text between the quotes, prefix (`b`, `r`) and quotes dropped; not `evaluated_value`, whose
        # `literal_eval` would warn about the linted code's invalid escapes (`"\d"`) on Python 3.12+.
        text = node.raw_value.lower()
        if "jax_enable_x64" in text:
            self.enables_x64 = True
        elif len(text) < 40 and text in jax_api.WIDE_DTYPE_STRINGS:
            self.wide_dtypes = True
        return UNKNOWN

    def _note_annotations(self, node: cst.FunctionDef) -> None:
        """Record the imported names that the parameter and return annotations of `node` refer to."""
        params = node.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            if param.annotation is not None:
                self._note_references(param.annotation.annotation)
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param) and star.annotation is not None:
                self._note_references(star.annotation.annotation)
        if node.returns is not None:
            self._note_references(node.returns.annotation)

    def _note_references(self, annotation: cst.BaseExpression) -> None:
        """Record the imported names an annotation (not evaluated by the model) refers to: `jnp.ndarray`,
        `Optional[jax.random.KeyArray]`; string annotations are not read."""
        stack: list[cst.CSTNode] = [annotation]
        while stack:
            node = stack.pop()
            if isinstance(node, (cst.Name, cst.Attribute)):
                name = qualified_name(self.scope, node)
                if name is not None and self._imported_root(node):
                    self._reference(node, name)
                if isinstance(node, cst.Attribute):
                    stack.append(node.value)
            elif isinstance(node, (cst.Subscript, cst.SubscriptElement, cst.Index, cst.BinaryOperation, cst.Tuple,
                                   cst.List, cst.Element)):
                stack.extend(child_nodes(node))

    def _imported_root(self, node: cst.BaseExpression) -> bool:
        while isinstance(node, cst.Attribute):
            node = node.value
        if not isinstance(node, cst.Name):
            return False
        binding = self.scope.lookup(node.value)
        return binding is not None and binding.kind is BindingKind.IMPORT
