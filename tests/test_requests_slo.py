"""Per-request data, SLO attainment, goodput, and frontiers/comparisons restricted to runs meeting an SLO.

Expected numbers are written out by hand in each test (from the fixture's own values), never computed by the code
under test."""

import json
import os
import shutil
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from pipeline.ingest import requests as per_request
from pipeline.ingest.parsers import read_path
from pipeline.ingest.requests import read_run_requests, requests_tables
from pipeline.io.paths import sql_text
from pipeline.io.storage import write_table
from pipeline.metrics.slo import SloError, load_slos

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"
AIPERF_RECORDS = FIXTURES / "aiperf_records" / "profile_export.jsonl"
GUIDELLM = FIXTURES / "guidellm" / "Qwen_Qwen3-4B-Thinking-2507_tp4_quant-fp8_benchmarks.json"


# ---- readers --------------------------------------------------------------------------------------------------

def test_aiperf_records_read_from_the_real_export(tmp_path):
    """The trimmed real AIPerf export (2 cancelled requests, 6 successful): units converted from ms, errors kept."""
    folder = tmp_path / "raw" / "run1"
    folder.mkdir(parents=True)
    shutil.copy(AIPERF_RECORDS, folder / "profile_export.jsonl")
    run = {"source_file": "run1/profile_export_aiperf.json", "source_format": "aiperf", "source_row": 0,
           "completed": 6, "failed": 2}
    source = read_run_requests(tmp_path / "raw", run)
    assert source.reason is None and source.requests_file == "run1/profile_export.jsonl"
    rows = source.rows
    assert len(rows) == 8
    assert [r["error"] is not None for r in rows] == [True, True] + [False] * 6
    assert "RequestCancellationError" in rows[0]["error"] and rows[0]["ttft_s"] is None
    first = rows[2]  # line 12 of the original file: ttft 1680.543782 ms, request_latency 7936.968269 ms
    assert first["ttft_s"] == pytest.approx(1.680543782, rel=1e-12)
    assert first["e2el_s"] == pytest.approx(7.936968269, rel=1e-12)
    assert first["tpot_s"] == pytest.approx(0.032585544203124996, rel=1e-12)
    assert (first["input_tokens"], first["output_tokens"]) == (550, 193)
    gaps = json.loads(AIPERF_RECORDS.read_text().splitlines()[2])["metrics"]["inter_chunk_latency"]["value"]
    assert first["itl_p50_s"] == pytest.approx(np.percentile(gaps, 50) / 1000, rel=1e-12)
    # the count check: the summary says 5 + 2 requests, the export holds 8
    bad = read_run_requests(tmp_path / "raw", {**run, "completed": 5})
    assert bad.rows == [] and bad.reason == "inconsistent:per_request_count"


def test_aiperf_export_in_the_raw_folder_is_a_ledger_row_not_a_run():
    readout = read_path(AIPERF_RECORDS)
    assert readout.kind == "per_request_records" and readout.runs == []
    assert [r.reason_code for r in readout.rejects] == ["not_a_run_log:per_request_records"]


def test_guidellm_requests_from_the_real_report(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    shutil.copy(GUIDELLM, raw / "bench.json")
    run = {"source_file": "bench.json", "source_format": "guidellm", "source_row": 0, "completed": 4, "failed": 0}
    rows = read_run_requests(raw, run).rows
    assert len(rows) == 4
    # the first successful request of the file: 171.52166366577148 ms TTFT, 24.32254352606833 ms TPOT, 24.9 s
    assert rows[0]["ttft_s"] == pytest.approx(0.17152166366577148, rel=1e-12)
    assert rows[0]["tpot_s"] == pytest.approx(0.02432254352606833, rel=1e-12)
    assert rows[0]["e2el_s"] == pytest.approx(24.90786051750183, rel=1e-12)
    assert (rows[0]["input_tokens"], rows[0]["output_tokens"], rows[0]["error"]) == (81, 1024, None)


def _vllm_detailed(n: int = 4) -> dict:
    return {"completed": n, "failed": 0, "max_concurrency": 2, "duration": 10.0, "median_tpot_ms": 10.0,
            "ttfts": [0.1 * (i + 1) for i in range(n)], "itls": [[0.01, 0.02, 0.03] for _ in range(n)],
            "input_lens": [100] * n, "output_lens": [4] * n, "errors": [""] * n}


def test_vllm_arrays_and_the_streamed_path_agree(tmp_path, monkeypatch):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(_vllm_detailed()))
    run = {"source_file": "r.json", "source_format": "vllm_bench_serve", "source_row": 0, "completed": 4, "failed": 0}
    small = read_run_requests(tmp_path, run)
    # request 0: ttft 0.1, gaps 0.01 + 0.02 + 0.03 → e2el 0.16; tpot (0.16 − 0.1) / (4 − 1) = 0.02
    assert small.rows[0]["e2el_s"] == pytest.approx(0.16) and small.rows[0]["tpot_s"] == pytest.approx(0.02)
    assert small.rows[0]["itl_p50_s"] == pytest.approx(0.02) and small.rows[0]["itl_p99_s"] == pytest.approx(0.0298)
    monkeypatch.setattr(per_request, "LARGE_FILE_BYTES", 10)  # every file is "large": streamed with ijson
    streamed = read_run_requests(tmp_path, run)
    assert streamed.rows == small.rows


@pytest.mark.parametrize("large", [False, True])
def test_bad_per_request_arrays_are_a_named_reason_not_a_crash(tmp_path, monkeypatch, large):
    if large:
        monkeypatch.setattr(per_request, "LARGE_FILE_BYTES", 10)
    run = {"source_file": "r.json", "source_format": "vllm_bench_serve", "source_row": 0, "completed": 4, "failed": 0}
    short = _vllm_detailed()
    short["output_lens"] = [4, 4, 4]
    (tmp_path / "r.json").write_text(json.dumps(short))
    assert read_run_requests(tmp_path, run).reason == "length_mismatch:per_request"
    text = _vllm_detailed()
    text["ttfts"][2] = "fast"
    (tmp_path / "r.json").write_text(json.dumps(text))
    source = read_run_requests(tmp_path, run)
    assert (source.reason, source.rows) == ("not_a_number:per_request", [])
    requests, sources = requests_tables(tmp_path, [{**run, "run_id": "r", "run_date_partition": "undated"}])
    assert requests.num_rows == 0 and sources.column("requests_reason").to_pylist() == ["not_a_number:per_request"]


def test_sglang_json_lines_pick_the_run_line(tmp_path):
    lines = [_vllm_detailed(2), _vllm_detailed(3)]
    (tmp_path / "s.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    run = {"source_file": "s.jsonl", "source_format": "sglang_bench_serving", "source_row": 1, "completed": 3,
           "failed": 0}
    assert [r["ttft_s"] for r in read_run_requests(tmp_path, run).rows] == pytest.approx([0.1, 0.2, 0.3])
    # SGLang writes bare NaN: the line still decodes (as the run parser reads it), the NaN is a named reason
    (tmp_path / "n.jsonl").write_text(json.dumps(lines[0]) + "\n" + json.dumps({**lines[1], "ttfts": [0.1, float("nan"), 0.3]}) + "\n")
    source = read_run_requests(tmp_path, {**run, "source_file": "n.jsonl"})
    assert (source.reason, source.rows) == ("not_a_number:per_request", [])


# ---- SLOs: the table, attainment and goodput in SQL, by hand -------------------------------------------------

def test_slo_table_rules(tmp_path):
    path = tmp_path / "slos.csv"
    path.write_text("name,ttft_s,tpot_s,e2el_s,min_attainment,description\nfast,0.5,,,,x\n")
    row = load_slos(path).to_pylist()[0]
    assert (row["ttft_s"], row["tpot_s"], row["e2el_s"], row["min_attainment"]) == (0.5, None, None, 0.99)
    for bad in ("none,1,,,,", "a,,,,,", "a,-1,,,,", "a,1,,,1.5,", "a,1,,,,\na,2,,,,"):
        path.write_text("name,ttft_s,tpot_s,e2el_s,min_attainment,description\n" + bad + "\n")
        with pytest.raises(SloError):
            load_slos(path)
    assert [r["name"] for r in load_slos(REPO / "data" / "reference" / "slos.csv").to_pylist()] == \
        ["interactive", "batch"]


HEADER = "name,ttft_s,tpot_s,e2el_s,min_attainment,description\n"


def _slo_error(path: Path, text: str) -> str:
    path.write_text(text)
    with pytest.raises(SloError) as caught:
        load_slos(path)
    return str(caught.value)


_NAME_ERROR = "is empty, not [a-z0-9_]+, 'none' (reserved) or given twice"


# (the file's text, the message after the file's path); the header is line 1, so the first row is line 2
@pytest.mark.parametrize("text, message", [
    (HEADER + "fast,0.5,,,,\nslow,x,,,,\n", " line 3, column ttft_s: 'x' is not a number"),
    (HEADER + "fast,0.5,,,zz,\n", " line 2, column min_attainment: 'zz' is not a number"),
    # 0 is not positive (a bound of 0 s could never be met)
    (HEADER + "fast,,0,,,\n", " line 2, column tpot_s: must be a positive finite number, got '0'"),
    (HEADER + "fast,,,inf,,\n", " line 2, column e2el_s: must be a positive finite number, got 'inf'"),
    (HEADER + "fast,1,,,1.5,\n", " line 2, column min_attainment: must be in (0, 1], got 1.5"),
    (HEADER + "fast,,,,0.9,no bound\n", " line 2: SLO 'fast' bounds none of ttft_s, tpot_s, e2el_s"),
    (HEADER + ",1,,,,\n", f" line 2, column name: '' {_NAME_ERROR}"),
    (HEADER + "a,1,,,,\nnone,1,,,,\n", f" line 3, column name: 'none' {_NAME_ERROR}"),
    # the columns are checked before any row; sorted, the missing ones are e2el_s and tpot_s
    ("name,ttft_s,description\na,1,x\n", ": missing columns ['e2el_s', 'tpot_s']"),
    ("", ": missing columns ['e2el_s', 'name', 'tpot_s', 'ttft_s']"),
])
def test_slo_table_errors_name_the_file_line_and_column(tmp_path, text, message):
    path = tmp_path / "slos.csv"
    assert _slo_error(path, text) == f"{path}{message}"


def test_slo_table_values_description_and_schema(tmp_path):
    path = tmp_path / "slos.csv"
    path.write_text(HEADER + "fast,0.5,0.02,,1, first token fast \nslow,,,30,0.9,\n")
    table = load_slos(path)
    assert table.schema == pa.schema([("name", pa.string()), ("ttft_s", pa.float64()), ("tpot_s", pa.float64()),
                                      ("e2el_s", pa.float64()), ("min_attainment", pa.float64()),
                                      ("description", pa.string())])
    # a min_attainment of exactly 1 (every request) is allowed; the description is stripped, empty is null
    assert table.to_pylist() == [
        {"name": "fast", "ttft_s": 0.5, "tpot_s": 0.02, "e2el_s": None, "min_attainment": 1.0,
         "description": "first token fast"},
        {"name": "slow", "ttft_s": None, "tpot_s": None, "e2el_s": 30.0, "min_attainment": 0.9,
         "description": None}]


def _slo_warehouse() -> duckdb.DuckDBPyConnection:
    """One per-request run (tp 2, 10 s, 8 requests) and two summary-only runs, two SLOs."""
    conn = duckdb.connect()
    runs = pa.table({
        "run_id": ["req", "sum_a", "sum_b"], "model": ["m"] * 3, "run_date": pa.array([None] * 3, pa.date32()),
        "run_date_partition": ["undated"] * 3, "duration_s": [10.0, 5.0, 5.0],
        "p99_ttft_s": [9.0, 0.19, 0.19], "p99_tpot_s": [9.0, 0.021, 0.019], "p99_e2el_s": [None, None, 29.0],
        "tp": [2, 1, 1], "pp": [None] * 3, "pcp": [None] * 3, "disagg": [False] * 3,
        "num_prefill_gpu": pa.array([None] * 3, pa.int32()), "num_decode_gpu": pa.array([None] * 3, pa.int32())})
    write_table(conn, "validated_runs", runs)
    # index: ttft, tpot, e2el, output tokens, error
    requests = [(0.1, 0.01, 1.1, 101, None), (0.3, 0.01, 1.3, 101, None), (0.1, 0.03, 3.1, 101, None),
                (None, None, None, 0, "timeout"), (0.15, 0.015, 40.0, 50, None), (0.2, 0.02, 2.2, 101, None),
                (0.1, None, 0.1, 1, None), (0.05, 0.005, 0.55, 101, None)]
    write_table(conn, "raw_requests", pa.table({
        "run_id": ["req"] * 8, "request_index": pa.array(range(8), pa.int32()),
        "ttft_s": [r[0] for r in requests], "tpot_s": [r[1] for r in requests], "e2el_s": [r[2] for r in requests],
        "itl_p50_s": pa.array([None] * 8, pa.float64()), "itl_p99_s": pa.array([None] * 8, pa.float64()),
        "input_tokens": [10] * 8, "output_tokens": [r[3] for r in requests], "error": [r[4] for r in requests],
        "run_date_partition": ["undated"] * 8}))
    write_table(conn, "slos", pa.table({"name": ["tight", "loose"], "ttft_s": [0.2, None], "tpot_s": [0.02, None],
                                        "e2el_s": [None, 30.0], "min_attainment": [0.5, 0.9],
                                        "description": ["", ""]}))
    conn.execute(sql_text("run_gpu_counts"))
    return conn


def test_attainment_and_goodput_equal_a_hand_computation():
    conn = _slo_warehouse()
    rows = {(r["run_id"], r["slo"]): r for r in conn.sql(
        sql_text("run_slo"), params={"partition_keys": ["undated"]}).to_arrow_table().to_pylist()}
    # tight (TTFT ≤ 0.2 s and TPOT ≤ 0.02 s): requests 0, 4, 5 (both bounds met with equality), 7 meet;
    # 1 (TTFT 0.3), 2 (TPOT 0.03), 3 (error) and 6 (TPOT unknown) fail → 4 / 8 = 0.5 ≥ 0.5: met.
    # goodput: (101 + 50 + 101 + 101) tokens / 10 s / 2 GPUs = 17.65 tok/s/GPU
    tight = rows[("req", "tight")]
    assert (tight["slo_basis"], tight["requests"], tight["requests_meeting_slo"]) == ("per_request", 8, 4)
    assert tight["slo_attainment"] == 0.5 and tight["slo_met"] is True
    assert tight["goodput_tok_s_per_gpu"] == pytest.approx(17.65, rel=1e-12)
    # loose (E2EL ≤ 30 s): 0, 1, 2, 5, 6, 7 meet; 3 (error) and 4 (40 s) fail → 6 / 8 = 0.75 < 0.9: not met.
    # goodput: (5 × 101 + 1) / 10 / 2 = 25.3
    loose = rows[("req", "loose")]
    assert (loose["requests_meeting_slo"], loose["slo_attainment"], loose["slo_met"]) == (6, 0.75, False)
    assert loose["goodput_tok_s_per_gpu"] == pytest.approx(25.3, rel=1e-12)
    # summary-only runs: p99 TPOT 0.021 > 0.02 fails tight; 0.019 passes; no p99 E2EL → unknown for loose
    assert {k[0]: (r["slo_basis"], r["slo_met"]) for k, r in rows.items() if k[1] == "tight" and k[0] != "req"} == \
        {"sum_a": ("p99_summary", False), "sum_b": ("p99_summary", True)}
    assert rows[("sum_a", "loose")]["slo_met"] is None and rows[("sum_b", "loose")]["slo_met"] is True
    assert rows[("sum_a", "tight")]["goodput_tok_s_per_gpu"] is None and rows[("sum_a", "tight")]["requests"] is None


# ---- the whole pipeline: requests mart, run_slo, SLO-restricted frontiers and comparisons -------------------

OUT_LEN = 1024


def _vllm_run(conc: int, tpot_s: float, ttfts: list[float], duration_s: float) -> dict:
    """A vLLM --save-detailed result whose summary is the arrays' own statistics (ms keys, numpy percentiles)."""
    n = len(ttfts)
    itls = [[tpot_s] * (OUT_LEN - 1) for _ in range(n)]
    e2el = [t + tpot_s * (OUT_LEN - 1) for t in ttfts]
    doc = {"date": "20260701-101500", "backend": "vllm", "model_id": "deepseek-ai/DeepSeek-R1-0528",
           "num_prompts": n, "max_concurrency": conc, "duration": duration_s, "completed": n, "failed": 0,
           "total_input_tokens": n * 1024, "total_output_tokens": n * OUT_LEN,
           "request_throughput": n / duration_s, "output_throughput": n * OUT_LEN / duration_s,
           "total_token_throughput": n * (1024 + OUT_LEN) / duration_s,
           "input_lens": [1024] * n, "output_lens": [OUT_LEN] * n, "ttfts": ttfts, "itls": itls,
           "errors": [""] * n}
    for name, values in (("ttft", ttfts), ("tpot", [tpot_s] * n), ("itl", [tpot_s] * n), ("e2el", e2el)):
        array = np.asarray(values) * 1000
        doc.update({f"mean_{name}_ms": float(array.mean()), f"median_{name}_ms": float(np.median(array)),
                    f"std_{name}_ms": float(array.std()), f"p90_{name}_ms": float(np.percentile(array, 90)),
                    f"p99_{name}_ms": float(np.percentile(array, 99))})
    return doc


def _write_folder(raw: Path) -> None:
    """Two sides of dsr1 1k/1k on H200 fp8 vLLM TP 8, spec decoding none vs mtp, four concurrencies each, 2 × conc
    requests per run (two waves); the mtp run at conc 32 has 32 of its 64 requests with a 3 s TTFT."""
    for spec, speed in (("none", 1.0), ("mtp", 0.8)):
        for conc in (4, 8, 16, 32):
            tpot = speed * (0.01 + 0.001 * conc)
            ttfts = [0.2] * (2 * conc)
            if spec == "mtp" and conc == 32:
                ttfts = [3.0] * 32 + [0.2] * 32
            duration = 76.0 if (spec, conc) == ("mtp", 32) else round(2 * (max(ttfts) + tpot * OUT_LEN) + 1, 1)
            name = f"dsr1_h200_{spec}_conc{conc}.json"
            (raw / name).write_text(json.dumps(_vllm_run(conc, tpot, ttfts, duration)))
            (raw / f"{name}.meta.json").write_text(json.dumps({
                "model": "dsr1", "hw": "h200", "precision": "fp8", "tp": 8, "isl": 1024, "osl": 1024,
                "framework": "vllm", "spec_decoding": spec, "run_date": "2026-07-01"}))


@pytest.fixture(scope="module")
def slo_run(tmp_path_factory):
    """The folder above through the whole pipeline with a reference folder whose slos.csv holds ``fast_start``
    (TTFT ≤ 1 s: the mtp conc-32 run fails it) and ``anything`` (E2EL ≤ 1000 s: every run meets it)."""
    import dagster as dg

    from pipeline.__main__ import materialize_all

    tmp = tmp_path_factory.mktemp("slo-run")
    raw, reference = tmp / "raw", tmp / "reference"
    raw.mkdir()
    _write_folder(raw)
    shutil.copytree(REPO / "data" / "reference", reference)
    (reference / "slos.csv").write_text("name,ttft_s,tpot_s,e2el_s,min_attainment,description\n"
                                        "fast_start,1.0,,,0.99,first token within 1 s\n"
                                        "anything,,,1000,0.99,every run\n")
    with pytest.MonkeyPatch.context() as mp:
        for key, value in (("PIPELINE_RAW_DIR", raw), ("PIPELINE_OUT_DIR", tmp / "marts"),
                           ("PIPELINE_DB_PATH", tmp / "w.duckdb"), ("PIPELINE_REFERENCE_DIR", reference)):
            mp.setenv(key, str(value))
        assert materialize_all(dg.DagsterInstance.ephemeral()).success
    return tmp / "marts"


def test_requests_mart_is_partitioned_like_runs(slo_run):
    from pipeline.io.columns import MARTS
    from pipeline.io.storage import read_mart

    files = sorted(p.relative_to(slo_run / "requests").as_posix() for p in (slo_run / "requests").rglob("*.parquet"))
    assert files == ["dsr1/2026-07-01/part-0.parquet"]
    requests = read_mart(slo_run, "requests")
    assert requests.column_names == list(MARTS["requests"][2]) and requests.num_rows == 2 * 2 * (4 + 8 + 16 + 32)
    assert read_mart(slo_run, "runs").num_rows == 8  # every run accepted


def test_run_slo_of_the_failing_run_equals_a_hand_computation(slo_run):
    from pipeline.io.storage import read_mart

    slo = read_mart(slo_run, "run_slo").to_pylist()
    runs = {r["run_id"]: r["source_file"] for r in read_mart(slo_run, "runs").to_pylist()}
    by_file = {(runs[r["run_id"]], r["slo"]): r for r in slo}
    row = by_file[("dsr1_h200_mtp_conc32.json", "fast_start")]
    # 32 of 64 requests have TTFT 0.2 s ≤ 1 s: attainment 0.5 < 0.99, not met;
    # goodput = 32 × 1024 output tokens / 76 s / 8 GPUs = 32768 / 608 = 53.8947368… tok/s/GPU
    assert (row["slo_basis"], row["requests"], row["requests_meeting_slo"]) == ("per_request", 64, 32)
    assert row["slo_attainment"] == 0.5 and row["slo_met"] is False
    assert row["goodput_tok_s_per_gpu"] == pytest.approx(53.89473684210526, rel=1e-12)
    other = by_file[("dsr1_h200_mtp_conc32.json", "anything")]
    assert (other["slo_attainment"], other["slo_met"]) == (1.0, True)
    assert other["goodput_tok_s_per_gpu"] == pytest.approx(107.78947368421052, rel=1e-12)  # 65536 / 608
    assert sum(r["slo_met"] for r in slo if r["slo"] == "fast_start") == 7


def test_slo_restricted_comparison_differs_where_runs_fail_and_equals_where_none_do(slo_run):
    import pyarrow.parquet as pq

    # every run's rows alone in <name>.parquet (no slo column), the SLO-restricted rows in <name>_slo.parquet
    marts = {name: pq.read_table(slo_run / f"{name}.parquet") for name in ("comparisons", "frontiers")}
    assert all("slo" not in table.column_names for table in marts.values())
    comparisons, frontiers = (pa.concat_tables([
        marts[name].append_column("slo", pa.array(["none"] * marts[name].num_rows, pa.string())),
        pq.read_table(slo_run / f"{name}_slo.parquet")]) for name in ("comparisons", "frontiers"))
    assert "none" not in pq.read_table(slo_run / "comparisons_slo.parquet").column("slo").to_pylist()

    def rows(table, slo):
        part = table.filter(pc.equal(table["slo"], slo)).drop_columns(["slo"])
        return sorted(part.to_pylist(), key=lambda r: json.dumps(r, sort_keys=True, default=str))

    assert rows(comparisons, "none") and rows(comparisons, "anything") == rows(comparisons, "none")
    assert rows(frontiers, "anything") == rows(frontiers, "none")
    strict, base = rows(comparisons, "fast_start"), rows(comparisons, "none")
    assert strict != base
    # the mtp side lost its conc-32 run (the highest-throughput, lowest-interactivity point)
    side = [r for r in frontiers.to_pylist() if r["spec_decoding"] == "mtp"]
    assert max(r["concurrency"] for r in side if r["slo"] == "none") == 32
    assert max(r["concurrency"] for r in side if r["slo"] == "fast_start") == 16
    assert {r["side_runs"] for r in side if r["slo"] == "fast_start"} == {3}


def test_report_draws_a_latency_cdf_per_run_with_requests(slo_run):
    folder = slo_run / "report" / "requests"
    pngs = sorted(folder.glob("*.png"))
    assert len(pngs) == 8 and all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    assert max(p.stat().st_size for p in pngs) < 60_000
    page = (folder / "index.html").read_text()
    assert page.count("<img ") == 8 and "fast_start: 50.0 % of requests, not met" in page


@pytest.mark.parametrize("unit, scale", [("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3), ("s", 1.0), ("sec", 1.0)])
def test_aiperf_record_units_are_read_as_written(tmp_path, unit, scale):
    """Issue 41: only ``ms`` records were tested. One AIPerf record per unit, its TTFT 250, request latency 4000 and
    inter-token latency 15 in that unit: seconds are the value × the unit's size, whatever the unit."""
    import json as _json

    from pipeline.ingest.requests import read_run_requests

    (tmp_path / "profile_export_aiperf.json").write_text("{}")
    record = {"metadata": {"benchmark_phase": "profiling"},
              "metrics": {"ttft": {"value": 250, "unit": unit}, "request_latency": {"value": 4000, "unit": unit},
                          "inter_token_latency": {"value": 15, "unit": unit},
                          "input_sequence_length": {"value": 1024, "unit": "tokens"},
                          "output_sequence_length": {"value": 256, "unit": "tokens"}}}
    (tmp_path / "profile_export.jsonl").write_text(_json.dumps(record) + "\n")
    run = {"source_format": "aiperf", "source_file": "profile_export_aiperf.json", "source_row": 0,
           "completed": 1, "failed": 0}
    source = read_run_requests(tmp_path, run)
    assert source.reason is None, source.detail
    (row,) = source.rows
    assert row["ttft_s"] == pytest.approx(250 * scale, rel=1e-12)
    assert row["e2el_s"] == pytest.approx(4000 * scale, rel=1e-12)
    assert row["tpot_s"] == pytest.approx(15 * scale, rel=1e-12)
    assert (row["input_tokens"], row["output_tokens"]) == (1024, 256)


def test_a_summary_p99_exactly_at_its_bound_meets_the_slo():
    """Issue 41: no test put a p99 exactly at its bound. An SLO is a ceiling met with equality (p99 ≤ bound, as
    the per-request test is), so p99 TTFT 0.2 s and p99 TPOT 0.02 s meet "tight"; a hair above does not."""
    conn = _slo_warehouse()
    conn.execute("update validated_runs set p99_ttft_s = 0.2, p99_tpot_s = 0.02 where run_id = 'sum_b'")
    conn.execute("update validated_runs set p99_ttft_s = 0.2, p99_tpot_s = 0.02 + 1e-9 where run_id = 'sum_a'")
    rows = {(r["run_id"], r["slo"]): r for r in conn.sql(
        sql_text("run_slo"), params={"partition_keys": ["undated"]}).to_arrow_table().to_pylist()}
    assert rows[("sum_b", "tight")]["slo_met"] is True
    assert rows[("sum_a", "tight")]["slo_met"] is False


def test_e2el_bounds_are_met_with_equality_and_no_request_meeting_is_zero_goodput():
    """The E2EL bound is a ceiling met with equality on both bases (as TTFT and TPOT are), and a run none of
    whose requests meets an SLO has goodput 0 tok/s/GPU, not null."""
    conn = _slo_warehouse()
    conn.execute("update raw_requests set e2el_s = 30.0 where request_index = 0")  # exactly the loose bound
    conn.execute("update validated_runs set p99_e2el_s = 30.0 where run_id = 'sum_b'")
    conn.execute("insert into slos values ('impossible', 0.01, null, null, 0.5, '')")  # no TTFT is ≤ 0.01 s
    rows = {(r["run_id"], r["slo"]): r for r in conn.sql(
        sql_text("run_slo"), params={"partition_keys": ["undated"]}).to_arrow_table().to_pylist()}
    # loose: request 0 at 30 s still meets → 0, 1, 2, 5, 6, 7 as before: 6 of 8, goodput (5 × 101 + 1) / 10 / 2
    loose = rows[("req", "loose")]
    assert (loose["requests_meeting_slo"], loose["goodput_tok_s_per_gpu"]) == (6, pytest.approx(25.3, rel=1e-12))
    assert rows[("sum_b", "loose")]["slo_met"] is True
    impossible = rows[("req", "impossible")]
    assert (impossible["requests"], impossible["requests_meeting_slo"], impossible["slo_attainment"],
            impossible["slo_met"], impossible["goodput_tok_s_per_gpu"]) == (8, 0, 0.0, False, 0.0)


def test_the_parse_notes_which_result_files_hold_per_request_arrays():
    """``FileReadout.request_arrays``: True when any object of a JSON file read whole has ``ttfts``, False when none
    has, None for a file that is not JSON (not known: such a file is read again as before)."""
    from pipeline.ingest.parsers import read_file

    detailed = _vllm_run(4, 0.012, [0.2] * 8, 10.0)
    summary = {k: v for k, v in detailed.items() if k not in ("ttfts", "itls", "input_lens", "output_lens", "errors")}
    assert read_file("d.json", json.dumps(detailed).encode()).request_arrays is True
    assert read_file("s.json", json.dumps(summary).encode()).request_arrays is False
    lines = json.dumps(summary) + "\n" + json.dumps(detailed) + "\n"  # JSON Lines: the second line has them
    assert read_file("n.jsonl", lines.encode()).request_arrays is True
    assert read_file("notes.txt", b"a console line that is no result\n").request_arrays is None


def test_a_result_without_per_request_arrays_is_not_opened_again(run_pipeline, tmp_path, monkeypatch):
    """Two vLLM results of one side, one saved with --save-detailed and one without: ``ingest/parsed_requests``
    opens only the detailed one (the parse noted the other has no arrays), whose 8 records are read as before;
    ``raw_files.request_arrays`` says which file is which (null for the sidecars, which are not results)."""
    raw = tmp_path / "raw"
    raw.mkdir()
    detailed = _vllm_run(4, 0.012, [0.2] * 8, 10.0)
    summary = {k: v for k, v in _vllm_run(8, 0.018, [0.2] * 16, 20.0).items()
               if k not in ("ttfts", "itls", "input_lens", "output_lens", "errors")}
    for name, doc in (("detailed.json", detailed), ("summary.json", summary)):
        (raw / name).write_text(json.dumps(doc))
        (raw / f"{name}.meta.json").write_text(json.dumps({
            "model": "dsr1", "hw": "h200", "precision": "fp8", "tp": 8, "isl": 1024, "osl": 1024,
            "framework": "vllm", "spec_decoding": "none", "run_date": "2026-07-01"}))
    opened = []
    object_at = per_request._object_at

    def recording(path, row, root):
        opened.append(Path(path).name)
        return object_at(path, row, root)

    monkeypatch.setattr(per_request, "_object_at", recording)
    run = run_pipeline(raw)
    assert run.result.success
    assert opened == ["detailed.json"]
    with duckdb.connect(str(run.db_path), read_only=True) as conn:
        flags = dict(conn.execute("select source_file, request_arrays from raw_files").fetchall())
        read = conn.execute("select r.source_file, count(*) from raw_requests q join raw_runs r using (run_id) "
                            "group by 1").fetchall()
    assert flags == {"detailed.json": True, "summary.json": False, "detailed.json.meta.json": None,
                     "summary.json.meta.json": None}
    assert read == [("detailed.json", 8)]


def test_run_slo_metadata_counts_each_slo_and_basis_of_the_mart(sample_run):
    """The UI's ``basis_by_slo`` table and ``requests_in_mart`` say what the marts hold: counted here from the
    published rows with the standard library."""
    from collections import Counter

    from pipeline.io.storage import read_mart

    # one materialization per run date the step wrote, each with the step's metadata
    metadata, *others = [e.event_specific_data.materialization.metadata for e in sample_run.result.all_events
                         if e.event_type_value == "ASSET_MATERIALIZATION"
                         and e.event_specific_data.materialization.asset_key.path == ["metrics", "run_slo"]]
    assert all(other == metadata for other in others)
    rows = read_mart(sample_run.out_dir, "run_slo").select(["slo", "slo_basis"]).to_pylist()
    counted = Counter(f"{r['slo']}: {r['slo_basis']}" for r in rows)
    assert len(counted) >= 2 and sum(counted.values()) == len(rows) > 0
    table = metadata["basis_by_slo"].value.splitlines()[2:]
    assert sorted(table) == sorted(f"| {key} | {n} |" for key, n in counted.items())
    assert metadata["requests_in_mart"].value == read_mart(sample_run.out_dir, "requests").num_rows


# ---- readers, field by field: whole records, every branch and every reason ------------------------------------

def _jsonl(path: Path, lines: list) -> None:
    """Write ``lines`` (dicts/lists as JSON, strings as written) one per line."""
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))


def _aiperf(raw: Path, lines: list, completed=None, failed=0):
    """read_run_requests of an AIPerf run ``run1/profile_export_aiperf.json`` whose records are ``lines``."""
    (raw / "run1").mkdir(parents=True, exist_ok=True)
    (raw / "run1" / "profile_export_aiperf.json").write_text("{}")
    _jsonl(raw / "run1" / "profile_export.jsonl", lines)
    return read_run_requests(raw, {"source_file": "run1/profile_export_aiperf.json", "source_format": "aiperf",
                                   "source_row": 0, "completed": completed, "failed": failed})


def _close(row: dict) -> dict:
    """``row`` with each float to be matched within 1e-12 relative (arithmetic in binary floating point)."""
    return {k: pytest.approx(v, rel=1e-12) if isinstance(v, float) else v for k, v in row.items()}


NO_LATENCY = {"ttft_s": None, "tpot_s": None, "e2el_s": None, "itl_p50_s": None, "itl_p99_s": None}


def test_aiperf_records_give_whole_rows_for_each_unit_key_and_error_form(tmp_path):
    """AIPerf records: warmup (either phase key) and blank lines skipped, each unit scaled, ``ttft`` before
    ``time_to_first_token``, error dicts/strings as text with every latency null, absent blocks null."""
    source = _aiperf(tmp_path, [
        {"metadata": {"credit_phase": "warmup"}, "metrics": {"ttft": {"value": 1, "unit": "furlongs"}}},  # skipped
        "",
        {"metadata": "not an object", "metrics": {
            "time_to_first_token": {"value": 250000, "unit": "us"}, "request_latency": {"value": 1.5, "unit": "S"},
            "inter_token_latency": {"value": 5000000, "unit": "ns"},
            "inter_chunk_latency": {"value": [10, 20, 30], "unit": "ms"},
            "input_sequence_length": {"value": 100.0}, "output_sequence_length": {"value": 251}}, "error": None},
        {"metrics": {"input_sequence_length": {"value": 7}, "ttft": {"value": 9, "unit": "ms"}},
         "error": {"type": "RequestCancellationError", "message": "cancelled"}},
        {"metrics": {}, "error": {"code": 504}},
        {"error": "upstream closed"},
        {"metrics": None},
        {"metrics": {"ttft": {"value": 2, "unit": "sec"}, "time_to_first_token": {"value": 999, "unit": "s"},
                     "request_latency": {"value": None, "unit": "ms"},
                     "inter_chunk_latency": {"value": 4, "unit": "ms"}}},
    ], completed=3, failed=3)
    assert (source.reason, source.detail, source.requests_file) == (None, None, "run1/profile_export.jsonl")
    assert source.rows == [
        # 250000 us = 0.25 s; 1.5 "S" = 1.5 s; 5e6 ns = 0.005 s; gaps 10, 20, 30 ms: p50 0.02 s, p99 at rank
        # 0.99 × 2 = 1.98: 0.02 + 0.98 × 0.01 = 0.0298 s; 100.0 tokens read as the integer 100
        _close({"input_tokens": 100, "output_tokens": 251, "error": None, "ttft_s": 0.25, "tpot_s": 0.005,
                "e2el_s": 1.5, "itl_p50_s": 0.02, "itl_p99_s": 0.0298}),
        # an errored record keeps its token counts, its TTFT is not read; no code: "<type>: <message>"
        {"input_tokens": 7, "output_tokens": None, "error": "RequestCancellationError: cancelled", **NO_LATENCY},
        {"input_tokens": None, "output_tokens": None, "error": "504 :", **NO_LATENCY},  # "504 " + "" + ": " stripped
        {"input_tokens": None, "output_tokens": None, "error": "upstream closed", **NO_LATENCY},
        {"input_tokens": None, "output_tokens": None, "error": None, **NO_LATENCY},  # metrics not an object
        # ttft (2 sec) wins over time_to_first_token; a null latency is null; a scalar inter_chunk_latency no gaps
        {"input_tokens": None, "output_tokens": None, "error": None, **NO_LATENCY, "ttft_s": 2.0},
    ]


@pytest.mark.parametrize("lines, reason, detail", [
    # line 3 is 14 characters and its newline: the data ends at char 15
    ([{"metrics": {}}, "", '{"metrics": {}'], "invalid_json:per_request",
     "line 3: unexpected end of data: line 2 column 1 (char 15)"),
    ([{"metrics": {}}, [1, 2]], "invalid_json:per_request", "line 2: not an object"),
    ([{"metrics": {}}, {"metrics": {"request_latency": {"value": 3, "unit": "minutes"}}}], "unknown_unit:per_request",
     "line 2: request_latency.unit = 'minutes'"),
    ([{"metrics": {}}, {"metrics": {"ttft": {"value": 3}}}], "unknown_unit:per_request", "line 2: ttft.unit = ''"),
    ([{"metrics": {}}, {"metrics": {"output_sequence_length": {"value": "many"}}}], "not_a_number:per_request",
     "line 2 output_sequence_length: 'many'"),
    ([{"metrics": {}}, {"metrics": {"inter_chunk_latency": {"value": [1, "x"], "unit": "ms"}}}],
     "not_a_number:per_request", "line 2 inter_chunk_latency: 'x'"),
    ([{"metrics": {}}, {"metrics": {"ttft": {"value": True, "unit": "ms"}}}], "not_a_number:per_request",
     "line 2 ttft: True"),
])
def test_aiperf_record_errors_name_the_line_the_metric_and_the_value(tmp_path, lines, reason, detail):
    """A bad AIPerf record is the run's reason, its detail naming the 1-based line, the metric and the value."""
    source = _aiperf(tmp_path, lines, completed=len(lines))
    assert (source.reason, source.detail, source.requests_file, source.rows) == (
        reason, detail, "run1/profile_export.jsonl", [])


def test_request_data_error_reads_as_its_detail():
    """``RequestDataError`` is a ValueError whose message is its detail (what a log of it shows)."""
    exc = per_request.RequestDataError("not_a_number:per_request", "ttfts: 'fast'")
    assert (str(exc), exc.reason_code, exc.detail) == ("ttfts: 'fast'", "not_a_number:per_request", "ttfts: 'fast'")


AGENTX_ROW = {"hw": "h100", "scenario_type": "agentic_coding"}


def test_files_outside_the_raw_folder_or_special_are_refused_for_every_format(tmp_path, monkeypatch):
    """A records or run file that resolves outside the raw folder is ``records_outside_raw_dir``, a FIFO is
    ``refused:per_request``; AIPerf/AgentX name their records file, the array and GuideLLM formats the run file."""
    raw, outside = tmp_path / "raw", tmp_path / "outside"
    outside.mkdir()
    _jsonl(outside / "profile_export.jsonl", [{"metrics": {}}])
    (outside / "agg.json").write_text(json.dumps(AGENTX_ROW))
    (outside / "bench.json").write_text(json.dumps({"benchmarks": [{"requests": {"successful": [{}]}}]}))
    (outside / "r.json").write_text(json.dumps({"ttfts": [0.1], "itls": [[]], "input_lens": [1], "output_lens": [1]}))
    for folder in ("a", "f", "x", "g", "v"):
        (raw / folder).mkdir(parents=True)
    (raw / "a" / "profile_export_aiperf.json").write_text("{}")
    os.symlink(outside / "profile_export.jsonl", raw / "a" / "profile_export.jsonl")
    (raw / "f" / "profile_export_aiperf.json").write_text("{}")
    os.mkfifo(raw / "f" / "profile_export.jsonl")
    os.symlink(outside / "agg.json", raw / "x" / "agg.json")
    os.symlink(outside / "bench.json", raw / "g" / "bench.json")
    os.symlink(outside / "r.json", raw / "v" / "r.json")
    monkeypatch.setattr(per_request, "LARGE_FILE_BYTES", 10)  # the vLLM file is streamed
    outside_text = "resolves outside its folder: not followed, not read"
    cases = [("aiperf", "a/profile_export_aiperf.json", "records_outside_raw_dir", "a/profile_export.jsonl",
              f"profile_export.jsonl {outside_text}"),
             ("aiperf", "f/profile_export_aiperf.json", "refused:per_request", "f/profile_export.jsonl",
              "profile_export.jsonl is a FIFO, not a regular file: not read"),
             ("inferencex_agentx", "x/agg.json", "records_outside_raw_dir", "x/profile_export.jsonl",
              f"agg.json {outside_text}"),
             ("guidellm", "g/bench.json", "records_outside_raw_dir", "g/bench.json", f"bench.json {outside_text}"),
             ("vllm_bench_serve", "v/r.json", "records_outside_raw_dir", "v/r.json", f"r.json {outside_text}")]
    for fmt, rel, reason, requests_file, detail in cases:
        source = read_run_requests(raw, {"source_file": rel, "source_format": fmt, "source_row": 0, "completed": 1,
                                         "failed": 0})
        assert (source.requests_file, source.rows, source.reason, source.detail) == (
            requests_file, [], reason, detail), fmt


def _agentx_folder(raw: Path) -> dict:
    """``raw/x`` with an AgentX row ``agg.json`` and a one-record ``profile_export.jsonl``; the run row."""
    (raw / "x").mkdir(parents=True)
    (raw / "x" / "agg.json").write_text(json.dumps(AGENTX_ROW))
    _jsonl(raw / "x" / "profile_export.jsonl", [{"metrics": {"output_sequence_length": {"value": 3}}}])
    return {"source_file": "x/agg.json", "source_format": "inferencex_agentx", "source_row": 0, "completed": 1,
            "failed": 0}


ONE_RECORD = [{"input_tokens": None, "output_tokens": 3, "error": None, **NO_LATENCY}]
AMBIGUOUS = ("x/profile_export.jsonl sits beside two single-run AgentX files (agg.json, b.json): not known whose "
             "records they are, not read")


@pytest.mark.parametrize("case", ["over_cap", "at_cap", "symlink", "unreadable_first", "not_agentx", "outside"])
def test_agentx_siblings_that_make_the_records_ambiguous(tmp_path, monkeypatch, case):
    """Only a regular, non-link sibling ``*.json`` inside the raw folder, at most the parse cap, decoding to an
    AgentX row makes the records ``ambiguous:per_request``; an unreadable sibling does not stop the search."""
    raw = tmp_path / "raw"
    run = _agentx_folder(raw)
    sibling = raw / "x" / "b.json"
    text = json.dumps(AGENTX_ROW)
    if case in ("over_cap", "at_cap"):
        sibling.write_text(text)
        # the cap one byte under the sibling's size: skipped; exactly its size: read
        monkeypatch.setattr(per_request, "LARGE_FILE_BYTES", len(text) - (case == "over_cap"))
    elif case == "symlink":
        (raw / "other").mkdir()
        (raw / "other" / "c.json").write_text(text)
        os.symlink(raw / "other" / "c.json", sibling)  # inside the raw folder, but a link: never followed
    elif case == "unreadable_first":
        (raw / "x" / "a_bad.json").write_text("{not json")  # sorted before agg.json and b.json
        sibling.write_text(text)
    elif case == "not_agentx":
        sibling.write_text(json.dumps({"hw": "h100"}))  # an object, but no agentic scenario
    else:
        # raw/x is a link to a folder outside whose run file and records link back inside: b.json there is
        # outside the raw folder and is not read
        shutil.move(raw / "x", raw / "real")
        out = tmp_path / "outside"
        out.mkdir()
        os.symlink(raw / "real" / "agg.json", out / "agg.json")
        os.symlink(raw / "real" / "profile_export.jsonl", out / "profile_export.jsonl")
        (out / "b.json").write_text(text)
        os.symlink(out, raw / "x")
    source = read_run_requests(raw, run)
    if case in ("at_cap", "unreadable_first"):
        assert (source.requests_file, source.rows, source.reason, source.detail) == (
            "x/profile_export.jsonl", [], "ambiguous:per_request", AMBIGUOUS)
    else:
        assert (source.requests_file, source.rows, source.reason) == ("x/profile_export.jsonl", ONE_RECORD, None)


@pytest.mark.parametrize("head, single", [(b"\xef\xbb\xbf", True), (b"\r\n \t", True), (b" " * 5000, True),
                                          (b"X", False)])
def test_an_agentx_file_is_one_row_by_its_first_non_blank_byte(tmp_path, head, single):
    """A byte-order mark and blanks (however many) before ``{`` still make a single-row AgentX file; any other
    byte does not."""
    raw = tmp_path / "raw"
    run = _agentx_folder(raw)
    (raw / "x" / "agg.json").write_bytes(head + json.dumps(AGENTX_ROW).encode())
    source = read_run_requests(raw, run)
    assert source.rows == (ONE_RECORD if single else [])
    assert source.requests_file == ("x/profile_export.jsonl" if single else None)


@pytest.mark.parametrize("content", [b"", b" \t\r\n" * 2000])
def test_an_agentx_file_of_blanks_alone_is_no_single_row(tmp_path, content):
    """A file with no byte but blanks (or none at all, across more than one read block) holds no object: it is
    not a single-row AgentX file, so its folder's records are not its requests."""
    raw = tmp_path / "raw"
    run = _agentx_folder(raw)
    (raw / "x" / "agg.json").write_bytes(content)
    source = read_run_requests(raw, run)
    assert (source.rows, source.requests_file) == ([], None)


def _array_run(raw: Path, doc, row: int = 0, completed=None, name: str = "r.json"):
    """read_run_requests of a run of ``raw/name`` holding ``doc`` (a dict as JSON, bytes as written)."""
    (raw / name).write_bytes(doc if isinstance(doc, bytes) else json.dumps(doc).encode())
    return read_run_requests(raw, {"source_file": name, "source_format": "vllm_bench_serve",
                                   "source_row": row, "completed": completed, "failed": 0})


@pytest.mark.parametrize("large", [False, True])
def test_vllm_arrays_give_whole_rows_read_whole_or_streamed(tmp_path, monkeypatch, large):
    """Array rows: e2el = ttft + Σ gaps without ``e2els``, tpot = (e2el − ttft) / (n − 1) for n > 1, an errored
    request keeps its token counts only; ``itls`` may be absent beside ``e2els``; a 2^62 − 1 count is kept."""
    if large:
        monkeypatch.setattr(per_request, "LARGE_FILE_BYTES", 10)
    source = _array_run(tmp_path, {"ttfts": [0.5, 0.2, None], "itls": [[0.1, 0.3], [], [0.05]],
                                  "input_lens": [10, 20.0, 30], "output_lens": [3, 1, 2],
                                  "errors": ["", None, "Timeout: no reply"]})
    assert (source.requests_file, source.reason) == ("r.json", None)
    assert source.rows == [
        # 0.5 + 0.1 + 0.3 = 0.9; (0.9 − 0.5) / (3 − 1) = 0.2; gaps 0.1, 0.3: p50 0.2, p99 0.1 + 0.99 × 0.2 = 0.298
        _close({"input_tokens": 10, "output_tokens": 3, "error": None, "ttft_s": 0.5, "tpot_s": 0.2,
                "e2el_s": 0.9, "itl_p50_s": 0.2, "itl_p99_s": 0.298}),
        {"input_tokens": 20, "output_tokens": 1, "error": None, **NO_LATENCY, "ttft_s": 0.2, "e2el_s": 0.2},
        {"input_tokens": 30, "output_tokens": 2, "error": "Timeout: no reply", **NO_LATENCY},
    ]
    source = _array_run(tmp_path, {"ttfts": [0.1, 0.2], "e2els": [1.1, 0.2], "input_lens": [2**62 - 1, 6],
                                  "output_lens": [11, 1]}, name="e.json")
    assert source.rows == [  # (1.1 − 0.1) / (11 − 1) = 0.1
        _close({"input_tokens": 2**62 - 1, "output_tokens": 11, "error": None, **NO_LATENCY, "ttft_s": 0.1,
                "tpot_s": 0.1, "e2el_s": 1.1}),
        {"input_tokens": 6, "output_tokens": 1, "error": None, **NO_LATENCY, "ttft_s": 0.2, "e2el_s": 0.2},
    ]


GOOD_ARRAYS = {"ttfts": [0.1, 0.2], "itls": [[0.01], [0.02]], "input_lens": [5, 6], "output_lens": [2, 2]}


@pytest.mark.parametrize("large", [False, True])
@pytest.mark.parametrize("change, reason, small_detail, large_detail", [
    ({"input_lens": [5, -1]}, "not_a_number:per_request", "input_lens: -1", None),
    ({"output_lens": [2, 2**62]}, "not_a_number:per_request", "output_lens: 4611686018427387904", None),
    ({"ttfts": [0.1, "fast"]}, "not_a_number:per_request", "ttfts: 'fast'", None),
    ({"itls": [[0.01], 0.5]}, "not_a_number:per_request", "an itls entry is not a list", None),
    ({"input_lens": [5, 6, 7]}, "length_mismatch:per_request",
     "array lengths differ: ttfts=2, itls=2, input_lens=3, output_lens=2", "an array is longer than ttfts"),
    ({"output_lens": [2]}, "length_mismatch:per_request",
     "array lengths differ: ttfts=2, itls=2, input_lens=2, output_lens=1", "an array is shorter than ttfts"),
])
def test_bad_vllm_arrays_name_the_array_and_the_value(tmp_path, monkeypatch, large, change, reason, small_detail,
                                                      large_detail):
    """A bad token count, latency or gap list, or arrays of different lengths: the reason and the array named."""
    if large:
        monkeypatch.setattr(per_request, "LARGE_FILE_BYTES", 10)
    source = _array_run(tmp_path, {**GOOD_ARRAYS, **change}, completed=2)
    assert (source.requests_file, source.rows, source.reason, source.detail) == (
        "r.json", [], reason, (large_detail if large else None) or small_detail)


def test_a_column_that_is_not_an_array_is_named(tmp_path):
    """Read whole, an array key holding a scalar is ``not_a_number:per_request`` naming the key."""
    source = _array_run(tmp_path, {**GOOD_ARRAYS, "output_lens": 5})
    assert (source.requests_file, source.rows, source.reason, source.detail) == (
        "r.json", [], "not_a_number:per_request", "output_lens is not an array")


@pytest.mark.parametrize("large", [False, True])
def test_json_lines_runs_are_numbered_by_non_empty_line_whole_or_streamed(tmp_path, monkeypatch, large):
    """SGLang JSON Lines: run ``row`` is the row-th non-empty line (a line that is an array counts), read alone."""
    if large:
        monkeypatch.setattr(per_request, "LARGE_FILE_BYTES", 10)
    def run(ttfts):
        return {**GOOD_ARRAYS, "ttfts": ttfts, "itls": [[]] * len(ttfts), "input_lens": [1] * len(ttfts),
                "output_lens": [1] * len(ttfts)}
    lines = [run([0.1, 0.2]), "", ["a note"], run([0.3, 0.4, 0.5]), run([0.6])]
    _jsonl(tmp_path / "s.jsonl", lines)
    for row, ttfts in ((0, [0.1, 0.2]), (2, [0.3, 0.4, 0.5]), (3, [0.6])):
        source = read_run_requests(tmp_path, {"source_file": "s.jsonl", "source_format": "sglang_bench_serving",
                                              "source_row": row, "completed": len(ttfts), "failed": 0})
        assert (source.reason, [r["ttft_s"] for r in source.rows]) == (None, ttfts), row
    # the array line and a line past the end hold no arrays: no records
    for row in (1, 4):
        source = read_run_requests(tmp_path, {"source_file": "s.jsonl", "source_format": "sglang_bench_serving",
                                              "source_row": row, "completed": 1, "failed": 0})
        assert (source.requests_file, source.rows, source.reason) == (None, [], None), row


def test_a_result_without_request_arrays_has_no_records(tmp_path):
    """A vLLM summary without ``ttfts`` (or a run row past the file's objects) gives no records and no reason."""
    for doc, row in (({"completed": 4, "duration": 10.0}, 0), (GOOD_ARRAYS, 1)):
        source = _array_run(tmp_path, doc, row=row, completed=4)
        assert (source.requests_file, source.rows, source.reason) == (None, [], None)


@pytest.mark.parametrize("large", [False, True])
def test_an_error_that_is_an_object_is_kept_as_its_text(tmp_path, monkeypatch, large):
    """An ``errors`` item that is an object (nesting a list) is one request's error, as text, streamed or not."""
    if large:
        monkeypatch.setattr(per_request, "LARGE_FILE_BYTES", 10)
    source = _array_run(tmp_path, {**GOOD_ARRAYS, "errors": [{"type": "HTTPError", "codes": [500]}, ""]})
    assert source.rows == [
        {"input_tokens": 5, "output_tokens": 2, "error": "{'type': 'HTTPError', 'codes': [500]}", **NO_LATENCY},
        # 0.2 + 0.02 = 0.22; (0.22 − 0.2) / (2 − 1) = 0.02; one gap: both percentiles 0.02
        _close({"input_tokens": 6, "output_tokens": 2, "error": None, "ttft_s": 0.2, "tpot_s": 0.02,
                "e2el_s": 0.22, "itl_p50_s": 0.02, "itl_p99_s": 0.02}),
    ]


def test_a_streamed_file_that_is_not_json_names_the_array_and_the_parser_error(tmp_path, monkeypatch):
    """Streamed, a file ijson cannot parse is ``invalid_json:per_request``: the array, then ≤ 200 characters of
    the parser's message."""
    monkeypatch.setattr(per_request, "LARGE_FILE_BYTES", 10)
    # the error comes before ttfts: its reader, the first, meets it first
    source = _array_run(tmp_path, b'{"note": [1 2], "ttfts": [0.1, 0.2]}', completed=2)
    assert (source.requests_file, source.rows, source.reason) == ("r.json", [], "invalid_json:per_request")
    assert source.detail.startswith("ttfts: parse error: after array element, I expect ',' or ']'")
    # yajl's message for 60 bad UTF-8 bytes quotes them (\xff each) well past 200 characters: cut at 200
    source = _array_run(tmp_path, b'{"note": "' + b"\xff" * 60 + b'", "ttfts": [0.1]}', completed=1)
    assert source.reason == "invalid_json:per_request"
    assert source.detail.startswith("ttfts: b'lexical error: invalid bytes in UTF8 string.")
    assert len(source.detail) == len("ttfts: ") + 200


def test_the_decoded_file_cache_follows_the_files_size_and_mtime(tmp_path):
    """A result rewritten in place is decoded again: the same size at a new mtime, or a new size at the same mtime."""
    path = tmp_path / "r.json"
    run = {"source_file": "r.json", "source_format": "vllm_bench_serve", "source_row": 0, "completed": 2,
           "failed": 0}
    stamp = 1_700_000_000_000_000_000
    for ttfts, mtime_ns in (([0.1, 0.2], stamp), ([0.3, 0.4], stamp + 10**9), ([0.5, 0.75], stamp + 10**9)):
        # the second file is as long as the first (0.3 for 0.1), the third one byte longer at the second's mtime
        path.write_text(json.dumps({**GOOD_ARRAYS, "ttfts": ttfts}))
        os.utime(path, ns=(mtime_ns, mtime_ns))
        assert [r["ttft_s"] for r in read_run_requests(tmp_path, run).rows] == ttfts


def _guidellm_run(raw: Path, doc, row: int = 0, completed=None, failed=0):
    """read_run_requests of GuideLLM benchmark ``row`` of ``raw/bench.json`` holding ``doc`` (bytes as written)."""
    (raw / "bench.json").write_bytes(doc if isinstance(doc, bytes) else json.dumps(doc).encode())
    return read_run_requests(raw, {"source_file": "bench.json", "source_format": "guidellm", "source_row": row,
                                   "completed": completed, "failed": failed})


GUIDELLM_REQUESTS = {
    "successful": [{"prompt_tokens": 12, "output_tokens": 5, "time_to_first_token_ms": 250.0,
                    "time_per_output_token_ms": 20.0, "request_latency": 0.33},
                   {"prompt_tokens": 3, "output_tokens": 1, "request_latency": 0.1}],
    "errored": [{"error": "boom", "info": {"error": "inner"}, "prompt_tokens": 4, "output_tokens": 0,
                 "time_to_first_token_ms": 5.0},
                {"info": {"error": "timeout"}}, {"info": "not an object"}, {}],
    "incomplete": [{"prompt_tokens": 9}],
}


def test_guidellm_requests_give_whole_rows_in_status_order(tmp_path):
    """GuideLLM rows: successful, then errored, then incomplete; ms latencies to s; an error's text is its
    ``error``, else ``info.error``, else the status; an unsuccessful request keeps its token counts only."""
    source = _guidellm_run(tmp_path, {"benchmarks": [{"requests": {}}, {"requests": GUIDELLM_REQUESTS}]}, row=1,
                           completed=2, failed=5)
    assert (source.requests_file, source.reason, source.detail) == ("bench.json", None, None)
    assert source.rows == [
        # 250 ms = 0.25 s, 20 ms = 0.02 s, request_latency already in s
        _close({"input_tokens": 12, "output_tokens": 5, "error": None, **NO_LATENCY, "ttft_s": 0.25,
                "tpot_s": 0.02, "e2el_s": 0.33}),
        {"input_tokens": 3, "output_tokens": 1, "error": None, **NO_LATENCY, "e2el_s": 0.1},
        {"input_tokens": 4, "output_tokens": 0, "error": "boom", **NO_LATENCY},
        {"input_tokens": None, "output_tokens": None, "error": "timeout", **NO_LATENCY},
        {"input_tokens": None, "output_tokens": None, "error": "errored", **NO_LATENCY},
        {"input_tokens": None, "output_tokens": None, "error": "errored", **NO_LATENCY},
        {"input_tokens": 9, "output_tokens": None, "error": "incomplete", **NO_LATENCY},
    ]


@pytest.mark.parametrize("requests, detail", [
    ({"errored": [5]}, "requests.errored: an entry is not an object"),
    ({"incomplete": ["x"]}, "requests.incomplete: an entry is not an object"),
    ({"successful": [{"prompt_tokens": "a"}]}, "prompt_tokens: 'a'"),
    ({"errored": [{"output_tokens": 1.5}]}, "output_tokens: 1.5"),
    ({"successful": [{"time_to_first_token_ms": "x"}]}, "time_to_first_token_ms: 'x'"),
    ({"successful": [{"time_per_output_token_ms": [1]}]}, "time_per_output_token_ms: [1]"),
    ({"successful": [{"request_latency": True}]}, "request_latency: True"),
])
def test_bad_guidellm_requests_name_the_group_or_the_field(tmp_path, requests, detail):
    """A GuideLLM request that is not an object, or a field that is not a number: the group or field named."""
    source = _guidellm_run(tmp_path, {"benchmarks": [{"requests": requests}]}, completed=1)
    assert (source.requests_file, source.rows, source.reason, source.detail) == (
        "bench.json", [], "not_a_number:per_request", detail)


def test_a_guidellm_report_that_is_not_json_is_named(tmp_path):
    """A GuideLLM report that does not decode is ``invalid_json:per_request`` with the decoder's message."""
    source = _guidellm_run(tmp_path, b'{"benchmarks": [', completed=1)
    assert (source.requests_file, source.rows, source.reason, source.detail) == (
        "bench.json", [], "invalid_json:per_request", "unexpected end of data: line 1 column 17 (char 16)")


@pytest.mark.parametrize("doc, row", [
    ([{"benchmarks": []}], 0),                       # not an object
    ({"runs": []}, 0),                               # no benchmarks
    ({"benchmarks": [5]}, 0),                        # a benchmark that is not an object
    ({"benchmarks": [{"requests": {}}]}, 1),         # the row past the last benchmark
    ({"benchmarks": [{"requests": []}]}, 0),         # requests not grouped by status
])
def test_guidellm_reports_without_request_groups_have_no_records(tmp_path, doc, row):
    """A GuideLLM report without an object of request groups at benchmark ``row`` has no records, no reason."""
    source = _guidellm_run(tmp_path, doc, row=row, completed=1)
    assert (source.requests_file, source.rows, source.reason) == (None, [], None)


def test_a_guidellm_report_over_the_cap_has_no_records(tmp_path, monkeypatch):
    """A GuideLLM report over ``LARGE_FILE_BYTES`` gives no records (nor runs); one exactly at the cap is read."""
    doc = json.dumps({"benchmarks": [{"requests": {"successful": [{"request_latency": 0.5}]}}]})
    monkeypatch.setattr(per_request, "LARGE_FILE_BYTES", len(doc))
    assert [r["e2el_s"] for r in _guidellm_run(tmp_path, doc.encode(), completed=1).rows] == [0.5]
    monkeypatch.setattr(per_request, "LARGE_FILE_BYTES", len(doc) - 1)
    assert _guidellm_run(tmp_path, doc.encode(), completed=1).rows == []


def test_the_record_count_check(tmp_path):
    """Records ≠ completed + failed is ``inconsistent:per_request_count`` naming both counts (the records file
    kept); with ``completed`` null there is nothing to check against and the records stand."""
    doc = {"benchmarks": [{"requests": GUIDELLM_REQUESTS}]}  # 7 requests
    source = _guidellm_run(tmp_path, doc, completed=2, failed=4)
    assert (source.requests_file, source.rows, source.reason, source.detail) == (
        "bench.json", [], "inconsistent:per_request_count", "7 per-request records, the summary counts 6 requests")
    source = _guidellm_run(tmp_path, doc, completed=None, failed=4)
    assert (source.requests_file, len(source.rows), source.reason) == ("bench.json", 7, None)


def test_requests_tables_are_whole_rows_of_their_schemas(tmp_path):
    """``requests_tables``: a run whose file vanished is a source row (``invalid_json:per_request``, the error
    named), a run without records none, and each record a request row numbered 0… with its run's keys."""
    (tmp_path / "r.json").write_text(json.dumps({**GOOD_ARRAYS, "errors": ["", "refused"]}))
    runs = [{"run_id": "gone", "source_file": "gone.json", "source_format": "vllm_bench_serve", "source_row": 0,
             "completed": 2, "failed": 0, "run_date_partition": "2026-01-01"},
            {"run_id": "other", "source_file": "x.csv", "source_format": "csv_table", "source_row": 0,
             "completed": 2, "failed": 0, "run_date_partition": "2026-01-02"},
            {"run_id": "ok", "source_file": "r.json", "source_format": "vllm_bench_serve", "source_row": 0,
             "completed": 1, "failed": 1, "run_date_partition": "2026-01-03"}]
    requests, sources = requests_tables(tmp_path, runs)
    assert requests.schema == per_request.REQUEST_SCHEMA and sources.schema == per_request.SOURCE_SCHEMA
    rows = sources.to_pylist()
    assert rows == [
        # the error's own words only: the file is named by requests_file, never by this machine's path to it
        {"run_id": "gone", "requests_file": "gone.json", "requests_read": 0,
         "requests_reason": "invalid_json:per_request",
         "requests_detail": "FileNotFoundError: No such file or directory",
         "run_date_partition": "2026-01-01"},
        {"run_id": "ok", "requests_file": "r.json", "requests_read": 2, "requests_reason": None,
         "requests_detail": None, "run_date_partition": "2026-01-03"}]
    assert requests.to_pylist() == [
        # 0.1 + 0.01 = 0.11 s; (0.11 − 0.1) / (2 − 1) = 0.01 s; one gap: both percentiles 0.01
        _close({"run_id": "ok", "request_index": 0, "ttft_s": 0.1, "tpot_s": 0.01, "e2el_s": 0.11,
                "itl_p50_s": 0.01, "itl_p99_s": 0.01, "input_tokens": 5, "output_tokens": 2, "error": None,
                "run_date_partition": "2026-01-03"}),
        {"run_id": "ok", "request_index": 1, **NO_LATENCY, "input_tokens": 6, "output_tokens": 2, "error": "refused",
         "run_date_partition": "2026-01-03"}]


def test_a_guidellm_report_over_the_cap_is_never_read(tmp_path, monkeypatch):
    """A GuideLLM report over ``LARGE_FILE_BYTES`` is not read at all (its size alone says so), not read whole and
    then dropped."""
    from pipeline.io import opener

    doc = json.dumps({"benchmarks": [{"requests": {"successful": [{"request_latency": 0.5}]}}]})
    (tmp_path / "bench.json").write_text(doc)
    monkeypatch.setattr(per_request, "LARGE_FILE_BYTES", len(doc) - 1)
    reads, real_read = [], os.read
    monkeypatch.setattr(opener.os, "read", lambda fd, n: reads.append(n) or real_read(fd, n))
    source = read_run_requests(tmp_path, {"source_file": "bench.json", "source_format": "guidellm", "source_row": 0,
                                          "completed": 1, "failed": 0})
    monkeypatch.undo()
    assert (source.requests_file, source.rows, source.reason, reads) == (None, [], None, [])


def test_a_result_nested_deeper_than_the_standard_librarys_limit_is_still_decoded(tmp_path):
    """Results are decoded by orjson (1024 levels), the standard library only for what orjson refuses (bare
    ``NaN``): a value nested 1010 deep beside the arrays, past ``json``'s recursion limit of 1000, is read."""
    deep = b"[" * 1010 + b"]" * 1010
    source = _array_run(tmp_path, json.dumps(GOOD_ARRAYS)[:-1].encode() + b', "deep": ' + deep + b"}", completed=2)
    assert (source.reason, [r["ttft_s"] for r in source.rows]) == (None, [0.1, 0.2])


@pytest.mark.parametrize("large", [False, True])
@pytest.mark.parametrize("change, detail", [
    ({"itls": [[0.01], [0.02, "x"]]}, "itls: 'x'"),
    ({"e2els": [0.5, "slow"]}, "e2els: 'slow'"),
])
def test_a_bad_gap_or_e2el_names_its_array_and_value(tmp_path, monkeypatch, large, change, detail):
    """A gap or an ``e2els`` entry that is not a number is ``not_a_number:per_request`` naming the array and value."""
    if large:
        monkeypatch.setattr(per_request, "LARGE_FILE_BYTES", 10)
    source = _array_run(tmp_path, {**GOOD_ARRAYS, **change}, completed=2)
    assert (source.requests_file, source.rows, source.reason, source.detail) == (
        "r.json", [], "not_a_number:per_request", detail)


def test_a_request_without_a_ttft_has_no_latencies_but_its_gaps(tmp_path):
    """A successful request whose TTFT is null has no e2el and no TPOT (nothing to add its gaps to); its gap
    percentiles stand."""
    source = _array_run(tmp_path, {**GOOD_ARRAYS, "ttfts": [None, 0.2]}, completed=2)
    assert source.rows == [
        {"input_tokens": 5, "output_tokens": 2, "error": None, **NO_LATENCY, "itl_p50_s": 0.01, "itl_p99_s": 0.01},
        # 0.2 + 0.02 = 0.22; (0.22 − 0.2) / (2 − 1) = 0.02
        _close({"input_tokens": 6, "output_tokens": 2, "error": None, "ttft_s": 0.2, "tpot_s": 0.02, "e2el_s": 0.22,
                "itl_p50_s": 0.02, "itl_p99_s": 0.02}),
    ]


@pytest.mark.parametrize("token, shown", [(b"NaN", "nan"), (b"Infinity", "inf"), (b"-Infinity", "-inf")])
def test_a_non_finite_latency_is_named_with_its_value(tmp_path, token, shown):
    """SGLang's bare ``NaN``/``Infinity`` decode, and the non-finite latency is ``not_a_number:per_request``
    naming the array and the value."""
    source = _array_run(tmp_path, b'{"ttfts": [0.1, ' + token + b'], "itls": [[], []], "input_lens": [1, 1], '
                                  b'"output_lens": [1, 1]}', completed=2)
    assert (source.requests_file, source.rows, source.reason, source.detail) == (
        "r.json", [], "not_a_number:per_request", f"ttfts: {shown}")


def test_a_result_up_to_the_cap_is_decoded_whole_and_a_larger_one_streamed(tmp_path, monkeypatch):
    """The size rule: a result of exactly ``LARGE_FILE_BYTES`` is decoded whole, one byte over it is streamed."""
    text = json.dumps(GOOD_ARRAYS)
    streamed = []

    def stream(path, row, name, root):
        streamed.append(name)
        return iter(())

    monkeypatch.setattr(per_request, "_stream_array", stream)
    monkeypatch.setattr(per_request, "LARGE_FILE_BYTES", len(text))
    assert [r["ttft_s"] for r in _array_run(tmp_path, text.encode(), completed=2).rows] == [0.1, 0.2]
    assert streamed == []
    monkeypatch.setattr(per_request, "LARGE_FILE_BYTES", len(text) - 1)
    assert _array_run(tmp_path, text.encode(), name="s.json", completed=2).rows == []  # the stand-in streams nothing
    assert streamed == list(per_request._ARRAYS)


def test_a_result_read_whole_that_resolves_outside_the_raw_folder_is_refused(tmp_path):
    """A result under the cap (decoded whole) that links outside the raw folder is ``records_outside_raw_dir``."""
    raw, outside = tmp_path / "raw", tmp_path / "outside"
    raw.mkdir()
    outside.mkdir()
    (outside / "r.json").write_text(json.dumps(GOOD_ARRAYS))
    os.symlink(outside / "r.json", raw / "r.json")
    source = read_run_requests(raw, {"source_file": "r.json", "source_format": "vllm_bench_serve", "source_row": 0,
                                     "completed": 2, "failed": 0})
    assert (source.requests_file, source.rows, source.reason, source.detail) == (
        "r.json", [], "records_outside_raw_dir", "r.json resolves outside its folder: not followed, not read")
