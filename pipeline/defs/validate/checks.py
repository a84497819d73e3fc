"""Checks of the validate stage. Structural checks are blocking (ERROR): downstream numbers would be wrong."""


from pathlib import Path

import dagster as dg
from dagster_duckdb import DuckDBResource

from pipeline.defs.resources import PipelinePaths
from pipeline.defs.validate.assets import QUARANTINE_KEY
from pipeline.defs.validate.ledger import LEDGER_KEY
from pipeline.validate.ledger import account_for_files


@dg.asset_check(asset=LEDGER_KEY, blocking=True, description=(
    "Blocking: every file under the raw dir appears exactly once in the ledger, and for every file rows read = "
    "accepted runs + quarantined rows + rows pending (dated in a run date not ingested yet) (nothing the user gave "
    "is lost or counted twice)."))
def every_file_accounted_for(warehouse: DuckDBResource, paths: PipelinePaths) -> dg.AssetCheckResult:
    with warehouse.get_connection() as conn:
        ledger = conn.execute("select source_file, rows_read, accepted_rows, quarantined_rows, pending_rows "
                              "from ingest_ledger")\
            .fetchall()
        totals = conn.execute("""
            select (select count(*) from raw_runs), (select count(*) from raw_rejects),
                   (select count(*) from validated_runs), (select count(*) from quarantine)
        """).fetchone()
    accounting = account_for_files(Path(paths.raw_dir), ledger)
    raw_runs, raw_rejects, validated, quarantined = totals
    balanced = raw_runs + raw_rejects == validated + quarantined
    return dg.AssetCheckResult(
        passed=accounting.complete and balanced,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata={
            "files_on_disk": accounting.files_on_disk,
            "files_in_ledger": len(ledger),
            "rows_read": raw_runs + raw_rejects,
            "accepted_plus_quarantined": validated + quarantined,
            "missing_from_ledger": dg.MetadataValue.json(accounting.missing[:10]),
            "not_on_disk": dg.MetadataValue.json(accounting.extra[:10]),
            "listed_twice": dg.MetadataValue.json(accounting.repeated[:10]),
            "unbalanced_files": dg.MetadataValue.json([list(r) for r in accounting.unbalanced[:10]]),
        },
    )


@dg.asset_check(asset=QUARANTINE_KEY, blocking=False, description=(
    "Every quarantine row has a reason code and a detail naming its file (warning: a bare code is unhelpful)."))
def quarantine_rows_explained(warehouse: DuckDBResource) -> dg.AssetCheckResult:
    with warehouse.get_connection() as conn:
        bad = conn.execute("""
            select count(*) from quarantine
            where reason_code is null or reason_code = '' or detail is null or not starts_with(detail, source_file)
        """).fetchone()[0]
    return dg.AssetCheckResult(passed=bad == 0, severity=dg.AssetCheckSeverity.WARN, metadata={"unexplained": bad})
