"""What the migration guide promises users about installing: every solar mapping names the extra
it needs, as the error a solar schedule raises without it does."""

from __future__ import annotations

from pathlib import Path

from tests.unit.test_extras import extra

ROOT = Path(__file__).resolve().parents[2]
INSTALL_SOLAR = 'pip install "celery-dbeat[solar]"'


def test_every_solar_mapping_of_the_migration_guide_says_to_install_the_solar_extra() -> None:
    guide = (ROOT / "docs" / "migrating.md").read_text()
    rows = [line for line in guide.splitlines() if line.startswith("|") and "solar event" in line]

    assert len(rows) == 2  # from beat_schedule, from django-celery-beat
    for row in rows:
        assert INSTALL_SOLAR in row, row
    assert INSTALL_SOLAR in guide.split("## The order of the steps")[1].split("##")[0]


def test_the_solar_extra_the_guide_names_brings_ephem() -> None:
    assert "ephem" in extra("solar")
