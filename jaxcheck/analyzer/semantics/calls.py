"""Calls: the value of every call that is not a transform, and the call edges the solver follows.

Collectors hear of each call (:mod:`.collectors`); a library callable's value comes from the call table
(:mod:`.call_table`); a call of a function of this module or of the project becomes a call edge and a
`CallDep` the solver resolves; methods on arrays and paths are valued here. Cost: constant work per
call, plus its arguments.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import libcst as cst

from jaxcheck.analyzer.semantics import shapes
from jaxcheck.analyzer.semantics.bindings import MUTATING_METHODS, alternatives
from jaxcheck.analyzer.semantics.call_table import CallSemantics, Returns, call_semantics
from jaxcheck.analyzer.semantics.interpreter import EXTERNAL_PREFIXES, array_valued
import jaxcheck.analyzer.semantics.jax_api as jax_api
from jaxcheck.analyzer.semantics.parameter_use import TREE_MAPS, is_library
from jaxcheck.analyzer.semantics.records import Receiver
from jaxcheck.analyzer.semantics.scopes import BindingKind, ScopeKind, qualified_name
import jaxcheck.analyzer.semantics.structure as structure
from jaxcheck.analyzer.semantics.summary import CallEdge
from jaxcheck.analyzer.semantics.syntax import argument, at_receiver, literal_ints, literal_strings
from jaxcheck.analyzer.semantics.transform_calls import TransformCallReader, argument_facts
from jaxcheck.analyzer.semantics.values import (
    BOOL_MASK, FILESYSTEM_PATH, GRADIENT_STOPPED, JAX_ARRAY, KEY_TAKING_LAYER, NEW_OBJECT, NO_DEPS, NUMPY_ARRAY,
    SEEDED_GENERATOR,
    UNKNOWN, CallArguments, CallDep, Deps, OpaqueDep, Returned, Value, combine,
)

_PATH_METHODS = frozenset({"joinpath", "with_name", "with_suffix", "with_stem", "resolve", "absolute", "expanduser"})


class CallInterpreter(TransformCallReader):
    """Values calls (see the module docstring)."""

    def _call(self, node: cst.CSTNode) -> Value:
        """The value of a call, in order: the callee and the arguments are read (the collectors hear of it
        before and after); a transform traces its target; the call table values a library call; a method,
        a function of this module or of the project becomes a call edge; anything else is opaque."""
        assert isinstance(node, cst.Call)
        early_args: list[Value] | None = None
        self._called_names.add(id(node.func))
        if node.args and isinstance(node.args[0].value, cst.Name) and self._transformed_here(node):
            self._called_names.add(id(node.args[0].value))  # `jax.jit(f)`: its calls are what program order sees
        if isinstance(node.func, cst.Call):
            self._immediate_calls[id(node.func)] = node
            if qualified_name(self.scope, node.func.func) in self.transforms:
                # `jax.jit(f)(x)`: read `x` first, so the root of `f` knows which arguments are arrays
                early_args = self._immediate_args[id(node)] = [self._eval(arg.value) for arg in node.args]
        called = self._eval(node.func)
        if isinstance(node.func, cst.Attribute):  # `CONFIG.get("wd")`: a method may read any part of its object
            self.records.read_paths.pop(id(node.func.value), None)
        name = qualified_name(self.scope, node.func)
        if name is None and self.scope.function_scope().kind is ScopeKind.MODULE and self._may_call_project(node, called) \
                and self._called_method(node.func, called) is None:  # a method it names is a call event below
            initialized = self._initialized_method(node.func)
            if initialized is not None:
                self._call_event(node, initialized)
            else:
                self.records.program_order.called_unresolved(self._code_scope, self._next_order())
        if name is not None:
            self.records.call_names[id(node)] = name
            if name in jax_api.X64_SWITCHES:
                self.enables_x64 = True
        for collector in self.collectors:
            collector.call_entered(node, name)
        args = early_args if early_args is not None else [self._eval(arg.value) for arg in node.args]
        for collector in self.collectors:
            collector.call_read(node, name, args, called)
        if name in TREE_MAPS and node.args and node.args[0].keyword is None and not node.args[0].star:
            self._tree_map_edge(node, args)
        if name is None or not name.startswith(jax_api.PURE_CALL_PREFIXES):
            for arg in node.args:  # `to_numpy(params)` may replace what `params` holds
                self._forget_structure(arg.value)
        transform = self.transforms.get(name) if name is not None else None
        if transform is not None:
            self._transform_call(node, transform)
            return UNKNOWN
        configured = self._configured_transform(node.func) if isinstance(node.func, cst.Call) else None
        if configured is not None and all(arg.keyword is not None for arg in configured[1]):
            self._transform_call(node, *configured)  # `functools.partial(jax.vmap, in_axes=(0, None))(f)`
            return UNKNOWN
        semantics = call_semantics(name) if name is not None else None
        if semantics is not None and (semantics.returns is not Returns.KEY_TAKING_LAYER
                                      or is_library(self.module_name, name or "")):
            return self._library_result(node, semantics, args)
        if isinstance(node.func, cst.Call) and self.records.call_names.get(id(node.func)) in self.transforms:
            self.records.called_transforms.add(id(node.func))
            self._record_transformed_call(node, node.func, args)
            # `jax.jit(f)(x)`, `jax.value_and_grad(loss)(params)`; `jax.grad(loss)(w)` of an array is one
            gradient = self.records.call_names.get(id(node.func)) in jax_api.GRADIENT_TRANSFORMS
            flags = JAX_ARRAY if gradient and len(node.func.args) == 1 and self._first_is_array(node.args, args) else 0
            return combine((self._staged_operation(), *args), flags)
        method_call = self._called_method(node.func, called)
        if method_call is not None:  # `model(x)`, `model.encode(x)`, Flax `model.apply(variables, x)`
            self._note_receiver(node, node.func.value if isinstance(node.func, cst.Attribute) else node.func)
            method, applied = method_call
            if applied is not None:  # `model.apply(v, x, method=Model.encode)` runs `encode`
                chosen = self._applied_method(node.args, method)
                if chosen is None:
                    return _opaque(args)
                call_args, values = self._apply_arguments(node.args, args, applied)
                return self._local_call(node, chosen, values, 1, call_args)
            return self._local_call(node, method, args, 1)
        slot = self._attribute_owner(node.func)
        if slot is not None and slot in self._transformed_attributes:  # `self._act(q)`: the jitted method runs
            self.records.transformed_calls.add(id(node))
            return self._local_call(node, self._transformed_attributes[slot], args, 1)
        if isinstance(node.func, cst.Name):
            owner = self._owner(node.func.value)
            target = self.records.program_order.transformed_target(owner.key, node.func.value) if owner else None
            if target is not None:
                self._call_event(node, target)
            if owner is not None and (owner.key, node.func.value) in self._transform_results:
                self.records.transformed_calls.add(id(node))
        if isinstance(node.func, cst.Attribute) and node.func.attr.value in ("defjvp", "defvjp"):
            self._custom_rules(node)
        if name in jax_api.PYTREE_REGISTRATIONS and node.args and isinstance(node.args[0].value, cst.Name):
            registered = self.scope.lookup(node.args[0].value.value)
            if registered is not None and registered.kind is BindingKind.CLASS:
                self.drop_fields(registered.target)
        if isinstance(node.func, cst.Attribute) and node.func.attr.value in MUTATING_METHODS:
            self._record_mutation(node.func, containers_only=True)
            self._forget_structure(node.func.value)
        if name is not None:
            if name == "builtins.setattr" and node.args and isinstance(node.args[0].value, cst.Name):
                attribute = node.args[1].value if len(node.args) > 1 else None
                names = literal_strings(attribute) if isinstance(attribute, cst.SimpleString) else None
                path = names[0] if names else None
                self._record_mutated_name(node.args[0].value, node, path)
            created = self._instance_created(name)
            if created is not None:
                return created
            if name in self.functions:
                return self._local_call(node, name, args, 0)
            if name.startswith(EXTERNAL_PREFIXES):
                return UNKNOWN
            return self._project_call(node, name, args)
        self_method = self._method_key(node.func)
        if self_method is not None:
            self.records.call_names.setdefault(id(node), self_method)  # `self.m(...)` calls this module's `m`
            if isinstance(node.func, cst.Attribute):
                self._note_receiver(node, node.func.value)
            return self._local_call(node, self_method, args, self._self_bound(self_method))
        if isinstance(node.func, cst.Attribute):
            return self._method_result(node, node.func, args)
        if isinstance(node.func, cst.Name) and self._is_own_parameter(node.func.value):
            arguments = self._arguments(node.args, args, 0)  # `model(x)`: what a caller passes runs here
            self._called_params.setdefault(self.function_key, []).append((node.func.value, arguments))
        elif isinstance(node.func, cst.Name) and self.in_function:
            self._note_outer_parameter_call(node.func.value)
        return _opaque(args)  # a callable parameter or local: `apply_fn(params, x)`

    def _library_result(self, node: cst.Call, semantics: CallSemantics, args: list[Value]) -> Value:
        """The value of a call of a library callable whose meaning the call table gives."""
        staged = self._staged_operation()
        name = self.records.call_names[id(node)]
        match semantics.returns:
            case Returns.PYTHON_VALUE:
                return UNKNOWN
            case Returns.TRACED_BODIES:
                self._lax_call(node, name, args)
                return combine((staged, *args))
            case Returns.KEY_TAKING_LAYER:
                return Value(NO_DEPS, KEY_TAKING_LAYER)  # `eqx.nn.Dropout(0.5)`: a layer taking its key per call
            case Returns.OBJECT:
                fresh = self.in_function and semantics.seeded_by_argument and _seeded(node)  # not one kept by the module
                return Value(NO_DEPS, semantics.flags | (SEEDED_GENERATOR if fresh else 0))
            case Returns.PASSES_ARRAY:
                return combine((staged, *args), JAX_ARRAY) if self._first_is_array(node.args, args) else UNKNOWN
            case Returns.STOPS_GRADIENT:
                return combine((staged, *args), GRADIENT_STOPPED)
            case Returns.ARRAY_OPERATION:
                if semantics.constant_when_operands_are and args and not args[0].deps:
                    return UNKNOWN  # `lax.psum(1, axis)`: a Python value
                result = combine((staged, *args), semantics.flags)
                shape = shapes.created_shape(name, node, self._certain_shape) if semantics.flags & JAX_ARRAY else None
                return replace(result, shape=shape) if shape is not None else result
            case Returns.ELEMENTWISE:
                return combine(args)
            case Returns.CONTAINER:
                fields = structure.keyword_fields(node.args, args) if name == "builtins.dict" else None
                return Value(combine(args).deps, semantics.flags, fields=fields)
            case Returns.REPLACED_COPY:
                return _replaced_copy(args[0], args[1:]) if args and args[0].instance is not None else _opaque(args)
            case Returns.NUMPY_ARRAY:
                return UNKNOWN if combine(args).deps else Value(NO_DEPS, NUMPY_ARRAY)  # `np.eye(4)`: concrete

    def _method_result(self, node: cst.Call, func: cst.Attribute, args: list[Value]) -> Value:
        """The value of a method call on an object the model cannot name (`x.sum()`, `path.resolve()`)."""
        receiver = self._known(func.value)
        attr = func.attr.value
        array = at_receiver(func)
        if array is not None:  # `x.at[i].set(v)` has the shape of `x`
            shape = self._certain_shape(array) if attr != "get" else None
            return replace(combine((receiver, *args), JAX_ARRAY), shape=shape)
        if receiver.deps and attr in jax_api.ARRAY_METHODS:
            flags = BOOL_MASK if attr in jax_api.BOOL_METHODS else 0
            result = combine((receiver, *args), flags | array_valued(receiver))
            shape = shapes.method_shape(attr, node, self._certain_shape(func.value))
            return replace(result, shape=shape) if shape is not None and result.flags & JAX_ARRAY else result
        if receiver.flags & FILESYSTEM_PATH and attr in _PATH_METHODS:
            return Value(NO_DEPS, FILESYSTEM_PATH)
        if attr in jax_api.STORING_METHODS and receiver.instance is not None:
            return _replaced_copy(receiver, args)  # `state.replace(step=s)` of a class of this module
        if attr not in jax_api.CONCRETE_METHODS and attr not in jax_api.STRUCTURE_METHODS:
            return _opaque([receiver, *args])  # `net.apply(w, x)`, `opt_state.replace(step=s)`
        return UNKNOWN

    def _certain_shape(self, node: cst.BaseExpression) -> tuple[int, ...] | None:
        """The certain shape of an evaluated expression that is known to be a JAX array, else None."""
        value = self._known(node)
        return value.shape if value.flags & JAX_ARRAY else None

    def _first_is_array(self, args: Sequence[cst.Arg], values: Sequence[Value]) -> bool:
        """Whether the first argument is an array: a JAX array, or a NumPy call that returns one
        (`np.zeros(3)`: NumPy mirrors `jax.numpy`)."""
        if not args or args[0].keyword is not None or args[0].star:
            return False
        if values[0].flags & JAX_ARRAY:
            return True
        name = self.records.call_names.get(id(args[0].value))
        return name is not None and name.startswith("numpy.") and jax_api.returns_array(f"jax.{name}")

    def _arguments(self, call_args: Sequence[cst.Arg], args: list[Value], bound: int) -> CallArguments:
        positional: list[Deps] = []
        keywords: list[tuple[str, Deps]] = []
        facts = argument_facts(call_args, args)
        has_star = False
        for arg, value in zip(call_args, args):
            if arg.star:
                has_star = True
            elif arg.keyword is not None:
                keywords.append((arg.keyword.value, value.deps))
            elif not has_star:
                positional.append(value.deps)
        callables: list[tuple[int | str, str, int]] = []
        position = 0
        for arg, value in zip(call_args, args):
            if arg.star:
                break
            slot = arg.keyword.value if arg.keyword is not None else position
            target = self._function_target(arg.value)
            method = self._method_of(value.instance, "__call__") if value.instance is not None else None
            if target is not None:
                callables.append((slot, target, 0))
            elif method is not None:  # `step(model, x)`: `model(x)` in `step` runs `MLP.__call__`
                callables.append((slot, method, 1))
            position += arg.keyword is None
        return CallArguments(tuple(positional), tuple(keywords), bound, has_star, callables=tuple(callables),
                             **facts._asdict())

    def _note_outer_parameter_call(self, name: str) -> None:
        """`fn(*args)` in a function nested in one whose parameter `fn` is (see `_transformed_locals`)."""
        resolved = self.scope.resolve(name)
        if resolved is not None and resolved[0] is not self.scope.function_scope() and self.is_parameter(resolved[0], name):
            self._outer_parameter_calls.setdefault(self.function_key, set()).add((resolved[0].key, name))

    def _note_receiver(self, node: cst.Call, receiver: cst.BaseExpression) -> None:
        """Where the object of the method call `node` comes from, when the model knows it is new (see
        :class:`Receiver`): the calling method's `self`, an object made here (`game.step()`, also one it
        keeps: `game.agent.update()`), or one `self` keeps (`self.ball.move()`)."""
        self_name = self.scope.function_scope().self_name
        root = receiver
        while isinstance(root, cst.Attribute):  # each object on the way is a new one its holder keeps
            if not self._known(root).flags & NEW_OBJECT:
                return
            root = root.value
        if not isinstance(root, cst.Name):
            return
        if root.value == self_name:
            self.records.call_receivers[id(node)] = Receiver.CALLERS_SELF if root is receiver else Receiver.KEPT_BY_SELF
        elif self._known(root).flags & NEW_OBJECT and self.in_function and self._owner(root.value) is self.scope.function_scope():
            self.records.call_receivers[id(node)] = Receiver.MADE_HERE  # a local of this call, not an outer object

    def _local_call(self, node: cst.Call, key: str, args: list[Value], bound: int,
                    call_args: Sequence[cst.Arg] | None = None) -> Value:
        """A call of this module's function `key` with `args` (the values of `call_args`, by default the
        call's own arguments)."""
        call_args = node.args if call_args is None else call_args
        self._note_tracer_rejection(call_args, key, bound)
        arguments = self._record_edge(node, key, args, bound, call_args)
        unless, absent, truthy = self._branch_guard()
        call = CallDep(self.function_key, key, arguments, unless=unless, absent=absent, truthy=truthy)
        return Value(frozenset({call}), returned=Returned(key))

    def _project_call(self, node: cst.Call, name: str, args: list[Value]) -> Value:
        """A call of `name`, maybe a function of another project module (`energy.kinetic(v)`), maybe a
        library's (`optax.global_norm(g)`): opaque, and also what the project function returns from these
        arguments when the solve knows `name` as one (a name it does not know returns nothing traced)."""
        arguments = self._record_edge(node, name, args, 0)
        opaque = _opaque(args)
        if not opaque.deps:
            return replace(opaque, returned=Returned(name))
        unless, absent, truthy = self._branch_guard()
        call = CallDep(self.function_key, name, arguments, unless=unless, absent=absent, truthy=truthy)
        return Value(opaque.deps | {call}, returned=Returned(name))

    def _staged_operation(self) -> Value:
        """What the result of an array operation called here depends on: nothing staged in a
        `jax.ensure_compile_time_eval()` block (it is computed at once)."""
        return UNKNOWN if self._eager_blocks.get(self.function_key) else self._staged_here()

    def _tree_map_edge(self, node: cst.Call, args: list[Value]) -> None:
        """`jax.tree.map(f, tree, ...)` calls `f` right here, once per leaf, with the leaves of the trees
        at the same place: an edge to `f` (a lambda or a function of the project) passing the trees'
        values (the edge's site is `f`'s expression, as the call itself is external)."""
        target = self._function_target(node.args[0].value)
        if target is None or target.startswith(EXTERNAL_PREFIXES):
            return
        leaves = [arg for arg in node.args[1:] if arg.keyword is None and not arg.star]
        arguments = self._arguments(leaves, args[1 : 1 + len(leaves)], 0)
        self._add_edge(node.args[0].value, CallEdge(self.function_key, target, arguments))

    def _record_edge(self, node: cst.Call, callee: str, args: list[Value], bound: int,
                     call_args: Sequence[cst.Arg] | None = None) -> CallArguments:
        """Record the call `node` of `callee` (at module level too: which arguments a function is ever
        passed decides which of its defaulted parameters can hold tracers)."""
        arguments = self._arguments(node.args if call_args is None else call_args, args, bound)
        caller = self.function_key
        self._call_event(node, callee)
        in_loop = any(loop not in self.records.configuration_loops for loop in self._loops)
        if in_loop:
            self.repeated_calls.add(callee)
        sites = self._call_sites.setdefault((caller, callee), {})
        if id(node) not in sites:  # a loop body is read twice: each site counts once
            path = tuple(self._branches)
            if any(not alternatives(path, other) for other in sites.values()):
                self.called_twice.add(callee)  # `a = f(x); b = f(y)`: one run of the caller runs it twice
            sites[id(node)] = path
        self._add_edge(node, CallEdge(caller, callee, arguments, in_loop=in_loop))
        return arguments

    def _record_transformed_call(self, node: cst.Call, transform_call: cst.Call, args: list[Value]) -> None:
        """`jax.jit(f)(x)`: `f` is called with these arguments."""
        target = argument(transform_call, 0, ("fun", "f"))
        if target is None:
            return
        method = self._method_key(target)
        name = method or qualified_name(self.scope, target)
        if name is not None and not name.startswith(EXTERNAL_PREFIXES):
            self._record_edge(node, name, args, self._self_bound(method) if method else 0)


def _seeded(factory: cst.Call) -> bool:
    """Whether a generator factory call passes a literal integer seed (`0`, `(1, 2)`): a name may hold
    None (entropy), a shared generator or a traced value."""
    seed = argument(factory, 0, ("seed",))
    return seed is not None and literal_ints(seed) is not None


def _opaque(values: list[Value]) -> Value:
    """The result of a call the model cannot see into, given `values`: it holds a tracer when they do."""
    deps = combine(values).deps
    return Value(frozenset({OpaqueDep(deps)})) if deps else UNKNOWN


def _replaced_copy(original: Value, replacements: Sequence[Value]) -> Value:
    """A copy of an object of a known class with fields replaced (`state.replace(step=s)`,
    `dataclasses.replace(state, step=s)`): the same class, holding what the original and the new values
    hold."""
    return Value(combine((original, *replacements)).deps, instance=original.instance)
