"""Process settings: where to listen and which configuration to load.

Each field is declared once, here: from the command line where it has a ``cli`` help text
(``caldera serve --<field-with-dashes>``, the options derived by ``app/commands/cli.py``), else the
environment (``CALDERA_<FIELD>``, e.g. ``CALDERA_PORT``), else the default: a sidecar listens on
loopback.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator
from pydantic.config import JsonDict
from pydantic_settings import BaseSettings, SettingsConfigDict

from app.server.body import DEFAULT_TIMEOUT as DEFAULT_BODY_TIMEOUT

LogLevel = Literal["critical", "error", "warning", "info", "debug"]
LogFormat = Literal["auto", "json", "text"]

DEFAULT_PORT = 8090
"""The verb port when none is given, for ``serve`` and the URL ``volcano-config`` prints: the
shipped manifests' port, because vc-scheduler holds 8080 in the same pod."""


def cli(help: str) -> JsonDict:
    """A field's ``json_schema_extra``: it is also a ``caldera serve`` option, with this help."""
    return {"cli": help}


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CALDERA_", extra="ignore")

    config: str | None = Field(
        default=None, json_schema_extra=cli("configuration file (default: the embedded one)")
    )
    """Path of the configuration file; None serves the embedded default configuration."""
    host: str = Field(
        default="127.0.0.1", json_schema_extra=cli("listen address (default 127.0.0.1)")
    )
    """Where the extender verbs (and everything else) are served: loopback, because Caldera
    trusts whoever reaches them (README, "Security")."""
    port: int = Field(
        default=DEFAULT_PORT,
        ge=0,
        le=65535,
        json_schema_extra=cli(f"listen port (default {DEFAULT_PORT})"),
    )
    health_host: str = Field(
        default="0.0.0.0",
        json_schema_extra=cli(
            "address of the health listener: /livez, /healthz, /readyz and /metrics only"
            " (default 0.0.0.0; with --health-port)"
        ),
    )
    """The health listener's address: only ``/livez``, ``/healthz``, ``/readyz`` and
    ``/metrics``, for the kubelet's probes and Prometheus, which reach the pod IP (``app/server/listeners.py``)."""
    health_port: int | None = Field(
        default=None,
        ge=0,
        le=65535,
        json_schema_extra=cli(
            "port of the health listener (default: none; the verb listener serves them too)"
        ),
    )
    """The health listener's port; None: no health listener."""
    log_level: LogLevel = Field(default="info", json_schema_extra=cli("log level (default info)"))
    log_format: LogFormat = "auto"
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
    boundary (``app/server/config_watch.py``); 0 turns the live reload off."""
    shadow: str | None = Field(
        default=None,
        json_schema_extra=cli(
            "a shadow configuration file evaluated on the same requests, off the hot path;"
            " GET /debug/shadow and caldera shadow show what it would decide differently"
        ),
    )
    """A second configuration answering every request beside the live one; only the live
    answers go to Volcano (``app/shadow/service.py``)."""
    shadow_max_queued_bytes: int = Field(
        default=256 << 20,
        ge=0,
        json_schema_extra=cli(
            "bytes of requests waiting for the shadow; beyond it the shadow drops the rest of"
            " the session (default 256 MiB)"
        ),
    )
    """The shadow's memory bound: bodies and live answers queued for its thread."""
    ssl_certfile: str | None = Field(
        default=None, json_schema_extra=cli("serve HTTPS with this PEM certificate")
    )
    """Serve HTTPS with this PEM certificate (chain); needs ``ssl_keyfile``. For a Caldera that
    is not a loopback sidecar; Volcano's ``extender.urlPrefix`` then starts with https://."""
    ssl_keyfile: str | None = Field(
        default=None, json_schema_extra=cli("the certificate's PEM private key")
    )
    ssl_client_ca: str | None = Field(
        default=None,
        json_schema_extra=cli("mutual TLS: require client certificates signed by these CAs"),
    )
    """Mutual TLS: accept only clients presenting a certificate signed by these CAs (PEM)."""

    @field_validator("log_level", "log_format", mode="before")
    @classmethod
    def _case_insensitive(cls, value: object) -> object:
        """``DEBUG`` as well as ``debug``: Python's and Go's own spellings both reach here."""
        return value.lower() if isinstance(value, str) else value

    @model_validator(mode="after")
    def _tls_is_complete(self) -> Settings:
        if (self.ssl_certfile is None) != (self.ssl_keyfile is None):
            raise ValueError("ssl_certfile and ssl_keyfile go together")
        if self.ssl_client_ca is not None and self.ssl_certfile is None:
            raise ValueError("ssl_client_ca needs ssl_certfile and ssl_keyfile")
        if self.health_port is not None and self.health_port == self.port != 0:
            raise ValueError(
                f"health_port {self.health_port} equals port: the two listeners need two"
                " different numbers"
            )
        return self


def cli_options() -> dict[str, str]:
    """The fields that are also command-line options, with their help texts."""
    options = {}
    for name, field in Settings.model_fields.items():
        extra = field.json_schema_extra
        if isinstance(extra, dict) and isinstance(extra.get("cli"), str):
            options[name] = str(extra["cli"])
    return options
