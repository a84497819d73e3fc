"""Column documentation from one place: every column of every mart has a description with its unit in
``pipeline/io/columns.py``; the Dagster column schemas carry them; docs/marts.md is that module, generated.
Also what the UI shows beside them: the quarantine preview leads with real rejections, and the automation has
descriptions."""

from pathlib import Path

import dagster as dg

from pipeline.io.columns import DESCRIPTIONS, GLOSSARY, MARTS, describe, marts_markdown

DOC = Path(__file__).resolve().parents[1] / "docs" / "marts.md"


def test_committed_marts_doc_is_the_generated_one():
    assert DOC.read_text(encoding="utf-8") == marts_markdown(), "run: python -m pipeline docs"


def test_glossary_names_the_abbreviations_of_the_column_names():
    terms = {term for term, _ in GLOSSARY}
    assert {"intvty", "tput", "mtok", "conc"} <= terms
    text = DOC.read_text(encoding="utf-8")
    assert "## Glossary" in text and "| `intvty` | interactivity" in text


def test_every_mart_column_is_described_and_the_ui_shows_it(sample_run):
    run = sample_run
    for mart, (_, _, columns) in MARTS.items():
        actual = run.mart(mart).column_names
        if mart == "requests" and not actual:  # the sample saves no per-request data (an empty folder);
            continue                           # tests/test_requests_slo.py holds this mart's columns
        assert actual == list(columns), f"{mart}: pipeline/io/columns.py MARTS lists other columns"
        assert [c for c in actual if c not in DESCRIPTIONS] == [], mart
    # Every table the UI describes (marts and warehouse-only tables) has a description on every column.
    schemas = {}
    for event in run.result.all_events:
        if event.event_type_value == "ASSET_MATERIALIZATION":
            materialization = event.event_specific_data.materialization
            schema = materialization.metadata.get("dagster/column_schema")
            if schema is not None:
                schemas[materialization.asset_key.to_user_string()] = schema.value
    assert {"metrics/run_metrics", "validate/quarantine", "comparisons/matched_comparisons", "frontiers/pareto_frontiers",
            "validate/ingest_ledger", "comparisons/trends", "ingest/parsed_runs", "metrics/run_power"} <= set(schemas)
    for key, schema in schemas.items():
        assert [c.name for c in schema.columns if not c.description] == [], key
    by_name = {c.name: c.description for c in schemas["metrics/run_metrics"].columns}
    assert by_name["tput_per_gpu"].endswith("[tok/s/GPU]")
    assert by_name["cost_per_mtok_hyperscaler"].endswith("[$/M tok]")
    assert by_name["median_intvty"] == describe("median_intvty") and "[tok/s/user]" in by_name["median_intvty"]
    comparison = {c.name: c.description for c in schemas["comparisons/matched_comparisons"].columns}
    assert "splined" in comparison["tput_per_gpu"] and "splined" not in by_name["tput_per_gpu"]

    # The quarantine preview leads with what was refused; sidecars and telemetry (not_a_run_log:*) follow.
    quarantine = run.mart("quarantine").to_pylist()
    rejected = [r for r in quarantine if not r["reason_code"].startswith("not_a_run_log:")]
    assert rejected and len(quarantine) > 12 + len(rejected)
    preview = next(e.event_specific_data.materialization.metadata["preview"].value for e in run.result.all_events
                   if e.event_type_value == "ASSET_MATERIALIZATION"
                   and e.event_specific_data.materialization.asset_key == dg.AssetKey(["validate", "quarantine"]))
    rows = [line for line in preview.splitlines() if line.startswith("|")][2:]
    for row, expected in zip(rows, rejected):
        assert expected["reason_code"] in row
    assert "not_a_run_log:" in rows[len(rejected)]


def test_every_column_of_every_mart_file_carries_its_meaning_and_unit(sample_run):
    """A reader of one Parquet file finds each column's meaning and unit in the file itself (field
    metadata ``description`` and ``unit``), in every file of every mart, partition files and file marts too."""
    import pyarrow.parquet as pq

    from pipeline.io.generations import published_dir

    root = published_dir(sample_run.out_dir)
    seen = {}
    for mart, (path, _, _) in MARTS.items():
        files = [root / path] if path.endswith(".parquet") and "/" not in path else \
            sorted((root / mart).rglob("*.parquet"))
        assert files and all(f.is_file() for f in files), mart
        for file in files:
            for field in pq.read_schema(file):
                meta = {k.decode(): v.decode() for k, v in (field.metadata or {}).items()}
                assert meta.get("description"), f"{file}: {field.name} has no description"
                assert meta.get("unit", "") == DESCRIPTIONS[field.name][0], f"{file}: {field.name}"
                seen[(mart, field.name)] = meta
    # by hand: units a reader needs, and a mart's own note
    assert seen[("runs", "tput_per_gpu")]["unit"] == "tok/s/GPU"
    assert seen[("runs", "median_ttft_s")]["unit"] == "s"
    assert seen[("comparisons", "cost_per_mtok_hyperscaler")]["unit"] == "$/M tok"
    assert seen[("trends", "target_intvty")]["unit"] == "tok/s/user"
    assert "splined" in seen[("comparisons", "tput_per_gpu")]["description"]
    assert "measured value of the frontier run" in seen[("frontiers", "tput_per_gpu")]["description"]
    assert "unit" not in seen[("quarantine", "reason_code")]
    assert ("requests", "ttft_s") in seen  # the sample's empty requests/ (empty.parquet) is documented too


def test_schedule_and_sensor_have_descriptions():
    from pipeline.defs.automation import nightly_refresh, raw_logs_sensor

    assert "02:00 UTC" in nightly_refresh.description and "every partition" in nightly_refresh.description
    assert raw_logs_sensor.description
