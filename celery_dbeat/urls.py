"""Service URLs as they may be shown: passwords hidden, for banners, logs and error messages."""

from __future__ import annotations

import re

__all__ = ["mask_url"]

#: A query parameter holding a secret (``?password=`` of redis-py, ``sslpassword`` of libpq).
_SECRET_PARAMETER = re.compile(r"((?:^|[?&])[^=&?]*password=)[^&]*", re.IGNORECASE)


def mask_url(url: str | None) -> str:
    """``url`` with any password replaced by ``***``.

    The password is everything between the user name and the *last* ``@`` of the URL: raw
    ``/``, ``#``, ``?`` and ``@`` in a password (which URL parsers, SQLAlchemy's included, read
    as the start of a path, fragment, query or host) are hidden with it; an ``@`` further on
    hides more than the password, never less. ``password=`` query parameters are hidden too. A
    list of URLs separated by ``;`` (Sentinel's, a cluster's) is masked URL by URL.
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
    return scheme + sep + _SECRET_PARAMETER.sub(r"\1***", rest)
