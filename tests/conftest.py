"""What every test of the suite shares."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _sigpipe_as_python_leaves_it() -> Iterator[None]:
    """``caldera`` commands other than serve reset SIGPIPE to the default action (a pipe closed
    by ``head`` ends them quietly: app/commands/cli.py), and the tests run those commands in
    their own process. Left so, a later test on the same pytest-xdist worker that writes to a
    child that has exited would kill the worker without a word; Python itself ignores SIGPIPE."""
    yield
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
