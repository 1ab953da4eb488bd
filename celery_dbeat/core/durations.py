"""Parse durations the way every surface accepts them: seconds, timedeltas, or ``1h30m``."""

from __future__ import annotations

import math
import re
from datetime import timedelta

__all__ = ["parse_duration"]

_UNITS = {"d": 86_400.0, "h": 3_600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
_LONGEST = 100 * 365.25 * 86_400.0
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|d|h|m|s)")


def parse_duration(value: object) -> timedelta:
    """``30``, ``2.5``, ``timedelta(...)``, ``"30s"``, ``"5m"``, ``"1h30m"``, ``"250ms"``.

    Raises ``ValueError`` with a message saying what is accepted; callers wrap it in an error that
    names their field or setting.
    """
    if isinstance(value, timedelta):
        if abs(value) > timedelta(seconds=_LONGEST):
            raise ValueError("expected a finite duration of at most 100 years")
        return value
    if isinstance(value, bool):
        raise ValueError("expected a duration, not a boolean")
    if isinstance(value, (int, float)):
        return _seconds(float(value))
    if isinstance(value, str):
        text = value.strip().lower().replace(" ", "")
        sign = -1.0 if text.startswith("-") else 1.0
        body = text.lstrip("+-")
        try:
            return _seconds(float(text))
        except ValueError as exc:
            if "finite" in str(exc):
                raise
        if body and _PART.sub("", body) == "":
            return _seconds(sign * sum(float(n) * _UNITS[u] for n, u in _PART.findall(body)))
    raise ValueError("expected seconds or a duration such as '30s', '5m' or '1h30m'")


def _seconds(seconds: float) -> timedelta:
    if not math.isfinite(seconds) or abs(seconds) > _LONGEST:
        raise ValueError("expected a finite duration of at most 100 years")
    return timedelta(seconds=seconds)
