"""Caldera: Volcano scheduler plugins served over Volcano's extender protocol."""

__version__ = "0.1.0"
