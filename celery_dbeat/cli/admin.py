"""``celery -A proj dbeat admin``: the Flask-Admin pages served on their own, for apps with no
web app to mount them in (:mod:`celery_dbeat.contrib.flask.standalone`), as Flower serves its
monitor. Flask and Flask-Admin stay an extra: the command says which to install.

The server is Werkzeug's threaded WSGI server (Flask's own dependency): a thread per request,
enough for the few operators an admin has; run it behind a TLS proxy when it leaves the host.
"""

from __future__ import annotations

import ipaddress
import os
import signal
from types import FrameType, ModuleType
from typing import TYPE_CHECKING, Any

import click

from ..api import Schedules
from ..config import Settings, mask_url, with_environment
from ._common import CommandError, DBeatCommand, runtime

if TYPE_CHECKING:
    from ..contrib.flask.standalone import Login

__all__ = ["admin"]

EXTRA = "celery-dbeat[flask]"
#: Next to Flower's 5555, which the same operators often run.
DEFAULT_PORT = 5556
LOOPBACK_NAMES = ("localhost",)
MAKE_A_LOGIN = (
    "set dbeat_admin_user and dbeat_admin_password_hash (or DBEAT_ADMIN_USER and "
    "DBEAT_ADMIN_PASSWORD_HASH; `celery dbeat admin --hash-password` makes the hash)"
)


def is_loopback(host: str) -> bool:
    """Whether ``host`` is an address only this machine reaches (127.0.0.0/8, ::1, localhost)."""
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name, or not an address at all
        return False


def _standalone() -> ModuleType:
    try:
        from ..contrib.flask import standalone
    except ImportError as exc:
        told = str(exc)  # celery_dbeat.contrib.flask's own names the extra already
        if EXTRA not in told:
            told = f'dbeat admin needs Flask and Flask-Admin: pip install "{EXTRA}" ({exc})'
        raise CommandError(told) from None
    return standalone


def _login(standalone: ModuleType, settings: Settings) -> Login | None:
    """The :class:`~celery_dbeat.contrib.flask.standalone.Login` the settings give, or ``None``;
    one of the pair without the other is refused."""
    user, password_hash = settings.admin_user, settings.admin_password_hash
    if user is None and password_hash is None:
        return None
    if user is None or password_hash is None:
        given, missing = (
            ("dbeat_admin_user", "dbeat_admin_password_hash")
            if password_hash is None
            else ("dbeat_admin_password_hash", "dbeat_admin_user")
        )
        raise CommandError(
            f"{given} is set but {missing} is not: the admin's login needs both; {MAKE_A_LOGIN}"
        )
    login: Login = standalone.Login(user, password_hash)
    return login


def _url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/admin/"


def _stop(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # SIGTERM stops the server as Ctrl-C does


@click.command(cls=DBeatCommand)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on. Any but a loopback one needs the login set.",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="Port to listen on (0: a free one, which the banner says).",
)
@click.option(
    "--hash-password",
    "hash_password",
    is_flag=True,
    help="Ask for a password (twice), print its hash for dbeat_admin_password_hash, and exit.",
)
def admin(host: str, port: int, hash_password: bool) -> None:
    """Serve the admin pages (schedules, history, calendars, beats, load, audit) at
    http://HOST:PORT/admin/, for apps without a Flask app of their own to mount them in.

    \b
    With dbeat_admin_user and dbeat_admin_password_hash set (or DBEAT_ADMIN_USER and
    DBEAT_ADMIN_PASSWORD_HASH, which win), every request needs that user's password (HTTP basic
    auth), on any address. Without them it serves on a loopback address only (127.0.0.1, ::1,
    localhost) with no login, and refuses any other. Every write needs the CSRF token of the
    admin's own forms. The session cookie is signed with dbeat_admin_secret_key (or
    DBEAT_ADMIN_SECRET_KEY), by default a random key per process. Needs
    `pip install "celery-dbeat[flask]"`. Ctrl-C stops it.
    """
    standalone = _standalone()
    if hash_password:
        password = click.prompt("Password", hide_input=True, confirmation_prompt=True)
        click.echo(standalone.hash_password(password))
        return
    state = runtime()
    settings = with_environment(state.settings, os.environ)
    login = _login(standalone, settings)
    if login is None and not is_loopback(host):
        raise CommandError(
            f"refusing to serve the admin on {host} without a login: {MAKE_A_LOGIN}, or serve "
            "on 127.0.0.1"
        )
    try:
        schedules = Schedules.from_app(state.app)
    except ImportError as exc:  # redis, for dbeat_redis_url: the message names the extra
        raise CommandError(str(exc)) from None
    try:
        _serve(standalone, schedules, state.app, host, port, login, settings)
    finally:
        schedules.close()


def _serve(
    standalone: ModuleType,
    schedules: Schedules,
    app: Any,
    host: str,
    port: int,
    login: Login | None,
    settings: Settings,
) -> None:
    from werkzeug.serving import make_server

    from ..contrib.flask.base import schema_problem

    app.loader.import_default_modules()  # the tasks of `include` and `imports`, for suggestions
    flask_app, _ = standalone.create_app(
        schedules,
        login=login,
        secret_key=settings.admin_secret_key,
        task_names=lambda: app.tasks.keys(),
    )
    try:
        server = make_server(host, port, flask_app, threaded=True)
    except OSError as exc:  # in use, not an address of this host, no permission
        raise CommandError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    who = f"{login.user} (HTTP basic auth)" if login is not None else "no login: loopback only"
    click.echo(f"celery-dbeat admin -> {_url(host, server.server_port)}")
    click.echo(f"    . login -> {who}")
    click.echo(f"    . database -> {mask_url(settings.database_url)}")
    click.echo("    . server -> Werkzeug's threaded WSGI server; Ctrl-C stops it")
    for warning in settings.warnings():  # as `dbeat check` and beat's banner (a default file)
        click.echo(f"warning: {warning}", err=True)
    problem = schema_problem(schedules.store.engine)
    if problem is not None:  # the pages say it too, until it is fixed
        click.echo(f"warning: {problem.title}: {problem.detail}", err=True)
    previous = signal.signal(signal.SIGTERM, _stop)
    try:
        server.serve_forever()  # returns on Ctrl-C (Werkzeug's takes the KeyboardInterrupt)
    finally:
        signal.signal(signal.SIGTERM, previous)
        server.server_close()
