"""``Schedules.apply``: the one reconcile of a file import, the importers and the ``beat_schedule``
sync, on every backend. The rules are ``celery_dbeat.store.reconcile``'s; the sync's own cases are
in ``test_config_sync.py`` and ``test_config_owned.py``."""

from __future__ import annotations

import pytest

from celery_dbeat import Every, ValidationError
from celery_dbeat.api import Schedules, SyncReport
from celery_dbeat.core.definitions import Definition
from tests.integration.conftest import START, Tables


def entry(name: str, every: int = 60, *, enabled: bool = True) -> Definition:
    return Definition.create(
        name=name, task=f"tasks.{name}", schedule=Every(every), enabled=enabled
    )


def test_apply_creates_updates_and_leaves_unchanged_by_name_and_a_dry_run_writes_nothing(
    api: Schedules,
) -> None:
    api.add("edit", "tasks.edit", Every(60))
    api.add("keep", "tasks.keep", Every(60))
    wanted = [entry("new"), entry("edit", 300), entry("keep")]

    dry = api.apply(wanted, dry_run=True)
    names = [info.name for info in api.list()]
    report = api.apply(wanted)
    again = api.apply(wanted)

    assert dry == report == SyncReport(created=["new"], updated=["edit"], unchanged=["keep"])
    assert names == ["edit", "keep"]
    assert again == SyncReport(unchanged=["new", "edit", "keep"])
    assert api.get("edit").schedule == Every(300)
    assert [e.action for e in api.audit("edit")] == ["update", "create"]


def test_apply_pauses_and_resumes_by_the_enabled_flag(
    api: Schedules,
) -> None:
    api.add("poll", "tasks.poll", Every(60))

    paused = api.apply([entry("poll", enabled=False)])
    state = api.get("poll")
    resumed = api.apply([entry("poll")])

    assert (paused.updated, state.state, state.pause_source) == (["poll"], "paused", "person")
    assert (resumed.updated, api.get("poll").state) == (["poll"], "active")
    assert [e.action for e in api.audit("poll")][:2] == ["resume", "pause"]


def test_a_beat_schedule_entry_is_a_conflict_unless_only_paused_and_an_api_name_for_the_sync(
    api: Schedules, tables: Tables
) -> None:
    tables.sync([entry("nightly", 3600)], START)
    api.add("own", "tasks.own", Every(60))

    edit = api.apply([entry("nightly", 7200)])
    pause = api.apply([entry("nightly", 3600, enabled=False)])
    taken = api.apply([entry("own", 60)], origin="config")

    assert edit == SyncReport(conflicts=["nightly"])
    assert pause == SyncReport(updated=["nightly"])
    assert api.get("nightly").state == "paused"
    assert api.get("nightly").schedule == Every(3600)
    assert taken == SyncReport(conflicts=["own"])


def test_apply_refuses_an_unknown_origin_and_disable_missing_outside_beat_schedule(
    api: Schedules,
) -> None:
    with pytest.raises(ValidationError, match="origin"):
        api.apply([entry("a")], origin="admin")
    with pytest.raises(ValidationError, match="disable_missing"):
        api.apply([entry("a")], disable_missing=True)
    assert api.list() == []


def test_find_reads_only_the_names_asked_for(api: Schedules) -> None:
    api.apply([entry("a"), entry("b")])

    assert list(api.find(["b", "missing"])) == ["b"]
