"""Per-run statistics of the per-request records, for the metrics SQL: the view ``run_request_stats``
(``sql/run_request_stats.sql``: 1 / p90 over a run's requests of E2EL / OSL, the E2E-normalized interactivity,
docs/metrics.md section 4a), which ``sql/run_metrics.sql`` reads."""

from __future__ import annotations

from typing import Any

from pipeline.ingest.requests import REQUEST_SCHEMA
from pipeline.io.paths import sql_text
from pipeline.io.storage import table_names


def request_stats_view(conn: Any) -> None:
    """Create the view ``run_request_stats`` (``sql/run_request_stats.sql``: 1 / p90(E2EL / OSL) per run from its
    records) on DuckDB connection ``conn``, which ``sql/run_metrics.sql`` reads. A warehouse where
    ``ingest/parsed_requests`` never ran gets an empty ``raw_requests`` table (``REQUEST_SCHEMA``) first, so the
    view has its input; the asset's first write keeps that table (same columns)."""
    if "raw_requests" not in table_names(conn):
        # created from the Arrow table directly: no relation is registered on the caller's connection
        conn.from_arrow(REQUEST_SCHEMA.empty_table()).create("raw_requests")
    conn.execute(sql_text("run_request_stats"))
