"""One plugin's answer to one call, as the decision stream (app/decisions.py) tells it: the label of
``caldera_plugin_decisions_total``, the word of the decision record (``GET /debug/explain``,
app/explain.py) and of the Events."""

from __future__ import annotations

import enum


class Outcome(enum.StrEnum):
    """One plugin's answer to one call. The value is the metrics label."""

    PASS = "pass"
    FAIL = "fail"
    SCORED = "scored"
    ABSTAIN = "abstain"
    NONE = "none"
    VICTIMS = "victims"
    PERMIT = "permit"
    REJECT = "reject"
    CALLED = "called"
    OVERUSED = "overused"
    OK = "ok"
    READY = "ready"
    NOT_READY = "not_ready"
    ERROR = "error"

    # Hashed as the string it is (Enum hashes its name in Python): an outcome is part of a
    # metrics key on every plugin answer, and equal to its label as a dict key.
    __hash__ = str.__hash__

    @property
    def said(self) -> str:
        """The word ``GET /debug/explain`` has always shown for it."""
        return _SAID.get(self, self.value)

    @property
    def holds_back(self) -> bool:
        """Whether it keeps a job from going on (explain lists these first)."""
        return self in _HOLDS_BACK


_SAID = {Outcome.NOT_READY: "not ready"}
_HOLDS_BACK = frozenset({Outcome.REJECT, Outcome.NOT_READY, Outcome.OVERUSED})
