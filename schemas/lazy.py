"""Fields kept as their JSON bytes while the body decodes, and decoded when a plugin reads them.

A whole-cluster snapshot carries every pod's and node's full Kubernetes object; nearly all of it
is read by no plugin. A field declared with its type costs its decode (and the objects it builds)
for every object that carries it, read or not; a field kept raw costs one small ``msgspec.Raw``
(a view of its bytes, no copy, nothing parsed inside). So the compound fields no built-in plugin
reads (tolerations, affinity, taints, volumes, ...) are declared twice: as ``<key>Raw``, the
``msgspec.Raw`` the decoder fills under the JSON key ``<key>``, and as ``<key>``, a :class:`Lazy`
attribute that decodes those bytes into the typed view each time it is read.

The raw bytes are a view of the request body, not a copy: an object holding one keeps its body
alive. The session's objects live until onSessionClose, and a large body's buffer is kept for the
next one anyway (app/server/buffers.py), so no memory is added there; a plugin that keeps such an
object beyond its session keeps the body too (``caldera_body_buffers_total{outcome="held"}`` says
so).

To build such an object in a test, give the raw field the value's JSON: ``raw(value)``.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar, overload

import msgspec

T = TypeVar("T")

JSON = Any
"""A JSON value as ``msgspec.json.decode`` builds it (dict, list, str, int, float, bool, None):
the type of the fields no typed view is declared for."""


ABSENT = msgspec.Raw(b"null")
"""The raw fields' default (``default_factory=ABSENT.copy``): the key was absent. ``copy`` of a
Raw over its own bytes returns it, so every absent field shares this one object; it encodes as
``null`` (an empty ``msgspec.Raw()`` would encode as nothing, i.e. malformed JSON). A plain
``default=ABSENT`` would be cheaper still, but msgspec cannot write a Raw default into the
OpenAPI document."""


def raw(value: object) -> msgspec.Raw:
    """``value``'s JSON as the raw field of a lazy attribute: ``PodSpec(tolerationsRaw=raw([...]))``."""
    return msgspec.Raw(msgspec.json.encode(value))


class Lazy(Generic[T]):
    """The typed view of the raw field ``<name>Raw``, decoded at each read (keep the result
    rather than reading it again in a loop); ``None`` when the key was absent or ``null``.

    Declared without an annotation so msgspec does not take it for a field:
    ``tolerations = Lazy[list[Toleration]](list[Toleration], "…")``."""

    def __init__(self, kind: object, doc: str = "", raw: str = "") -> None:
        self.kind = kind
        self.__doc__ = doc
        self._decoder: msgspec.json.Decoder[Any] | None = None
        self.name = ""
        self.where = ""
        self.raw_name = raw
        """The raw field's attribute: ``<name>Raw``, or ``<name>_raw`` in the snake-case views."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name
        self.where = f"{owner.__name__}.{name}"
        self.raw_name = self.raw_name or name + "Raw"

    def decoder(self) -> msgspec.json.Decoder[Any]:
        if self._decoder is None:
            self._decoder = msgspec.json.Decoder(self.kind | None)  # type: ignore[operator]
        return self._decoder

    @overload
    def __get__(self, obj: None, owner: type) -> Lazy[T]: ...
    @overload
    def __get__(self, obj: object, owner: type) -> T | None: ...
    def __get__(self, obj: object | None, owner: type) -> Lazy[T] | T | None:
        if obj is None:
            return self
        data: msgspec.Raw = getattr(obj, self.raw_name)
        if data is ABSENT or not data:
            return None
        try:
            value: T | None = self.decoder().decode(data)
        except msgspec.ValidationError as error:  # say which field: the body decoded without it
            raise msgspec.ValidationError(f"{error} - in `{self.where}`") from None
        return value


def lazy_attributes(kind: type) -> dict[str, Lazy[Any]]:
    """The :class:`Lazy` attributes of a struct class, by name (its own and inherited)."""
    found: dict[str, Lazy[Any]] = {}
    for klass in reversed(kind.__mro__):
        for name, value in vars(klass).items():
            if isinstance(value, Lazy):
                found[name] = value
    return found
