"""The load picture (:class:`celery_dbeat.core.load.Load`) for people and scripts: server-rendered
SVG (no script, no library), a text version for the terminal and a JSON form. Shared by
``dbeat preview --load`` and both admins. Pure: strings in, strings out (the surfaces write them).
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone
from html import escape
from typing import Any

from .formats import iso, seconds_text
from .lastday import PastDay
from .load import Herd, Load

__all__ = ["again_text", "as_json", "forecast_svg", "past_svg", "svg", "text"]

_WIDTH, _LEFT, _RIGHT = 1000, 64, 16
_PLOT = _WIDTH - _LEFT - _RIGHT
_FONT = "font-family='system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif' font-size='12'"
_BAR, _HERD, _GRID, _INK, _MUTED = "#4a7fb5", "#d9534f", "#e3e3e3", "#222", "#666"


def _hm(instant: datetime) -> str:
    return instant.astimezone(timezone.utc).strftime("%H:%M")


def _n(value: float) -> str:
    """A count for people: whole when it is, one decimal when jitter was spread."""
    return f"{value:,.0f}" if abs(value - round(value)) < 0.05 else f"{value:,.1f}"


def _ticks(top: float) -> list[float]:
    """Round tick values from 0 up to at least ``top`` (at most 6 of them)."""
    if top <= 0:
        return [0.0, 1.0]
    raw = top / 4
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    return [step * i for i in range(math.ceil(top / step - 1e-9) + 1)]


def _axis(ticks: list[float], top: int, height: int, unit: str = "") -> list[str]:
    out = []
    for value in ticks:
        y = top + height - height * value / ticks[-1]
        out.append(
            f"<line x1='{_LEFT}' x2='{_LEFT + _PLOT}' y1='{y:.1f}' y2='{y:.1f}'"
            f" stroke='{_GRID}'/>"
            f"<text x='{_LEFT - 6}' y='{y + 4:.1f}' text-anchor='end' fill='{_MUTED}'>"
            f"{_n(value)}{unit}</text>"
        )
    return out


def _hours(start: datetime, top: int, every: int = 2) -> list[str]:
    """Hour labels under a 24-hour plot, every ``every`` hours, on whole hours."""
    out = []
    first = (start + timedelta(minutes=59)).replace(minute=0, second=0, microsecond=0)
    for h in range(25):
        instant = first + timedelta(hours=h)
        minutes = (instant - start) / timedelta(minutes=1)
        if minutes > 1440 or instant.hour % every:
            continue
        x = _LEFT + _PLOT * minutes / 1440
        out.append(
            f"<line x1='{x:.1f}' x2='{x:.1f}' y1='{top}' y2='{top + 4}' stroke='{_MUTED}'/>"
            f"<text x='{x:.1f}' y='{top + 16}' text-anchor='middle' fill='{_MUTED}'>"
            f"{_hm(instant)}</text>"
        )
    return out


def forecast_svg(load: Load) -> str:
    """Fires per minute over the next 24 hours; herds marked and numbered."""
    top, height = 34, 220
    parts = [
        f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {_WIDTH} {top + height + 40}'"
        f" width='100%' role='img' {_FONT} id='dbeat-load-forecast'>",
        f"<title>Fires per minute over the 24 hours from {iso(load.start)}</title>",
        f"<text x='{_LEFT}' y='18' fill='{_INK}' font-size='14' font-weight='600'>"
        f"Fires per minute, next 24 hours from {_hm(load.start)} UTC</text>",
        f"<text x='{_LEFT + _PLOT}' y='18' text-anchor='end' fill='{_MUTED}'>"
        f"{_n(load.total)} fires from {load.schedules:,} schedule(s), peak {_n(load.peak)}/min"
        "</text>",
    ]
    ticks = _ticks(load.peak * 1.08)
    parts += _axis(ticks, top, height)
    parts += _hours(load.start, top + height)
    if not load.total:
        parts.append(
            f"<text x='{_LEFT + _PLOT / 2}' y='{top + height / 2}' text-anchor='middle'"
            f" fill='{_MUTED}' font-size='15' id='dbeat-load-empty'>"
            "No fires in the next 24 hours</text>"
        )
    else:
        scale, step = height / ticks[-1], _PLOT / len(load.per_minute)
        path = [f"M{_LEFT},{top + height}"]
        for i, count in enumerate(load.per_minute):
            y = top + height - count * scale
            path.append(f"V{y:.1f}H{_LEFT + (i + 1) * step:.2f}")
        path.append(f"V{top + height}Z")
        parts.append(f"<path d='{''.join(path)}' fill='{_BAR}' stroke='{_BAR}' stroke-width='.4'/>")
        if load.herd_threshold <= ticks[-1]:
            y = top + height - load.herd_threshold * scale
            parts.append(
                f"<line x1='{_LEFT}' x2='{_LEFT + _PLOT}' y1='{y:.1f}' y2='{y:.1f}'"
                f" stroke='{_HERD}' stroke-dasharray='4 3'/>"
                f"<text x='{_LEFT + _PLOT - 2}' y='{y - 4:.1f}' text-anchor='end' fill='{_HERD}'>"
                f"herd: {_n(load.herd_threshold)}/min</text>"
            )
        parts += _herd_marks(load, top, height, scale, step)
    parts.append("</svg>")
    return "".join(parts)


def _herd_marks(load: Load, top: int, height: int, scale: float, step: float) -> list[str]:
    out = []
    for number, herd in enumerate(load.herds, 1):
        i = round((herd.at - load.start) / timedelta(minutes=1))
        x = _LEFT + (i + 0.5) * step
        y = max(top + height - herd.fires * scale, top + 10)
        out.append(
            f"<g class='dbeat-herd'><title>{escape(_herd_title(herd))}</title>"
            f"<circle cx='{x:.1f}' cy='{y - 9:.1f}' r='8' fill='{_HERD}'/>"
            f"<text x='{x:.1f}' y='{y - 5:.1f}' text-anchor='middle' fill='#fff'"
            f" font-size='11' font-weight='700'>{number}</text></g>"
        )
    return out


def _herd_title(herd: Herd) -> str:
    return f"{_hm(herd.at)} UTC: {_n(herd.fires)} fires{_again(herd)}"


def again_text(herd: Herd) -> str:
    """The herd's other minutes, shortly: ``13:00, 14:00, 15:00 and 20 more``."""
    shown = ", ".join(_hm(at) for at in herd.again[:3])
    more = len(herd.again) - 3
    return f"{shown} and {more} more" if more > 0 else shown


def _again(herd: Herd) -> str:
    return f" (again at {again_text(herd)})" if herd.again else ""


def past_svg(past: PastDay) -> str:
    """The last day, hour by hour: lag p50 and p99 (lines), failed runs (bars)."""
    top, height, fails_height = 34, 150, 50
    base = top + height
    fail_top = base + 30
    lags = [v for h in past.hours for v in (h.lag_p50, h.lag_p99) if v is not None]
    parts = [
        f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {_WIDTH}"
        f" {fail_top + fails_height + 30}' width='100%' role='img' {_FONT} id='dbeat-load-past'>",
        f"<title>Lag and failed runs per hour from {iso(past.start)}</title>",
        f"<text x='{_LEFT}' y='18' fill='{_INK}' font-size='14' font-weight='600'>"
        "Last 24 hours: lag per hour (sent_at - slot)</text>",
        f"<text x='{_LEFT + _PLOT}' y='18' text-anchor='end' fill='{_MUTED}'>"
        f"{'about ' if past.sampled else ''}{past.sent:,} fires sent{_backfilled(past)},"
        f" lag p50 {_lag(past.lag_p50)}, p99 {_lag(past.lag_p99)};"
        f" {past.failed:,} failed run(s)</text>",
    ]
    if past.history_limited:
        parts.append(
            f"<text x='{_LEFT + _PLOT}' y='30' text-anchor='end' fill='{_MUTED}'"
            f" font-size='11' id='dbeat-past-limited'>{_limited(past)}</text>"
        )
    step = _PLOT / 24
    if not lags:
        parts += _axis([0.0, 1.0], top, height, "s")
        parts.append(
            f"<text x='{_LEFT + _PLOT / 2}' y='{top + height / 2}' text-anchor='middle'"
            f" fill='{_MUTED}' font-size='15' id='dbeat-past-empty'>"
            "No fires sent in the last 24 hours</text>"
        )
    else:
        ticks = _ticks(max(lags) * 1.08)
        parts += _axis(ticks, top, height, "s")
        for key, colour, label in (("lag_p99", _HERD, "p99"), ("lag_p50", _BAR, "p50")):
            scale = height / ticks[-1]
            points = [
                f"{_LEFT + (h + 0.5) * step:.1f},{base - getattr(hour, key) * scale:.1f}"
                for h, hour in enumerate(past.hours)
                if getattr(hour, key) is not None
            ]
            parts.append(
                f"<polyline points='{' '.join(points)}' fill='none' stroke='{colour}'"
                " stroke-width='2'/>"
            )
            parts += [
                f"<circle cx='{p.split(',')[0]}' cy='{p.split(',')[1]}' r='2.5' fill='{colour}'/>"
                for p in points
            ]
            legend_x = _LEFT + 8 + (0 if label == "p50" else 70)
            parts.append(
                f"<rect x='{legend_x}' y='{top + 4}' width='14' height='3' fill='{colour}'/>"
                f"<text x='{legend_x + 18}' y='{top + 9}' fill='{colour}'>{label}</text>"
            )
    most = max((h.failed for h in past.hours), default=0)
    parts.append(f"<text x='{_LEFT}' y='{fail_top - 6}' fill='{_INK}'>Failed runs per hour</text>")
    parts.append(
        f"<line x1='{_LEFT}' x2='{_LEFT + _PLOT}' y1='{fail_top + fails_height}'"
        f" y2='{fail_top + fails_height}' stroke='{_MUTED}'/>"
    )
    for h, hour in enumerate(past.hours):
        if hour.failed:
            bar = max(fails_height * hour.failed / most, 2)
            x = _LEFT + h * step + step * 0.15
            parts.append(
                f"<rect x='{x:.1f}' y='{fail_top + fails_height - bar:.1f}'"
                f" width='{step * 0.7:.1f}' height='{bar:.1f}' fill='{_HERD}'>"
                f"<title>{_hm(hour.start)}: {hour.failed} failed</title></rect>"
                f"<text x='{x + step * 0.35:.1f}' y='{fail_top + fails_height - bar - 3:.1f}'"
                f" text-anchor='middle' fill='{_HERD}' font-size='10'>{hour.failed}</text>"
            )
    if not most:
        parts.append(
            f"<text x='{_LEFT + _PLOT / 2}' y='{fail_top + fails_height - 8}'"
            f" text-anchor='middle' fill='{_MUTED}'>none</text>"
        )
    parts += _hours(past.start, fail_top + fails_height, every=3)
    parts.append("</svg>")
    return "".join(parts)


def svg(load: Load) -> str:
    """One picture for a file: the forecast, its herds listed, and the past day."""
    herd_lines = []
    for number, herd in enumerate(load.herds, 1):
        makers = ", ".join(f"{_n(m.fires)} {m.spec}{_jitter(m.jitter)}" for m in herd.makers[:3])
        herd_lines += [f"{number}. {_herd_title(herd)}: {makers}", f"    {herd.hint}"]
    if not herd_lines:
        herd_lines = ["No herds: no minute reaches the herd threshold."]
    forecast = forecast_svg(load)
    list_height = 18 * len(herd_lines) + 16
    forecast_height, past_height = 294, 294
    past = ""
    if load.past:
        past = (
            f"<svg y='{forecast_height + list_height}' width='{_WIDTH}'"
            f" height='{past_height}'>{past_svg(load.past)}</svg>"
        )
    total = forecast_height + list_height + (past_height if past else 0)
    lines = "".join(
        f"<text x='{_LEFT}' y='{forecast_height + 16 + 18 * i}' fill='{_INK}'"
        f" xml:space='preserve'>{escape(line)}</text>"
        for i, line in enumerate(herd_lines)
    )
    return (
        f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {_WIDTH} {total}'"
        f" width='{_WIDTH}' height='{total}' {_FONT}>"
        f"<rect width='100%' height='100%' fill='#fff'/>"
        f"<svg y='0' height='{forecast_height}' width='{_WIDTH}'>{forecast}</svg>{lines}{past}"
        "</svg>"
    )


def _jitter(seconds: float | None) -> str:
    return f", jitter {seconds_text(seconds)}" if seconds else ""


def _lag(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{seconds:.2f}s" if seconds < 60 else seconds_text(round(seconds)) or "-"


def _backfilled(past: PastDay) -> str:
    return f" ({past.backfilled:,} by backfills, not in the lag)" if past.backfilled else ""


def _limited(past: PastDay) -> str:
    return (
        f"{past.history_limited:,} schedule(s) keep only their newest fires (history_limit):"
        " their pruned fires are not counted"
    )


def text(load: Load, *, per: int = 60, width: int = 40) -> str:
    """The terminal version: a histogram of fires per ``per`` minutes, the herds with their
    makers and hints, the past day."""
    lines = [
        f"Next 24 hours from {iso(load.start)}: {_n(load.total)} fires from"
        f" {load.schedules:,} schedule(s); busiest minute {_n(load.peak)} fires"
    ]
    if load.unreadable:
        lines.append(
            f"({load.unreadable} schedule(s) beat sets aside not counted: a spec that cannot be"
            " read, or a calendar that is missing or cannot be read)"
        )
    if load.excluded:
        lines.append(
            f"({_n(load.excluded)} slot(s) on days their schedule's calendar excludes not counted:"
            " they are recorded as skipped)"
        )
    if not load.jitter_exact:
        lines.append("(more jitter than hashed: jittered fires spread evenly over their window)")
    buckets = load.per(per)
    most = max(buckets, default=0)
    label = "hour" if per == 60 else f"{per} minutes"
    lines.append(f"fires per {label}:")
    for i, count in enumerate(buckets):
        bar = "#" * (round(width * count / most) if most else 0)
        at = _hm(load.start + timedelta(minutes=per * i))
        lines.append(f"  {at}  {bar:<{width}} {_n(count)}")
    if load.herds:
        lines.append(f"herds (minutes with at least {_n(load.herd_threshold)} fires):")
        for number, herd in enumerate(load.herds, 1):
            lines.append(f"  {number}. {iso(herd.at)}  {_n(herd.fires)} fires{_again(herd)}")
            for maker in herd.makers[:5]:
                names = ", ".join(maker.names)
                more = ", ..." if maker.schedules > len(maker.names) else ""
                lines.append(
                    f"       {_n(maker.fires):>8}  {maker.spec}{_jitter(maker.jitter)}"
                    f" ({maker.schedules:,} schedule(s): {names}{more})"
                )
            lines.append(f"       hint: {herd.hint}")
    else:
        lines.append(f"no herds (no minute with at least {_n(load.herd_threshold)} fires)")
    past = load.past
    if past is not None:
        sampled = " (estimated from a sample of the day's fires)" if past.sampled else ""
        lines.append(
            f"last 24 hours: {past.sent:,} fires sent{_backfilled(past)}{sampled},"
            f" lag p50 {_lag(past.lag_p50)}, p99 {_lag(past.lag_p99)};"
            f" {past.failed:,} failed run(s)"
        )
        if past.history_limited:
            lines.append(f"({_limited(past)})")
        if past.sent or past.failed:
            lines.append("  hour    sent      p50      p99  failed")
        for hour in past.hours:
            if hour.sent or hour.failed:
                lines.append(
                    f"  {_hm(hour.start)} {hour.sent:>7,} {_lag(hour.lag_p50):>8}"
                    f" {_lag(hour.lag_p99):>8} {hour.failed:>7,}"
                )
    return "\n".join(lines)


def as_json(load: Load) -> dict[str, Any]:
    past = load.past
    return {
        "start": iso(load.start),
        "schedules": load.schedules,
        "unreadable": load.unreadable,
        "excluded": load.excluded,
        "jitter_exact": load.jitter_exact,
        "total": load.total,
        "peak": load.peak,
        "herd_threshold": load.herd_threshold,
        "per_minute": list(load.per_minute),
        "herds": [
            {
                "at": iso(herd.at),
                "fires": herd.fires,
                "hint": herd.hint,
                "again": [iso(at) for at in herd.again],
                "makers": [
                    {
                        "spec": m.spec,
                        "jitter": m.jitter,
                        "fires": m.fires,
                        "schedules": m.schedules,
                        "names": list(m.names),
                    }
                    for m in herd.makers
                ],
            }
            for herd in load.herds
        ],
        "past": None
        if past is None
        else {
            "start": iso(past.start),
            "sent": past.sent,
            "lag_p50": past.lag_p50,
            "lag_p99": past.lag_p99,
            "failed": past.failed,
            "sampled": past.sampled,
            "backfilled": past.backfilled,
            "history_limited": past.history_limited,
            "hours": [
                {
                    "start": iso(h.start),
                    "sent": h.sent,
                    "lag_p50": h.lag_p50,
                    "lag_p99": h.lag_p99,
                    "failed": h.failed,
                    "backfilled": h.backfilled,
                }
                for h in past.hours
            ],
        },
    }
