"""Chaos: every beat down for more than five minutes, then back; the misfire policy decides.

Real minutes of downtime would cost the suite its time budget, so the downtime is made on the
fleet's clock. Beats decide what is due on the database server's clock, so the scenario has a
PostgreSQL cluster of its own running under libfaketime: three beats run, fire one slot of each
schedule and are stopped; the server's clock is moved a little over five minutes ahead, and three
new beats start. To them and to the database the fleet was down from the stop until now + D; the
beats' hosts, the worker and the broker keep the true time.

The schedules (200: 8 misfire settings x 5 specs x 5 copies) all have slots on a 30 s grid, and
``D`` is chosen so that the new beats' first tick falls 15 s after a grid slot ``g``. With a
tolerance of 10 s and a grace window of 100 s, the expected outcome is the same for every first
tick in ``(g + 10, g + 30)`` (no slot is merely late, the grace window ends between two slots), so
the exact set of published fires follows from SEMANTICS.md's table (:func:`misfire_expectation`)
although the test cannot know the instant of that tick to the millisecond. The bounds of that
instant are measured (the beats' start-up announcements, and the receipt of each schedule's first
catch-up message) and the test checks the expectation is identical at both ends.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.chaos.runner import BEATS, ChaosFactory
from tests.chaos.services import PostgresCluster, ServiceMissing
from tests.chaos.truth import Slot, epoch, iso, misfire_expectation, slots
from tests.e2e.harness import cron, every
from tests.services import unavailable

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

GRID = 30
TOLERANCE = 10
GRACE = 100
#: Beats' first tick is aimed at this many seconds after a grid slot.
AIM = 15
#: Downtime is DOWN plus up to one GRID.
DOWN = 300
#: Seconds for the database server's processes to read a new clock offset (they cache it 1 s).
CLOCK_SETTLE = 1.5
#: (label, entry keys): ``latest`` is the default policy, so its schedules set none.
POLICIES: list[tuple[str, dict[str, Any]]] = [
    ("skip", {"misfire_policy": "skip"}),
    ("latest", {}),
    ("earliest", {"misfire_policy": "earliest"}),
    ("all", {"misfire_policy": "all"}),
    ("all-limit-3", {"misfire_policy": "all", "catchup_limit": 3}),
    ("latest-grace", {"misfire_grace": GRACE}),
    ("earliest-grace", {"misfire_policy": "earliest", "misfire_grace": GRACE}),
    ("all-grace", {"misfire_policy": "all", "misfire_grace": GRACE}),
]
#: (label, timing, period): intervals start one period before the first grid slot.
SPECS: list[tuple[str, dict[str, Any], float]] = [
    ("cron30", cron("* * * * * 0,30"), 0),
    ("cron60", cron("* * * * * 0"), 0),
    ("every30", every(30), 30),
    ("every60", every(60), 60),
    ("every90", every(90), 90),
]
COPIES = 5


def misfire_schedules(first_slot: float) -> dict[str, dict[str, Any]]:
    schedules = {}
    for policy, keys in POLICIES:
        for spec, timing, period in SPECS:
            for copy in range(COPIES):
                schedules[f"{policy}.{spec}.{copy}"] = {
                    **timing,
                    **keys,
                    "start_at": iso(first_slot - period),
                }
    return schedules


@pytest.fixture(scope="module")
def faked_postgres() -> Iterator[PostgresCluster]:
    """A PostgreSQL cluster whose clock the test moves."""
    try:
        cluster = PostgresCluster(faketime=True)
    except ServiceMissing as exc:
        unavailable("a disposable PostgreSQL under libfaketime", "localhost", exc)
        raise  # unreachable: unavailable() skips or fails
    yield cluster
    cluster.close()


def test_all_beats_down_five_minutes_misfire_policies_decide(
    chaos: ChaosFactory, faked_postgres: PostgresCluster
) -> None:
    run = chaos(postgres=faked_postgres)
    assert faked_postgres.clock is not None
    harness = run.harness
    # Phase A: three beats fire the grid slot g_a of every schedule (cron60: if on a minute).
    g_a = float(math.ceil((time.time() + 7) / GRID) * GRID)
    run.configure(misfire_schedules(g_a), misfire_tolerance=TOLERANCE)
    spawned = time.time()
    procs = run.start(BEATS)
    startup = max(run.ready_at(p) for p in procs if p.role == "beat") - spawned
    phase_a = {name: slots(spec, 0, g_a + GRID / 2) for name, spec in run.schedules.items()}
    run.run_until(g_a + 1)
    run.wait_received(phase_a, timeout=15)
    harness.stop_all(harness.beats(), timeout=3)
    stopped = time.time()
    assert stopped < g_a + GRID / 2, "phase A overran: the next grid slot may have fired"
    run.mark("all beats down", "fleet")

    # Phase B: the database server's clock jumps D ahead while every beat is down, D chosen so
    # that the three new beats' first tick is AIM s after a grid slot g on that clock.
    aimed = time.time() + CLOCK_SETTLE + startup + DOWN
    offset = DOWN + (AIM - aimed) % GRID
    g = math.floor((aimed + offset - DOWN) / GRID) * GRID
    faked_postgres.clock.set(f"+{offset:.3f}")
    time.sleep(CLOCK_SETTLE)
    spawned = time.time()
    restarted = [harness.start_beat(name) for name, _ in BEATS]
    run.wait_started(restarted)
    first_tick_min = min(run.ready_at(p) for p in restarted) + offset
    run.mark(f"beats back, database clock +{offset:.1f} s", "fleet")
    run.run_until(g + GRID + 1 - offset)

    # Ground truth on the fleet's clock.
    last = {name: max(ts, default=None) for name, ts in phase_a.items()}
    judged_until = g + GRID + 0.5
    expected: dict[str, list[Slot]] = {}
    catch_up: dict[str, list[Slot]] = {}
    for name, spec in run.schedules.items():
        published, _ = misfire_expectation(spec, last[name], first_tick_min, TOLERANCE)
        regular = slots(spec, first_tick_min + 1e-6, judged_until)
        catch_up[name] = published
        expected[name] = phase_a[name] + published + regular
    run.wait_received(expected, timeout=20)

    # The decision for each schedule was taken before its first catch-up message arrived (or,
    # for skip, before g + GRID + TOLERANCE, when its outcome would start to change).
    def on_fleet_clock(t: float) -> float:
        return t + offset if t >= spawned else t

    firsts: dict[str, float] = {}
    for m in run.messages():
        if m.received_at is not None and m.received_at >= spawned:
            at = on_fleet_clock(m.received_at)
            firsts[m.schedule] = min(firsts.get(m.schedule, at), at)
    ambiguous = []
    for name, spec in run.schedules.items():
        # (skip: its outcome only changes once g + GRID is missed, not merely late)
        bound = g + GRID + TOLERANCE
        latest_tick = firsts.get(name, first_tick_min) if catch_up[name] else bound
        at_latest, _ = misfire_expectation(spec, last[name], latest_tick, TOLERANCE)
        at_latest += slots(spec, latest_tick + 1e-6, judged_until)
        if sorted(set(at_latest)) != sorted(set(expected[name]) - set(phase_a[name])):
            ambiguous.append(
                f"{name}: {expected[name]} if decided at the first tick,"
                f" {at_latest} at {iso(latest_tick)}"
            )
    context = (
        f"the test's own timing went wrong: grid slot {iso(g)}, first tick {iso(first_tick_min)}"
    )
    assert first_tick_min > g + TOLERANCE, context
    assert not ambiguous, f"{context}: {ambiguous[:5]}"

    missed = sum(
        len(slots(spec, (last[name] or epoch(spec["start_at"])) + 1e-6, g))
        for name, spec in run.schedules.items()
    )
    outcome = run.finish(
        expected,
        judged_until=judged_until,
        beat_time=on_fleet_clock,
        lag_excludes=catch_up,
        notes=[
            f"fleet down {g + AIM - stopped:.0f} s on the database's clock (moved {offset:.1f} s);"
            f" {missed} slots missed, {sum(map(len, catch_up.values()))} caught up",
        ],
    )
    assert outcome.expected >= 400, "not a vacuous pass"
    assert not outcome.problems(), outcome.summary()
