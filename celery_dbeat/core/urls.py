"""Service URLs as they may be shown: passwords hidden, for banners, logs and error messages; and
the URLs whose password a parser would cut in two (:func:`cuts_password`)."""

from __future__ import annotations

import re

__all__ = ["CUT_PASSWORD", "cuts_password", "mask_url"]

#: A query parameter holding a secret (``?password=`` of redis-py, ``sslpassword`` of libpq).
_SECRET_PARAMETER = re.compile(r"((?:^|[?&])[^=&?]*password=)[^&]*", re.IGNORECASE)

#: In an authority without ``@``, a ``:`` (after a host name or a bracketed IPv6 address) followed
#: by something other than a port number, up to the path, query or fragment: a password that
#: lost its ``@host``.
_NOT_A_PORT = re.compile(r"^((?:\[[^\]/?#]*\]|[^\[\]:/?#,]*):)(?![0-9]*(?:[/?#,]|$))[^/?#]*")


def mask_url(url: str | None) -> str:
    """``url`` with any password replaced by ``***``.

    The password is everything between the user name and the *last* ``@`` of the URL: raw
    ``/``, ``#``, ``?`` and ``@`` in a password (which URL parsers, SQLAlchemy's included, read
    as the start of a path, fragment, query or host) are hidden with it; an ``@`` further on
    hides more than the password, never less. ``password=`` query parameters are hidden too. A
    URL whose ``@host`` was left out (``postgresql://user:secret/db``) has its password where a
    port would be: a "port" that is not a number is hidden. A list of URLs separated by ``;``
    (Sentinel's, a cluster's) is masked URL by URL.
    """
    if not url:
        return str(url)
    if ";" in url and url.count("://") > 1:
        return ";".join(mask_url(part) for part in url.split(";"))
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    at = rest.rfind("@")
    if at != -1 and ":" in rest[:at]:
        user = rest[: rest.index(":")]
        rest = f"{user}:***{rest[at:]}"
    elif at == -1:
        rest = _NOT_A_PORT.sub(r"\1***", rest, count=1)
    return scheme + sep + _SECRET_PARAMETER.sub(r"\1***", rest)


#: Why a URL :func:`cuts_password` is refused, and what to write instead.
CUT_PASSWORD = (
    "the password (or the user name) holds an '@', which ends it early in a URL (the rest would "
    "be read as the host name, the port or the path, and shown in the driver's errors); "
    "percent-encode the password: '@' is %40 (urllib.parse.quote(password, safe=''))"
)


def cuts_password(url: str) -> bool:
    """Whether a parser would end ``url``'s password at an ``@`` inside it: its authority (read,
    as :func:`mask_url` reads a password, up to the first ``/``, ``?`` or ``#`` after the last
    ``@``) holds more than one ``@``. Parsers end the password at the first ``@`` or at the first
    ``/``, ``?`` or ``#``, so what follows would be taken for the host (``failed to resolve host
    'SECRET'``), the port or the path. A URL without an authority (``sqlite:///path``) has no
    password to cut.
    """
    rest = url.partition("://")[2]
    if rest.startswith("/"):
        return False
    last = rest.rfind("@")
    if last == -1:
        return False
    ends = [i for i in (rest.find(c, last) for c in "/?#") if i != -1]
    return rest.count("@", 0, min(ends, default=len(rest))) > 1
