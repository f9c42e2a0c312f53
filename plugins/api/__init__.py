"""The plugin API: everything a plugin module imports to be a Caldera plugin.

```python
from plugins.api import Plugin, Session, Vote, register
```
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
from plugins.api.reasons import Explained, Reason
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
    "implemented_hooks",
    "register",
    "utc_now",
]
