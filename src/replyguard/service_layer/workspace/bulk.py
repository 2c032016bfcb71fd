"""Imports and enrollments too large for one transaction: chunks of 500, each its own.

A chunk that commits stays committed; a failure stops at the chunk it happened in. Each row
of an import is its own savepoint inside the chunk (`import_leads`), so a bad row loses only
itself. The CLI and the web both call these.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from replyguard.domain.leads_csv import LeadRow, RowError
from replyguard.service_layer.uow import UnitOfWork
from replyguard.service_layer.workspace.enrollment import EnrollReport, candidate_lead_ids, enroll_leads
from replyguard.service_layer.workspace.leads import ImportReport, import_leads

CHUNK = 500


def import_in_chunks(
    new_uow: Callable[[], UnitOfWork],
    product: str,
    rows: Sequence[LeadRow | RowError],
    progress: Callable[[int], None] = lambda _n: None,
) -> ImportReport:
    report = ImportReport()
    for start in range(0, len(rows), CHUNK):
        chunk = list(rows[start : start + CHUNK])
        with new_uow() as uow:
            part = import_leads(uow, product, chunk)
            uow.commit()
        report.created += part.created
        report.updated += part.updated
        report.errors += part.errors
        progress(len(chunk))
    return report


def enroll_in_chunks(
    new_uow: Callable[[], UnitOfWork],
    campaign: str,
    email: str | None = None,
    progress: Callable[[int], None] = lambda _n: None,
) -> EnrollReport:
    """Enroll the campaign product's leads not yet enrolled (or the one with `email`).
    Raises LookupError (campaign or lead unknown) before anything is written."""
    report = EnrollReport()
    with new_uow() as uow:
        ids = candidate_lead_ids(uow, campaign, email)
    for start in range(0, len(ids), CHUNK):
        chunk = ids[start : start + CHUNK]
        with new_uow() as uow:
            enroll_leads(uow, campaign, chunk, report)
            uow.commit()
        progress(len(chunk))
    return report
