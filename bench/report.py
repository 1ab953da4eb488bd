"""The results table: medians of repetitions, each figure also as a ratio to the ceiling and peers.

Absolute times drift on a shared machine; ratios measured in one run do not drift as much, so
every herd figure is shown as ``x ceiling`` (drain time / the ``send_task`` loop's, same N) and
``x RedBeat`` / ``x django`` (drain time / the peer's, same N; ``-`` where the peer was not run).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any


def _median(values: list[Any]) -> float | None:
    known = [float(v) for v in values if v is not None]
    return statistics.median(known) if known else None


def _fmt(value: Any, spec: str = ".2f", unit: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:{spec}}{unit}"
    return f"{value}{unit}"


def _ratio(a: float | None, b: float | None) -> str:
    return "-" if a is None or b is None or b == 0 else f"{a / b:.2f}x"


def _effective(group: list[dict[str, Any]], n: int) -> tuple[float | None, float | None, str]:
    """``(drain, msgs/s, shown)``: the median drain; for a run cut off, the time it would need
    at the rate it reached (what it delivered by the cut-off)."""
    drain = _median([r.get("drain_s") for r in group])
    best = min((r["drain_s"] for r in group if r.get("drain_s") is not None), default=None)
    timed_out = [r for r in group if r.get("drain_s") is None]
    if not timed_out:
        rate = None if drain is None else n / drain
        return drain, rate, f"{_fmt(drain)} ({_fmt(best)}; {len(group)})"
    cut = timed_out[0].get("timeout_s") or 120.0
    rate = timed_out[0]["delivered"] / cut
    drain = n / rate if rate else None
    return drain, rate, f"> {cut:.0f} (cut off; ~{_fmt(drain, '.0f')} at its rate)"


def herd_table(rows: list[dict[str, Any]]) -> str:
    groups: dict[tuple[str, int, int], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        if row.get("scenario") == "herd":
            groups[(row["system"], row["n"], row.get("beats", 1))].append(row)
    effective = {key: _effective(group, key[1]) for key, group in groups.items()}
    drains = {key: value[0] for key, value in effective.items()}
    lines = [
        "| system | N | beats | drain s (median, best; reps) | msgs/s | x ceiling | x RedBeat "
        "| x django | x 1 beat | duplicates | delivered | beat CPU s | peak RSS MiB |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    order = {"ceiling": 0, "dbeat": 1, "redbeat": 2, "django": 3}
    for key in sorted(groups, key=lambda k: (k[1], order.get(k[0], 9), k[2])):
        system, n, beats = key
        group = groups[key]
        drain, rate, shown = effective[key]
        lines.append(
            "| "
            + " | ".join(
                [
                    system,
                    f"{n:,}",
                    str(beats),
                    shown,
                    _fmt(rate, ".0f"),
                    _ratio(drain, drains.get(("ceiling", n, 1))),
                    _ratio(drain, drains.get(("redbeat", n, 1))),
                    _ratio(drain, drains.get(("django", n, 1))),
                    _ratio(drain, drains.get((system, n, 1))) if beats > 1 else "-",
                    str(sum(r.get("duplicates", 0) for r in group)),
                    f"{min(r.get('delivered', 0) for r in group):,}/{n:,}",
                    _fmt(_median([r.get("beat_cpu_s") for r in group]), ".1f"),
                    _fmt(
                        max(
                            (r["peak_rss_mb"] for r in group if r.get("peak_rss_mb")), default=None
                        ),
                        ".0f",
                    ),
                ]
            )
            + " |"
        )
    return "\n".join(lines)


def other_table(rows: list[dict[str, Any]]) -> str:
    lines = ["| scenario | N | figures |", "|---|---|---|"]
    lags = [
        ("fires_per_s", "fires/s", ".0f"),
        ("lag_p50_s", "s lag p50", ".3f"),
        ("lag_p99_s", "s lag p99", ".3f"),
        ("lag_max_s", "s lag max", ".3f"),
    ]
    keys = {
        "load": [("load_s", "s to store cron schedules through Schedules.add_many", ".1f")],
        "steady": [
            *lags,
            ("beat_cpu_s", "s beat CPU", ".1f"),
            ("seconds", "s measured", ".0f"),
            ("peak_rss_mb", "MiB peak RSS", ".0f"),
        ],
        "edits": [
            ("edits_per_s", "edits/s", ".0f"),
            ("edit_conflicts", "edit conflicts", ""),
            *lags,
            ("effect_delay_max_s", "s longest edit-to-effect", ".3f"),
            ("stale_over_1s", "fires > 1 s stale", ""),
        ],
        "startup": [("first_fire_s", "s launch to first fire", ".2f")],
        "sync": [
            ("first_s", "s first sync", ".1f"),
            ("again_s", "s re-sync unchanged", ".1f"),
            ("half_s", "s re-sync with half removed", ".1f"),
        ],
        "trigger": [
            ("locks", "locks", ""),
            ("p50_s", "s trigger to broker p50", ".3f"),
            ("max_s", "s max", ".3f"),
            ("duplicates", "duplicates", ""),
        ],
        "backfill": [
            ("refuse_s", "s to refuse ten years of seconds", ".3f"),
            ("day_s", "s to backfill a day of seconds", ".1f"),
            ("day_locked_s", "s the row stays locked", ".2f"),
            ("prune_s", "s to prune 10 fires each", ".1f"),
            ("prune_plain_s", "s without pruned_until", ".1f"),
        ],
        "catchup": [
            ("policy", "policy", ""),
            ("tick_s", "s for one tick 30 days behind", ".2f"),
            ("fires", "fires sent", ""),
        ],
        "outage": [
            ("first_on_time_s", "s to the first on-time fire", ".2f"),
            ("catch_up_fires", "catch-up fires", ""),
            ("drain_per_s", "catch-up fires/s", ".0f"),
            ("recover_s", "s to recover (last catch-up fire)", ".0f"),
            ("on_time_lag_p50_s", "s on-time lag p50 while draining", ".3f"),
            ("on_time_lag_p99_s", "s p99", ".3f"),
            ("on_time_lag_max_s", "s max", ".3f"),
            ("on_time_lag_p99_after_s", "s p99 after", ".3f"),
            ("max_unsent", "most recorded and unsent", ""),
            ("duplicates", "duplicates", ""),
        ],
        "overload": [
            ("herd_rate", "msgs/s herd rate (R)", ".0f"),
            ("offered_per_s", "offered/s", ""),
            ("published_per_s", "published/s", ".0f"),
            ("share_of_herd", "x R", ".2f"),
            ("lag_p50_end_s", "s lag p50 at the end", ".1f"),
            ("lag_p99_end_s", "s p99", ".1f"),
            ("max_unsent", "most recorded and unsent", ""),
            ("recover_s", "s to recover at R/2", ".1f"),
            ("duplicates", "duplicates", ""),
            ("behind_warnings", "behind warnings", ""),
        ],
        "cost": [
            ("fires_per_s", "fires/s", ".0f"),
            ("server_statements_per_fire", "statements", ".2f"),
            ("server_exec_us_per_fire", "µs executing", ".0f"),
            ("commits_per_fire", "commits", ".3f"),
            ("rows_written_per_fire", "rows written", ".2f"),
            ("wal_bytes_per_fire", "WAL bytes", ".0f"),
            ("pg_cpu_us_per_fire", "µs PostgreSQL CPU", ".0f"),
            ("redis_cpu_us_per_fire", "µs Redis CPU", ".0f"),
            ("beat_cpu_us_per_fire", "µs beat CPU, per fire", ".0f"),
        ],
        "slowstart": [
            ("slowdown", "x slower host", ""),
            ("ready_s", "s to start", ".0f"),
            ("idle_core_share", "of a core idle", ".4f"),
            ("sync_retries", "sync retries", ""),
        ],
        "forecast": [
            ("median_s", "s median (in-process, no database)", ".2f"),
            ("best_s", "s best", ".2f"),
            ("fires", "fires", ".0f"),
            ("excluded", "slots a calendar removes", ".0f"),
        ],
        "forecast-bounded": [
            ("median_s", "s median Schedules.load() (SQLite)", ".2f"),
            ("best_s", "s best", ".2f"),
            ("peak_alloc_mb", "MiB peak of Python's allocations", ".0f"),
            ("fires", "fires", ".0f"),
        ],
        "forecast-db": [
            ("backend", "backend", ""),
            ("median_s", "s median Schedules.load()", ".2f"),
            ("best_s", "s best", ".2f"),
            ("history_fires", "fires in the last day", ""),
            ("past_sent", "sent (as estimated)", ""),
            ("sampled", "sampled", ""),
        ],
        "memory": [
            ("source", "schedules", ""),
            ("ready_s", "s to start", ".1f"),
            ("rss_started_mb", "MiB RSS after start-up", ".0f"),
            ("rss_fired_mb", "MiB RSS after firing all", ".0f"),
            ("peak_rss_mb", "MiB peak RSS", ".0f"),
            ("app_config_mb", "MiB the app's beat_schedule holds", ".0f"),
            ("rss_hour_mb", "MiB RSS after --firing (- when not asked)", ".0f"),
        ],
        "idle": [
            ("cpu_s_per_min", "CPU s/min", ".2f"),
            ("queries_per_s", "SQL statements/s", ".2f"),
            ("rss_mb", "MiB RSS", ".0f"),
            ("peak_rss_mb", "MiB peak RSS", ".0f"),
        ],
    }
    for row in rows:
        first_herd = row.get("scenario") == "herd" and row.get("rep") == 0
        if first_herd and row.get("load_s") and row.get("beats", 1) == 1:
            how = {"dbeat": "Schedules.add_many", "redbeat": "RedBeat's keys, pipelined"}
            lines.append(
                f"| load ({row['system']}, daily) | {row['n']:,} | {row['load_s']:.1f} s to "
                f"store through {how.get(row['system'], 'bulk_create, with migrations')} |"
            )
    for row in rows:
        spec = keys.get(row.get("scenario", ""))
        if not spec:
            continue
        figures = ", ".join(
            f"{_fmt(row.get(k), fmt) if fmt else row.get(k)} {label}" for k, label, fmt in spec
        )
        lines.append(f"| {row['scenario']} | {row['n']:,} | {figures} |")
    return "\n".join(lines)


def render(rows: list[dict[str, Any]]) -> str:
    return herd_table(rows) + "\n\n" + other_table(rows) + "\n"
