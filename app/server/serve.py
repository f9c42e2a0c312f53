"""``caldera serve`` once its options are built: the log, the app, uvicorn's servers for the two
listeners (app/server/listeners.py), SIGTERM, and running them until it arrives.

``app/commands/cli.py`` parses the command line into :class:`~app.server.settings.Settings` and
:class:`~app.server.options.ServeOptions`, and turns what :func:`serve` raises into its messages
and exit statuses.
"""

from __future__ import annotations

import logging
import signal
import ssl
import sys
from dataclasses import replace
from typing import Any

import uvicorn

from app.config import ConfigError
from app.config_checks import build_problems, log_problems
from app.server import listeners, logs
from app.server.buffers import BodyBuffers
from app.server.connections import ConnectionLimits, guarded_protocol
from app.server.main import CalderaApp, create_app
from app.server.options import ServeOptions

logger = logging.getLogger("caldera")


def serve(options: ServeOptions) -> int:
    """Serve until SIGTERM. Returns the exit status: 0 after SIGTERM, 1 when the verbs' listener
    never started (the health listener did not); a listener that cannot bind its address exits
    with uvicorn's own ``SystemExit(3)``. Raises :class:`~app.config.ConfigError` when a plugin
    of the configuration cannot be built, before anything listens."""
    logs.configure_logging(options.log_level, options.log_format)
    config = options.config
    broken = build_problems(config)
    if broken:
        raise ConfigError.of(options.origin.source, broken)
    log_problems(config, logger)
    app = create_app(options)
    verbs, health = servers(app, options)
    exposure = listeners.exposure_warning(options.host, options.ssl_certfile is not None)
    if exposure is not None:
        logger.warning("%s", exposure)
    # uvicorn drains in-flight requests on SIGTERM, then re-raises the signal under the handler
    # that was in place before it started; make that one a clean exit, as Kubernetes expects.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    listeners.run(verbs, health, verbs.config.get_loop_factory())
    return 0 if verbs.started else 1


def servers(app: CalderaApp, options: ServeOptions) -> tuple[uvicorn.Server, uvicorn.Server | None]:
    """uvicorn's server for the verbs' listener, and for the health listener when
    ``options.health_port`` asks for one; both speak the guarded protocol
    (app/server/connections.py)."""
    config = options.config
    limits = ConnectionLimits(
        options.header_timeout_seconds,
        options.max_header_bytes,
        config.maxRequestBytes,
        {
            path: config.body_limit(verb)
            for path, verb in app.runtime.extender.routes().items()
            if config.body_limit(verb) != config.maxRequestBytes
        },
    )
    metrics = app.runtime.metrics
    buffers = BodyBuffers(
        kept=metrics.body_buffer.set,
        outcome=lambda outcome: metrics.body_buffers.labels(outcome).inc(),
    )
    common: dict[str, Any] = {
        "log_config": None,
        "access_log": False,
        "log_level": options.log_level,
        "timeout_keep_alive": options.keep_alive_seconds,
        "timeout_graceful_shutdown": options.shutdown_seconds,
        "server_header": False,
        # Volcano, the kubelet and Prometheus call Caldera directly, never through a proxy:
        # uvicorn's X-Forwarded-For rewriting would be one more layer per call for nothing.
        "proxy_headers": False,
    }
    verbs = uvicorn.Server(
        uvicorn.Config(
            app,
            host=options.host,
            port=options.port,
            http=guarded_protocol(limits, buffers),
            ssl_certfile=options.ssl_certfile,
            ssl_keyfile=options.ssl_keyfile,
            ssl_ca_certs=options.ssl_client_ca,
            ssl_cert_reqs=ssl.CERT_REQUIRED if options.ssl_client_ca else ssl.CERT_NONE,
            **common,
        )
    )
    if options.health_port is None:
        return verbs, None
    # Plain HTTP: the kubelet's httpGet probes and a PodMonitor speak it, and nothing on this
    # listener steers a decision. No lifespan: the app's backgrounds start once.
    health_app = listeners.HealthListener(
        app, f"{options.host}:{options.port}", verbs_serving=lambda: verbs.started
    )
    health = uvicorn.Server(
        uvicorn.Config(
            health_app,
            host=options.health_host,
            port=options.health_port,
            http=guarded_protocol(replace(limits, max_body_bytes=0)),
            lifespan="off",
            **common,
        )
    )
    return verbs, health
