"""What ``caldera serve`` serves with, as one frozen object: :class:`ServeOptions`, built once
from the process's :class:`~app.server.settings.Settings` (and ``--record``) with the
configuration they name already loaded. ``create_app`` (app/server/main.py), the
:class:`~app.server.runtime.Runtime` it builds and :func:`~app.server.serve.serve` read it, instead
of a keyword argument per setting passed from one to the next.

A configuration built in code (tests, the benchmarks, ``caldera openapi``) is served with
:meth:`ServeOptions.of`: every setting's default, and :meth:`ServeOptions.replace` for the few a
caller changes (``config_watch_seconds=0`` in most tests).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.config import CalderaConfig, ConfigOrigin, load_with_origin
from app.server.record import DEFAULT_MAX_BYTES as DEFAULT_RECORD_MAX_BYTES
from app.server.settings import LogFormat, LogLevel, Settings


class MissingFile(Exception):
    """A file a setting names (a TLS certificate, key or CA) does not exist; the message names
    the option and the path."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ServeOptions:
    """The settings of one ``caldera serve`` (each field is the :class:`Settings` field of the
    same name, documented there), the configuration its ``config`` setting names, and
    ``--record``."""

    config: CalderaConfig
    """The configuration served at the start (a live reload replaces it in the runtime)."""
    origin: ConfigOrigin
    """Where ``config`` was read from: the file watched for changes, if any."""
    host: str
    port: int
    health_host: str
    health_port: int | None
    log_level: LogLevel
    log_format: LogFormat
    keep_alive_seconds: int
    shutdown_seconds: int
    header_timeout_seconds: float
    body_timeout_seconds: float
    max_header_bytes: int
    config_watch_seconds: float
    shadow: str | None
    shadow_max_queued_bytes: int
    ssl_certfile: str | None
    ssl_keyfile: str | None
    ssl_client_ca: str | None
    record: str | None = None
    """``serve --record DIR``: every exchange written under DIR (app/server/record.py)."""
    record_max_bytes: int = DEFAULT_RECORD_MAX_BYTES
    """``serve --record-max-bytes``: recording stops past this many bytes."""

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        record: str | None = None,
        record_max_bytes: int = DEFAULT_RECORD_MAX_BYTES,
    ) -> ServeOptions:
        """``caldera serve``'s options: ``settings``, with the configuration file they name (or
        the embedded default) loaded. Raises :class:`~app.config.ConfigError` when it is not
        valid, then :class:`MissingFile` for a TLS file that does not exist."""
        config, origin = load_with_origin(settings.config)
        for option, path in (
            ("--ssl-certfile", settings.ssl_certfile),
            ("--ssl-keyfile", settings.ssl_keyfile),
            ("--ssl-client-ca", settings.ssl_client_ca),
        ):
            if path is not None and not Path(path).is_file():
                raise MissingFile(f"{option} {path}: no such file")
        return cls._of(settings, config, origin, record, record_max_bytes)

    @classmethod
    def of(cls, config: CalderaConfig, origin: ConfigOrigin | None = None) -> ServeOptions:
        """Serve ``config``, built in code, with every setting's default: not the environment's
        ``CALDERA_*``, so that what a test or a benchmark serves does not depend on the shell it
        runs in. ``origin`` names a file to watch (none: an in-memory configuration)."""
        defaults = Settings.model_construct()
        origin = origin or ConfigOrigin.of(config)
        return cls._of(defaults, config, origin, None, DEFAULT_RECORD_MAX_BYTES)

    @classmethod
    def _of(
        cls,
        settings: Settings,
        config: CalderaConfig,
        origin: ConfigOrigin,
        record: str | None,
        record_max_bytes: int,
    ) -> ServeOptions:
        return cls(
            config=config,
            origin=origin,
            host=settings.host,
            port=settings.port,
            health_host=settings.health_host,
            health_port=settings.health_port,
            log_level=settings.log_level,
            log_format=settings.log_format,
            keep_alive_seconds=settings.keep_alive_seconds,
            shutdown_seconds=settings.shutdown_seconds,
            header_timeout_seconds=settings.header_timeout_seconds,
            body_timeout_seconds=settings.body_timeout_seconds,
            max_header_bytes=settings.max_header_bytes,
            config_watch_seconds=settings.config_watch_seconds,
            shadow=settings.shadow,
            shadow_max_queued_bytes=settings.shadow_max_queued_bytes,
            ssl_certfile=settings.ssl_certfile,
            ssl_keyfile=settings.ssl_keyfile,
            ssl_client_ca=settings.ssl_client_ca,
            record=record,
            record_max_bytes=record_max_bytes,
        )

    def replace(self, **changes: Any) -> ServeOptions:
        """These options with ``changes`` (field names), e.g. ``config_watch_seconds=0``."""
        return dataclasses.replace(self, **changes)
