"""The herd, scale-out and ceiling scenarios: N fires due in the same second.

Each repetition arms every schedule for a slot a few seconds ahead (after the beats are up and
idle), then polls the queue length every 5 ms: the drain time is from the slot until the N-th
message is on the broker. Duplicates are counted from the task ids of every message on the queue
1.5 s after the drain (no worker runs). Beat CPU is the beats' user+system time from just before
the slot to the drain; peak RSS is the kernel's high-water mark (VmHWM) of the beat process.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench import loaders
from bench.services import ROOT, SERVERS, Run

#: Seconds between arming a herd and its slot: more than beat's longest sleep (5 s), so every
#: beat has looked at the table again before the slot.
LEAD = 8.0
SETTLE = 1.5


def _sleep_until(instant: float) -> None:
    time.sleep(max(0.0, instant - time.time()))


def _measure(
    run: Run, n: int, slot: float, timeout: float, profile: Path | None = None
) -> dict[str, Any]:
    _sleep_until(slot - 0.5)
    spy = _start_profile(run, profile) if profile else None
    cpu0 = sum(b.cpu() for b in run.beats)
    first = run.wait_length(1, timeout)
    done = run.wait_length(n, timeout)
    cpu1 = sum(b.cpu() for b in run.beats)
    if spy is not None:
        _stop_profile(spy, profile)
    time.sleep(SETTLE)
    ids = Counter(m["headers"].get("id") for m in run.messages())
    delivered = len(ids)
    drain = None if done is None else done - slot
    return {
        "drain_s": drain,
        "timeout_s": timeout,
        "first_s": None if first is None else first - slot,
        "msgs_per_s": None if drain is None else n / max(drain, 1e-6),
        "delivered": delivered,
        "duplicates": sum(ids.values()) - delivered,
        "beat_cpu_s": cpu1 - cpu0,
        "peak_rss_mb": max((b.peak_rss_mb() for b in run.beats), default=None),
    }


def herd(
    workdir: Path,
    system: str,
    n: int,
    *,
    beats: tuple[int, ...] = (1,),
    repeats: int = 3,
    timeout: float = 600,
    profile_dir: Path | None = None,
    database: str = "postgresql",
) -> list[dict[str, Any]]:
    """``system``: ``dbeat``, ``redbeat`` or ``django``; one row per (beat count, repetition).
    ``database``: where celery-dbeat keeps the schedules (a key of :data:`.services.SERVERS`)."""
    if system == "django":
        return [_herd_django(workdir, n, timeout)]
    run = Run(workdir, f"herd-{system}-{n}", server=SERVERS[database])
    rows: list[dict[str, Any]] = []
    try:
        load = loaders.load_dbeat if system == "dbeat" else loaders.load_redbeat
        load_s = load(run, n)
        for count in beats:
            run.stop_beats()
            for _ in range(count):
                run.start_beat(system)
            run.wait_ready(count)
            time.sleep(2)
            # With a profile, one more repetition first, under py-spy (which slows the beat
            # down while it samples): reported apart, not counted in the table.
            profiled = profile_dir is not None and count == 1
            for rep in range(-1 if profiled else 0, repeats):
                run.clear_queue()
                slot = math.ceil(time.time() + LEAD)
                if system == "dbeat":
                    loaders.arm_dbeat(run, slot)
                else:
                    loaders.arm_redbeat(run, n, slot)
                profile = None
                if profile_dir is not None and rep == -1:
                    profile = profile_dir / f"herd-{system}-{n}.txt"
                row = _measure(run, n, slot, timeout, profile)
                row.update(scenario="herd", system=system, n=n, beats=count, rep=rep, load_s=load_s)
                if database != "postgresql":
                    row.update(system=f"{system} ({database})")
                if rep == -1:
                    row.update(scenario="herd-profiled")
                rows.append(row)
                print(_line(row), flush=True)
    finally:
        run.close()
    return rows


def _herd_django(workdir: Path, n: int, timeout: float) -> dict[str, Any]:
    """One repetition: django-celery-beat reads every row at start (and again after any
    change), so the rows are stored already armed and its beat started before the slot."""
    run = Run(workdir, f"herd-django-{n}")
    try:
        slot = math.ceil(time.time()) + 20 + n / 500
        load_s = loaders.load_django(run, n, slot)
        run.start_beat("django")
        run.wait_ready(1)
        row = _measure(run, n, slot, timeout)
        row.update(scenario="herd", system="django", n=n, beats=1, rep=0, load_s=load_s)
        print(_line(row), flush=True)
        return row
    finally:
        run.close()


def ceiling(
    workdir: Path, n: int, *, repeats: int = 3, timeout: float = 600, producers: int = 1
) -> list[dict[str, Any]]:
    """A plain ``send_task`` loop on one producer (:mod:`bench.producer`), same broker.

    ``producers > 1``: that many such processes share the N messages (shown in the beats
    column): what this machine can publish in parallel at all, the bound of any scale-out.
    The beat CPU column holds the producers' CPU seconds in their send loops.
    """
    run = Run(workdir, f"ceiling-{n}")
    rows: list[dict[str, Any]] = []
    try:
        for rep in range(repeats):
            run.clear_queue()
            procs = [
                subprocess.Popen(
                    [sys.executable, "-m", "bench.producer", str(n // producers)],
                    cwd=ROOT,
                    env=run.env("none"),
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                )
                for _ in range(producers)
            ]
            try:
                for proc in procs:
                    assert proc.stdout is not None
                    proc.stdout.readline()  # "ready": connected, queue declared
                slot = math.ceil(time.time() + 1)
                for proc in procs:
                    assert proc.stdin is not None
                    proc.stdin.write(f"{slot}\n".encode())
                    proc.stdin.flush()
                done = run.wait_length(n // producers * producers, timeout)
                cpu = 0.0
                for proc in procs:
                    assert proc.stdout is not None
                    cpu += float(proc.stdout.readline() or "nan")
                    proc.wait(timeout)
            finally:
                for proc in procs:
                    if proc.poll() is None:
                        proc.kill()
            drain = None if done is None else done - slot
            row = {
                "scenario": "herd",
                "system": "ceiling",
                "n": n,
                "beats": producers,
                "rep": rep,
                "drain_s": drain,
                "msgs_per_s": None if drain is None else n / drain,
                "delivered": run.queue_length(),
                "duplicates": 0,
                "beat_cpu_s": cpu,
            }
            rows.append(row)
            print(_line(row), flush=True)
    finally:
        run.close()
    return rows


# Profiling -------------------------------------------------------------------------------------


def _start_profile(run: Run, out: Path | None) -> subprocess.Popen[bytes]:
    assert out is not None
    out.parent.mkdir(parents=True, exist_ok=True)
    spy = Path(sys.executable).with_name("py-spy")
    pid = run.beats[0].popen.pid
    return subprocess.Popen(
        [str(spy), "record", "--pid", str(pid), "-r", "200", "-f", "raw", "-o", f"{out}.raw"]
        + (["--gil"] if os.environ.get("BENCH_PROFILE_GIL") else []),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _stop_profile(spy: subprocess.Popen[bytes], out: Path | None) -> None:
    assert out is not None
    os.kill(spy.pid, signal.SIGINT)
    spy.wait(30)
    raw = Path(f"{out}.raw")
    if raw.exists():
        out.write_text(summarise(raw.read_text()))


def summarise(collapsed: str, top: int = 30) -> str:
    """Inclusive and self time per function from py-spy's collapsed stacks."""
    inclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    total = 0
    for line in collapsed.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack:
            continue
        count = int(count_text)
        total += count
        frames = [_frame(f) for f in stack.split(";")]
        for frame in set(frames):
            inclusive[frame] += count
        own[frames[-1]] += count
    lines = [f"{total} samples at 200 Hz", "", "inclusive %  function"]
    lines += [f"{100 * c / total:10.1f}  {f}" for f, c in inclusive.most_common(top)]
    lines += ["", "self %  function"]
    lines += [f"{100 * c / total:6.1f}  {f}" for f, c in own.most_common(top)]
    return "\n".join(lines) + "\n"


def _frame(frame: str) -> str:
    # "func (path/to/module.py:123)" -> "func (module.py)"
    name, _, where = frame.partition(" (")
    path = where.rstrip(")").rsplit(":", 1)[0]
    parts = path.split("/")
    return f"{name} ({'/'.join(parts[-2:])})"


def _line(row: dict[str, Any]) -> str:
    drain = row.get("drain_s")
    shown = "timeout" if drain is None else f"{drain:.2f}s"
    return (
        f"  {row['system']:<8} herd n={row['n']:<6} beats={row.get('beats', 1)} "
        f"rep={row['rep']} drain={shown} first={row.get('first_s') or 0:.2f}s "
        f"delivered={row['delivered']} dups={row['duplicates']} "
        f"cpu={row.get('beat_cpu_s') or 0:.1f}s rss={row.get('peak_rss_mb') or 0:.0f}MB"
    )
