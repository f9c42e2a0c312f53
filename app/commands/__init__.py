"""The commands that never serve a verb, and the CLI that runs them all (``caldera``).

* :mod:`cli`: the ``caldera`` console script: ``serve`` and every offline command.
* :mod:`check_plugin`: ``caldera check-plugin``, a plugin held against its contract.
* :mod:`replay`: ``caldera replay``, a ``serve --record`` recording answered again.
* :mod:`explain_client`, :mod:`shadow_client`: ``caldera explain`` and ``caldera shadow``, which
  ask a running Caldera.
* :mod:`volcano_entry`, :mod:`volcano_merge`, :mod:`sizing`: ``caldera volcano-config``: the
  extender entry for Volcano's conf, merged into an operator's, and the body-size estimates.
"""
