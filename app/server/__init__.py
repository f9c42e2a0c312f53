"""The server: ``caldera serve``'s app and everything that carries a request to the core and back.

* :mod:`serve`: ``caldera serve`` once its options are built: the log, uvicorn's servers for the
  two listeners, SIGTERM, running them.
* :mod:`options`: :class:`~app.server.options.ServeOptions`, everything one ``serve`` serves
  with, built once from :mod:`settings` and the configuration they name.
* :mod:`main`: the app factory (``create_app``) with its lifespan and the verbs' dispatcher.
* :mod:`runtime`: what one app owns while it serves (extender, sessions, metrics, watches).
* :mod:`routes`: the verbs, the probes, ``/metrics``, ``/debug`` and ``/docs``.
* :mod:`listeners`, :mod:`connections`, :mod:`body`, :mod:`buffers`: the two listeners, the
  guarded HTTP protocol, reading a body and the buffer kept for large ones.
* :mod:`settings`: ``caldera serve``'s options; :mod:`logs`; :mod:`openapi`.
* :mod:`config_watch`, :mod:`record`, :mod:`features`, :mod:`snapshot_health`: the live reload,
  ``serve --record``, optional features that degrade, and whether the last snapshot was taken.
"""
