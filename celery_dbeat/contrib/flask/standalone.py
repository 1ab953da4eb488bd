"""The admin as a Flask app of its own, for ``celery -A proj dbeat admin``: the views of
:func:`~celery_dbeat.contrib.flask.init_admin` (no page of their own here) behind HTTP basic
auth, with a CSRF check on every write.

Two guards run before every request, static files and unknown URLs included:

1. With a :class:`Login`, a request without its user and password gets 401 (HTTP basic auth:
   the browser asks once and sends them with each request). Without one (the command allows it
   on a loopback address only) nothing is asked.
2. A request that may write (any method but GET, HEAD and OPTIONS) gets 400 unless its form
   carries a valid CSRF token: the token every form and action of the views already carries
   (Flask-Admin's ``SecureForm``, a WTForms ``SessionCSRF`` token bound to the session cookie
   and signed with the secret key). The views check it too, but answer a bad one with a redirect
   and a message; here no write reaches a view without one. Basic auth credentials are sent by
   the browser on every request, whoever's page makes it: the token is what tells the admin's
   own forms from another site's.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass, field

from flask import Flask, Response, abort, g, redirect, request, url_for
from flask.typing import ResponseReturnValue
from flask_admin import Admin, AdminIndexView, expose
from flask_admin.form import SecureForm
from werkzeug.security import check_password_hash, generate_password_hash

from ...api import Schedules
from . import SCHEDULES_ENDPOINT, AdminViews, TaskNames, init_admin

__all__ = ["ADMIN_URL", "Login", "create_app", "hash_password"]

#: Where the views are, as when mounted in a host's app: ``/admin/schedules/``, ...
ADMIN_URL = "/admin"
REALM = "celery-dbeat"
_READS = frozenset({"GET", "HEAD", "OPTIONS"})


def hash_password(password: str) -> str:
    """A werkzeug hash of ``password`` (scrypt, salted), for ``dbeat_admin_password_hash``."""
    return generate_password_hash(password)


@dataclass
class Login:
    """The one user who may sign in, and the werkzeug hash of their password."""

    user: str
    password_hash: str = field(repr=False)
    #: A keyed digest of the credentials once they were found right, so that each request (a
    #: page loads a dozen static files) costs an HMAC, not a scrypt hash (~0.1 s of CPU).
    _accepted: bytes | None = field(default=None, init=False, repr=False)
    _key: bytes = field(default_factory=lambda: secrets.token_bytes(32), init=False, repr=False)

    def accepts(self, user: str, password: str) -> bool:
        """Whether ``user`` and ``password`` are this login's; constant time in both."""
        digest = hmac.new(self._key, f"{user}:{password}".encode(), hashlib.sha256).digest()
        if self._accepted is not None and hmac.compare_digest(digest, self._accepted):
            return True
        same_user = hmac.compare_digest(user.encode(), self.user.encode())
        # Checked whatever the user name, so that the time taken does not tell it.
        right = check_password_hash(self.password_hash, password)
        if same_user and right:
            self._accepted = digest  # one user, one password: the only right pair
        return same_user and right


class _Home(AdminIndexView):
    """``/admin/``: the schedules."""

    @expose("/")
    def index(self) -> ResponseReturnValue:
        return redirect(url_for(f"{SCHEDULES_ENDPOINT}.index_view"))


def create_app(
    schedules: Schedules,
    *,
    login: Login | None,
    secret_key: str | None = None,
    task_names: TaskNames | None = None,
) -> tuple[Flask, AdminViews]:
    """A Flask app serving the admin views on ``schedules`` at :data:`ADMIN_URL`, behind
    ``login`` (``None``: no login; the caller decides where that is safe) and the CSRF check of
    every write. ``secret_key`` signs the session cookie that carries the CSRF secret; by
    default a random one for this process."""
    app = Flask(__name__)
    app.secret_key = secret_key or secrets.token_hex(32)
    # The cookie carries the CSRF secret and flashed messages; Lax keeps it off other sites'
    # POSTs as well.
    app.config.update(SESSION_COOKIE_SAMESITE="Lax", SESSION_COOKIE_HTTPONLY=True)

    @app.before_request
    def guard() -> ResponseReturnValue | None:
        if login is not None:
            auth = request.authorization
            if (
                auth is None
                or auth.type != "basic"
                or not login.accepts(auth.username or "", auth.password or "")
            ):
                return Response(
                    "Sign in to the celery-dbeat admin.\n",
                    401,
                    {"WWW-Authenticate": f'Basic realm="{REALM}", charset="UTF-8"'},
                    mimetype="text/plain",
                )
        g.dbeat_signed_in = True
        if request.method not in _READS and not SecureForm(request.form).validate():
            abort(400, "The form's CSRF token is missing or has expired: reload the page.")
        return None

    @app.route("/")
    def home() -> ResponseReturnValue:
        return redirect(url_for("admin.index"))

    admin = Admin(
        app, name="celery-dbeat", url=ADMIN_URL, index_view=_Home(url=ADMIN_URL, name="Home")
    )
    views = init_admin(
        admin,
        schedules,
        # The guard above has already refused anyone else; asked again by every view.
        is_accessible=lambda: bool(g.get("dbeat_signed_in")),
        task_names=task_names,
        # The audit trail's actor: the signed-in user (without a login, "anonymous").
        actor=lambda: login.user if login is not None else None,
    )
    return app, views
