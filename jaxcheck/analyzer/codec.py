"""A data-only codec: frozen dataclasses to JSON-ready values and back, checked against type hints.

Decoding never runs code named by the data: it builds only the classes the declared type allows
(the data names a class just to choose among the members of a union) and rejects anything else with
:class:`CodecError`. Supported hints: `None`, `bool`, `int`, `str`, `Literal`, `tuple[X, ...]`,
fixed tuples, `frozenset[X]`, `list[X]`, `dict[K, V]`, unions and dataclasses built from them.
"""

from __future__ import annotations

import dataclasses
import sys
import types
import typing
from functools import cache
from typing import Any, Literal, TypeVar, Union

T = TypeVar("T")
_TAG = "@"
_PACKAGE = "jaxcheck."


class CodecError(ValueError):
    """The data does not have the shape the type declares."""


def encode(value: object) -> object:
    """`value` as nested lists, dicts, strings, numbers, booleans and None (what `json` writes)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return {_TAG: type(value).__qualname__, **fields}
    if isinstance(value, (tuple, list, frozenset, set)):
        return [encode(item) for item in value]
    if isinstance(value, dict):
        return [[encode(key), encode(item)] for key, item in value.items()]
    raise CodecError(f"cannot encode a {type(value).__name__}")


def decode(hint: Any, data: object) -> Any:
    """The value of type `hint` that :func:`encode` turned into `data`; CodecError when it is not one."""
    if hint is type(None) or hint is None:
        return _expect(data, type(None))
    if hint in (bool, str):
        return _expect(data, hint)
    if hint is int:
        if isinstance(data, bool):
            raise CodecError("expected an int, got a bool")
        return _expect(data, int)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _decode_dataclass(hint, data)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Literal:
        if data not in args or type(data) not in {type(arg) for arg in args}:
            raise CodecError(f"expected one of {args!r}")
        return data
    if origin in (Union, types.UnionType):
        return _decode_union(args, data)
    if origin in (tuple, frozenset, list):
        items = _expect(data, list)
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            if len(items) != len(args):
                raise CodecError(f"expected {len(args)} items, got {len(items)}")
            return tuple(decode(arg, item) for arg, item in zip(args, items))
        decoded = [decode(args[0], item) for item in items]
        return origin(decoded)
    if origin is dict:
        pairs = _expect(data, list)
        result = {}
        for pair in pairs:
            if not isinstance(pair, list) or len(pair) != 2:
                raise CodecError("expected a [key, value] pair")
            result[decode(args[0], pair[0])] = decode(args[1], pair[1])
        return result
    raise CodecError(f"unsupported type {hint!r}")


def _decode_union(members: tuple[Any, ...], data: object) -> Any:
    if isinstance(data, dict):  # a dataclass: its tag says which member
        for member in members:
            if isinstance(member, type) and dataclasses.is_dataclass(member) and data.get(_TAG) == member.__qualname__:
                return _decode_dataclass(member, data)
        raise CodecError(f"unexpected class tag {data.get(_TAG)!r}")
    errors = []
    for member in members:
        if dataclasses.is_dataclass(member):
            continue
        try:
            return decode(member, data)
        except CodecError as exc:
            errors.append(str(exc))
    raise CodecError("; ".join(errors) or "no member of the union matches")


def _decode_dataclass(cls: Any, data: object) -> Any:
    fields = _expect(data, dict)
    if fields.get(_TAG) != cls.__qualname__:
        raise CodecError(f"expected a {cls.__qualname__}, got {fields.get(_TAG)!r}")
    hints = _hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    if set(fields) != {_TAG, *names}:
        raise CodecError(f"fields of {cls.__qualname__} do not match")
    return cls(**{name: decode(hints[name], fields[name]) for name in names})


@cache
def _hints(cls: Any) -> dict[str, Any]:
    """The resolved field types of `cls`. Names imported only for type checking are looked up among
    the classes of jaxcheck's loaded modules."""
    namespace: dict[str, Any] = {}
    for name, module in list(sys.modules.items()):
        if name.startswith(_PACKAGE) and module is not None:
            namespace.update((key, value) for key, value in vars(module).items() if isinstance(value, type))
    namespace.update(vars(sys.modules[cls.__module__]))  # the class's own module wins
    return typing.get_type_hints(cls, localns=namespace)


def _expect(data: object, kind: type[T]) -> T:
    if not isinstance(data, kind):
        raise CodecError(f"expected {kind.__name__}, got {type(data).__name__}")
    return data
