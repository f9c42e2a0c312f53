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
from dataclasses import dataclass
from typing import Any

from plugins.api.base import Plugin
from plugins.api.base import hook_name as hook_name_of
from plugins.api.extension_points import EXTENSION_POINTS
from plugins.api.reasons import Explained

Check = Callable[[object], str | None]
"""What is wrong with a value (without "expected"), or None when it conforms."""


@dataclass(frozen=True, slots=True)
class Compiled:
    """A type form's check in two halves: ``conforms``, a yes/no run on every answer, and
    ``problem``, the words, written only for a value that does not conform (a repr of the
    evictees a plugin answered with costs milliseconds; the hot path must never pay it)."""

    conforms: Callable[[object], bool]
    problem: Check


_repr = reprlib.Repr()
_repr.maxstring = 40
_repr.maxother = 40
_repr.maxlist = 4
_repr.maxdict = 4
_repr.maxtuple = 4
_repr.maxlevel = 2


def described(value: object) -> str:
    """A value as a problem report shows it: a short repr and its type."""
    if isinstance(value, Explained):
        shown = f"Explained({_repr.repr(value.answer)}, ...)"
    else:
        shown = _repr.repr(value)
    return f"{shown} ({type(value).__name__})"


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


def _simple(conforms: Callable[[object], bool]) -> Compiled:
    return Compiled(conforms, lambda value: None if conforms(value) else described(value))


def _is_bool(value: object) -> bool:
    return value is True or value is False


def _is_number(value: object) -> bool:
    kind = type(value)
    if kind is float or kind is int:
        return True
    return not isinstance(value, bool) and isinstance(value, int | float)


def _is_none(value: object) -> bool:
    return value is None


def _of_class(cls: type) -> Compiled:
    if cls is bool:
        return _simple(_is_bool)
    if cls is float:
        return _simple(_is_number)
    return _simple(lambda value: type(value) is cls or isinstance(value, cls))


def _union(forms: Sequence[Any], branches: Sequence[Compiled]) -> Compiled:
    conforms = _union_test(forms, branches)

    def problem(value: object) -> str | None:
        if conforms(value):
            return None
        shallow = described(value)
        for branch in branches:
            found = branch.problem(value)
            if found is not None and found != shallow:
                return found  # the branch whose outer type matched says more
        return shallow

    return Compiled(conforms, problem)


def _union_test(forms: Sequence[Any], branches: Sequence[Compiled]) -> Callable[[object], bool]:
    """The yes/no half of a union, specialised for the shapes the hooks declare: ``T |
    Explained[T]`` unwraps once; classes and None are one ``isinstance``."""
    plain = [form for form in forms if typing.get_origin(form) is not Explained]
    wrapped = [typing.get_args(form)[0] for form in forms if typing.get_origin(form) is Explained]
    if len(plain) == 1 and wrapped == plain:
        inner = compile_form(plain[0]).conforms

        def unwrapping(value: object) -> bool:
            if type(value) is Explained:
                value = value.answer
            return inner(value)

        return unwrapping
    classes = tuple(type(None) if form is None else form for form in forms)
    if all(isinstance(c, type) and c not in (bool, float) for c in classes) and not any(
        typing.get_origin(c) for c in classes
    ):
        return lambda value: isinstance(value, classes)
    tests = tuple(branch.conforms for branch in branches)

    def any_branch(value: object) -> bool:
        return any(test(value) for test in tests)

    return any_branch


def _explained(inner: Compiled) -> Compiled:
    test = inner.conforms

    def conforms(value: object) -> bool:
        return isinstance(value, Explained) and test(value.answer)

    def problem(value: object) -> str | None:
        if not isinstance(value, Explained):
            return described(value)
        found = inner.problem(value.answer)
        return None if found is None else f"Explained whose answer is {found}"

    return Compiled(conforms, problem)


def _tuple(items: Sequence[Compiled]) -> Compiled:
    size = len(items)
    tests = tuple(item.conforms for item in items)
    if size == 2:  # (victims, vote): the eviction hooks' answer, on the hot path
        first, second = tests

        def pair(value: object) -> bool:
            if type(value) is not tuple or len(value) != 2:
                return isinstance(value, tuple) and len(value) == 2 and pair(tuple(value))
            return first(value[0]) and second(value[1])

    def conforms(value: object) -> bool:
        if type(value) is not tuple or len(value) != size:
            return isinstance(value, tuple) and len(value) == size and conforms(tuple(value))
        return all(test(item) for test, item in zip(tests, value, strict=True))

    def problem(value: object) -> str | None:
        if not isinstance(value, tuple) or len(value) != size:
            return described(value)
        for index, (check, item) in enumerate(zip(items, value, strict=True)):
            found = check.problem(item)
            if found is not None:
                return f"a tuple whose item {index} is {found}"
        return None

    return Compiled(pair if size == 2 else conforms, problem)


def _element_types(form: Any) -> frozenset[type] | None:
    """The exact types an element check accepts by ``type(x) in ...`` (None: no fast path)."""
    if form is float:
        return frozenset({float, int})
    if isinstance(form, type) and typing.get_origin(form) is None:
        return frozenset({form})
    return None


def _sequence(element: Any) -> Compiled:
    each = compile_form(element)
    test = each.conforms
    fast = _element_types(element) or frozenset()

    def conforms(value: object) -> bool:
        kind = type(value)
        if (kind is not list and kind is not tuple) and (
            not isinstance(value, Sequence) or isinstance(value, str | bytes)
        ):
            return False
        if {*map(type, value)} <= fast:  # type: ignore[call-overload]
            return True
        return all(map(test, value))  # type: ignore[call-overload]

    def problem(value: object) -> str | None:
        if not isinstance(value, Sequence) or isinstance(value, str | bytes):
            return described(value)
        for index, item in enumerate(value):
            found = each.problem(item)
            if found is not None:
                return f"a sequence whose item {index} is {found}"
        return None

    return Compiled(conforms, problem)


def _mapping(key: Any, item: Any) -> Compiled:
    check_key, check_item = compile_form(key), compile_form(item)
    test_key, test_item = check_key.conforms, check_item.conforms
    fast_key = _element_types(key) or frozenset()
    fast_item = _element_types(item) or frozenset()

    def conforms(value: object) -> bool:
        if type(value) is not dict and not isinstance(value, Mapping):
            return False
        if {*map(type, value)} <= fast_key and {*map(type, value.values())} <= fast_item:
            return True
        return all(map(test_key, value)) and all(map(test_item, value.values()))

    def problem(value: object) -> str | None:
        if not isinstance(value, Mapping):
            return described(value)
        for name, entry in value.items():
            found = check_key.problem(name)
            if found is not None:
                return f"a mapping whose key {found}"
            found = check_item.problem(entry)
            if found is not None:
                return f"a mapping whose value for {name!r} is {found}"
        return None

    return Compiled(conforms, problem)


def compile_form(form: Any) -> Compiled:
    """The check of a return annotation, as the hooks of :class:`Plugin` write them."""
    if form is None or form is type(None):
        return _simple(_is_none)
    origin = typing.get_origin(form)
    args = typing.get_args(form)
    if origin in (typing.Union, types.UnionType):
        return _union(args, [compile_form(arg) for arg in args])
    if origin is Explained:
        return _explained(compile_form(args[0]))
    if origin is tuple:
        return _tuple([compile_form(arg) for arg in args])
    if origin in (Sequence, list):
        return _sequence(args[0])
    if origin in (Mapping, dict):
        return _mapping(*args)
    if isinstance(form, type) and origin is None:
        return _of_class(form)
    raise TypeError(f"no contract check for the annotation {form!r}")


def _declared(hook: str) -> Any:
    return typing.get_type_hints(getattr(Plugin, hook))["return"]


DECLARED: dict[str, Any] = {point.hook: _declared(point.hook) for point in EXTENSION_POINTS}
"""Per hook of the extension-point table, the return type :class:`Plugin` declares."""
EXPECTED: dict[str, str] = {hook: type_name(form) for hook, form in DECLARED.items()}
"""Per hook, the declared type as a problem report names it."""
COMPILED: dict[str, Compiled] = {hook: compile_form(form) for hook, form in DECLARED.items()}
CONFORMS: dict[str, Callable[[object], bool]] = {
    hook: compiled.conforms for hook, compiled in COMPILED.items()
}
"""Per hook, the yes/no check the framework runs on every answer."""


def check_answer(hook_name: str, value: object, plugin: type[Plugin] | None = None) -> str | None:
    """None when ``value`` is of the type hook ``hook_name`` declares; otherwise a short
    description of what was returned and what was expected. ``plugin``: the class that
    answered; one that scores node by node is told about its ``node_score``, the hook it wrote,
    not about the mapping the default ``node_order`` built from it."""
    if CONFORMS[hook_name](value):
        return None
    if (
        plugin is not None
        and hook_name_of(plugin, hook_name) == "node_score"
        and isinstance(value, Mapping)
    ):
        for node, score in value.items():
            if not _is_number(score):
                return (
                    f"returned {described(score)} from node_score for node {node!r}; expected float"
                )
    problem = COMPILED[hook_name].problem(value) or described(value)
    return f"returned {problem}; expected {EXPECTED[hook_name]}"
