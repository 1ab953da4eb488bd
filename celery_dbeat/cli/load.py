"""``celery -A proj dbeat preview --load``: the next 24 hours of every schedule, drawn in text (a
histogram, the herds with the schedules that make them), as JSON, or as SVG (``--svg FILE``)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import click

from ..core.loadchart import as_json, svg, text
from ._common import echo_json, runtime

__all__ = ["show_load"]


def show_load(
    start: datetime | None, *, per: int, top: int, svg_file: Path | None, as_json_: bool
) -> None:
    with runtime().schedules() as schedules:
        load = schedules.load(start=start, top=top)
    if svg_file is not None:
        try:
            svg_file.write_text(svg(load), encoding="utf-8")
        except OSError as exc:
            raise click.ClickException(
                f"--svg: cannot write {str(svg_file)!r}: {exc.strerror or exc}"
            ) from None
    if as_json_:
        echo_json(as_json(load))
    elif svg_file is None:
        click.echo(text(load, per=per))
    else:
        click.echo(f"wrote {svg_file}: {len(load.herds)} herd(s) in {load.total:,.0f} fires")
