"""Plugin arguments with Volcano's getter rules (``pkg/scheduler/framework/arguments.go``).

Volcano never fails on a badly typed argument: the getter logs a warning and keeps the value it
had (the plugin's default). The YAML is decoded first, so ``2`` is an int, ``1.5`` a float, ``3m``
a string and ``true`` a bool, as with ``gopkg.in/yaml.v2``. Python's ``bool`` is an ``int``
subclass; Go's is not, so booleans are excluded wherever Go accepts ``int``.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from plugins.api.options import FLAG_DEFAULTS
from plugins.api.release import ARGUMENTS_PARSE_BOOL_STRINGS, Release
from plugins.support.goint import as_go_int, yaml_v2_number

logger = logging.getLogger("caldera.plugins.api.arguments")

_PARSE_BOOL = {
    "1": True, "t": True, "T": True, "TRUE": True, "true": True, "True": True,
    "0": False, "f": False, "F": False, "FALSE": False, "false": False, "False": False,
}  # fmt: skip
"""``strconv.ParseBool``'s accepted spellings."""

_warned: set[tuple[str, str]] = set()


def warn_once(log: logging.Logger, message: str) -> None:
    """Log ``message`` once per process. Volcano warns about a bad argument every cycle, and
    Caldera builds plugins every session too; once is enough to be seen."""
    marker = (log.name, message)
    if marker not in _warned:
        _warned.add(marker)
        log.warning(message)


def argument_warning(arguments: Mapping[str, Any], log: logging.Logger, message: str) -> None:
    """A problem found by a parser that takes any mapping: listed on the :class:`Arguments`
    it was given (for ``check-config``), logged once either way."""
    if isinstance(arguments, Arguments):
        arguments.warn(message)
    else:
        warn_once(log, message)


_Getter = TypeVar("_Getter", bound=Callable[..., Any])


def _records(getter: _Getter) -> _Getter:
    """A typed getter that also records the value it returns as the one in use."""

    @functools.wraps(getter)
    def get(self: Arguments, key: str, default: Any) -> Any:
        value = getter(self, key, default)
        self.used[key] = value
        return value

    return get  # type: ignore[return-value]


class Arguments(Mapping[str, Any]):
    """The ``arguments`` map of one plugin entry, read through Volcano's typed getters."""

    def __init__(
        self,
        values: Mapping[str, Any] | None = None,
        plugin: str = "",
        flags: Mapping[str, bool] | None = None,
        release: Release | None = None,
    ) -> None:
        """``release``: the Volcano release whose getters apply (``volcanoVersion``); None
        follows the newest."""
        self._values: dict[str, Any] = dict(values or {})
        self.plugin = plugin
        self.release = release
        self._bool_strings = release is None or release.has(ARGUMENTS_PARSE_BOOL_STRINGS)
        self.flags: dict[str, bool] = dict(flags or {})
        """The entry's ``enableXxx`` options as written; :meth:`enabled` applies defaults."""
        self.warnings: list[str] = []
        self.warning_keys: dict[str, str] = {}
        """The argument each warning is about, where it is about one."""
        self.read: set[str] = set()
        """Every key a getter or lookup asked for: what the plugin reads of its arguments."""
        self.used: dict[str, Any] = {}
        """The value each key is read as (the default where the given one is refused or
        absent): what ``caldera check-config`` prints as the effective arguments."""

    def enabled(self, flag: str) -> bool:
        """The plugin option ``flag`` of this entry (``enableHierarchy``...), with Volcano's
        default when the entry does not set it."""
        return self.flags.get(flag, FLAG_DEFAULTS[flag])

    def __getitem__(self, key: str) -> Any:
        self.read.add(key)
        return self._values[key]

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):
            self.read.add(key)
        return key in self._values

    def unread(self) -> list[str]:
        """The keys given that nothing has asked for (a typo such as ``sla-waiting-tme``, or an
        argument this release's plugin does not have): Volcano ignores them silently."""
        return sorted(key for key in self._values if key not in self.read)

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def use(self, key: str, value: Any) -> None:
        """Record the value a plugin parsing ``key`` itself ended up with."""
        self.read.add(key)
        self.used[key] = value

    def effective(self) -> dict[str, Any]:
        """The arguments as the plugin reads them: each key read, with the value in use (as
        given where the plugin recorded none); keys nobody reads are left out."""
        return {
            key: self.used[key] if key in self.used else self._values[key]
            for key in [*self._values, *self.used]
            if key in self.used or key in self.read
        }

    def warn(self, message: str, key: str | None = None) -> None:
        """A problem with these arguments (with argument ``key``, when it is one key's):
        logged once, and listed for ``check-config``, which names the key path and value."""
        # The same Arguments serve every session's instance: remember each problem once.
        if message not in self.warnings:
            self.warnings.append(message)
            if key is not None:
                self.warning_keys[message] = key
        warn_once(logger, message)

    def _reject(self, key: str, kind: str, value: Any) -> None:
        self.warn(
            f"plugin {self.plugin or '?'}: argument {key!r} = {value!r} is not a valid {kind};"
            " keeping the default, as Volcano does",
            key,
        )

    @_records
    def get_int(self, key: str, default: int) -> int:
        """``GetInt``: a Go ``int`` only (no float, no string, no bool, nothing beyond int64,
        which Go's YAML decoder does not make an ``int``)."""
        self.read.add(key)
        if key not in self._values:
            return default
        value = as_go_int(self._values[key])
        if value is not None:
            return value
        self._reject(key, "int", self._values[key])
        return default

    @_records
    def get_float64(self, key: str, default: float) -> float:
        """``GetFloat64``: a float, or an int converted; a string such as ``"1.5"`` is rejected."""
        self.read.add(key)
        if key not in self._values:
            return default
        value = self._values[key]
        if isinstance(value, int) and not isinstance(value, bool):
            # Go's YAML decoder makes a uint64 of an integer just beyond int64, which
            # GetFloat64 does not take; a larger one is already a float64.
            number = yaml_v2_number(value)
            if isinstance(number, float) or as_go_int(number) is not None:
                return float(number)
        elif isinstance(value, float):
            return value
        self._reject(key, "float64", value)
        return default

    @_records
    def get_bool(self, key: str, default: bool) -> bool:
        """``GetBool``: a bool, or from Volcano v1.15.0 a string ``strconv.ParseBool`` accepts
        (before it, ``strict: "false"`` is ignored with a warning and the default stays)."""
        self.read.add(key)
        if key not in self._values:
            return default
        value = self._values[key]
        if isinstance(value, bool):
            return value
        if self._bool_strings and isinstance(value, str) and value in _PARSE_BOOL:
            return _PARSE_BOOL[value]
        self._reject(key, "bool", value)
        return default

    @_records
    def get_string(self, key: str, default: str) -> str:
        """``GetString``: a string only."""
        self.read.add(key)
        if key not in self._values:
            return default
        value = self._values[key]
        if isinstance(value, str):
            return value
        self._reject(key, "string", value)
        return default
