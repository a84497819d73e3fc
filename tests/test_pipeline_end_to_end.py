"""The whole Dagster job on the bundled sample and on the real logs, with a temporary warehouse and marts."""

import json
from collections import Counter

import duckdb
import pytest
from conftest import SAMPLE_DIR, load_json, unrestricted

from pipeline.definitions import defs
from pipeline.ingest.scan import list_files


def test_definitions_load():
    d = defs()
    keys = {k.to_user_string() for k in d.resolve_all_asset_keys()}
    assert keys == {"ingest/parsed_runs", "metrics/gpu_reference", "metrics/price_books", "metrics/run_power", "comparisons/trends", "comparisons/report",
                    "validate/accepted_runs", "ingest/parsed_requests", "metrics/run_slo",
                    "validate/quarantine", "validate/ingest_ledger", "metrics/run_metrics", "frontiers/pareto_frontiers", "comparisons/matched_comparisons",
                    "comparisons/published_marts", "comparisons/regressions"}
    assert d.resolve_job_def("refresh_all") is not None


def test_cli_run_materializes_every_asset_and_publishes_last(sample_run):
    """``python -m pipeline run`` is one run of the job over every asset and check: an asset left out of it would
    never be built by the CLI or the tests; the publishing step must come after every other step."""
    events = sample_run.result.all_events
    materialized = {e.asset_key.to_user_string() for e in events if e.event_type_value == "ASSET_MATERIALIZATION"}
    assert materialized == {k.to_user_string() for k in defs().resolve_all_asset_keys()}
    steps = [e.step_key for e in events if e.event_type_value == "STEP_SUCCESS"]
    assert len(steps) == len(set(steps)) == len(defs().resolve_job_def("refresh_all").graph.node_dict)
    assert steps[-1] == "comparisons__published_marts"


def test_sample_end_to_end(sample_run):
    run = sample_run
    assert run.result.success
    assert all(run.check_results().values()), run.check_results()

    runs, quarantine, comparisons = run.mart("runs"), run.mart("quarantine"), unrestricted(run.mart("comparisons"))
    files = list_files(SAMPLE_DIR)
    # every file ends somewhere: as runs or as quarantine rows
    seen = set(runs.column("source_file").to_pylist()) | set(quarantine.column("source_file").to_pylist())
    assert seen == {f.relative_to(SAMPLE_DIR).as_posix() for f in files}
    reasons = Counter(quarantine.column("reason_code").to_pylist())
    assert reasons["no_completed_requests"] == 1  # the one failed run, and nothing else rejected
    assert {r for r in reasons if not r.startswith("not_a_run_log:")} == {"no_completed_requests"}

    rows = comparisons.to_pylist()
    assert {r["kind"] for r in rows} == {"spec_decoding", "precision", "hardware", "framework"}
    assert {r["source_format"] for r in runs.to_pylist()} == {
        "vllm_bench_serve", "sglang_bench_serving", "trtllm_bench", "inferencex_agg", "inferencex_api"}
    # each comparison has 3 targets × 2 sides with both sides' values present
    per_comparison = Counter(r["comparison_id"] for r in rows)
    assert set(per_comparison.values()) == {6}
    assert all(r["tput_per_gpu"] > 0 and r["cost_per_mtok_hyperscaler"] > 0 for r in rows)
    # measured power rides along where every frontier point has valid telemetry, and only there
    h200 = [r for r in rows if r["hw"] == "h200" and r["model"] == "dsr1" and r["kind"] == "hardware"]
    assert h200 and all(r["measured_power_coverage"] == 1.0 and r["measured_tok_s_per_mw"] > 0 for r in h200)
    partial = [r for r in rows if r["hw"] == "mi355x" and r["model"] != "dsr1"]
    assert partial and all(r["measured_tok_s_per_mw"] is None and 0 < r["measured_power_coverage"] < 1
                           for r in partial)  # the conc128 telemetry has a gap: no interpolation across it
    titles = {r["title"] for r in rows}
    assert "MI355X FP4: MTP vs Off" in titles and "MI355X: FP4 vs FP8" in titles

    # every metric the comparison schema names is carried through: a frontier point has the value its run has,
    # and a comparison cell is null only where some frontier point of its side lacks the metric
    metrics = ("tput_per_gpu", "output_tput_per_gpu", "input_tput_per_gpu", "tok_s_per_mw", "measured_tok_s_per_mw",
               *(f"{p}cost_per_mtok_{t}" for p in ("", "output_", "input_") for t in ("hyperscaler", "neocloud", "rental")))
    by_run = {(r["run_id"], r["price_book"]): r for r in runs.to_pylist()}
    points = unrestricted(run.mart("frontiers")).to_pylist()
    for point in points:
        source = by_run[(point["run_id"], point["price_book"])]
        assert {m: point[m] for m in metrics} == {m: source[m] for m in metrics}, point["side_id"]
    assert all(p["output_tput_per_gpu"] is not None and p["input_cost_per_mtok_rental"] is not None for p in points)
    side_has = {}
    for point in points:
        key = (point["side_id"], point["price_book"])
        side_has[key] = {m for m in metrics if point[m] is not None} & side_has.get(key, set(metrics))
    for row in rows:
        assert {m for m in metrics if row[m] is not None} == side_has[(row["side_id"], row["price_book"])], row["side_id"]


def test_sample_values_trace_back_to_files(sample_run):
    run = sample_run
    runs = {(r["source_file"], r["source_row"]): r for r in run.mart("runs").to_pylist()}
    # an InferenceX agg row: per-GPU throughput as the file states it
    name = "inferencex/agg_dsr1_1k1k_mi355x_fp4_sglang_mtp_conc16.json"
    raw = load_json(SAMPLE_DIR / name)
    assert runs[(name, 0)]["tput_per_gpu"] == pytest.approx(raw["tput_per_gpu"])
    assert runs[(name, 0)]["hw"] == "mi355x" and runs[(name, 0)]["precision"] == "fp4"
    # an SGLang line: metadata from its sidecar, totals divided by tp from server_info
    name = "sglang/dsr1_1k1k_b200_fp4_sglang_none.jsonl"
    line = json.loads((SAMPLE_DIR / name).read_text().splitlines()[2])
    r = runs[(name, 2)]
    assert r["tput_per_gpu"] == pytest.approx(line["total_throughput"] / line["server_info"]["tp_size"])
    assert r["median_intvty"] == pytest.approx(1000 / line["median_tpot_ms"])
    assert r["hw"] == "b200" and "hw=sidecar" in r["metadata_sources"]
    # the disaggregated export: output per decode GPU
    name = "inferencex/api_benchmarks_dsr1_gb200.json"
    raw = load_json(SAMPLE_DIR / name)
    assert runs[(name, 0)]["output_tput_per_gpu"] == pytest.approx(raw[0]["metrics"]["output_tput_per_gpu"])
    assert runs[(name, 0)]["num_gpus"] == raw[0]["num_prefill_gpu"] + raw[0]["num_decode_gpu"]


@pytest.mark.long
def test_real_logs_every_file_accounted_for(real_logs, run_pipeline):
    run = run_pipeline(real_logs)
    assert run.result.success
    assert all(run.check_results().values()), run.check_results()
    runs, quarantine = run.mart("runs"), run.mart("quarantine")

    files = {f.relative_to(real_logs).as_posix() for f in list_files(real_logs)}
    # count balance: every file read yields rows; rows read = runs accepted + rows quarantined
    con = duckdb.connect(str(run.db_path), read_only=True)
    rows_read = con.execute("select sum(rows_read) from raw_files").fetchone()[0]
    assert con.execute("select count(*) from raw_files").fetchone()[0] == len(files)
    assert rows_read == runs.num_rows + quarantine.num_rows
    in_runs, in_quarantine = set(runs.column("source_file").to_pylist()), set(quarantine.column("source_file").to_pylist())
    assert in_runs | in_quarantine == files

    ledger = run.mart("ingest_ledger").to_pylist()
    assert sorted(r["source_file"] for r in ledger) == sorted(files)  # each file exactly once
    assert all(r["rows_read"] == r["accepted_rows"] + r["quarantined_rows"] for r in ledger)
    by_file = {r["source_file"]: r for r in ledger}
    assert by_file["inferencex-decode-slo/glm-5/runs.csv"]["outcome"] == "not_a_run_log"
    assert by_file["vllm/ix_local_minimaxm2.5_8k1k_conc64_eagle3_FAILED_zero.json"]["reason_codes"] == [
        "no_completed_requests"]
    assert by_file["inferencex/rafaykhan_app_api_benchmarks_dsr1_2026-05.json"]["outcome"] == "accepted"

    reasons = Counter(quarantine.column("reason_code").to_pylist())
    assert reasons["no_completed_requests"] == 3  # the two all-failed vLLM runs and one empty AgentX row
    assert reasons["missing_metadata:hw"] > 0  # e.g. minimax-m2.5 has no runs.csv, on purpose
    assert not any(code.startswith("unsupported_scenario") for code in reasons)
    # console logs are runs now; the aborted trtllm-bench log is named, the 0.16 reports lack TPOT
    assert by_file["trtllm/shaamil_trtllm_bench_throughput_stdout_16384_16384_50_TRUNCATED.txt"]["reason_codes"] == [
        "truncated_console_log"]
    assert by_file["trtllm/shaamil_trtllm_bench_throughput_stdout_1024_1024_3000.txt"]["reason_codes"] == [
        "missing_field:median_tpot_ms"]
    assert by_file["vllm/ix_local_minimax_eagle3_vllm_bench_serve_conc64.log.txt"]["source_format"] == \
        "vllm_bench_serve_console"
    assert by_file["power/ix_together_baseline_b200_sglang_dsr1-fp4_1k1k_tuned_conc16.json"]["outcome"] == "accepted"

    # the 90 AgentX rows (counted from the files): 85 accepted, 5 with a named reason
    agentic = [(f, i) for f in sorted(files) if f.startswith("inferencex/") and f.endswith(".json")
               for i, row in enumerate(_rows(load_json(real_logs / f)))
               if str(row.get("scenario_type", "")).startswith("agentic")]
    assert len(agentic) == 90
    accepted_agentic = {(r["source_file"], r["source_row"]): r for r in runs.to_pylist()
                        if r["benchmark_type"] == "agentic_traces"}
    quarantined_agentic = Counter(q["reason_code"] for q in quarantine.to_pylist()
                                  if (q["source_file"], q["source_row"]) in set(agentic))
    assert len(accepted_agentic) == 85 and set(accepted_agentic) <= set(agentic)
    # empty framework strings (3 rows), a row with 0 requests, a row with 1 errored request of 721
    assert quarantined_agentic == {"missing_metadata:framework": 3, "no_completed_requests": 1, "failed_requests": 1}
    # no real AgentX row carries the dashboard's 1 / p90(E2EL / OSL) or sits beside its records: every one is drawn on
    # the stand-in mean OSL / p90 E2EL, under that name (docs/metrics.md section 4a)
    assert all(r["isl"] is None and r["e2e_norm_intvty_p90"] is None and r["x_intvty"] == r["mean_osl_over_p90_e2el"]
               and r["x_intvty_stat"] == "mean_osl_over_p90_e2el" for r in accepted_agentic.values())
    # agentic frontiers hold agentic runs only, and fixed-sequence frontiers none of them
    frontiers = unrestricted(run.mart("frontiers")).to_pylist()
    agentic_ids = {r["run_id"] for r in accepted_agentic.values()}
    agentic_points = [p for p in frontiers if p["benchmark_type"] == "agentic_traces"]
    assert agentic_points and all(p["run_id"] in agentic_ids and p["isl"] is None for p in agentic_points)
    assert not any(p["run_id"] in agentic_ids for p in frontiers if p["benchmark_type"] == "fixed_seq")
    assert all(p["x_intvty"] == p["median_intvty"] for p in frontiers if p["benchmark_type"] == "fixed_seq")
    comparisons = unrestricted(run.mart("comparisons")).to_pylist()
    assert {(c["benchmark_type"], c["side_id"].split("|")[1] == "agentic_traces") for c in comparisons} <= {
        ("agentic_traces", True), ("fixed_seq", False)}

    by_key = {(r["source_file"], r["source_row"]): r for r in runs.to_pylist()}
    # decode-SLO run with a runs.csv manifest: seconds-keyed latencies, total = input + output throughput
    name = "inferencex-decode-slo/glm-5/glm5_fp8_vllm_tp8_isl1024_osl128_conc16.json"
    raw = load_json(real_logs / name)
    r = by_key[(name, 0)]
    assert (r["hw"], r["model"], r["tp"], r["isl"], r["osl"], r["conc"]) == ("h200", "glm-5", 8, 1024, 128, 16)
    assert r["tput_per_gpu"] == pytest.approx((raw["input_throughput"] + raw["output_throughput"]) / 8)
    assert r["median_intvty"] == pytest.approx(1 / raw["median_tpot"])
    assert r["median_ttft_s"] == raw["median_ttft"]
    # InferenceX agg row: its own per-GPU numbers and interactivity
    name = "inferencex/ix_agg_kimik2.5_8k1k_int4_vllm_tp8-ep1-dpafalse_disagg-false_spec-mtp_conc64_MI355.json"
    raw = load_json(real_logs / name)
    r = by_key[(name, 0)]
    assert r["tput_per_gpu"] == raw["tput_per_gpu"]
    assert r["median_intvty"] == pytest.approx(raw["median_intvty"])
    assert r["cost_per_mtok_hyperscaler"] == pytest.approx(1.48 / (raw["tput_per_gpu"] * 3600 / 1e6))
    # dashboard export rows: every one is a run, with its stated interactivity
    name = "inferencex/rafaykhan_app_api_benchmarks_dsr1_2026-05.json"
    raw = load_json(real_logs / name)
    for i in (0, 100, len(raw) - 1):
        assert by_key[(name, i)]["tput_per_gpu"] == raw[i]["metrics"]["tput_per_gpu"]
        assert by_key[(name, i)]["median_intvty"] == pytest.approx(raw[i]["metrics"]["median_intvty"])


def _rows(doc):
    return [row for row in (doc if isinstance(doc, list) else [doc]) if isinstance(row, dict)]


def test_running_twice_gives_identical_marts(sample_run, sample_rerun):
    first = sample_run
    snapshot = {name: first.mart(name) for name in ("runs", "quarantine", "frontiers", "comparisons")}
    second = sample_rerun  # the second run, over a copy of the first's warehouse, marts and parse cache
    assert second.result.success and second.out_dir != first.out_dir
    for name, table in snapshot.items():
        assert second.mart(name).equals(table), name


def test_sample_generator_is_reproducible(tmp_path):
    from pipeline.ingest.sample_data import generate

    written = generate(tmp_path / "sample")
    assert {p.relative_to(tmp_path / "sample").as_posix() for p in written} == {
        f.relative_to(SAMPLE_DIR).as_posix() for f in list_files(SAMPLE_DIR)}
    for path in written:
        committed = SAMPLE_DIR / path.relative_to(tmp_path / "sample")
        assert path.read_bytes() == committed.read_bytes(), path


def test_parallel_parse_gives_identical_content(real_logs):
    """The parallel path (this process plus `python -m pipeline.ingest.worker`, claiming blocks in turn), the
    serial path, and the serial path that tries every sidecar on disk instead of looking it up in the scan's
    listing produce the same tables, row for row and in the same order."""
    from pipeline.ingest.folder import ingest_folder
    from pipeline.ingest.parse import parse_files
    from pipeline.ingest.scan import scan_folder
    from pipeline.io.storage import content_hash

    for folder in (SAMPLE_DIR, real_logs):
        serial, parallel = ingest_folder(folder, workers=1), ingest_folder(folder, workers=2)
        probing = parse_files(folder, scan_folder(folder).rel, workers=1, listed=None)
        for other in (parallel, probing):
            for part in ("runs", "rejects", "files"):
                assert content_hash(getattr(serial, part)) == content_hash(getattr(other, part)), (folder, part)
                assert getattr(serial, part).column("source_file").equals(getattr(other, part).column("source_file"))


def test_metrics_check_catches_a_run_lost_in_a_join_but_not_a_date_not_yet_materialized(sample_run_copy):
    """A date whose run_metrics are not written yet (another run is between its validation and its metrics)
    passes; a validated run missing from a date that has metrics fails, one missing row per price book."""
    from pipeline.defs.metrics.checks import metrics_finite_and_positive
    from pipeline.defs.resources import Warehouse

    run = sample_run_copy
    warehouse = Warehouse(database=str(run.db_path))
    assert metrics_finite_and_positive(warehouse=warehouse).passed
    with duckdb.connect(str(run.db_path)) as conn:
        books = conn.execute("select count(distinct price_book) from price_books").fetchone()[0]
        conn.execute("delete from run_metrics where run_date_partition = 'undated'")
    assert metrics_finite_and_positive(warehouse=warehouse).passed
    with duckdb.connect(str(run.db_path)) as conn:
        lost = conn.execute("select min(run_id) from run_metrics where run_date_partition = '2026-07-14'").fetchone()
        conn.execute("delete from run_metrics where run_id = ?", lost)
    result = metrics_finite_and_positive(warehouse=warehouse)
    assert not result.passed and result.metadata["missing_run_book_rows"].value == books > 0


def test_accepted_runs_metadata_counts_what_the_warehouse_holds(sample_run):
    """``validate/accepted_runs`` stores its rows straight from the raw table through a mask (no copy of the
    accepted rows is made): its row count and preview still describe the accepted runs, not the raw ones."""
    # one event per run date, each carrying the metadata of the one call that did every date
    materializations = [e.event_specific_data.materialization for e in sample_run.result.all_events
                        if e.event_type_value == "ASSET_MATERIALIZATION"
                        and e.asset_key.to_user_string() == "validate/accepted_runs"]
    assert len({m.metadata["dagster/row_count"].value for m in materializations}) == 1
    materialization = materializations[0]
    with duckdb.connect(str(sample_run.db_path), read_only=True) as conn:
        stored = conn.execute("select count(*) from validated_runs").fetchone()[0]
        raw = conn.execute("select count(*) from raw_runs").fetchone()[0]
        rejected = conn.execute("select count(*) from validation_rejects").fetchone()[0]
        first = [row[0] for row in conn.execute("select source_file from validated_runs limit 12").fetchall()]
    assert stored == materialization.metadata["dagster/row_count"].value == raw - rejected and rejected > 0
    # the preview's rows are the first accepted runs, in the order stored (source_file is its first column)
    lines = materialization.metadata["preview"].value.splitlines()
    shown = [line.split("|")[1].strip() for line in lines[2:] if line.startswith("|")]
    assert shown == first


def test_a_run_from_a_snapshot_streams_its_runs_and_writes_what_a_scan_writes(tmp_path, monkeypatch):
    """The ingest of a run started from a scan (the run tag ``pipeline/raw_snapshot``) streams the runs from the
    parse cache into the warehouse without loading the cache whole, and writes the rows, rejects and files a scan
    of the folder gives; a snapshot the cache no longer holds is scanned instead, with the same rows."""
    import shutil

    import dagster as dg

    import pipeline.ingest.folder as folder
    from pipeline.defs.ingest.assets import IngestConfig, raw_runs
    from pipeline.defs.partitions import discover_partitions, register_partitions
    from pipeline.defs.resources import SNAPSHOT_TAG, PipelinePaths, Warehouse
    from pipeline.ingest.folder import ingest_folder
    from pipeline.io.storage import content_hash, read_table

    raw = tmp_path / "raw"
    shutil.copytree(SAMPLE_DIR, raw)
    paths = PipelinePaths(raw_dir=str(raw), out_dir=str(tmp_path / "marts"), cache_dir=str(tmp_path / "cache"))
    expected = ingest_folder(raw)
    for snapshot_held in (True, False):
        keys, snapshot = discover_partitions(paths.raw_dir, paths.cache_dir)
        if not snapshot_held:
            (tmp_path / "cache" / "runs.arrow").unlink()  # a cache that no longer holds the tick's state
        instance = dg.DagsterInstance.ephemeral()
        keys = register_partitions(instance, keys)
        context = dg.build_asset_context(instance=instance, partition_key_range=dg.PartitionKeyRange(keys[0], keys[-1]),
                                         run_tags={SNAPSHOT_TAG: snapshot})
        warehouse = Warehouse(database=str(tmp_path / f"warehouse-{snapshot_held}.duckdb"))
        with monkeypatch.context() as patched:
            if snapshot_held:
                patched.setattr(folder, "load_cache", lambda *args: pytest.fail("loaded the cache whole"))
            raw_runs(context, config=IngestConfig(), warehouse=warehouse, paths=paths)
        with warehouse.get_connection() as conn:
            for table, rows in (("raw_runs", expected.runs), ("raw_rejects", expected.rejects),
                                ("raw_files", expected.files)):
                assert content_hash(read_table(conn, table)) == content_hash(rows), (table, snapshot_held)
