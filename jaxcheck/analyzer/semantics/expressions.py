"""Expressions: the abstract value of each expression, recorded for the rules.

:meth:`ExpressionInterpreter._eval` dispatches on the node type (:data:`_EXPRESSION_HANDLERS`): names
(their scope, parameters and outer reads), attributes, subscripts, operators (arrays, masks, containers,
paths, shapes), comprehensions and lambdas (read in scopes of their own). Cost: one budget step per node.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import libcst as cst

from jaxcheck.analyzer.semantics import shapes
from jaxcheck.analyzer.semantics.calls import CallInterpreter
from jaxcheck.analyzer.semantics.guards import Narrowed
from jaxcheck.analyzer.semantics.interpreter import array_valued
import jaxcheck.analyzer.semantics.jax_api as jax_api
from jaxcheck.analyzer.semantics.parameter_use import PROBE_ATTRIBUTES
from jaxcheck.analyzer.semantics.scopes import VARIABLE, BindingKind, Scope, ScopeKind
import jaxcheck.analyzer.semantics.structure as structure
from jaxcheck.analyzer.semantics.syntax import literal_strings
from jaxcheck.analyzer.semantics.values import (
    ARRAY_VALUED, NO_DEPS, BOOL_MASK, FILESYSTEM_PATH, JAX_ARRAY, PYTHON_CONTAINER, PYTHON_SET, UNKNOWN, Value, combine,
)

_SET_OPERATORS = (cst.Subtract, cst.BitAnd, cst.BitOr, cst.BitXor)
_ORDERING_OPERATORS = (cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual, cst.Equal, cst.NotEqual)
_MASK_OPERATORS = (cst.BitAnd, cst.BitOr, cst.BitXor)


class ExpressionInterpreter(CallInterpreter):
    """Values expressions (see the module docstring)."""

    def _eval(self, node: cst.BaseExpression) -> Value:
        """Interpret `node` and its sub-expressions; record and return its abstract value."""
        self._budget.spend()
        handler = _EXPRESSION_HANDLERS.get(type(node))
        value = handler(self, node) if handler is not None else UNKNOWN
        if value:
            self.records.values[id(node)] = value
        elif id(node) in self.records.values:  # a loop's second pass: a shape from the first may not hold
            self.records.values[id(node)] = self.records.values[id(node)].without_shape()
        return value

    def _name(self, node: cst.CSTNode) -> Value:
        assert isinstance(node, cst.Name)
        if id(node) not in self._called_names:
            binding = self.scope.lookup(node.value)
            if binding is not None and binding.kind is BindingKind.FUNCTION:
                self.records.escaping_functions.add(binding.target)  # read as a value: it may run any time
        function = self.scope.function_scope()
        if function.kind is not ScopeKind.FUNCTION:
            binding = self.scope.lookup(node.value)
            if binding is not None and binding.kind is BindingKind.IMPORT:
                self._reference(node, binding.target)
        else:
            resolved = self.scope.resolve(node.value)
            if resolved is not None:
                owner, binding = resolved
                if binding.kind is BindingKind.IMPORT:
                    self._reference(node, binding.target)
                for collector in self.collectors:
                    collector.name_read(node, owner)
                if owner.function_scope() is not function and owner.kind is not ScopeKind.CLASS:
                    if binding.kind in (BindingKind.VARIABLE, BindingKind.IMPORT):
                        self.records.outer_names[id(node)] = self._outer_name(owner, binding.kind)
                    if binding.kind is BindingKind.VARIABLE:
                        self.records.outer_variable_reads.append((node, function.key))
                        self._note_branch(node)
                elif node.value == function.self_name and function.class_scope is not None:
                    frameworks = self.framework_classes.get(function.class_scope.key, frozenset())
                    if not any(framework.self_is_scope for framework in frameworks):
                        self.records.self_loads.add(id(node))
                    if any(framework.lifts_variables for framework in frameworks):
                        self.records.nnx_self_loads.add(id(node))
        value = self.scope.load(node.value)
        if value.shape is not None:
            shape_owner = self._owner(node.value)
            if shape_owner is not None:
                self.records.shaped_names[id(node)] = (shape_owner.key, node.value)
        return value

    def _attribute(self, node: cst.CSTNode) -> Value:
        assert isinstance(node, cst.Attribute)
        receiver = self._eval(node.value)
        attr = node.attr.value
        base = self.records.references.get(id(node.value))
        if base is not None:
            self._reference(node, jax_api.canonical(f"{base}.{attr}"))
        read = self._attribute_read(node)
        if attr in PROBE_ATTRIBUTES:
            self._probed(node.value)
        if id(node.value) in self.records.outer_names:
            self.records.read_paths[id(node.value)] = attr
        if receiver.deps and attr in jax_api.ARRAY_VIEW_ATTRIBUTES:
            return Value(receiver.deps, receiver.flags & JAX_ARRAY if attr != "at" else 0)
        if read is None and receiver.deps and self.records.attribute_owners.get(id(node)) in self.records.array_fields:
            return Value(receiver.deps, ARRAY_VALUED)  # `state.step` of a `step: jax.Array` field: a leaf of the object
        if receiver.flags & FILESYSTEM_PATH and attr == "parent":
            return Value(NO_DEPS, FILESYSTEM_PATH)
        return read if read is not None else UNKNOWN

    def _subscript(self, node: cst.CSTNode) -> Value:
        assert isinstance(node, cst.Subscript)
        value = self._eval(node.value)
        indices = self._slice(node.slice)
        key = structure.constant_key(node.slice)
        if isinstance(key, str) and id(node.value) in self.records.outer_names:
            self.records.read_paths[id(node.value)] = key
        if value.elements is not None and isinstance(key, int) and -len(value.elements) <= key < len(value.elements):
            return value.elements[key]
        field = value.field(key) if isinstance(key, str) else None
        if field is not None:
            return field
        item = combine((value.element(), *indices), value.flags & JAX_ARRAY)
        if value.returned is not None:
            item = replace(item, returned=value.returned.at(key))
        if value.flags & JAX_ARRAY and item:
            shape = shapes.indexed_shape(value.shape, node.slice)
            return replace(item, shape=shape) if shape is not None else item
        return item

    def _binary(self, node: cst.CSTNode) -> Value:
        assert isinstance(node, cst.BinaryOperation)
        left = self._eval(node.left)
        right = self._eval(node.right)
        flags = 0
        if isinstance(node.operator, _MASK_OPERATORS) and (left.flags | right.flags) & BOOL_MASK:
            flags = BOOL_MASK
        elif isinstance(node.operator, cst.Add) and left.flags & right.flags & PYTHON_CONTAINER:
            flags = PYTHON_CONTAINER
        elif isinstance(node.operator, cst.Multiply) and (left.flags | right.flags) & PYTHON_CONTAINER:
            if not (left.deps and right.deps):
                flags = PYTHON_CONTAINER
        elif isinstance(node.operator, _SET_OPERATORS) and left.flags & PYTHON_SET:
            flags = PYTHON_CONTAINER | PYTHON_SET  # `set(values) - allowed`
        elif isinstance(node.operator, cst.Divide) and left.flags & FILESYSTEM_PATH:
            flags = FILESYSTEM_PATH
        if not (left.flags | right.flags | flags) & (PYTHON_CONTAINER | FILESYSTEM_PATH):
            if not isinstance(node.left, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
                flags |= array_valued(left, right)  # NumPy defers to JAX arrays; `"%s" % x` is a str
        result = combine((left, right), flags)
        if result.flags & JAX_ARRAY and not isinstance(node.operator, cst.MatrixMultiply):
            shape = _elementwise_shape(node.left, left, node.right, right)
            return replace(result, shape=shape) if shape is not None else result
        return result

    def _unary(self, node: cst.CSTNode) -> Value:
        assert isinstance(node, cst.UnaryOperation)
        operand = self._eval(node.expression)
        if isinstance(node.operator, cst.Not):
            return UNKNOWN
        flags = operand.flags & BOOL_MASK if isinstance(node.operator, cst.BitInvert) else 0
        result = combine((operand,), flags | array_valued(operand))
        if result.flags & JAX_ARRAY and operand.shape is not None:
            return replace(result, shape=operand.shape)
        return result

    def _boolean(self, node: cst.CSTNode) -> Value:
        assert isinstance(node, cst.BooleanOperation)
        left = self._eval(node.left)
        concrete_if_true, concrete_if_false = self._isinstance_narrowing(node.left)
        # The right operand only runs when the left one is true (`and`) or false (`or`).
        narrowed = concrete_if_true if isinstance(node.operator, cst.And) else concrete_if_false
        return left.joined(self._eval_narrowed(node.right, narrowed))

    def _eval_narrowed(self, node: cst.BaseExpression, concrete: set[Narrowed]) -> Value:
        """Evaluate `node`, which may not run at all, in a branch where `concrete` names are known not
        to be tracers."""
        scope, function = self.scope, self.scope.function_scope()
        saved, saved_function = dict(scope.env), dict(function.env)
        self._assume_narrowed(concrete)
        self._conditional += 1
        try:
            return self._eval(node)
        finally:
            self._conditional -= 1
            function.env = saved_function
            scope.env = saved

    def _comparison(self, node: cst.CSTNode) -> Value:
        assert isinstance(node, cst.Comparison)
        values = [self._eval(node.left)]
        values += [self._eval(target.comparator) for target in node.comparisons]
        if any(isinstance(target.operator, (cst.Is, cst.IsNot)) for target in node.comparisons):
            for operand in (node.left, *(target.comparator for target in node.comparisons)):
                self._probed(operand)
        if all(isinstance(target.operator, _ORDERING_OPERATORS) for target in node.comparisons):
            return combine(values, BOOL_MASK)
        return UNKNOWN

    def _if_exp(self, node: cst.CSTNode) -> Value:
        assert isinstance(node, cst.IfExp)
        self._eval(node.test)
        concrete_if_true, concrete_if_false = self._isinstance_narrowing(node.test)
        self._branches.append((id(node), 0))
        body = self._eval_narrowed(node.body, concrete_if_true)
        self._branches[-1] = (id(node), 1)
        orelse = self._eval_narrowed(node.orelse, concrete_if_false)
        self._branches.pop()
        return body.joined(orelse)

    def _sequence(self, node: cst.CSTNode) -> Value:
        assert isinstance(node, (cst.Tuple, cst.List, cst.Set))
        values = [self._eval(element.value) for element in node.elements]
        deps = combine(values).deps
        if isinstance(node, cst.Set):
            return Value(deps, PYTHON_CONTAINER | PYTHON_SET)
        starred = any(isinstance(element, cst.StarredElement) for element in node.elements)
        return Value(deps, PYTHON_CONTAINER, None if starred else tuple(values))

    def _dict(self, node: cst.CSTNode) -> Value:
        assert isinstance(node, cst.Dict)
        values: list[Value] = []
        fields: list[tuple[str, Value]] | None = []
        for element in node.elements:
            name = None
            if isinstance(element, cst.DictElement):
                self._eval(element.key)
                names = literal_strings(element.key) if isinstance(element.key, cst.SimpleString) else None
                name = names[0] if names else None
            values.append(self._eval(element.value))
            if name is None or fields is None:
                fields = None  # `**rest` or a computed key: the fields are not all known
            else:
                fields.append((name, values[-1]))
        return Value(combine(values).deps, PYTHON_CONTAINER, fields=None if fields is None else tuple(fields))

    def _starred(self, node: cst.CSTNode) -> Value:
        assert isinstance(node, cst.StarredElement)
        return self._eval(node.value).element()

    def _comprehension(self, node: cst.CSTNode) -> Value:
        assert isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp))
        self._conditional += 1  # the element runs once per item: perhaps never
        try:
            with self._in_loop(node):
                return self._comprehension_body(node)
        finally:
            self._conditional -= 1

    def _comprehension_body(self, node: cst.ListComp | cst.SetComp | cst.GeneratorExp | cst.DictComp) -> Value:
        outer = self.scope
        first = True
        clause: cst.CompFor | None = node.for_in
        while clause is not None:
            # The first iterable is evaluated in the enclosing scope, the rest inside the comprehension.
            iterable = self._eval(clause.iter)
            if first:
                self.scope = Scope(ScopeKind.COMPREHENSION, outer.key, outer)
                first = False
            self._bind(clause.target, self._iteration_value(clause.iter, iterable))
            for condition in clause.ifs:
                self._eval(condition.test)
            clause = clause.inner_for_in
        try:
            if isinstance(node, cst.DictComp):
                self._eval(node.key)
                element = self._eval(node.value)
            else:
                element = self._eval(node.elt)
        finally:
            self.scope = outer
        if isinstance(node, cst.GeneratorExp):
            return combine((element,))
        site = self.records.transform_sites.get(id(node.value if isinstance(node, cst.DictComp) else node.elt))
        if site is not None:  # `{name: jax.jit(f) for ...}`: one function per entry, kept
            self.records.transform_sites[id(node.value if isinstance(node, cst.DictComp) else node.elt)] = \
                replace(site, tabled=True)
        return Value(element.deps, PYTHON_CONTAINER | (PYTHON_SET if isinstance(node, cst.SetComp) else 0))

    def _lambda(self, node: cst.CSTNode) -> Value:
        assert isinstance(node, cst.Lambda)
        self._eval_parameter_defaults(node.params)
        owner = self._child_key("")  # the key prefix of the enclosing scope
        count = self._lambda_counts.get(owner, 0) + 1
        if id(node) not in self.records.function_keys:
            self._lambda_counts[owner] = count
        key = self._new_function(node, f"<lambda#{count}>")
        outer, loops = self.scope, self._loops
        self.scope = self._function_scope(node, key, outer)
        self._loops = []
        try:
            body = self._eval(node.body)
        finally:
            self.scope, self._loops = outer, loops
        self.returns[key] = body
        return UNKNOWN

    def _named_expr(self, node: cst.CSTNode) -> Value:
        assert isinstance(node, cst.NamedExpr)
        value = self._eval(node.value)
        if isinstance(node.target, cst.Name):
            self.scope.function_scope().bind(node.target.value, VARIABLE, value)
        return value

    def _formatted_string(self, node: cst.CSTNode) -> Value:
        assert isinstance(node, cst.FormattedString)
        for part in node.parts:
            if isinstance(part, cst.FormattedStringExpression):
                self._eval(part.expression)
        return UNKNOWN

    def _await(self, node: cst.CSTNode) -> Value:
        assert isinstance(node, cst.Await)
        return self._eval(node.expression)

    def _yield(self, node: cst.CSTNode) -> Value:
        assert isinstance(node, cst.Yield)
        if self.in_function:
            self.records.escaping_functions.add(self.function_key)  # a generator resumes after each `next`
        if isinstance(node.value, cst.From):
            self._eval(node.value.item)
        elif node.value is not None:
            self._eval(node.value)
        return UNKNOWN


def _elementwise_shape(left_node: cst.BaseExpression, left: Value, right_node: cst.BaseExpression,
                       right: Value) -> tuple[int, ...] | None:
    """The certain shape of elementwise arithmetic: both operands of one known shape, or one of a known
    shape and the other a number literal."""
    if left.shape is not None and (left.shape == right.shape or shapes.broadcast_literal(right_node)):
        return left.shape
    if right.shape is not None and shapes.broadcast_literal(left_node):
        return right.shape
    return None


# The interpreters of expressions by node type: class-level, as the statements' (see `flow`).
_EXPRESSION_HANDLERS: dict[type[cst.CSTNode], Callable[[ExpressionInterpreter, cst.CSTNode], Value]] = {
    cst.Name: ExpressionInterpreter._name,
    cst.Attribute: ExpressionInterpreter._attribute,
    cst.Call: ExpressionInterpreter._call,
    cst.Subscript: ExpressionInterpreter._subscript,
    cst.BinaryOperation: ExpressionInterpreter._binary,
    cst.UnaryOperation: ExpressionInterpreter._unary,
    cst.BooleanOperation: ExpressionInterpreter._boolean,
    cst.Comparison: ExpressionInterpreter._comparison,
    cst.IfExp: ExpressionInterpreter._if_exp,
    cst.Tuple: ExpressionInterpreter._sequence,
    cst.List: ExpressionInterpreter._sequence,
    cst.Set: ExpressionInterpreter._sequence,
    cst.Dict: ExpressionInterpreter._dict,
    cst.ListComp: ExpressionInterpreter._comprehension,
    cst.SetComp: ExpressionInterpreter._comprehension,
    cst.GeneratorExp: ExpressionInterpreter._comprehension,
    cst.DictComp: ExpressionInterpreter._comprehension,
    cst.Lambda: ExpressionInterpreter._lambda,
    cst.NamedExpr: ExpressionInterpreter._named_expr,
    cst.FormattedString: ExpressionInterpreter._formatted_string,
    cst.Await: ExpressionInterpreter._await,
    cst.Yield: ExpressionInterpreter._yield,
    cst.StarredElement: ExpressionInterpreter._starred,
    cst.SimpleString: ExpressionInterpreter._string,
}
