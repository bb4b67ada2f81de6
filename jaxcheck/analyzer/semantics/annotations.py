"""Reading type annotations and decorators: which parameters are arrays, containers or never tracers,
and which decorators memoize a function.

A mixin of :class:`jaxcheck.analyzer.semantics.builder.ModelBuilder`: names resolve in the builder's
current scope while the one traversal runs.
"""

from __future__ import annotations

import libcst as cst

import jaxcheck.analyzer.semantics.jax_api as jax_api
from jaxcheck.analyzer.semantics.scopes import Scope, qualified_name


class AnnotationReader:
    """Answers questions about annotation and decorator expressions in the current scope."""

    scope: Scope

    def _is_memoizer(self, decorator: cst.BaseExpression) -> bool:
        """`functools.cache`, `functools.lru_cache(...)`, or a decorator named like one (`util.cache()`)."""
        target = decorator.func if isinstance(decorator, cst.Call) else decorator
        name = qualified_name(self.scope, target)
        return name is not None and name.rpartition(".")[2] in jax_api.MEMOIZING_DECORATORS

    def _is_array_annotation(self, annotation: cst.BaseExpression) -> bool:
        if isinstance(annotation, cst.Subscript):
            base = qualified_name(self.scope, annotation.value)
            return base in jax_api.JAXTYPING_DTYPES
        if isinstance(annotation, (cst.SimpleString, cst.ConcatenatedString)):
            return False
        return qualified_name(self.scope, annotation) in jax_api.ARRAY_ANNOTATIONS

    def _is_jax_array_annotation(self, annotation: cst.BaseExpression) -> bool:
        """`jax.Array`, `jnp.ndarray`, or jaxtyping's `Float[Array, "n"]`: JAX arrays only (not `ArrayLike`,
        nor `Float[np.ndarray, "n"]`, which NumPy arrays satisfy)."""
        if isinstance(annotation, cst.Subscript):
            if qualified_name(self.scope, annotation.value) not in jax_api.JAXTYPING_DTYPES or not annotation.slice:
                return False
            wrapped = annotation.slice[0].slice
            return isinstance(wrapped, cst.Index) and self._is_jax_array_annotation(wrapped.value)
        if isinstance(annotation, (cst.SimpleString, cst.ConcatenatedString)):
            return False
        return qualified_name(self.scope, annotation) in jax_api.JAX_ARRAY_ANNOTATIONS

    def _is_container_annotation(self, annotation: cst.BaseExpression) -> bool:
        """`dict`, `Dict[str, Array]`, `Optional[Dict]`, `list | None`: a Python container (or None)."""
        if isinstance(annotation, cst.BinaryOperation) and isinstance(annotation.operator, cst.BitOr):
            sides = (annotation.left, annotation.right)
            return all(self._is_container_annotation(s) or _is_none(s) for s in sides) and not all(map(_is_none, sides))
        base = annotation.value if isinstance(annotation, cst.Subscript) else annotation
        name = qualified_name(self.scope, base)
        if name == "typing.Optional" and isinstance(annotation, cst.Subscript) and len(annotation.slice) == 1:
            inner = annotation.slice[0].slice
            return isinstance(inner, cst.Index) and self._is_container_annotation(inner.value)
        return name in jax_api.CONTAINER_ANNOTATIONS

    def _is_non_array_annotation(self, annotation: cst.BaseExpression) -> bool:
        """`str`, `Callable[...]`, `DTypeLike | None`, `Optional[str]`: types that never hold a tracer."""
        if isinstance(annotation, cst.BinaryOperation) and isinstance(annotation.operator, cst.BitOr):
            return self._is_non_array_annotation(annotation.left) and self._is_non_array_annotation(annotation.right)
        if isinstance(annotation, cst.Name) and annotation.value == "None":
            return True
        if isinstance(annotation, cst.Subscript):
            base = qualified_name(self.scope, annotation.value)
            if base in ("typing.Optional", "typing.Union"):
                return all(
                    isinstance(e.slice, cst.Index) and self._is_non_array_annotation(e.slice.value)
                    for e in annotation.slice
                )
            return base in jax_api.NON_ARRAY_ANNOTATIONS
        name = qualified_name(self.scope, annotation)
        return name is not None and (name in jax_api.NON_ARRAY_ANNOTATIONS or name.endswith(".DTypeLike"))


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"
