"""One typed message per API at the handler seam, whatever version the client speaks.

kio gives one frozen class per API version. Handlers are written once, against the
newest version kop serves: a request is up-converted to that class on decode (a field
its version lacks takes its default, as Kafka's generated code reads it), and a handler's
response is down-converted to the version the client negotiated on encode. Down-
converting drops a field that version lacks only when it holds its default or Kafka's
schema marks it ignorable (`ignorable.py`); any other value is `Unrepresentable`, as
Kafka's generated code refuses it (UnsupportedVersionException): an answer must never
say less than the handler meant without anyone noticing.

Where Kafka reshaped a message between versions (a single coordinator key became a
batch, a flat OffsetFetch became per-group), the API's route adds a converter of its own
on top of this (`up` / `down`, beside its handler); this module converts field by field.

Both directions are a plan per pair of classes, made once and cached: the conversion of
one message is a walk over its fields, with no introspection per request.
"""

from __future__ import annotations

import dataclasses
import datetime
import typing
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from kop.protocol.ignorable import IGNORABLE
from kop.protocol.messages import SUPPORTED_VERSIONS, ApiKey, request_schema, response_schema

T = TypeVar("T")

_MISSING = dataclasses.MISSING


class Unrepresentable(ValueError):
    """A response holds a value the negotiated version has no field for."""


def newest_request(api: ApiKey) -> type[Any]:
    """The request class handlers of `api` are written against."""
    return request_schema(api, SUPPORTED_VERSIONS[api][1])


def newest_response(api: ApiKey) -> type[Any]:
    """The response class handlers of `api` answer with."""
    return response_schema(api, SUPPORTED_VERSIONS[api][1])


def upgrade(message: Any, to: type[T]) -> T:
    """`message` (a request of any version) as an instance of `to`, field by field."""
    if type(message) is to:
        return message
    converted: T = _plan(type(message), to, None)(message)
    return converted


def downgrade(message: Any, to: type[T], api: ApiKey) -> T:
    """`message` (a response in the newest version) as an instance of `to`; raises
    Unrepresentable for a value `to` cannot carry that Kafka does not mark ignorable."""
    if type(message) is to:
        return message
    converted: T = _plan(type(message), to, int(api))(message)
    return converted


Convert = Callable[[Any], Any]


_PLANS: dict[tuple[object, object, int | None, str], Convert] = {}


def _plan(src: type[Any], dst: type[Any], api: int | None, path: str = "") -> Convert:
    """How an instance of `src` becomes one of `dst` (`api` given: down-converting, and
    what may be dropped is checked; `path`: where `src` sits in its message)."""
    key = (src, dst, api, path)
    plan = _PLANS.get(key)
    if plan is None:
        plan = _PLANS[key] = _make_plan(src, dst, api, path)
    return plan


def _make_plan(src: type[Any], dst: type[Any], api: int | None, path: str) -> Convert:
    src_fields = {f.name: f for f in dataclasses.fields(src)}
    dst_fields = dataclasses.fields(dst)
    src_hints = typing.get_type_hints(src)
    dst_hints = typing.get_type_hints(dst)
    copies: list[tuple[str, Convert | None]] = []
    filled: list[tuple[str, Callable[[], Any]]] = []
    for f in dst_fields:
        where = f"{path}.{f.name}" if path else f.name
        if f.name in src_fields:
            copies.append((f.name, _value_plan(src_hints[f.name], dst_hints[f.name], api, where)))
        elif f.default is _MISSING and f.default_factory is _MISSING:
            filled.append((f.name, _implicit_default(dst_hints[f.name], f)))
    dst_names = {f.name for f in dst_fields}
    checks = tuple(
        (name, _default_of(src_hints[name], field), f"{path}.{name}" if path else name)
        for name, field in src_fields.items()
        if api is not None
        and name not in dst_names
        and (f"{path}.{name}" if path else name) not in IGNORABLE.get(api, frozenset())
    )
    version = getattr(dst, "__version__", "?")

    def convert(message: Any) -> Any:
        for name, default, where in checks:
            value = getattr(message, name)
            if value != default:
                raise Unrepresentable(
                    f"{src.__name__}.{where} = {value!r} cannot be sent at version {version}"
                )
        kwargs = {
            name: (value if sub is None else sub(value))
            for name, sub in copies
            for value in (getattr(message, name),)
        }
        for name, make in filled:
            kwargs[name] = make()
        return dst(**kwargs)

    return convert


def _value_plan(src: Any, dst: Any, api: int | None, path: str) -> Convert | None:
    """How a field's value converts: None when it is copied as it is."""
    s, d = _entity(src), _entity(dst)
    if s is None or d is None or s is d:
        return None
    inner = _plan(s, d, api, path)
    if typing.get_origin(_strip_optional(dst)) is tuple:
        return lambda values: None if values is None else tuple(inner(v) for v in values)
    return lambda value: None if value is None else inner(value)


def _strip_optional(hint: Any) -> Any:
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) in (typing.Union, _UnionType) and len(args) == 1:
        return args[0]
    return hint


_UnionType = type(int | None)


def _entity(hint: Any) -> type[Any] | None:
    """The entity class a field holds (alone, optional, or in a tuple), else None."""
    hint = _strip_optional(hint)
    if dataclasses.is_dataclass(hint):
        return typing.cast(type[Any], hint)
    args = typing.get_args(hint)
    if typing.get_origin(hint) is tuple and args and dataclasses.is_dataclass(args[0]):
        return typing.cast(type[Any], args[0])
    return None


def _default_of(hint: Any, field: dataclasses.Field[Any]) -> Any:
    """What a field holds when nobody set it: its declared default, else Kafka's."""
    if field.default is not _MISSING:
        return field.default
    if field.default_factory is not _MISSING:
        return field.default_factory()
    return _implicit_default(hint, field)()


def _implicit_default(hint: Any, field: dataclasses.Field[Any]) -> Callable[[], Any]:
    """Kafka's default for a field its schema gives none: zero, empty, false or null."""
    if _strip_optional(hint) is not hint:
        return lambda: None
    kind = str(field.metadata.get("kafka_type", ""))
    origin = typing.get_origin(hint)
    entity = _entity(hint)
    if origin is tuple:
        return tuple
    if entity is not None:
        return lambda: _plan_defaults(entity)
    if kind.startswith("timedelta"):
        return lambda: datetime.timedelta(0)
    if kind.startswith("datetime"):
        return lambda: datetime.datetime.fromtimestamp(0, tz=datetime.UTC)
    if kind == "uuid":
        return lambda: uuid.UUID(int=0)
    if kind in ("bytes", "records"):
        return bytes
    if kind == "string":
        return str
    if kind == "bool":
        return lambda: False
    return lambda: hint(0)


def _plan_defaults(cls: type[Any]) -> Any:
    """An entity with every field at its default."""
    hints = typing.get_type_hints(cls)
    return cls(
        **{
            f.name: _implicit_default(hints[f.name], f)()
            for f in dataclasses.fields(cls)
            if f.default is _MISSING and f.default_factory is _MISSING
        }
    )
