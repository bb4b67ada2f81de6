"""A data-only codec: frozen dataclasses to JSON-ready values and back, checked against type hints.

Decoding never runs code named by the data: it builds only the classes the declared type allows
(the data names a class just to choose among the members of a union) and rejects anything else with
:class:`CodecError`. Supported hints: `None`, `bool`, `int`, `str`, `Literal`, `tuple[X, ...]`,
fixed tuples, `frozenset[X]`, `list[X]`, `dict[K, V]`, unions and dataclasses built from them.

Shared nodes: an instance of a class marked `__codec_shared__` (the model's interned dependencies, a
DAG that threads values through helpers) is written in full where one encoding first meets it, with a
number (`"&"`), and as a reference (`{"*": number}`) wherever it meets it again, so the output is linear
in the distinct nodes, not in the paths to them. A reference may only name a node already read, of the
class the declared type allows.
"""

from __future__ import annotations

import dataclasses
import sys
import threading
import types
import typing
from collections.abc import Callable
from functools import cache
from typing import Any, Literal, TypeVar, Union

T = TypeVar("T")
_TAG = "@"
_NUMBER = "&"
_REFERENCE = "*"
_PACKAGE = "jaxcheck."


class _Shared(threading.local):
    """The shared nodes met so far by the encoding or decoding running on this thread (None: none runs)."""

    numbers: dict[object, int] | None = None
    nodes: list[object] | None = None


_shared = _Shared()


class CodecError(ValueError):
    """The data does not have the shape the type declares."""


def encode(value: object) -> object:
    """`value` as nested lists, dicts, strings, numbers, booleans and None (what `json` writes)."""
    if _shared.numbers is not None:
        return _encode(value)
    _shared.numbers = {}
    try:
        return _encode(value)
    finally:
        _shared.numbers = None


def _encode(value: object) -> object:
    kind: Any = type(value)
    if value is None or kind is str or kind is int or kind is bool or isinstance(value, (bool, int, str)):
        return value
    if _field_names(kind) is not None:
        return _instance_encoder(kind)(value)
    if isinstance(value, (tuple, list, frozenset, set)):
        if _all_str(value):  # none, or names and keys: as they are
            return list(value)
        return [_encode(item) for item in value]
    if isinstance(value, dict):
        return [[_encode(key), _encode(item)] for key, item in value.items()]
    raise CodecError(f"cannot encode a {type(value).__name__}")


Encoder = Callable[[Any], object]


@cache
def _field_names(kind: Any) -> tuple[str, ...] | None:
    """The field names of dataclass `kind`, in order; None for any other type."""
    return tuple(field.name for field in dataclasses.fields(kind)) if dataclasses.is_dataclass(kind) else None


@cache
def _instance_encoder(cls: Any) -> Encoder:
    """A function that encodes instances of dataclass `cls`, each field by an encoder chosen once from
    its declared type (as :func:`_decoder` decodes: a cache entry holds millions of values)."""
    names = _field_names(cls) or ()
    tag = cls.__qualname__
    fields: list[tuple[str, Encoder]] = []
    shared = getattr(cls, "__codec_shared__", False)

    def instance(value: Any) -> object:
        if not fields:  # built on first use: field types may refer to `cls` itself
            hints = _hints(cls)
            fields.extend((name, _encoder(hints[name])) for name in names)
        numbers = _shared.numbers
        if shared and numbers is not None:
            number = numbers.get(value)
            if number is not None:
                return {_REFERENCE: number}
        encoded: dict[str, object] = {_TAG: tag}
        for name, encode_field in fields:
            encoded[name] = encode_field(getattr(value, name))
        if shared and numbers is not None:
            encoded[_NUMBER] = numbers[value] = len(numbers)
        return encoded

    return instance


@cache
def _encoder(hint: Any) -> Encoder:
    """A function that encodes values declared of type `hint`: by the declared type when the value
    has it, else as :func:`encode` does (the output is the same either way)."""
    if hint in (None, type(None), bool, int, str) or typing.get_origin(hint) is Literal:
        return _encode
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        exact = _instance_encoder(hint)
        return lambda value: exact(value) if type(value) is hint else _encode(value)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (tuple, frozenset, list) and (origin is not tuple or (len(args) == 2 and args[1] is Ellipsis)):
        if args[0] is str:  # names and keys: as they are
            return lambda value: list(value) if type(value) is origin and _all_str(value) else _encode(value)
        item = _encoder(args[0])
        return lambda value: [item(member) for member in value] if type(value) is origin else _encode(value)
    if origin is tuple:
        members = [_encoder(arg) for arg in args]
        return lambda value: ([member(part) for member, part in zip(members, value)]
                              if type(value) is tuple and len(value) == len(members) else _encode(value))
    if origin is dict:
        key, item = _encoder(args[0]), _encoder(args[1])
        return lambda value: ([[key(name), item(member)] for name, member in value.items()]
                              if type(value) is dict else _encode(value))
    return _encode  # unions and anything else: by the value's own type


def _all_str(values: Any) -> bool:
    """Whether every item is a str (true of none)."""
    return all(type(value) is str for value in values)


def decode(hint: Any, data: object) -> Any:
    """The value of type `hint` that :func:`encode` turned into `data`; CodecError when it is not one."""
    if _shared.nodes is not None:
        return _decoder(hint)(data)
    _shared.nodes = []
    try:
        return _decoder(hint)(data)
    finally:
        _shared.nodes = None


Decoder = Callable[[object], Any]


@cache
def _decoder(hint: Any) -> Decoder:
    """A function that decodes data of type `hint`, built once per hint (a cache entry of a project
    holds millions of values: reading the hints again for each one cost most of a warm run)."""
    if hint is type(None) or hint is None:
        return lambda data: _expect(data, type(None))
    if hint is bool or hint is str:
        kind = hint

        def plain(data: object) -> Any:
            if type(data) is not kind and not isinstance(data, kind):
                raise CodecError(f"expected {kind.__name__}, got {type(data).__name__}")
            return data

        return plain
    if hint is int:
        return _decode_int
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _dataclass_decoder(hint)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Literal:
        allowed = {(type(arg), arg) for arg in args}

        def literal(data: object) -> Any:
            if (type(data), data) not in allowed:
                raise CodecError(f"expected one of {args!r}")
            return data

        return literal
    if origin in (Union, types.UnionType):
        return _union_decoder(args)
    if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
        members = [_decoder(arg) for arg in args]

        def fixed(data: object) -> Any:
            items = _expect(data, list)
            if len(items) != len(members):
                raise CodecError(f"expected {len(members)} items, got {len(items)}")
            return tuple(member(item) for member, item in zip(members, items))

        return fixed
    if origin in (tuple, frozenset, list):
        item_decoder = _lazy(args[0])
        of_strings = args[0] is str
        build = origin
        empty = build() if origin is not list else None

        def sequence(data: object) -> Any:
            if type(data) is not list:
                raise CodecError(f"expected list, got {type(data).__name__}")
            if not data and empty is not None:  # most are empty: share the immutable empty value
                return empty
            if of_strings:  # names and keys: checked in one pass, no call per item
                if not all(type(item) is str for item in data):
                    raise CodecError("expected a list of str")
                return build(data)
            decode_item = item_decoder()
            return build([decode_item(item) for item in data])

        return sequence
    if origin is dict:
        key_decoder, value_decoder = _lazy(args[0]), _lazy(args[1])

        def mapping(data: object) -> Any:
            decode_key, decode_value = key_decoder(), value_decoder()
            result = {}
            for pair in _expect(data, list):
                if not isinstance(pair, list) or len(pair) != 2:
                    raise CodecError("expected a [key, value] pair")
                result[decode_key(pair[0])] = decode_value(pair[1])
            return result

        return mapping
    raise CodecError(f"unsupported type {hint!r}")


def _lazy(hint: Any) -> Callable[[], Decoder]:
    """The decoder of `hint`, built on first use (types may refer to themselves)."""
    built: list[Decoder] = []

    def get() -> Decoder:
        if not built:
            built.append(_decoder(hint))
        return built[0]

    return get


def _decode_int(data: object) -> Any:
    if isinstance(data, bool):
        raise CodecError("expected an int, got a bool")
    return _expect(data, int)


def _union_decoder(members: tuple[Any, ...]) -> Decoder:
    tagged = {member.__qualname__: member for member in members
              if isinstance(member, type) and dataclasses.is_dataclass(member)}
    plain = [_lazy(member) for member in members if not dataclasses.is_dataclass(member)]

    def union(data: object) -> Any:
        if isinstance(data, dict):  # a dataclass: its tag says which member (a reference: the node's class)
            if _REFERENCE in data:
                return _referenced(data, tuple(tagged.values()))
            member = tagged.get(data.get(_TAG))  # type: ignore[arg-type]
            if member is None:
                raise CodecError(f"unexpected class tag {data.get(_TAG)!r}")
            return _decoder(member)(data)
        errors = []
        for decoder in plain:
            try:
                return decoder()(data)
            except CodecError as exc:
                errors.append(str(exc))
        raise CodecError("; ".join(errors) or "no member of the union matches")

    return union


def _dataclass_decoder(cls: Any) -> Decoder:
    names = [f.name for f in dataclasses.fields(cls)]
    shared = getattr(cls, "__codec_shared__", False)
    expected = {_TAG, *names, *([_NUMBER] if shared else [])}
    fields: list[tuple[str, Callable[[], Decoder]]] = []

    def dataclass(data: object) -> Any:
        values = _expect(data, dict)
        if shared and _REFERENCE in values:
            return _referenced(values, (cls,))
        if values.get(_TAG) != cls.__qualname__:
            raise CodecError(f"expected a {cls.__qualname__}, got {values.get(_TAG)!r}")
        if len(values) != len(expected) or values.keys() != expected:
            raise CodecError(f"fields of {cls.__qualname__} do not match")
        if not fields:
            hints = _hints(cls)
            fields.extend((name, _lazy(hints[name])) for name in names)
        made = cls(**{name: decoder()(values[name]) for name, decoder in fields})
        if shared:
            nodes = _shared.nodes
            if nodes is None or values[_NUMBER] != len(nodes):
                raise CodecError(f"{cls.__qualname__} is not numbered in reading order")
            nodes.append(made)
        return made

    return dataclass


def _referenced(data: dict[Any, Any], allowed: tuple[Any, ...]) -> Any:
    """The node an earlier part of the same data numbered, when it is of an `allowed` class."""
    number, nodes = data.get(_REFERENCE), _shared.nodes
    if len(data) != 1 or type(number) is not int or nodes is None or not 0 <= number < len(nodes):
        raise CodecError("a reference to no node read before")
    node = nodes[number]
    if type(node) not in allowed:
        raise CodecError(f"a reference to a {type(node).__qualname__}, not a {allowed[0].__qualname__}")
    return node


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
