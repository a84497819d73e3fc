"""Checks of the validate stage. Structural checks are blocking (ERROR): downstream numbers would be wrong."""


import dagster as dg
from dagster_duckdb import DuckDBResource

from pipeline.defs.validate.assets import QUARANTINE_KEY, VALIDATED_KEY


@dg.asset_check(asset=VALIDATED_KEY, blocking=True, description=(
    "Every file under the raw dir is accounted for: for each file, rows read = runs + rejected rows, and every run "
    "either passed validation or sits in the quarantine (nothing silently dropped)."))
def every_input_row_accounted_for(warehouse: DuckDBResource) -> dg.AssetCheckResult:
    with warehouse.get_connection() as conn:
        per_file = conn.execute("""
            with counted as (
                select source_file, count(*) as n from raw_runs group by all
                union all
                select source_file, count(*) from raw_rejects group by all
            )
            select f.source_file, f.rows_read, coalesce(sum(c.n), 0) as found
            from raw_files f left join counted c using (source_file)
            group by all having f.rows_read <> coalesce(sum(c.n), 0) or f.rows_read = 0
        """).fetchall()
        raw_runs, validated, rejected_by_rules = conn.execute("""
            select (select count(*) from raw_runs), (select count(*) from validated_runs),
                   (select count(*) from quarantine where stage = 'validate')
        """).fetchone()
        files = conn.execute("select count(*) from raw_files").fetchone()[0]
    balanced = raw_runs == validated + rejected_by_rules
    return dg.AssetCheckResult(
        passed=not per_file and balanced,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata={
            "files": files,
            "files_unbalanced": len(per_file),
            "unbalanced_examples": dg.MetadataValue.json([list(r) for r in per_file[:5]]),
            "raw_runs": raw_runs,
            "validated_runs": validated,
            "rejected_by_rules": rejected_by_rules,
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
