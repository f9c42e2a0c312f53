"""Label selectors as Kubernetes evaluates them: ``metav1.LabelSelectorAsSelector`` and
``labels.Requirement`` of ``k8s.io/apimachinery`` (validation of keys and values included), so a
selector that Kubernetes would refuse is refused here too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from schemas.k8s import LabelSelector

_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")


class SelectorError(ValueError):
    """``LabelSelectorAsSelector`` returned an error: the PDB is ignored."""


def _check_key(key: str) -> None:
    """``validation.IsQualifiedName``: ``[prefix/]name``, prefix a DNS-1123 subdomain."""
    parts = key.split("/")
    if len(parts) > 2:
        raise SelectorError(f"invalid label key {key!r}")
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(prefix):
            raise SelectorError(f"invalid label key prefix in {key!r}")
    if not name or len(name) > 63 or not _QUALIFIED_NAME.fullmatch(name):
        raise SelectorError(f"invalid label key {key!r}")


def _check_value(key: str, value: str) -> None:
    """``validation.IsValidLabelValue``: empty, or up to 63 alphanumerics, ``-``, ``_``, ``.``."""
    if len(value) > 63 or not _LABEL_VALUE.fullmatch(value):
        raise SelectorError(f"invalid value {value!r} for label key {key!r}")


@dataclass(frozen=True, slots=True)
class Requirement:
    """``labels.Requirement`` for the operators a LabelSelector can produce."""

    key: str
    operator: str
    """``=`` (from matchLabels), ``in``, ``notin``, ``exists`` or ``!``."""
    values: frozenset[str]

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.operator in ("=", "in"):
            return self.key in labels and labels[self.key] in self.values
        if self.operator == "notin":
            return self.key not in labels or labels[self.key] not in self.values
        if self.operator == "exists":
            return self.key in labels
        return self.key not in labels  # "!" (DoesNotExist)


_OPERATORS = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}


def _requirement(key: str, operator: str, values: Sequence[str]) -> Requirement:
    """``labels.NewRequirement``: validates the key, the value count and every value."""
    _check_key(key)
    if operator in ("in", "notin") and not values:
        raise SelectorError(f"{key!r}: 'in' and 'notin' need at least one value")
    if operator == "=" and len(values) != 1:
        raise SelectorError(f"{key!r}: an exact match needs one value")
    if operator in ("exists", "!") and values:
        raise SelectorError(f"{key!r}: 'exists' and 'does not exist' take no values")
    for value in values:
        _check_value(key, value)
    return Requirement(key, operator, frozenset(values))


@dataclass(frozen=True, slots=True)
class Selector:
    """``labels.Selector``: ``Nothing()``, ``Everything()`` or ANDed requirements."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    def empty(self) -> bool:
        """``Empty()``: true for ``Everything()`` only (``Nothing()`` is not empty)."""
        return not self.nothing and not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        return not self.nothing and all(r.matches(labels) for r in self.requirements)


def label_selector_as_selector(selector: LabelSelector | None) -> Selector:
    """``metav1.LabelSelectorAsSelector``; raises :class:`SelectorError` where Go errs."""
    if selector is None:
        return Selector(nothing=True)
    match_labels = selector.matchLabels or {}
    match_expressions = selector.matchExpressions or []
    if not match_labels and not match_expressions:
        return Selector()
    requirements = [_requirement(k, "=", [v]) for k, v in match_labels.items()]
    for expr in match_expressions:
        operator = _OPERATORS.get(expr.operator)
        if operator is None:
            raise SelectorError(f"{expr.operator!r} is not a valid label selector operator")
        requirements.append(_requirement(expr.key, operator, expr.values or []))
    return Selector(tuple(requirements))
