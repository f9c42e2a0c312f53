"""The plugin API: everything a plugin module imports to be a Caldera plugin.

```python
from plugins.api import Plugin, Session, Vote, register
```

Its tests import the test kit, :mod:`plugins.api.testing` (builders of the typed views, the
request bodies captured from Volcano, an in-process harness; the pytest fixture
``caldera_serve``), and :func:`answer_of` to read a hook's plain answer, explained or not.
"""

from plugins.api.arguments import Arguments, argument_warning, warn_once
from plugins.api.base import (
    Background,
    EvictResult,
    FitError,
    OnError,
    Plugin,
    Session,
    StatusCode,
    Upstream,
    Vote,
    implemented_hooks,
    utc_now,
)
from plugins.api.extension_points import EXTENSION_POINTS, ExtensionPoint, Rule, Verb
from plugins.api.mapstructure import (
    DecodeError,
    decode_bool,
    decode_float,
    decode_int,
    decode_map,
    decode_string,
    struct_fields,
)
from plugins.api.reasons import Explained, Reason, answer_of
from plugins.api.registry import register
from plugins.api.release import (
    CDP_RECLAIMABLE,
    NODEGROUP_AS_PORTED,
    NODEGROUP_PREFERRED_ORDER,
    NODEGROUP_RESOURCE_LIMITS,
    OVERCOMMIT_SCALAR_MILLI_UNITS,
    QUEUE_ALLOCATION_GATE_NOT_GATED,
    RESOURCEQUOTA_ACCOUNTS_ON_ENQUEUED,
    USAGE_AS_PORTED,
    USAGE_ESTIMATOR,
    Change,
    Release,
)

__all__ = [
    "CDP_RECLAIMABLE",
    "EXTENSION_POINTS",
    "NODEGROUP_AS_PORTED",
    "NODEGROUP_PREFERRED_ORDER",
    "NODEGROUP_RESOURCE_LIMITS",
    "OVERCOMMIT_SCALAR_MILLI_UNITS",
    "QUEUE_ALLOCATION_GATE_NOT_GATED",
    "RESOURCEQUOTA_ACCOUNTS_ON_ENQUEUED",
    "USAGE_AS_PORTED",
    "USAGE_ESTIMATOR",
    "Arguments",
    "Background",
    "Change",
    "DecodeError",
    "EvictResult",
    "Explained",
    "ExtensionPoint",
    "FitError",
    "OnError",
    "Plugin",
    "Reason",
    "Release",
    "Rule",
    "Session",
    "StatusCode",
    "Upstream",
    "Verb",
    "Vote",
    "answer_of",
    "argument_warning",
    "decode_bool",
    "decode_float",
    "decode_int",
    "decode_map",
    "decode_string",
    "implemented_hooks",
    "register",
    "struct_fields",
    "utc_now",
    "warn_once",
]
