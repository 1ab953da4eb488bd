"""Parse durations the way every surface accepts them: seconds, timedeltas, or ``1h30m``."""

from __future__ import annotations

import re
from datetime import timedelta

__all__ = ["parse_duration"]

_UNITS = {"d": 86_400.0, "h": 3_600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|d|h|m|s)")


def parse_duration(value: object) -> timedelta:
    """``30``, ``2.5``, ``timedelta(...)``, ``"30s"``, ``"5m"``, ``"1h30m"``, ``"250ms"``.

    Raises ``ValueError`` with a message saying what is accepted; callers wrap it in an error that
    names their field or setting.
    """
    if isinstance(value, timedelta):
        return value
    if isinstance(value, bool):
        raise ValueError("expected a duration, not a boolean")
    if isinstance(value, (int, float)):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError("expected a finite number of seconds")
        return timedelta(seconds=value)
    if isinstance(value, str):
        text = value.strip().lower().replace(" ", "")
        try:
            return timedelta(seconds=float(text))
        except ValueError:
            pass
        if text and _PART.sub("", text) == "":
            return timedelta(seconds=sum(float(n) * _UNITS[u] for n, u in _PART.findall(text)))
    raise ValueError("expected seconds or a duration such as '30s', '5m' or '1h30m'")
