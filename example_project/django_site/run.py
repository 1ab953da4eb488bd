#!/usr/bin/env python
"""Set up and serve the example admin in one command.

    python example_project/django_site/run.py [ADDR:PORT] [--setup-only]

Creates Django's tables and celery-dbeat's (``manage.py migrate`` does both) in the example app's
database, creates the superuser admin/admin if missing, then runs Django's development server
(default 127.0.0.1:8000).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dbeat_site.settings")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000")
    parser.add_argument("--setup-only", action="store_true", help="set up, do not serve")
    options = parser.parse_args()

    import django
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    django.setup()
    call_command("migrate", interactive=False, verbosity=0)
    users = get_user_model().objects
    if not users.filter(username="admin").exists():
        users.create_superuser("admin", "admin@example.com", "admin")
        print("created the superuser admin (password admin)")
    if options.setup_only:
        return 0
    print(f"admin: http://{options.addrport}/admin/  (admin / admin)")
    call_command("runserver", options.addrport, use_reloader=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
