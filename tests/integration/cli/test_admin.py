"""``celery -A proj dbeat admin`` in a real process, as users start it: the admin pages served
on their own, behind the login, with a CSRF check on every write; refused on a public address
without a login.

Each server listens on ``--port 0`` (a free port): the test reads the port from the banner's
first line, which the command prints once it listens, and waits on nothing else. Passwords are
hashed with a cheap pbkdf2 here (the default scrypt costs ~0.1 s a check).
"""

from __future__ import annotations

import base64
import os
import re
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from http.cookiejar import CookieJar
from pathlib import Path

import pytest
from werkzeug.security import check_password_hash, generate_password_hash

from celery_dbeat import Cron
from celery_dbeat.api import Schedules
from celery_dbeat.store import Store, migrate
from tests.integration.cli.conftest import Cli
from tests.integration.cli.test_subprocess import THROUGH_CELERY_GROUP
from tests.services import private_database

PASSWORD = "correct horse"
PASSWORD_HASH = generate_password_hash(PASSWORD, method="pbkdf2:sha256:1000")
PAGES = [
    "/admin/schedules/",
    "/admin/fires/",
    "/admin/calendars/",
    "/admin/audit/",
    "/admin/load/",
    "/admin/beats/",
]
STATIC = "/admin/static/bootstrap/bootstrap4/css/bootstrap.min.css"
TOKEN = re.compile(r'name="csrf_token" type="hidden" value="([^"]+)"')


# A server in a real process -------------------------------------------------------------------


@dataclass
class Served:
    """A running ``dbeat admin``: its banner (stdout, to the line naming the server) and URL."""

    process: subprocess.Popen[str]
    banner: list[str]
    root: str  # http://127.0.0.1:PORT


def start(
    tmp_path: Path, database: str, *args: str, env: Mapping[str, str] = {}, **settings: str
) -> subprocess.Popen[str]:
    """``celery -A adminproj dbeat admin ARGS`` with ``settings`` in the app's configuration and
    ``env``'s ``DBEAT_ADMIN_*`` variables (only those)."""
    conf = "".join(f"app.conf.dbeat_{key} = {value!r}\n" for key, value in settings.items())
    (tmp_path / "adminproj.py").write_text(
        "from celery import Celery\n"
        "app = Celery('adminproj')\n"
        f"app.conf.dbeat_database_url = {database!r}\n" + conf
    )
    variables = {k: v for k, v in os.environ.items() if not k.startswith("DBEAT_ADMIN_")}
    variables.update(env, PYTHONPATH=os.pathsep.join([str(tmp_path), os.getcwd()]))
    command = [sys.executable, "-c", THROUGH_CELERY_GROUP, "-A", "adminproj", "dbeat", "admin"]
    return subprocess.Popen(
        [*command, *args],
        cwd=tmp_path,
        env=variables,
        stdout=subprocess.PIPE,
        stderr=(tmp_path / "stderr.txt").open("w"),
        text=True,
    )


@contextmanager
def serving(
    tmp_path: Path, database: str, *args: str, env: Mapping[str, str] = {}, **settings: str
) -> Iterator[Served]:
    process = start(tmp_path, database, "--port", "0", *args, env=env, **settings)
    try:
        assert process.stdout is not None
        banner: list[str] = []
        for line in process.stdout:  # each line as the command prints it; EOF if it exits
            banner.append(line.rstrip("\n"))
            if line.startswith("    . server"):
                break
        else:
            process.wait()
            stderr = (tmp_path / "stderr.txt").read_text()
            pytest.fail(f"dbeat admin exited {process.returncode}: {banner} {stderr}")
        port = re.search(r":(\d+)/admin/$", banner[0])
        assert port, banner
        yield Served(process, banner, f"http://127.0.0.1:{port.group(1)}")
    finally:
        process.terminate()
        process.wait(timeout=30)


def migrated(url: str) -> str:
    store = Store(url)
    migrate(store.engine)
    store.close()
    return url


# An HTTP client -------------------------------------------------------------------------------


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None  # a 302 is the answer the test reads


class Client:
    """A browser of one session (its cookies), signing in as ``user`` if given."""

    def __init__(self, root: str, user: str | None = None, password: str = PASSWORD) -> None:
        self.root = root
        self.headers = {}
        if user is not None:
            pair = base64.b64encode(f"{user}:{password}".encode()).decode()
            self.headers["Authorization"] = f"Basic {pair}"
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(CookieJar()), _NoRedirects()
        )

    def request(self, path: str, form: Mapping[str, str | list[str]] | None = None) -> int:
        """The status of GET ``path``, or of POST ``form`` to it; the page in :attr:`page`."""
        data = None if form is None else urllib.parse.urlencode(form, doseq=True).encode()
        request = urllib.request.Request(self.root + path, data=data, headers=self.headers)
        try:
            with self.opener.open(request, timeout=30) as response:
                self.page = response.read().decode()
                return int(response.status)
        except urllib.error.HTTPError as exc:
            self.page = exc.read().decode()
            return exc.code

    def token(self) -> str:
        """The CSRF token of this session's forms (the list page's action form holds it)."""
        assert self.request("/admin/schedules/") == 200
        found = TOKEN.search(self.page)
        assert found, "no CSRF token on the schedule list"
        return found.group(1)


# One server with a login, on SQLite and PostgreSQL -------------------------------------------


@dataclass
class Admin:
    served: Served
    database: str


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def admin(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Admin]:
    with private_database(request.param, tmp_path_factory) as url:
        with Schedules(migrated(url)) as api:
            api.add("report", "adminproj.report", Cron("0 * * * *"))
        folder = tmp_path_factory.mktemp("admin")
        with serving(folder, url, admin_user="ops", admin_password_hash=PASSWORD_HASH) as served:
            yield Admin(served, url)


@pytest.mark.parametrize("path", PAGES)
def test_each_page_answers_with_the_login_and_asks_for_it_without(admin: Admin, path: str) -> None:
    root = admin.served.root
    signed_in = Client(root, "ops")
    assert signed_in.request(path) == 200, signed_in.page

    anonymous = Client(root)
    assert anonymous.request(path) == 401
    assert "report" not in anonymous.page


def test_a_wrong_password_or_user_is_refused_and_so_is_every_other_request(admin: Admin) -> None:
    root = admin.served.root
    assert Client(root, "ops", "wrong").request("/admin/schedules/") == 401
    assert Client(root, "someone", PASSWORD).request("/admin/schedules/") == 401
    # Loopback too, static files and unknown URLs too: the login is asked before anything.
    for path in ("/", "/admin/", STATIC, "/x"):
        assert Client(root).request(path) == 401, path
    assert Client(root, "ops").request(STATIC) == 200


def test_the_banner_says_where_it_listens_and_who_may_sign_in(admin: Admin) -> None:
    banner = admin.served.banner
    port = admin.served.root.rsplit(":", 1)[1]
    assert banner[0] == f"celery-dbeat admin -> http://127.0.0.1:{port}/admin/"
    assert "    . login -> ops (HTTP basic auth)" in banner
    assert not any(PASSWORD_HASH in line for line in banner)


def test_a_write_without_the_forms_csrf_token_is_refused_and_with_it_done(admin: Admin) -> None:
    pause = {"action": "pause", "rowid": "1", "url": "/admin/schedules/"}
    browser = Client(admin.served.root, "ops")
    token = browser.token()

    assert browser.request("/admin/schedules/action/", pause) == 400
    assert browser.request("/admin/schedules/action/", {**pause, "csrf_token": "forged"}) == 400
    # Another site's page would post with the user's basic auth but not this session's cookie.
    other = Client(admin.served.root, "ops")
    assert other.request("/admin/schedules/action/", {**pause, "csrf_token": token}) == 400
    with Schedules(admin.database) as api:
        assert api.get("report").enabled

    assert browser.request("/admin/schedules/action/", {**pause, "csrf_token": token}) == 302
    with Schedules(admin.database) as api:
        assert not api.get("report").enabled
        (entry, *_) = api.audit("report")
        assert (entry.action, entry.actor, entry.surface) == ("pause", "ops", "flask-admin")
        api.resume("report")


# Without a login --------------------------------------------------------------------------------


@pytest.fixture
def database(tmp_path: Path) -> str:
    return migrated(f"sqlite:///{tmp_path / 'schedules.sqlite3'}")


def test_without_a_login_it_serves_on_loopback_with_no_login_and_says_so(
    tmp_path: Path, database: str
) -> None:
    with serving(tmp_path, database) as served:
        assert "    . login -> no login: loopback only" in served.banner
        assert Client(served.root).request("/admin/schedules/") == 200


def test_without_a_login_it_refuses_a_public_address_with_one_line_and_exit_1(
    tmp_path: Path, database: str
) -> None:
    process = start(tmp_path, database, "--host", "0.0.0.0", "--port", "0")
    stdout, _ = process.communicate(timeout=60)
    stderr = (tmp_path / "stderr.txt").read_text()

    assert process.returncode == 1
    assert stdout == ""
    assert stderr.splitlines() == [
        "Error: refusing to serve the admin on 0.0.0.0 without a login: set dbeat_admin_user "
        "and dbeat_admin_password_hash (or DBEAT_ADMIN_USER and DBEAT_ADMIN_PASSWORD_HASH; "
        "`celery dbeat admin --hash-password` makes the hash), or serve on 127.0.0.1"
    ]


@pytest.mark.parametrize("host", ["::", "192.0.2.1", "example.org", "localhost.example.org"])
def test_without_a_login_every_address_but_loopback_is_refused(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, host: str
) -> None:
    for key in ("DBEAT_ADMIN_USER", "DBEAT_ADMIN_PASSWORD_HASH"):
        monkeypatch.delenv(key, raising=False)
    cli.fails("admin", "--host", host, code=1, fragment=f"on {host} without a login")


def test_the_environments_login_wins_and_opens_every_address(tmp_path: Path, database: str) -> None:
    env = {"DBEAT_ADMIN_USER": "env-ops", "DBEAT_ADMIN_PASSWORD_HASH": PASSWORD_HASH}
    with serving(tmp_path, database, "--host", "0.0.0.0", env=env, admin_user="ops") as served:
        assert served.banner[0].startswith("celery-dbeat admin -> http://0.0.0.0:")
        assert "    . login -> env-ops (HTTP basic auth)" in served.banner
        assert Client(served.root, "ops").request("/admin/schedules/") == 401
        assert Client(served.root, "env-ops").request("/admin/schedules/") == 200


# In process: the settings and the helper ---------------------------------------------------


def test_hash_password_asks_twice_and_prints_a_hash_that_checks(cli: Cli) -> None:
    printed = cli.ok("admin", "--hash-password", input="s3cret\ns3cret\n")
    password_hash = printed.splitlines()[-1]
    assert check_password_hash(password_hash, "s3cret")
    assert not check_password_hash(password_hash, "other")


@pytest.mark.parametrize(
    ("settings", "env", "fragment"),
    [
        pytest.param(
            {"dbeat_admin_user": "ops"},
            {},
            "dbeat_admin_user is set but dbeat_admin_password_hash is not",
            id="user-alone",
        ),
        pytest.param(
            {},
            {"DBEAT_ADMIN_PASSWORD_HASH": PASSWORD_HASH},
            "dbeat_admin_password_hash is set but dbeat_admin_user is not",
            id="hash-alone",
        ),
        pytest.param(
            {"dbeat_admin_user": "ops", "dbeat_admin_password_hash": PASSWORD},
            {},
            "dbeat_admin_password_hash: is not a werkzeug password hash",
            id="a-password-for-a-hash",
        ),
        pytest.param(
            {"dbeat_admin_user": "ops"},
            {"DBEAT_ADMIN_PASSWORD_HASH": PASSWORD},
            "DBEAT_ADMIN_PASSWORD_HASH: is not a werkzeug password hash",
            id="a-password-for-a-hash-in-the-environment",
        ),
        pytest.param(
            {"dbeat_admin_user": "o:ps", "dbeat_admin_password_hash": PASSWORD_HASH},
            {},
            "dbeat_admin_user='o:ps': must not hold ':'",
            id="a-colon-in-the-user",
        ),
    ],
)
def test_a_half_or_bad_login_is_refused_naming_the_key_never_the_secret(
    cli: Cli,
    monkeypatch: pytest.MonkeyPatch,
    settings: dict[str, str],
    env: dict[str, str],
    fragment: str,
) -> None:
    for key in ("DBEAT_ADMIN_USER", "DBEAT_ADMIN_PASSWORD_HASH", "DBEAT_ADMIN_SECRET_KEY"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    cli.app.conf.update(settings)

    line = cli.fails("admin", code=1, fragment=fragment)
    assert PASSWORD not in line


def test_without_the_flask_extra_it_says_which_to_install(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [m for m in sys.modules if m.startswith("celery_dbeat.contrib.flask")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "flask_admin", None)  # as if not installed

    cli.fails("admin", code=1, fragment='pip install "celery-dbeat[flask]"')
