"""sql/run_metrics.sql on hand-built runs: the seed-page arithmetic and the GPU-count rules (docs/metrics.md)."""

import duckdb
import pyarrow as pa
import pytest

from pipeline.ingest.schema import RUN_COLUMNS, RUN_SCHEMA
from pipeline.metrics.request_stats import request_stats_view
from pipeline.io.paths import sql_text
from pipeline.io.storage import write_table
from pipeline.metrics.power import POWER_SCHEMA
from pipeline.metrics.reference import build_price_books, load_gpu_reference


def _metrics(*runs: dict, power: list[dict] = ()) -> list[dict]:
    rows = []
    for i, run in enumerate(runs):
        row = dict.fromkeys(RUN_COLUMNS)
        row.update(source_file=f"f{i}.json", source_row=0, run_id=f"r{i}", run_date_partition="undated", model="m", framework="vllm",
                   precision="fp8", spec_decoding="none", isl=1024, osl=1024, conc=8, disagg=False)
        row.update(run)
        rows.append(row)
    conn = duckdb.connect()
    write_table(conn, "validated_runs", pa.Table.from_pylist(rows, schema=RUN_SCHEMA))
    write_table(conn, "price_books", build_price_books(load_gpu_reference(), []))
    write_table(conn, "run_power", pa.Table.from_pylist(list(power), schema=POWER_SCHEMA))
    conn.execute(sql_text("run_gpu_counts"))
    conn.execute(sql_text("run_lengths"))
    request_stats_view(conn)  # run_request_stats: 1 / p90(E2EL / OSL) from per-request records (none here)
    return conn.sql(sql_text("run_metrics"), params={"partition_keys": ["undated"]}).to_arrow_table().to_pylist()


def test_seed_page_arithmetic_mi355x():
    # InferenceX seed page: 1835.8 tok/s/GPU on MI355X -> $0.224/M (hyperscaler $1.48/h), ≈ 692,757 tok/s/MW (2.65 kW)
    (m,) = _metrics({"hw": "mi355x", "tp": 8, "total_tput_tok_s": 1835.8 * 8, "output_tput_tok_s": 900.0 * 8,
                     "median_tpot_s": 0.02})
    assert m["tput_per_gpu"] == pytest.approx(1835.8)
    assert round(m["cost_per_mtok_hyperscaler"], 3) == 0.224
    assert m["tok_s_per_mw"] == pytest.approx(692_757, rel=1e-5)
    assert m["j_per_token"] == pytest.approx(2.65 * 1000 / 1835.8)
    assert m["cost_per_mtok_neocloud"] == pytest.approx(1.90 / (1835.8 * 3600 / 1e6))
    assert m["cost_per_mtok_rental"] == pytest.approx(2.10 / (1835.8 * 3600 / 1e6))


def test_interactivity_is_carried_from_the_parser():
    # *_intvty come from the parser (1000 / tpot_ms from the file's value, tests/test_dashboard_arithmetic.py)
    (m,) = _metrics({"hw": "h200", "tp": 8, "total_tput_tok_s": 8000.0, "median_tpot_s": 0.224,
                     "median_intvty": 1000 / 224, "mean_intvty": 4.0, "p90_intvty": 1000 / 300, "p99_intvty": 2.5})
    assert (m["median_intvty"], m["mean_intvty"], m["p99_intvty"]) == (1000 / 224, 4.0, 2.5)


def test_gpu_count_single_node_is_tp_pp_pcp():
    (m,) = _metrics({"hw": "b200", "tp": 4, "pp": 2, "pcp": 2, "total_tput_tok_s": 1600.0,
                     "output_tput_tok_s": 400.0, "input_tput_tok_s": 1200.0, "median_tpot_s": 0.01})
    assert m["num_gpus"] == 16
    assert (m["tput_per_gpu"], m["output_tput_per_gpu"], m["input_tput_per_gpu"]) == (100.0, 25.0, 75.0)


def test_disaggregated_divides_input_by_prefill_and_output_by_decode():
    (m,) = _metrics({"hw": "gb200", "disagg": True, "num_prefill_gpu": 4, "num_decode_gpu": 12,
                     "total_tput_tok_s": 16000.0, "output_tput_tok_s": 6000.0, "input_tput_tok_s": 10000.0,
                     "median_tpot_s": 0.01})
    assert m["num_gpus"] == 16
    assert m["tput_per_gpu"] == 1000.0
    assert m["output_tput_per_gpu"] == 500.0
    assert m["input_tput_per_gpu"] == 2500.0
    assert m["output_cost_per_mtok_hyperscaler"] == pytest.approx(2.21 / (500.0 * 3600 / 1e6))


def test_reported_per_gpu_values_are_used_when_totals_are_absent():
    (m,) = _metrics({"hw": "mi355x", "tp": 8, "reported_tput_per_gpu": 55.6, "reported_output_tput_per_gpu": 27.7,
                     "reported_input_tput_per_gpu": 27.9, "median_tpot_s": 0.0174})
    assert (m["tput_per_gpu"], m["output_tput_per_gpu"], m["input_tput_per_gpu"]) == (55.6, 27.7, 27.9)


def test_measured_lengths_and_failure_rate():
    (m,) = _metrics({"hw": "h100", "tp": 1, "total_tput_tok_s": 100.0, "median_tpot_s": 0.01, "completed": 40,
                     "failed": 0, "total_input_tokens": 37068, "total_output_tokens": 36709})
    assert m["mean_input_len"] == pytest.approx(926.7)
    assert m["mean_output_len"] == pytest.approx(917.725)
    assert m["failure_rate"] == 0.0


def test_measured_power_beside_all_in():
    (m,) = _metrics({"hw": "h200", "tp": 8, "total_tput_tok_s": 8000.0, "output_tput_tok_s": 4000.0,
                     "median_tpot_s": 0.02},
                    power=[{"run_id": "r0", "power_source": "telemetry", "power_valid": True,
                            "avg_power_w_per_gpu": 500.0, "energy_j": 500.0 * 8 * 100}])
    assert m["tput_per_gpu"] == 1000.0
    assert m["tok_s_per_mw"] == pytest.approx(1000.0 * 1000 / 1.73)  # all-in 1.73 kW per H200
    assert m["measured_tok_s_per_mw"] == pytest.approx(1000.0 * 1e6 / 500.0)  # 2,000,000 tok/s per MW of GPU power
    assert m["measured_j_per_token"] == pytest.approx(0.5)
    assert m["measured_j_per_output_token"] == pytest.approx(500.0 * 8 / 4000.0)


def test_invalid_power_leaves_measured_columns_null():
    (m,) = _metrics({"hw": "h200", "tp": 8, "total_tput_tok_s": 8000.0, "median_tpot_s": 0.02},
                    power=[{"run_id": "r0", "power_source": "telemetry", "power_valid": False,
                            "power_invalid_reason": "gap_too_long"}])
    assert m["measured_tok_s_per_mw"] is None and m["power_invalid_reason"] == "gap_too_long"
    assert m["tok_s_per_mw"] == pytest.approx(8000.0 / 8 * 1000 / 1.73)


def test_input_cost_divides_by_the_input_rate_and_output_cost_by_the_output_rate():
    """Issue 41: no test pinned an input cost, so dividing it by the output rate survived every test. GB200 at
    $2.21/GPU-h (hyperscaler, gpu_reference.csv), 4 prefill + 12 decode GPUs: input 10,000 tok/s over 4 GPUs =
    2,500 tok/s/GPU -> 2.21 / (2500 × 3600 / 1e6) $/M input tokens; output 6,000 over 12 = 500 tok/s/GPU."""
    (m,) = _metrics({"hw": "gb200", "disagg": True, "num_prefill_gpu": 4, "num_decode_gpu": 12,
                     "total_tput_tok_s": 16000.0, "output_tput_tok_s": 6000.0, "input_tput_tok_s": 10000.0,
                     "median_tpot_s": 0.01})
    assert m["input_cost_per_mtok_hyperscaler"] == pytest.approx(2.21 / (2500.0 * 3600 / 1e6))
    assert m["input_cost_per_mtok_rental"] == pytest.approx(m["rental_usd_per_gpu_hour"] / (2500.0 * 3600 / 1e6))
    assert m["output_cost_per_mtok_neocloud"] == pytest.approx(m["neocloud_usd_per_gpu_hour"] / (500.0 * 3600 / 1e6))
    assert m["input_cost_per_mtok_hyperscaler"] != pytest.approx(m["output_cost_per_mtok_hyperscaler"])


def test_totals_over_gpus_win_over_a_reported_per_gpu_value():
    """docs/metrics.md: tok/s/GPU is the run's totals ÷ its GPUs whenever the totals are there; a per-GPU value the
    source reports is used only without them (no fixture had both with different values)."""
    (m,) = _metrics({"hw": "mi355x", "tp": 8, "total_tput_tok_s": 800.0, "output_tput_tok_s": 400.0,
                     "input_tput_tok_s": 400.0, "reported_tput_per_gpu": 55.6, "reported_output_tput_per_gpu": 27.7,
                     "reported_input_tput_per_gpu": 27.9, "median_tpot_s": 0.0174})
    assert (m["tput_per_gpu"], m["output_tput_per_gpu"], m["input_tput_per_gpu"]) == (100.0, 50.0, 50.0)


def test_the_request_statistics_view_leaves_only_its_table_and_view():
    # a warehouse without raw_requests gets an empty one of REQUEST_SCHEMA's columns and the view over it; the
    # stand-in registered to create it is gone afterwards (a leftover relation would be read by name later)
    from pipeline.ingest.requests import REQUEST_SCHEMA

    conn = duckdb.connect()
    request_stats_view(conn)
    names = sorted(row[0] for row in conn.sql("select table_name from information_schema.tables").fetchall())
    assert names == ["raw_requests", "run_request_stats"]
    assert conn.sql("select * from raw_requests").to_arrow_table().schema.names == REQUEST_SCHEMA.names
    assert conn.execute("select count(*) from run_request_stats").fetchone() == (0,)


def test_request_statistics_read_only_successful_requests_with_output_by_hand():
    # run r1: E2EL / OSL of the counted requests: 10 s / 100 = 0.1 and 0.05 s / 1 = 0.05 (one output token still
    # counts); an errored request (1000 s / 100 = 10), one with no output and one with no E2EL are left out.
    # p90 (linear, quantile_cont) of [0.05, 0.1]: 0.05 + 0.9 × 0.05 = 0.095 → 1 / 0.095 tok/s/user over 2 requests
    from pipeline.ingest.requests import REQUEST_SCHEMA

    def request(i, e2el_s, output_tokens, error=None):
        return {"run_id": "r1", "request_index": i, "e2el_s": e2el_s, "output_tokens": output_tokens,
                "error": error, "run_date_partition": "2026-01-01"}

    rows = [request(0, 10.0, 100), request(1, 0.05, 1), request(2, 1000.0, 100, "timeout"), request(3, 5.0, 0),
            request(4, 0.0, 100)]
    conn = duckdb.connect()
    write_table(conn, "raw_requests", pa.Table.from_pylist(rows, schema=REQUEST_SCHEMA))
    request_stats_view(conn)
    (run_id, value, counted), = conn.execute(
        "select run_id, e2e_norm_intvty_p90, e2e_norm_requests from run_request_stats").fetchall()
    assert (run_id, counted) == ("r1", 2)
    assert value == pytest.approx(1 / 0.095)


def test_a_fixed_sequence_run_with_both_statistics_is_placed_by_its_median_interactivity():
    # a fixed-sequence row carrying the dashboard's E2E-normalized value too (InferenceX) stays on the median axis;
    # only a fixed-sequence run without TPOT (LLMPerf) is placed by the E2E-normalized value
    both, without_tpot = _metrics(
        {"hw": "h200", "tp": 8, "total_tput_tok_s": 8000.0, "benchmark_type": "fixed_seq", "median_tpot_s": 0.02,
         "median_intvty": 50.0, "e2e_norm_intvty_p90": 40.0},
        {"hw": "h200", "tp": 8, "total_tput_tok_s": 8000.0, "benchmark_type": "fixed_seq",
         "e2e_norm_intvty_p90": 40.0})
    assert (both["x_intvty"], both["x_intvty_stat"]) == (50.0, "median_intvty")
    assert (without_tpot["x_intvty"], without_tpot["x_intvty_stat"]) == (40.0, "e2e_norm_intvty_p90")


def test_failure_rate_counts_failed_over_all_requests_by_hand():
    # failed / (failed + completed): 10 / (10 + 30) = 0.25; no failed count means none failed (0 / 40 = 0);
    # one completed request: 0 / 1 = 0; a run of no request at all has no rate (0 / 0 is null, not an error),
    # with the failed count stated or not
    run = {"hw": "h100", "tp": 1, "total_tput_tok_s": 100.0, "median_tpot_s": 0.01}
    quarter, unstated, one, empty, empty_unstated = _metrics(
        {**run, "completed": 30, "failed": 10}, {**run, "completed": 40}, {**run, "completed": 1, "failed": 0},
        {**run, "completed": 0, "failed": 0}, {**run, "completed": 0})
    assert (quarter["failure_rate"], unstated["failure_rate"], one["failure_rate"]) == (0.25, 0.0, 0.0)
    assert (empty["failure_rate"], empty_unstated["failure_rate"]) == (None, None)


def test_every_cost_column_by_hand():
    # MI355X $/GPU-h 1.48 / 1.90 / 2.10 (hyperscaler / neocloud / rental). 1000 tok/s/GPU total = 1000 × 3600 / 1e6
    # = 3.6 M tok per GPU-hour; input 600 tok/s/GPU = 2.16 M/h, output 400 = 1.44 M/h. A run with no input (output)
    # tok/s has no input (output) cost: 0 M/h is no price.
    (m, no_input, no_output) = _metrics(
        {"hw": "mi355x", "tp": 8, "total_tput_tok_s": 8000.0, "input_tput_tok_s": 4800.0, "output_tput_tok_s": 3200.0,
         "median_tpot_s": 0.02},
        {"hw": "mi355x", "tp": 8, "total_tput_tok_s": 8000.0, "input_tput_tok_s": 0.0, "output_tput_tok_s": 3200.0,
         "median_tpot_s": 0.02},
        {"hw": "mi355x", "tp": 8, "total_tput_tok_s": 8000.0, "input_tput_tok_s": 8000.0, "output_tput_tok_s": 0.0,
         "median_tpot_s": 0.02})
    for tier, price in (("hyperscaler", 1.48), ("neocloud", 1.90), ("rental", 2.10)):
        assert m[f"cost_per_mtok_{tier}"] == pytest.approx(price / 3.6, rel=1e-12)
        assert m[f"input_cost_per_mtok_{tier}"] == pytest.approx(price / 2.16, rel=1e-12)
        assert m[f"output_cost_per_mtok_{tier}"] == pytest.approx(price / 1.44, rel=1e-12)
        assert no_input[f"input_cost_per_mtok_{tier}"] is None
        assert no_input[f"output_cost_per_mtok_{tier}"] == pytest.approx(price / 1.44, rel=1e-12)
        assert no_output[f"output_cost_per_mtok_{tier}"] is None


def test_every_cost_tier_and_direction_and_the_power_metrics_by_hand():
    # MI355X (gpu_reference.csv): 2.65 kW all-in, $1.48 / $1.90 / $2.10 per GPU-h (hyperscaler / neocloud / rental).
    # 8 GPUs: 8000 tok/s total -> 1000 tok/s/GPU, output 3000 -> 375, input 5000 -> 625 tok/s/GPU.
    # $/M tok = $/GPU-h / (tok/s/GPU × 3600 / 1e6): ÷ 3.6 (total), ÷ 2.25 (input), ÷ 1.35 (output).
    # tok/s/MW = 1000 × 1000 / 2.65; J/token = 2.65 × 1000 / 1000 = 2.65.
    (m,) = _metrics({"hw": "mi355x", "tp": 8, "total_tput_tok_s": 8000.0, "output_tput_tok_s": 3000.0,
                     "input_tput_tok_s": 5000.0, "median_tpot_s": 0.02})
    expected = {
        "cost_per_mtok_hyperscaler": 1.48 / 3.6, "cost_per_mtok_neocloud": 1.90 / 3.6,
        "cost_per_mtok_rental": 2.10 / 3.6,
        "input_cost_per_mtok_hyperscaler": 1.48 / 2.25, "input_cost_per_mtok_neocloud": 1.90 / 2.25,
        "input_cost_per_mtok_rental": 2.10 / 2.25,
        "output_cost_per_mtok_hyperscaler": 1.48 / 1.35, "output_cost_per_mtok_neocloud": 1.90 / 1.35,
        "output_cost_per_mtok_rental": 2.10 / 1.35,
        "tok_s_per_mw": 1e6 / 2.65, "j_per_token": 2.65,
    }
    assert {k: m[k] for k in expected} == pytest.approx(expected, rel=1e-12)


def test_a_zero_input_or_output_rate_has_no_cost_rather_than_an_infinite_one():
    # a run reporting 0 input tok/s (and one reporting 0 output tok/s): $/M input tokens is undefined, null (DuckDB
    # would give inf for x / 0.0); the other direction keeps its cost: 1.48 / (1000 × 0.0036) = 1.48 / 3.6
    (no_input, no_output) = _metrics(
        {"hw": "mi355x", "tp": 8, "total_tput_tok_s": 8000.0, "output_tput_tok_s": 8000.0, "input_tput_tok_s": 0.0,
         "median_tpot_s": 0.02},
        {"hw": "mi355x", "tp": 8, "total_tput_tok_s": 8000.0, "output_tput_tok_s": 0.0, "input_tput_tok_s": 8000.0,
         "median_tpot_s": 0.02})
    for tier in ("hyperscaler", "neocloud", "rental"):
        assert no_input[f"input_cost_per_mtok_{tier}"] is None and no_output[f"output_cost_per_mtok_{tier}"] is None
    assert no_input["output_cost_per_mtok_hyperscaler"] == pytest.approx(1.48 / 3.6, rel=1e-12)
    assert no_output["input_cost_per_mtok_hyperscaler"] == pytest.approx(1.48 / 3.6, rel=1e-12)


def test_measured_energy_per_output_token_of_a_disaggregated_run_and_of_a_run_without_output():
    # GB200, 4 prefill + 12 decode GPUs (16), 600 W per GPU measured: the output tokens come from the decode GPUs,
    # 6000 tok/s / 12 = 500 tok/s/GPU, so J/output token = 600 W × 16 GPUs / (500 × 12 tok/s) = 1.6 (dividing by
    # all 16 GPUs' rate would say 1.2). A run with 0 output tok/s has no J/output token: null, not inf.
    power = [{"run_id": run_id, "power_source": "telemetry", "power_valid": True, "avg_power_w_per_gpu": 600.0,
              "energy_j": 600.0 * 16 * 100} for run_id in ("r0", "r1")]
    disagg = {"hw": "gb200", "disagg": True, "num_prefill_gpu": 4, "num_decode_gpu": 12,
              "total_tput_tok_s": 16000.0, "input_tput_tok_s": 10000.0, "median_tpot_s": 0.01}
    (split, silent) = _metrics({**disagg, "output_tput_tok_s": 6000.0}, {**disagg, "output_tput_tok_s": 0.0},
                               power=power)
    assert split["measured_j_per_output_token"] == pytest.approx(1.6, rel=1e-12)
    assert silent["measured_j_per_output_token"] is None
