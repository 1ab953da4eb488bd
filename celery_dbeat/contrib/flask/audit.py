"""The audit trail view: read-only, newest first; who changed which schedule or calendar, from
where, when, and each field's old and new value."""

from __future__ import annotations

from typing import Any, ClassVar

from ...core.audit import change_text, decoded_changes, subject
from ...store.models import Audit
from .base import DBeatView

__all__ = ["AUDIT_ENDPOINT", "AuditView"]

AUDIT_ENDPOINT = "dbeat_audit"


def _about(view: AuditView, context: Any, row: Audit, name: str) -> str:
    return subject(row.action, row.schedule_name)


def _changes(view: AuditView, context: Any, row: Audit, name: str) -> str:
    """As ``dbeat log`` shows them: ``field: old -> new; ...``."""
    return change_text(decoded_changes(row.changes)) or "-"


class AuditView(DBeatView):
    """Entries of ``dbeat_audit``, written by every surface with its edits; nothing here writes."""

    can_create = False
    can_edit = False
    can_delete = False
    column_list = ("at", "actor", "surface", "action", "schedule_name", "changes")
    column_labels: ClassVar[dict[str, str]] = {
        "at": "At (UTC)",
        "schedule_name": "Schedule or calendar",
    }
    column_sortable_list = ("at", "actor", "surface", "action", "schedule_name")
    column_default_sort = ("at", True)
    column_searchable_list = ("schedule_name", "schedule_uid", "actor")
    column_filters = ("surface", "action", "actor")
    column_formatters: ClassVar[dict[str, Any]] = {"schedule_name": _about, "changes": _changes}
    row_model = Audit
    default_name, default_endpoint, default_url = "Audit trail", AUDIT_ENDPOINT, "audit"
