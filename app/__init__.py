"""Caldera: Volcano scheduler plugins served over Volcano's extender protocol."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("caldera-volcano")
    """The installed distribution's version (pyproject.toml's, the one place it is written)."""
except PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"
