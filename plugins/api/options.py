"""Volcano's plugin options (``conf.PluginOption``): the ``enableXxx`` flags of a tier entry.

Kept in the plugin API because a plugin may read its own flags (nodegroup reads
``enableHierarchy``) through :meth:`plugins.api.arguments.Arguments.enabled`.
"""

from __future__ import annotations

FLAG_DEFAULTS: dict[str, bool] = {
    "enableJobOrder": True,
    "enableHierarchy": False,
    "enableJobReady": True,
    "enableJobPipelined": True,
    "enableTaskOrder": True,
    "enablePreemptable": True,
    "enableReclaimable": True,
    "enablePreemptive": True,
    "enableQueueOrder": True,
    "enabledClusterOrder": False,
    "enablePredicate": True,
    "enableBestNode": True,
    "enableNodeOrder": True,
    "enableTargetJob": True,
    "enableReservedNodes": True,
    "enableJobEnqueued": True,
    "enabledVictim": True,
    "enableJobStarving": True,
    "enabledOverused": True,
    "enabledAllocatable": True,
    "enabledHyperNodeOrder": True,
    "enabledSubJobReady": True,
    "enabledSubJobPipelined": True,
    "enabledSubJobOrder": True,
    "enabledHyperNodeGradient": True,
}
"""``conf.PluginOption`` YAML keys (Volcano's own inconsistent spellings) and the values
``plugins.ApplyPluginConfDefaults`` gives them when absent: all true except ``enableHierarchy``
and ``enabledClusterOrder``."""
