"""Why a plugin decided as it did: reasons as values.

A hook answers with its plain value (a :class:`~plugins.api.base.Vote`, a bool, the victims and a
vote) or, when it has something to say about the decision, with that value wrapped in
:class:`Explained`. The framework unwraps it, answers Volcano with the plain value alone (the
wire is unchanged), and keeps the reason in the session's decision record
(:mod:`app.explain`, read by ``GET /debug/explain`` and ``caldera explain``) and in
``caldera_rejections_total{plugin, verb, reason}``. A predicate failure already is a value with a
reason (:class:`~plugins.api.base.FitError`).

A :class:`Reason` has a ``code`` from a small fixed vocabulary per plugin (a metrics label: never
a job, queue or node name) and a ``message`` for a person, with the quantities compared in
Kubernetes' units (:mod:`plugins.support.units`) and times in RFC 3339. Eviction hooks name the
evictees they refuse, by UID, in ``vetoes``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Generic, TypeVar

T = TypeVar("T")
NO_VETOES: Mapping[str, Reason] = MappingProxyType({})


class Reason:
    """Why a plugin decided as it did: a ``code`` (fixed per plugin and cause, such as
    ``insufficient-idle`` or ``pdb-no-disruptions``: a metrics label) and a ``message`` for a
    person, with what was compared in Kubernetes' units.

    The message may be given as a function that writes it: it is then written only when read
    (``GET /debug/explain``), so a plugin answering thousands of calls a cycle pays for the
    numbers, not their text. Such a function must capture values, not state the plugin changes
    later in the session."""

    __slots__ = ("_message", "code")

    def __init__(self, code: str, message: str | Callable[[], str]) -> None:
        self.code = code
        self._message = message

    @property
    def message(self) -> str:
        message = self._message
        if not isinstance(message, str):
            message = self._message = message()
        return message

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Reason):
            return NotImplemented
        return (self.code, self.message) == (other.code, other.message)

    def __hash__(self) -> int:
        return hash((self.code, self.message))

    def __repr__(self) -> str:
        return f"Reason({self.code!r}, {self.message!r})"


class Explained(Generic[T]):
    """A hook's ``answer`` and why. ``reason`` may be None when only ``vetoes`` say something.

    Not to be changed once returned. A plain slotted class rather than a frozen dataclass:
    built once per plugin answer on the hot verbs, where a frozen dataclass's ``__init__``
    costs 0.59 µs and this 0.27 µs."""

    __slots__ = ("answer", "reason", "vetoes")

    def __init__(
        self, answer: T, reason: Reason | None = None, vetoes: Mapping[str, Reason] = NO_VETOES
    ) -> None:
        self.answer = answer
        self.reason = reason
        self.vetoes = vetoes
        """Eviction hooks: evictee UID → why this plugin will not let it be evicted. A fresh
        mapping per answer: the decision record keeps it as it is."""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Explained):
            return NotImplemented
        return (self.answer, self.reason, self.vetoes) == (other.answer, other.reason, other.vetoes)

    __hash__ = None  # type: ignore[assignment]  # the answer may be a list

    def __repr__(self) -> str:
        return f"Explained({self.answer!r}, {self.reason!r}, {self.vetoes!r})"


def answer_of(result: T | Explained[T]) -> T:
    """The plain answer of a hook's result, explained or not."""
    return result.answer if isinstance(result, Explained) else result
