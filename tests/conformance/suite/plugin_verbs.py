"""Per built-in plugin, the extender verbs it answers on one Volcano release, as JSON: what the
differential suite's mutants must cover (suite/mutate.go, ``checkMutantCoverage``).

The suite embeds this file and runs it with this checkout's interpreter (the one behind
``.venv/bin/caldera``): ``python -c <this file> 1.14.1`` prints ``{"plugin": ["verb", ...]}``.
It reads the plugin API only (``plugins.api``), not the server's modules.

A plugin answers a verb on a release when

- it overrides the verb's hook (``implemented_hooks``: what ``caldera volcano-config`` enables
  for it and the framework asks it);
- the release's extender plugin sends the verb (``Release.has_verb``: allocate from 1.13...);
- Caldera hosts the plugin on that release (``ported_from``);
- the plugin does not withdraw the hook on that release: its ``hooks()`` once a session of the
  release is open, against the same plugin on the newest release (cdp's reclaimable before
  1.12, usage's and nodegroup's allocate and deallocate before 1.16).

A hook that an argument switches off (resource-strategy-fit's predicate without
``proportional``) still counts: a configuration answers it, so a mutant must break it.
"""

from __future__ import annotations

import json
import sys

from plugins.api import registry
from plugins.api.arguments import Arguments
from plugins.api.base import Plugin, implemented_hooks
from plugins.api.extension_points import BY_HOOK
from plugins.api.release import SUPPORTED_VERSIONS, Release
from plugins.api.testing import session

NEWEST = Release(*SUPPORTED_VERSIONS[-1])


def release_of(text: str) -> Release:
    parts = [int(part) for part in text.removeprefix("v").split(".")]
    return Release(*parts[:3])


def session_hooks(cls: type[Plugin], release: Release) -> frozenset[str]:
    """The hooks a plugin of ``cls`` with default arguments takes part in once a session of
    ``release`` is open."""
    plugin = cls(Arguments({}, plugin=cls.name, release=release))
    ssn = session(release=f"{release.major}.{release.minor}")
    ssn.release = release
    plugin.on_session_open(ssn)
    try:
        return plugin.hooks()
    finally:
        plugin.on_session_close()


def verbs(cls: type[Plugin], release: Release) -> list[str]:
    if cls.ported_from is not None and not release.has(cls.ported_from):
        return []  # Caldera refuses the plugin on this release
    hooks = set(implemented_hooks(cls))
    if type.__getattribute__(cls, "hooks") is not Plugin.hooks:
        # The plugin decides per session: what it answers on the newest release and not here
        # is withdrawn for this release (whatever its arguments switch off, both sides do).
        hooks -= session_hooks(cls, NEWEST) - session_hooks(cls, release)
    return sorted(BY_HOOK[h].verb for h in hooks if release.has_verb(BY_HOOK[h].verb))


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: plugin_verbs.py RELEASE (e.g. 1.14.1)", file=sys.stderr)
        return 2
    release = release_of(argv[0])
    built_in = {
        name: cls
        for name in registry.names()
        if (cls := registry.get(name)) is not None and cls.__module__.startswith("plugins.")
    }
    print(json.dumps({name: verbs(cls, release) for name, cls in sorted(built_in.items())}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
