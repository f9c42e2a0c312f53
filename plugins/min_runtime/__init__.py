"""``min-runtime``, as KAI-Scheduler's ``pkg/scheduler/plugins/minruntime/``: the plugin
(:mod:`plugins.min_runtime.min_runtime`, ``minruntime.go``) and the resolver of the duration that
protects a victim through the queue tree (:mod:`.resolver`, ``resolver.go``)."""

from plugins.min_runtime.min_runtime import MinRuntimePlugin

__all__ = ["MinRuntimePlugin"]
