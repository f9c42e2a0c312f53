"""Process settings: where to listen and which configuration to load.

From the command line, else the environment (``CALDERA_CONFIG``, ``CALDERA_HOST``,
``CALDERA_PORT``, ``CALDERA_LOG_LEVEL``, ``CALDERA_LOG_FORMAT``), else the defaults: a sidecar
listens on loopback.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

LogLevel = Literal["critical", "error", "warning", "info", "debug"]


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CALDERA_", extra="ignore")

    config: str | None = None
    """Path of the configuration file; None serves the embedded default configuration."""
    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=0, le=65535)
    log_level: LogLevel = "info"
    log_format: Literal["auto", "json", "text"] = "auto"
    """``auto``: JSON lines when stderr is not a terminal (production), text otherwise."""
