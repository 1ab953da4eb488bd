"""The version of celery-dbeat, in a module of its own: the build reads it from here
(``pyproject.toml``, ``[tool.setuptools.dynamic]``), the package re-exports it, and the beat
(heartbeat row, metrics) imports it without importing the package's ``__init__``, which imports
the beat."""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0.dev0"
