"""A shadow configuration's plugin data sources, shared with the live configuration's where both
read the same thing: one sidecar with a shadow keeps one watch of the API server, not two.

Without this a shadow hosting pdb opens its own list and watch of every PodDisruptionBudget in
the cluster: a second LIST at start and after every watch expiry, and a second stream of every
change, from one pod — what an operator adding a shadow does not expect to cost the API server.

Which sources are shared: a shadow tier entry whose :func:`~app.config.background_key`
(plugin, arguments, flags) is also one of the live configuration's — the same test a live reload
uses to keep a data source across a switch — and whose data source can be mirrored
(:class:`Shareable`: pdb's). Any other (pdb with another kubeconfig or file, a plugin only the
shadow hosts, usage's metrics) is the shadow's own, as before; ``/readyz``'s ``shadow.dataSources``
says which is which.

How: at each onSessionOpen the parent's sending thread (``app/shadow/service.py``, off the event
loop) asks each shareable live source for its version (:meth:`Shareable.shared_version`: an
object replaced whole when the state changes, so an identity test tells a change) and, for each that
changed, its state (:meth:`Shareable.shared_state`: bytes, cheap to make and to send: pdb's are
the PodDisruptionBudgets as JSON: 0.6 ms for 1,000 of them and 2.7 ms for 5,000, where
pickling the compiled budgets took 11 and 75-125 ms with the GIL held, on the 2-core development
machine); it sends them with the set of shareable keys before
that session's snapshot, and the shadow's process decodes and compiles them. The shadow's :class:`Mirror` answers from the newest state received, so
each shadow session sees the budgets the live source held when the session opened. When the
live configuration's sources change (a live reload adds or drops pdb), the shadow rebuilds its
configuration at its next session boundary, mirroring or watching as the new set says.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol, runtime_checkable

from app.config import Backgrounds, CalderaConfig, background_key
from plugins.api.base import Background

ServedConfig = Callable[[], tuple[CalderaConfig, Backgrounds]]
"""The live configuration and its data sources, as served now (a live reload replaces them)."""
SHARED = "shared with the live configuration"
OWN = "its own"


@runtime_checkable
class Mirror(Protocol):
    """The shadow's side of a shared data source: a Background fed the live source's state."""

    def receive(self, state: bytes) -> None: ...


@runtime_checkable
class Shareable(Protocol):
    """A data source whose state a shadow may read instead of fetching it again."""

    def shared_version(self) -> object | None:
        """An object replaced whenever the state changes (compared by identity); None until the
        source has synced."""
        ...

    def shared_state(self) -> bytes:
        """The state, encoded: what :meth:`Mirror.receive` takes. Called from another thread
        than the one that updates the source: it reads only references replaced whole."""
        ...

    def mirror(self) -> Background:
        """A Background of the same kind answering from the states it :meth:`Mirror.receive`\\ s."""
        ...


def shareable_keys(config: CalderaConfig, backgrounds: Backgrounds) -> dict[str, Background]:
    """``config``'s shareable data sources by :func:`~app.config.background_key`."""
    return {
        background_key(config, entry): background
        for entry, background in backgrounds.items()
        if isinstance(background, Shareable)
    }


class LiveSources:
    """The parent's side: what of the live configuration's sources the shadow has not seen yet.

    ``served`` returns the live configuration and its data sources as served now (a live reload
    replaces them). Called from the shadow's sending thread only.
    """

    def __init__(self, served: ServedConfig) -> None:
        self.served = served
        self._of: tuple[int, int] | None = None
        self._by_key: dict[str, Background] = {}
        self._sent: dict[str, object] = {}
        """The version each key's state was sent at."""
        self.keys: frozenset[str] = frozenset(self._current())
        """The shareable keys the shadow knows of (handed to it when its process starts)."""

    def _current(self) -> dict[str, Background]:
        config, backgrounds = self.served()
        of = (id(config), id(backgrounds))
        if of != self._of:
            self._of, self._by_key = of, shareable_keys(config, backgrounds)
        return self._by_key

    def changes(self) -> tuple[frozenset[str], dict[str, bytes]] | None:
        """``(keys, states)`` to send before the next session, or None when nothing changed."""
        current = self._current()
        keys = frozenset(current)
        states: dict[str, bytes] = {}
        sent = {k: v for k, v in self._sent.items() if k in keys}
        for key, background in current.items():
            assert isinstance(background, Shareable)
            version = background.shared_version()
            if version is not None and version is not sent.get(key):
                states[key] = background.shared_state()
                sent[key] = version
        if not states and keys == self.keys:
            return None
        self._sent, self.keys = sent, keys
        return keys, states


class MirroredSources:
    """The shadow process's side: the live keys and states it was sent, and its mirrors."""

    def __init__(self, live_keys: frozenset[str] = frozenset()) -> None:
        self.live_keys = live_keys
        self.states: dict[str, bytes] = {}
        self.mirrors: dict[str, list[Mirror]] = {}
        """The mirrors of the configuration the shadow answers with, by key."""
        self.chosen: dict[str, bool] = {}
        """Each shareable key of that configuration: mirrored (True) or its own (False)."""

    def receive(self, keys: frozenset[str], states: Mapping[str, bytes]) -> bool:
        """Take the parent's :class:`~app.shadow.messages.Share`; True when the shadow's
        configuration must be rebuilt (a source it mirrors is no longer live, or one it watches
        itself now is)."""
        self.live_keys = keys
        self.states = {k: v for k, v in {**self.states, **states}.items() if k in keys}
        for key, state in states.items():
            for mirror in self.mirrors.get(key, ()):
                mirror.receive(state)
        return any((key in keys) != mirrored for key, mirrored in self.chosen.items())

    def adopt(
        self, config: CalderaConfig, backgrounds: Backgrounds
    ) -> tuple[Backgrounds, dict[str, list[Mirror]], dict[str, bool], dict[str, str]]:
        """``backgrounds`` with each one the live configuration also has replaced by a mirror
        (fed the newest state already received); then the mirrors, the choices and, per entry,
        whose source it reads (for ``/readyz``). Nothing is kept until :meth:`use`."""
        adopted: Backgrounds = {}
        mirrors: dict[str, list[Mirror]] = {}
        chosen: dict[str, bool] = {}
        described: dict[str, str] = {}
        for entry, background in backgrounds.items():
            name = f"tiers[{entry[0]}].plugins[{entry[1]}]:{config.tiers[entry[0]].plugins[entry[1]].name}"
            if not isinstance(background, Shareable):
                adopted[entry] = background
                described[name] = OWN
                continue
            key = background_key(config, entry)
            chosen[key] = key in self.live_keys
            if not chosen[key]:
                adopted[entry] = background
                described[name] = OWN
                continue
            mirror = background.mirror()
            assert isinstance(mirror, Mirror)
            if key in self.states:
                mirror.receive(self.states[key])
            mirrors.setdefault(key, []).append(mirror)
            adopted[entry] = mirror
            described[name] = SHARED
        return adopted, mirrors, chosen, described

    def use(self, mirrors: dict[str, list[Mirror]], chosen: dict[str, bool]) -> None:
        """The configuration :meth:`adopt` prepared is the shadow's from now on."""
        self.mirrors, self.chosen = mirrors, chosen
