"""The v1.6–v1.13 JSON shape of a PodGroup's or Queue's spec and status, derived from the
current one so each is written once.

Before v1.14 Volcano's ``api.PodGroup`` and ``api.QueueInfo`` embedded the scheduling types with
untagged ``Spec``/``Status`` fields, so ``encoding/json`` wrote their fields under Go's own names
(``MinMember``, ``Capability``), except where the Go struct carries a json tag (a queue's
``guarantee``, ``deserved``, ``parent``, ``priority``, ``affinity``). The twin built here has the
canonical struct's fields and types under those names; the object decoding it folds it into the
canonical struct (:func:`canonical`). Decoding costs the same: msgspec compiles both alike.
For the type checker each twin is its canonical struct (the same fields and types).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, TypeVar

import msgspec
from msgspec import Struct

S = TypeVar("S", bound=Struct)


def go_name(name: str) -> str:
    """``minTaskMember`` (or ``min_task_member``) -> ``MinTaskMember``: an untagged Go field's
    JSON key, from the tagged one (a raw field's attribute name is not its key)."""
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


def untagged_twin(
    kind: type[Struct], name: str, doc: str, untagged: Collection[str] | None = None
) -> type[Struct]:
    """``kind``'s fields under their untagged Go names: all of them, or only ``untagged`` (the
    others keep ``kind``'s JSON keys, as their Go json tags did). ``doc`` describes the shape
    (the OpenAPI document shows it)."""
    fields = msgspec.structs.fields(kind)
    keys = {
        f.name: go_name(f.encode_name) if untagged is None or f.name in untagged else f.encode_name
        for f in fields
    }
    twin = msgspec.defstruct(
        name,
        [
            (
                f.name,
                f.type,
                msgspec.field(default_factory=f.default_factory)
                if f.default_factory is not msgspec.NODEFAULT
                else f.default,
            )
            for f in fields
        ],
        rename=keys,
        gc=False,
        module=kind.__module__,
    )
    twin.__doc__ = doc
    return twin


def canonical(twin: Any, kind: type[S]) -> S:
    """The canonical struct of ``kind`` with a twin's values (the twin's fields are ``kind``'s,
    in order)."""
    return kind(*msgspec.structs.astuple(twin))
