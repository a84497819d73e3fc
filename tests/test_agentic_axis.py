"""The agentic x-axis holds the statistic its label names (docs/metrics.md section 4a).

E2E-normalized interactivity is 1 / p90 over requests of (E2EL_i / OSL_i), from per-request records; mean OSL /
p90 E2EL is another number, kept in its own column (``mean_osl_over_p90_e2el``) and label. ``x_intvty_stat`` names
what ``x_intvty`` holds; a frontier never mixes two statistics and two sides on different ones are not compared.

The real run: InferenceX AgentX, Kimi-K2.7 MXFP4, vLLM TP4 on mi355x, conc 1 (GitHub Actions run 29003473063). Its
aggregate row is the shared real log ``inferencex/ix_agentx_kimik2.7_tp4_conc1_kvnone_mi355x.json`` and its AIPerf
records, trimmed to their first 26 lines (1 warmup + 25 of the 195 profiling records), are
``tests/fixtures/agentx_records/profile_export.jsonl`` (tests/fixtures/PROVENANCE.md). Expected numbers are worked
out here from the files with ``json`` and ``numpy``, never by the code under test.
"""

import json
import re
import shutil
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from conftest import unrestricted

from pipeline.comparisons.compare import compare
from pipeline.comparisons.plots import x_axis_label
from pipeline.frontiers.points import build_frontiers, frontiers_by_side
from pipeline.frontiers.sides import Comparison, Side
from pipeline.ingest.requests import REQUEST_SCHEMA, read_run_requests
from pipeline.metrics.request_stats import request_stats_view
from pipeline.io.storage import write_table

REPO = Path(__file__).resolve().parents[1]
RECORDS = REPO / "tests" / "fixtures" / "agentx_records" / "profile_export.jsonl"
AGG = "inferencex/ix_agentx_kimik2.7_tp4_conc1_kvnone_mi355x.json"
OTHER_AGG = "inferencex/ix_agentx_kimik2.7_tp8_conc16_lmcache_mi355x.json"  # 1 errored request of 721
ARRAY = "inferencex/ajith_0601_agentx_kimik2.5_fp4_mi355x_vllm_agg_bmk.json"
B200_ARRAY = "inferencex/ajith_0603_agentx_kimik2.5_fp4_b200_vllm_lmcache_agg_bmk.json"
DEF, STANDIN = "e2e_norm_intvty_p90", "mean_osl_over_p90_e2el"


def _hand_definition(path: Path) -> tuple[float, int]:
    """1 / numpy.percentile(E2EL_i / OSL_i, 90) over the profiling records without an error and with OSL > 0 (as
    InferenceX's utils/agentic/aggregation/request_metrics.py takes them), and how many records that is."""
    ratios = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if record["metadata"].get("benchmark_phase") == "warmup" or record.get("error"):
            continue
        metrics = record["metrics"]
        assert metrics["request_latency"]["unit"] == "ms"
        osl = metrics["output_sequence_length"]["value"]
        if osl > 0:
            ratios.append(metrics["request_latency"]["value"] / 1000 / osl)
    return 1 / float(np.percentile(ratios, 90)), len(ratios)


def _paired_row(real_logs: Path) -> dict:
    """The real aggregate row with its request counts set to the trimmed records' (26 records: 1 warmup, 25
    profiled, no errors); every other number is the row's own. The full file's 196 records would match the row's
    own counts (195 profiled), but the fixture keeps 25 of them."""
    row = json.loads((real_logs / AGG).read_text())
    row["num_requests_total"], row["num_requests_successful"] = 26, 25
    row["request_accounting"].update(records_total=26, records_profiled=25, records_dropped_total=1)
    return row


# ---- reading the records ---------------------------------------------------------------------------------------

def test_agentx_records_beside_a_single_run_file_are_its_requests(real_logs, tmp_path):
    folder = tmp_path / "raw" / "bmk_agentic_conc1"
    folder.mkdir(parents=True)
    shutil.copy(real_logs / AGG, folder / "agg.json")
    shutil.copy(RECORDS, folder / "profile_export.jsonl")
    run = {"source_file": "bmk_agentic_conc1/agg.json", "source_format": "inferencex_agentx", "source_row": 0,
           "completed": 25, "failed": 0}
    source = read_run_requests(tmp_path / "raw", run)
    assert source.reason is None and source.requests_file == "bmk_agentic_conc1/profile_export.jsonl"
    assert len(source.rows) == 25  # the warmup record (line 1) is skipped
    # line 2 of the file, the first profiling record: request_latency 2353.997281 ms, 2 output tokens
    assert source.rows[0]["e2el_s"] == pytest.approx(2.353997281, rel=1e-12)
    assert source.rows[0]["output_tokens"] == 2 and source.rows[0]["error"] is None
    # the count check applies: the real row counts 195 profiled requests, the trimmed file holds 25
    real = read_run_requests(tmp_path / "raw", {**run, "completed": 195})
    assert real.rows == [] and real.reason == "inconsistent:per_request_count"


def test_array_rows_and_ambiguous_folders_get_no_records(real_logs, tmp_path):
    raw = tmp_path / "raw"
    (raw / "array").mkdir(parents=True)
    shutil.copy(real_logs / ARRAY, raw / "array" / "agg_bmk.json")
    shutil.copy(RECORDS, raw / "array" / "profile_export.jsonl")
    for row in (0, 1):  # agg_bmk.json holds 20 runs: the records file is none of theirs
        source = read_run_requests(raw, {"source_file": "array/agg_bmk.json", "source_format": "inferencex_agentx",
                                         "source_row": row, "completed": 25, "failed": 0})
        assert source.requests_file is None and source.rows == []
    # two single-run files in one folder: whose records they are is not known
    (raw / "two").mkdir()
    shutil.copy(real_logs / AGG, raw / "two" / "a.json")
    shutil.copy(real_logs / OTHER_AGG, raw / "two" / "b.json")
    shutil.copy(RECORDS, raw / "two" / "profile_export.jsonl")
    source = read_run_requests(raw, {"source_file": "two/a.json", "source_format": "inferencex_agentx",
                                     "source_row": 0, "completed": 25, "failed": 0})
    assert source.rows == [] and source.reason == "ambiguous:per_request"
    assert "b.json" in source.detail


# ---- the statistic ---------------------------------------------------------------------------------------------

def test_request_stats_view_is_the_p90_of_ratios_by_hand():
    rows = [  # run a: four good requests, one errored, one with no output, one without a latency
        ("a", 0, 10.0, 100, None), ("a", 1, 4.0, 100, None), ("a", 2, 30.0, 200, None), ("a", 3, 1.0, 50, None),
        ("a", 4, None, 80, "timeout"), ("a", 5, 2.0, 0, None), ("a", 6, None, 10, None),
        ("b", 0, None, 5, "refused"),  # run b: no request counts: no row
    ]
    table = pa.Table.from_pylist([
        {"run_id": r, "request_index": i, "e2el_s": e, "output_tokens": n, "error": err, "run_date_partition": "undated"}
        for r, i, e, n, err in rows], schema=REQUEST_SCHEMA)
    conn = duckdb.connect()
    write_table(conn, "raw_requests", table)
    request_stats_view(conn)
    got = conn.sql("select run_id, e2e_norm_intvty_p90, e2e_norm_requests from run_request_stats").fetchall()
    # ratios 0.1, 0.04, 0.15, 0.02 s/token; p90 (linear, k = 3 · 0.9 = 2.7) = 0.1 + 0.7 · (0.15 − 0.1) = 0.135
    assert len(got) == 1 and got[0][0] == "a" and got[0][2] == 4
    assert got[0][1] == pytest.approx(1 / 0.135, rel=1e-12)
    assert got[0][1] == pytest.approx(1 / np.percentile([0.1, 0.04, 0.15, 0.02], 90), rel=1e-12)


def test_a_real_runs_records_give_the_definition_and_the_rows_the_stand_in(real_logs, tmp_path, run_pipeline):
    """Pipeline over real AgentX runs: the Kimi-K2.7 conc-1 run with its records (pairing: its real row, its counts
    set to the trimmed records') is placed on 1 / p90(E2EL / OSL) from its records; the Kimi-K2.5 rows of two real
    agg_bmk.json arrays (mi355x and b200; no records can be theirs) only have the stand-in, and their frontiers,
    comparison and page say so."""
    raw = tmp_path / "raw"
    (raw / "conc1").mkdir(parents=True)
    (raw / "conc1" / "agg.json").write_text(json.dumps(_paired_row(real_logs)))
    shutil.copy(RECORDS, raw / "conc1" / "profile_export.jsonl")
    (raw / "sweep").mkdir()
    shutil.copy(real_logs / ARRAY, raw / "sweep" / "agg_bmk.json")
    (raw / "b200").mkdir()
    shutil.copy(real_logs / B200_ARRAY, raw / "b200" / "agg_bmk.json")
    run = run_pipeline(raw)
    assert run.result.success
    runs = [r for r in run.mart("runs").to_pylist() if r["price_book"] == "inferencex-seed"]
    (mine,) = [r for r in runs if r["source_file"] == "conc1/agg.json"]
    swept = [r for r in runs if r["source_file"] == "sweep/agg_bmk.json"]

    expected, used = _hand_definition(RECORDS)
    assert used == 25
    assert mine["e2e_norm_intvty_p90"] == pytest.approx(expected, rel=1e-12)  # 3.8788 tok/s/user
    assert mine["e2e_norm_intvty_source"] == "requests:p90(e2el/osl)"
    assert (mine["x_intvty"], mine["x_intvty_stat"]) == (mine["e2e_norm_intvty_p90"], "e2e_norm_intvty_p90")
    # the row's stand-in stays beside it under its own name: 1092.39487 tokens / 77.60141 s = 14.077 tok/s/user
    assert mine["mean_osl_over_p90_e2el"] == pytest.approx(1092.39487 / 77.60141, rel=1e-12)
    assert mine["mean_osl_over_p90_e2el"] > 3 * mine["e2e_norm_intvty_p90"]
    requests = [r for r in run.mart("requests").to_pylist() if r["run_id"] == mine["run_id"]]
    assert len(requests) == 25

    rows = json.loads((real_logs / ARRAY).read_text())
    assert swept and len(swept) <= len(rows)
    for r in swept:
        row = rows[r["source_row"]]
        assert r["e2e_norm_intvty_p90"] is None and r["e2e_norm_intvty_source"] is None
        assert r["mean_osl_over_p90_e2el"] == pytest.approx(row["mean_output_tokens_actual"] / row["p90_e2el"],
                                                            rel=1e-12)
        assert (r["x_intvty"], r["x_intvty_stat"]) == (r["mean_osl_over_p90_e2el"], "mean_osl_over_p90_e2el")

    # Kimi-K2.5 mi355x vs b200: both sides on the stand-in, compared on it and labelled as it
    frontiers = unrestricted(run.mart("frontiers")).to_pylist()
    assert frontiers and {(p["model"], p["x_intvty_stat"]) for p in frontiers} == {("kimik2.5", STANDIN)}
    comparisons = unrestricted(run.mart("comparisons")).to_pylist()
    assert comparisons and {c["x_intvty_stat"] for c in comparisons} == {STANDIN}
    pages = [p for p in (run.out_dir / "current" / "report").rglob("*.html")
             if p.name not in ("index.html", "explorer.html")]
    text = "".join(p.read_text(encoding="utf-8") for p in pages)
    assert pages and "mean OSL / p90 E2EL (tok/s/user; a stand-in" in text
    assert "E2E-normalized interactivity (tok/s/user, 1 / p90(E2EL/OSL))" not in text
    # the explorer: the Kimi-K2.5 sides on the stand-in, titled as it, a workload apart from the Kimi-K2.7 run on
    # the definition (one chart never mixes the two statistics)
    explorer = (run.out_dir / "current" / "report" / "explorer.html").read_text(encoding="utf-8")
    data = json.loads(re.search(r'id="explorer-data">(.*?)</script>', explorer, re.S).group(1))
    labels = {w["key"]: w["x_label"] for w in data["workloads"]}
    assert labels["kimik2.5|agentic_traces|mean_osl_over_p90_e2el"].startswith(
        "mean OSL / p90 E2EL (tok/s/user; a stand-in")
    assert labels[f"{mine['model']}|agentic_traces"] == "E2E-normalized interactivity (tok/s/user, 1 / p90(E2EL/OSL))"


# ---- frontiers, comparisons, labels ----------------------------------------------------------------------------

def _agentic(i, x, y, stat, hw="mi355x", line=None, conc=None):
    return {"run_id": f"r{i}", "price_book": "book", "price_book_version": "v1", "spec_metric_source": None,
            "measured_tok_s_per_mw": None, "source_file": f"f{i}", "model": "kimik2.7", "isl": None, "osl": None,
            "hw": hw, "precision": "fp4", "spec_decoding": "none", "framework": "vllm", "conc": conc or i + 1,
            "median_intvty": None, "x_intvty": x, "x_intvty_stat": stat, "benchmark_type": "agentic_traces",
            "tput_per_gpu": y, "output_tput_per_gpu": y / 2, "input_tput_per_gpu": y / 2,
            "cost_per_mtok_hyperscaler": 1e6 / y, "cost_per_mtok_neocloud": 1e6 / y, "cost_per_mtok_rental": 1e6 / y,
            **{f"{d}_cost_per_mtok_{t}": 2e6 / y for d in ("output", "input") for t in ("hyperscaler", "neocloud", "rental")},
            "tok_s_per_mw": y, "length_off_nominal": False, "run_date": None, "line_id": line or f"line{i}",
            "sweep_id": "undated"}


def test_a_frontier_never_mixes_statistics():
    side = Side("kimik2.7", None, None, "mi355x", "fp4", benchmark_type="agentic_traces")
    runs = [_agentic(0, 4.0, 900.0, DEF), _agentic(1, 8.0, 500.0, DEF),
            # on the stand-in: would dominate both definition points if it were drawn on their axis
            _agentic(2, 14.0, 950.0, STANDIN),
            # a repeat group (same line, sweep, conc) whose repeats mix the two: left out whole
            _agentic(3, 6.0, 700.0, DEF, line="lineR", conc=7), _agentic(4, 12.0, 720.0, STANDIN, line="lineR", conc=7)]
    (points, *_), = [frontiers_by_side(build_frontiers(runs, [side]).to_pylist()).values()]
    assert [(p["run_id"], p["x_intvty"], p["x_intvty_stat"]) for p in points] == [("r0", 4.0, DEF), ("r1", 8.0, DEF)]
    assert (points[0]["side_runs"], points[0]["excluded_runs"]) == (2, 3)  # r2, and both repeats of lineR
    assert (points[0]["side_intvty_min"], points[0]["side_intvty_max"]) == (4.0, 8.0)
    # a side on the stand-in alone is drawn on it, and says so
    only = build_frontiers([_agentic(2, 14.0, 950.0, STANDIN), _agentic(5, 20.0, 400.0, STANDIN)], [side]).to_pylist()
    assert [(p["x_intvty"], p["x_intvty_stat"], p["excluded_runs"]) for p in only] == [
        (14.0, STANDIN, 0), (20.0, STANDIN, 0)]


def test_sides_on_different_statistics_are_not_compared():
    a = Side("kimik2.7", None, None, "mi355x", "fp4", benchmark_type="agentic_traces")
    b = Side("kimik2.7", None, None, "b200", "fp4", benchmark_type="agentic_traces")
    comparison = Comparison("hardware", a, b, "MI355X", "B200")
    definition = [_agentic(0, 4.0, 900.0, DEF), _agentic(1, 8.0, 500.0, DEF)]
    on_b = [_agentic(10, 5.0, 800.0, STANDIN, hw="b200"), _agentic(11, 9.0, 300.0, STANDIN, hw="b200")]
    frontiers = frontiers_by_side(build_frontiers(definition + on_b, [a, b]).to_pylist())
    assert compare(comparison, frontiers) == []
    # the same statistic on both sides: compared, and every row says which
    same = [dict(r, x_intvty_stat=DEF) for r in on_b]
    rows = compare(comparison, frontiers_by_side(build_frontiers(definition + same, [a, b]).to_pylist()))
    assert rows and {r["x_intvty_stat"] for r in rows} == {DEF}


def test_axis_labels_name_the_statistic_plotted():
    assert x_axis_label(DEF, agentic=True) == "E2E-normalized interactivity (tok/s/user, 1 / p90(E2EL/OSL))"
    standin = x_axis_label(STANDIN, agentic=True)
    assert standin.startswith("mean OSL / p90 E2EL (tok/s/user") and "not the dashboard's" in standin
    assert "E2E-normalized interactivity (" not in standin
    assert x_axis_label("median_intvty") == "Interactivity (tok/s/user, median)"
    assert "E2E-normalized" not in x_axis_label(None, agentic=True)  # a row that does not say: no claim


def test_run_metrics_prefers_the_definition_and_names_the_statistic():
    """sql/run_metrics.sql on hand-built runs and requests: the row's dashboard value first, then the records'
    statistic, then the stand-in; a fixed-sequence run with records gets the column but keeps its median axis."""
    from pipeline.ingest.schema import RUN_COLUMNS, RUN_SCHEMA
    from pipeline.io.paths import sql_text
    from pipeline.metrics.power import POWER_SCHEMA
    from pipeline.metrics.reference import build_price_books, load_gpu_reference

    base = {"run_date_partition": "undated", "model": "m", "hw": "mi355x", "tp": 4, "framework": "vllm",
            "precision": "fp4", "spec_decoding": "none", "conc": 4, "disagg": False, "total_tput_tok_s": 4000.0,
            "completed": 4, "failed": 0}
    agentic = {"benchmark_type": "agentic_traces", "mean_osl_over_p90_e2el": 14.0}
    runs = [("dash", {**agentic, "e2e_norm_intvty_p90": 9.0, "e2e_norm_intvty_source": "dashboard:p90_e2e_norm_intvty"}),
            ("recs", agentic), ("alone", agentic),
            ("fixed", {"benchmark_type": "fixed_seq", "isl": 1024, "osl": 1024, "median_tpot_s": 0.02,
                       "median_intvty": 50.0})]
    rows = []
    for name, values in runs:
        row = dict.fromkeys(RUN_COLUMNS)
        row.update(base, source_file=f"{name}.json", source_row=0, run_id=name, **values)
        rows.append(row)
    # ratios 0.1, 0.04, 0.15, 0.02 s/token: p90 0.135, so 1 / 0.135 = 7.407 tok/s/user
    requests = [{"run_id": run_id, "request_index": i, "e2el_s": e, "output_tokens": n, "error": None,
                 "run_date_partition": "undated"}
                for run_id in ("dash", "recs", "fixed") for i, (e, n) in enumerate(((10.0, 100), (4.0, 100),
                                                                                    (30.0, 200), (1.0, 50)))]
    conn = duckdb.connect()
    write_table(conn, "validated_runs", pa.Table.from_pylist(rows, schema=RUN_SCHEMA))
    write_table(conn, "price_books", build_price_books(load_gpu_reference(), []))
    write_table(conn, "run_power", POWER_SCHEMA.empty_table())
    write_table(conn, "raw_requests", pa.Table.from_pylist(requests, schema=REQUEST_SCHEMA))
    conn.execute(sql_text("run_gpu_counts"))
    conn.execute(sql_text("run_lengths"))
    request_stats_view(conn)
    got = {r["run_id"]: r for r in conn.sql(sql_text("run_metrics"), params={"partition_keys": ["undated"]})
           .to_arrow_table().to_pylist()}
    columns = ("e2e_norm_intvty_p90", "e2e_norm_intvty_source", "x_intvty", "x_intvty_stat", "mean_osl_over_p90_e2el")
    assert tuple(got["dash"][c] for c in columns) == (9.0, "dashboard:p90_e2e_norm_intvty", 9.0, DEF, 14.0)
    recs = tuple(got["recs"][c] for c in columns)
    assert recs[1:] == ("requests:p90(e2el/osl)", recs[0], DEF, 14.0) and recs[0] == pytest.approx(1 / 0.135)
    assert tuple(got["alone"][c] for c in columns) == (None, None, 14.0, STANDIN, 14.0)
    fixed = tuple(got["fixed"][c] for c in columns)
    assert fixed[1:] == ("requests:p90(e2el/osl)", 50.0, "median_intvty", None)
    assert fixed[0] == pytest.approx(1 / 0.135)
