"""The session's state from the cluster (issue 36): Caldera derives, from the Kubernetes objects
Volcano's cache is built from, the same ``OnSessionOpenRequest`` Volcano would send.

* :mod:`objects`: the watched objects, as far as the derivation reads them.
* :mod:`derive`: objects in, snapshot out, following Volcano v1.14.1's cache.
* :mod:`incremental`: the same snapshot, rebuilt from the previous session's where objects
  changed.
* :mod:`overlay`: what allocate/deallocate told Caldera and the cluster does not show yet.
* :mod:`store`: the list+watch store and its per-session frozen view.
* :mod:`compare`: the differences between Volcano's snapshot and the derived one.
* :mod:`encode`: a state as the onSessionOpen body Volcano would have posted, written entry by
  entry.
* :mod:`multi_scheduler`: the share of one replica of Volcano's multi-scheduler mode (the hash
  ring); :mod:`scheduler_flags`: what vc-scheduler's sharding settings mean for the state.
"""
