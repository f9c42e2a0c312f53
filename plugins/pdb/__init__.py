"""``pdb``, as Volcano's ``pkg/scheduler/plugins/pdb/``: the plugin (:mod:`plugins.pdb.pdb`,
``pdb.go``) with what only it uses beside it — the budget arithmetic (:mod:`.budgets`), where
the budgets come from (:mod:`.sources`: the API server, a file, a fixed set), the list and watch
of the API server (:mod:`.kube`) and Kubernetes label selectors (:mod:`.labels`)."""

from plugins.pdb.pdb import PdbPlugin

__all__ = ["PdbPlugin"]
