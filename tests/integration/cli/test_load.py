"""``dbeat preview --load``: the next 24 hours as text, JSON and an SVG file, on every backend;
bad combinations refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

from tests.integration.cli.conftest import Cli


def test_preview_load_shows_the_hourly_herd_its_schedules_and_a_jitter_hint(cli_any: Cli) -> None:
    for i in range(12):
        cli_any.ok("add", f"report-{i}", "proj.tasks.report", "--cron", "0 * * * *")

    out = cli_any.ok("preview", "--load")
    data = json.loads(cli_any.ok("preview", "--load", "--json"))

    assert "fires per hour:" in out
    assert "cron '0 * * * *' UTC (12 schedule(s): report-0, report-11, ...)" in out
    assert "hint: give the 12 schedule(s) on cron '0 * * * *' UTC a jitter" in out
    assert (data["schedules"], data["total"]) == (12, 12 * 24)
    assert len(data["per_minute"]) == 1440
    assert data["herds"][0]["makers"][0]["names"] == [
        "report-0",
        "report-11",
    ]  # the first and the last
    assert len(data["herds"][0]["again"]) == 23


def test_preview_load_svg_writes_the_picture(cli: Cli, tmp_path: Path) -> None:
    picture = tmp_path / "load.svg"

    out = cli.ok("preview", "--load", "--svg", str(picture))

    assert out.startswith(f"wrote {picture}")
    assert picture.read_text().startswith("<svg xmlns='http://www.w3.org/2000/svg'")
    assert "No fires in the next 24 hours" in picture.read_text()


def test_preview_load_refuses_a_name_an_unwritable_file_and_svg_without_load(
    cli: Cli, tmp_path: Path
) -> None:
    named = cli("preview", "x", "--load")
    svg_alone = cli("preview", "--cron", "* * * * *", "--svg", str(tmp_path / "a.svg"))

    assert named.exit_code == 2
    assert "Error: --load previews every schedule: give no NAME or spec" in named.stderr
    assert svg_alone.exit_code == 2
    assert "Error: --svg draws the load: give --load too" in svg_alone.stderr
    assert not (tmp_path / "a.svg").exists()
    cli.fails(
        "preview", "--load", "--svg", str(tmp_path / "no" / "a.svg"), code=1, fragment="--svg"
    )
