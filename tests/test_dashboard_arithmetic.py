"""The dashboard's interactivity arithmetic bit for bit: ``*_intvty = 1000 / *_tpot_ms`` from the file's own ms
value (docs/metrics.md section 4), and default targets that land exactly on .5 (section 13)."""

import glob
import json
from pathlib import Path

import duckdb
import pyarrow as pa

from pipeline.comparisons.band import default_targets, interactivity_band
from pipeline.ingest.parsers import read_file
from pipeline.ingest.schema import RUN_COLUMNS, RUN_SCHEMA
from pipeline.metrics.request_stats import request_stats_view
from pipeline.io.paths import sql_text
from pipeline.io.storage import write_table
from pipeline.metrics.power import POWER_SCHEMA
from pipeline.metrics.reference import build_price_books, load_gpu_reference


def _vllm_doc(median_tpot_ms: float, **more) -> dict:
    return {"model_id": "org/m", "backend": "vllm", "duration": 10.0, "num_prompts": 8, "completed": 8, "failed": 0,
            "max_concurrency": 8, "total_token_throughput": 1000.0, "output_throughput": 500.0,
            "median_ttft_ms": 100.0, "median_tpot_ms": median_tpot_ms, "mean_tpot_ms": median_tpot_ms,
            "p90_tpot_ms": median_tpot_ms, "p99_tpot_ms": median_tpot_ms, **more}


def _parsed(doc: dict):
    readout = read_file("run.json", json.dumps(doc).encode())
    assert len(readout.runs) == 1, readout.rejects
    return readout.runs[0][2]


def _run_metrics(values: list[dict]) -> list[dict]:
    """sql/run_metrics.sql over runs whose values came from the parser."""
    rows = []
    for i, parsed in enumerate(values):
        row = dict.fromkeys(RUN_COLUMNS)
        row.update({k: v for k, v in parsed.items() if k in row})
        row.update(source_file=f"f{i}.json", source_row=0, run_id=f"r{i}", run_date_partition="undated", model="m",
                   hw="h200", tp=1, framework="vllm", precision="fp8", spec_decoding="none", isl=1024, osl=1024,
                   conc=8, disagg=False)
        rows.append(row)
    conn = duckdb.connect()
    write_table(conn, "validated_runs", pa.Table.from_pylist(rows, schema=RUN_SCHEMA))
    write_table(conn, "price_books", build_price_books(load_gpu_reference(), []))
    write_table(conn, "run_power", POWER_SCHEMA.empty_table())
    conn.execute(sql_text("run_gpu_counts"))
    conn.execute(sql_text("run_lengths"))
    request_stats_view(conn)  # run_request_stats: 1 / p90(E2EL / OSL) from per-request records (none here)
    return conn.sql(sql_text("run_metrics"), params={"partition_keys": ["undated"]}).to_arrow_table().to_pylist()


def test_interactivity_is_1000_over_the_files_ms_value_bit_for_bit():
    # 4.5 ms: 1000 / 4.5 = 222.22222222222223, while 1 / (4.5 · 1e-3) = 222.2222222222222 (one ulp below)
    assert 1000 / 4.5 == 222.22222222222223 != 1 / (4.5 * 1e-3)
    (m,) = _run_metrics([_parsed(_vllm_doc(4.5)).values])
    assert m["median_intvty"] == 222.22222222222223
    assert m["mean_intvty"] == m["p90_intvty"] == m["p99_intvty"] == 222.22222222222223


def test_interactivity_from_tpot_not_itl():
    v = _parsed(_vllm_doc(224.0, median_itl_ms=630.0)).values
    assert v["median_intvty"] == 1000 / 224.0


def test_seconds_files_divide_one_by_the_seconds_value():
    doc = {"model_id": "org/m", "duration": 10.0, "num_prompts": 8, "completed": 8, "max_concurrency": 8,
           "input_throughput": 500.0, "output_throughput": 500.0, "median_ttft": 0.1, "median_tpot": 0.0174}
    assert _parsed(doc).values["median_intvty"] == 1 / 0.0174


def test_band_75_percent_point_on_half_rounds_up():
    # runs at TPOT 12 ms and 4.5 ms: band [1000/12, 1000/4.5] = [250/3, 2000/9]; the 75 % point is
    # 250/3 + 0.75·1250/9 = 562.5/3 = 187.5 exactly, so round half up gives 188. The old 1/(tpot_ms·1e-3) made it
    # 187.49999999999997 and the target 187. 25 %: 1062.5/9 = 118.06 → 118; 50 %: 1375/9 = 152.78 → 153.
    lo, hi = (m["median_intvty"] for m in _run_metrics([_parsed(_vllm_doc(12.0)).values,
                                                         _parsed(_vllm_doc(4.5)).values]))
    band = interactivity_band([lo, hi], [lo, hi])
    assert band == (lo, hi, False)
    assert default_targets(lo, hi) == [118, 153, 188]


def test_band_25_percent_point_on_half_rounds_up():
    # TPOT 18 ms and 12 ms: band [500/9, 250/3]; 25 % point 500/9 + 0.25·250/9 = 562.5/9 = 62.5 exactly → 63
    # (old arithmetic: 62.49999999999999 → 62). 50 %: 625/9 = 69.44 → 69; 75 %: 687.5/9 = 76.39 → 76.
    lo, hi = (m["median_intvty"] for m in _run_metrics([_parsed(_vllm_doc(18.0)).values,
                                                         _parsed(_vllm_doc(12.0)).values]))
    assert default_targets(lo, hi) == [63, 69, 76]


def test_inferencex_interactivity_equals_ours_from_their_raw_vllm_files(real_logs):
    # InferenceX's process_result computes *_intvty = 1000 / *_tpot_ms from the raw vLLM result; ours, from the same
    # raw file, must be the same float.
    pairs = sorted(glob.glob(str(real_logs / "inferencex" / "ix_agg_*")))
    assert len(pairs) == 3
    for agg_path in pairs:
        agg = json.loads(Path(agg_path).read_text())
        raw_path = Path(agg_path.replace("/inferencex/ix_agg_", "/vllm/ix_"))
        values = _parsed(json.loads(raw_path.read_text())).values
        for stat in ("mean", "median", "p90", "p99"):
            assert values[f"{stat}_intvty"] == agg[f"{stat}_intvty"], (raw_path.name, stat)
