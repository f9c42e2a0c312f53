"""The plugin API: everything a plugin module imports to be a Caldera plugin.

```python
from plugins.api import Plugin, Session, Vote, register
```

Its tests import the test kit, :mod:`plugins.api.testing` (builders of the typed views, the
request bodies captured from Volcano, an in-process harness; the pytest fixture
``caldera_serve``), and :func:`answer_of` to read a hook's plain answer, explained or not.
"""

from plugins.api.arguments import Arguments
from plugins.api.base import (
    Background,
    EvictResult,
    FitError,
    Plugin,
    Session,
    StatusCode,
    Vote,
    implemented_hooks,
    utc_now,
)
from plugins.api.extension_points import EXTENSION_POINTS, ExtensionPoint, Rule
from plugins.api.reasons import Explained, Reason, answer_of
from plugins.api.registry import register
from plugins.api.release import Release

__all__ = [
    "EXTENSION_POINTS",
    "Arguments",
    "Background",
    "EvictResult",
    "Explained",
    "ExtensionPoint",
    "FitError",
    "Plugin",
    "Reason",
    "Release",
    "Rule",
    "Session",
    "StatusCode",
    "Vote",
    "answer_of",
    "implemented_hooks",
    "register",
    "utc_now",
]
