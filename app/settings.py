"""Process settings: where to listen and which configuration to load.

From the command line, else the environment (``CALDERA_CONFIG``, ``CALDERA_HOST``,
``CALDERA_PORT``, ``CALDERA_HEALTH_HOST``, ``CALDERA_HEALTH_PORT``, ``CALDERA_LOG_LEVEL``, ``CALDERA_LOG_FORMAT``, ``CALDERA_KEEP_ALIVE_SECONDS``,
``CALDERA_SHUTDOWN_SECONDS``, ``CALDERA_HEADER_TIMEOUT_SECONDS``, ``CALDERA_BODY_TIMEOUT_SECONDS``,
``CALDERA_MAX_HEADER_BYTES``, ``CALDERA_CONFIG_WATCH_SECONDS``, ``CALDERA_SSL_CERTFILE``, ``CALDERA_SSL_KEYFILE``,
``CALDERA_SSL_CLIENT_CA``), else the defaults: a sidecar listens on loopback.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from app.body import DEFAULT_TIMEOUT as DEFAULT_BODY_TIMEOUT

LogLevel = Literal["critical", "error", "warning", "info", "debug"]


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CALDERA_", extra="ignore")

    config: str | None = None
    """Path of the configuration file; None serves the embedded default configuration."""
    host: str = "127.0.0.1"
    """Where the extender verbs (and everything else) are served: loopback, because Caldera
    trusts whoever reaches them (README, "Security")."""
    port: int = Field(default=8080, ge=0, le=65535)
    health_host: str = "0.0.0.0"
    """The health listener's address: only ``/healthz``, ``/readyz`` and ``/metrics``, for the
    kubelet's probes and Prometheus, which reach the pod IP (``app/listeners.py``)."""
    health_port: int | None = Field(default=None, ge=0, le=65535)
    """The health listener's port; None: no health listener."""
    log_level: LogLevel = "info"
    log_format: Literal["auto", "json", "text"] = "auto"
    """``auto``: JSON lines when stderr is not a terminal (production), text otherwise."""
    keep_alive_seconds: int = Field(default=120, gt=0)
    """How long an idle keep-alive connection stays open. Volcano's Go client keeps idle
    connections for 90 s and does not retry a POST on one the server has closed, so closing
    sooner (uvicorn's default is 5 s) turns into failed extender calls."""
    shutdown_seconds: int = Field(default=5, ge=0)
    """On SIGTERM: how long in-flight requests may take to finish before the process exits."""
    header_timeout_seconds: float = Field(default=10.0, gt=0)
    """From a request's first byte to the end of its headers; then 408 and the connection
    closes (a client sending a byte a second holds nothing for long)."""
    body_timeout_seconds: float = Field(default=DEFAULT_BODY_TIMEOUT, gt=0)
    """For a whole request body; then 408 and the connection closes. Keep it above
    ``extender.httpTimeout``: Volcano gives up by then anyway."""
    max_header_bytes: int = Field(default=64 * 1024, ge=1024)
    """Request line plus headers (Volcano sends about 200 bytes); above it, 431 and close."""
    config_watch_seconds: float = Field(default=2.0, ge=0)
    """How often the configuration file is checked for a change, applied at the next session
    boundary (``app/config_watch.py``); 0 turns the live reload off."""
    ssl_certfile: str | None = None
    """Serve HTTPS with this PEM certificate (chain); needs ``ssl_keyfile``. For a Caldera that
    is not a loopback sidecar; Volcano's ``extender.urlPrefix`` then starts with https://."""
    ssl_keyfile: str | None = None
    ssl_client_ca: str | None = None
    """Mutual TLS: accept only clients presenting a certificate signed by these CAs (PEM)."""

    @model_validator(mode="after")
    def _tls_is_complete(self) -> Settings:
        if (self.ssl_certfile is None) != (self.ssl_keyfile is None):
            raise ValueError("ssl_certfile and ssl_keyfile go together")
        if self.ssl_client_ca is not None and self.ssl_certfile is None:
            raise ValueError("ssl_client_ca needs ssl_certfile and ssl_keyfile")
        if self.health_port is not None and self.health_port == self.port != 0:
            raise ValueError(
                f"health_port {self.health_port} is the verb port: the health listener needs"
                " a port of its own"
            )
        return self
