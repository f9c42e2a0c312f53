"""``usage``, as Volcano's ``pkg/scheduler/plugins/usage/``: the plugin
(:mod:`plugins.usage.usage`, ``usage.go``), the load estimator for pods placed since the last
metrics sample (:mod:`.estimator`, ``estimator.go`` and ``shadow_cache.go``) and a pod's resource
limits (:mod:`.pod_limits`)."""

from plugins.usage.usage import UsagePlugin

__all__ = ["UsagePlugin"]
