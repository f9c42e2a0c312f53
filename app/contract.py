"""The plugin contract, checked where the framework receives an answer.

Every hook of the extension-point table (``plugins/api/extension_points.py``) declares its
return type on :class:`~plugins.api.base.Plugin`; this module reads those annotations once, at
import, and compiles each into a checker. A value of another type is the plugin's failure, named
by what it returned and what was expected ("returned 'no' (str); expected bool | Explained[bool]"),
never coerced: ``"no"`` is not a ready job, ``5`` is not a Permit, ``None`` is not "not overused".

The checks are strict where Python's truthiness would quietly decide: a ``bool`` must be a
``bool`` (not ``1`` or ``"no"``), a :class:`~plugins.api.base.Vote` a ``Vote`` (not the int
``5``), a score an ``int`` or ``float`` but not a ``bool`` (``True`` as a score is almost
always a predicate's answer in the wrong hook). Containers are checked element by element with
C-speed fast paths (``{*map(type, seq)}``), so a 30-evictee answer or a 100-node score map costs
a few hundred nanoseconds.
"""

from __future__ import annotations

import reprlib
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from plugins.api.base import Plugin
from plugins.api.extension_points import EXTENSION_POINTS
from plugins.api.reasons import Explained

Check = Callable[[object], str | None]
"""A compiled check: None when the value conforms, else what is wrong (without "expected")."""

_repr = reprlib.Repr()
_repr.maxstring = 40
_repr.maxother = 40
_repr.maxlist = 4
_repr.maxdict = 4
_repr.maxtuple = 4


def described(value: object) -> str:
    """A value as a problem report shows it: a short repr and its type."""
    return f"{_repr.repr(value)} ({type(value).__name__})"


def type_name(form: Any) -> str:
    """A type form as a person writes it: ``bool | Explained[bool]``, ``Mapping[str, float]``."""
    if form is None or form is type(None):
        return "None"
    origin = typing.get_origin(form)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(type_name(arg) for arg in typing.get_args(form))
    if origin is not None:
        args = ", ".join(type_name(arg) for arg in typing.get_args(form))
        return f"{getattr(origin, '__name__', str(origin))}[{args}]"
    return getattr(form, "__name__", str(form))


def _of_class(cls: type) -> Check:
    if cls is bool:

        def check_bool(value: object) -> str | None:
            return None if value is True or value is False else described(value)

        return check_bool
    if cls is float:

        def check_number(value: object) -> str | None:
            kind = type(value)
            return None if kind is float or kind is int else _number(value)

        return check_number

    def check_instance(value: object) -> str | None:
        return None if isinstance(value, cls) else described(value)

    return check_instance


def _number(value: object) -> str | None:
    """The slow path of a number check: subclasses of int and float pass, bool does not."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return described(value)
    return None


def _union(checks: Sequence[Check]) -> Check:
    def check_union(value: object) -> str | None:
        shallow = described(value)
        deepest = shallow
        for check in checks:
            problem = check(value)
            if problem is None:
                return None
            if problem != shallow:
                deepest = problem  # the branch whose outer type matched says more
        return deepest

    return check_union


def _explained(inner: Check) -> Check:
    def check_explained(value: object) -> str | None:
        if not isinstance(value, Explained):
            return described(value)
        problem = inner(value.answer)
        return None if problem is None else f"Explained whose answer is {problem}"

    return check_explained


def _tuple(items: Sequence[Check]) -> Check:
    size = len(items)

    def check_tuple(value: object) -> str | None:
        if not isinstance(value, tuple) or len(value) != size:
            return described(value)
        for index, (check, item) in enumerate(zip(items, value, strict=True)):
            problem = check(item)
            if problem is not None:
                return f"a tuple whose item {index} is {problem}"
        return None

    return check_tuple


def _element_types(form: Any) -> frozenset[type] | None:
    """The exact types an element check accepts by ``type(x) in ...`` (None: no fast path)."""
    if form is float:
        return frozenset({float, int})
    if isinstance(form, type) and form is not bool and typing.get_origin(form) is None:
        return frozenset({form})
    return frozenset({bool}) if form is bool else None


def _sequence(element: Any) -> Check:
    each = compile_form(element)
    fast = _element_types(element)

    def check_sequence(value: object) -> str | None:
        if not isinstance(value, Sequence) or isinstance(value, str | bytes):
            return described(value)
        if fast is not None and {*map(type, value)} <= fast:
            return None
        for index, item in enumerate(value):
            problem = each(item)
            if problem is not None:
                return f"a sequence whose item {index} is {problem}"
        return None

    return check_sequence


def _mapping(key: Any, item: Any) -> Check:
    check_key, check_item = compile_form(key), compile_form(item)
    fast_key, fast_item = _element_types(key), _element_types(item)

    def check_mapping(value: object) -> str | None:
        if not isinstance(value, Mapping):
            return described(value)
        if (
            fast_key is not None
            and fast_item is not None
            and {*map(type, value)} <= fast_key
            and {*map(type, value.values())} <= fast_item
        ):
            return None
        for name, entry in value.items():
            problem = check_key(name)
            if problem is not None:
                return f"a mapping whose key {problem}"
            problem = check_item(entry)
            if problem is not None:
                return f"a mapping whose value for {name!r} is {problem}"
        return None

    return check_mapping


def _none(value: object) -> str | None:
    return None if value is None else described(value)


def compile_form(form: Any) -> Check:
    """A checker for a return annotation, as the hooks of :class:`Plugin` write them."""
    if form is None or form is type(None):
        return _none
    if form is Any or form is object:
        return lambda value: None
    origin = typing.get_origin(form)
    args = typing.get_args(form)
    if origin in (typing.Union, types.UnionType):
        return _union([compile_form(arg) for arg in args])
    if origin is Explained:
        return _explained(compile_form(args[0]))
    if origin is tuple:
        return _tuple([compile_form(arg) for arg in args])
    if origin in (Sequence, list):
        return _sequence(args[0])
    if origin in (Mapping, dict):
        return _mapping(*args)
    if isinstance(form, type):
        return _of_class(form)
    raise TypeError(f"no contract check for the annotation {form!r}")


def _declared(hook: str) -> Any:
    return typing.get_type_hints(getattr(Plugin, hook))["return"]


DECLARED: dict[str, Any] = {point.hook: _declared(point.hook) for point in EXTENSION_POINTS}
"""Per hook of the extension-point table, the return type :class:`Plugin` declares."""
EXPECTED: dict[str, str] = {hook: type_name(form) for hook, form in DECLARED.items()}
"""Per hook, the declared type as a problem report names it."""
CHECKS: dict[str, Check] = {hook: compile_form(form) for hook, form in DECLARED.items()}
"""Per hook, the compiled check (what the framework calls on every answer)."""


def check_answer(hook_name: str, value: object) -> str | None:
    """None when ``value`` is of the type hook ``hook_name`` declares; otherwise a short
    description of what was returned and what was expected."""
    problem = CHECKS[hook_name](value)
    if problem is None:
        return None
    return f"returned {problem}; expected {EXPECTED[hook_name]}"


class WrongType(TypeError):
    """A hook's answer outside its declared type: the cause of that plugin's failure."""
