"""The normalized run schema every parser writes to, and the quarantine schema.

Grain of ``RUN_SCHEMA``: one benchmark run (one client invocation at one concurrency). Units: latencies in
seconds (``*_s``), throughputs in tok/s for the whole deployment (``*_tput_tok_s``), or per GPU as the source
reported them (``reported_*_per_gpu``, InferenceX rows only; the metric SQL prefers system totals).
"""

from __future__ import annotations

import pyarrow as pa

from pipeline.io.columns import SIDE_KEY

LATENCY_METRICS = ("ttft", "tpot", "itl", "e2el")
LATENCY_STATS = ("mean", "median", "std", "p90", "p95", "p99")
LATENCY_COLUMNS = tuple(f"{stat}_{metric}_s" for metric in LATENCY_METRICS for stat in LATENCY_STATS)
# Interactivity (tok/s/user) per TPOT statistic, computed by the parser from the TPOT in the file's own unit.
INTVTY_STATS = ("mean", "median", "p90", "p99")
INTVTY_COLUMNS = tuple(f"{stat}_intvty" for stat in INTVTY_STATS)

# Metadata keys of docs/inputs.md with their Arrow types, in mart order.
METADATA_FIELDS: tuple[tuple[str, pa.DataType], ...] = (
    ("model", pa.string()),
    ("hw", pa.string()),
    ("framework", pa.string()),
    ("precision", pa.string()),
    ("spec_decoding", pa.string()),
    ("tp", pa.int32()),
    ("pp", pa.int32()),
    ("pcp", pa.int32()),
    ("ep", pa.int32()),
    ("dp_attention", pa.bool_()),
    ("disagg", pa.bool_()),
    ("num_prefill_gpu", pa.int32()),
    ("num_decode_gpu", pa.int32()),
    ("isl", pa.int32()),
    ("osl", pa.int32()),
    # the random dataset's lower length bound as a fraction of isl/osl (lengths uniform in [r·n, n], SGLang's and
    # InferenceX's RANDOM_RANGE_RATIO); the measured lengths are judged against its mean n·(1 + r)/2
    ("random_range_ratio", pa.float64()),
    ("conc", pa.int32()),
    ("kv_offload", pa.string()),
    ("image", pa.string()),
    ("run_date", pa.date32()),
    ("power_log", pa.string()),
    ("start_time_unix", pa.float64()),
    # Disaggregated topology beyond the GPU counts (the dashboard's line key; InferenceX export rows carry them),
    # and what names a sweep (docs/metrics.md "Latest run per line").
    ("prefill_tp", pa.int32()),
    ("prefill_ep", pa.int32()),
    ("prefill_dp_attention", pa.bool_()),
    ("prefill_num_workers", pa.int32()),
    ("decode_num_workers", pa.int32()),
    ("is_multinode", pa.bool_()),
    ("run_url", pa.string()),
    ("sweep_id", pa.string()),
)
METADATA_KEYS = tuple(name for name, _ in METADATA_FIELDS)

RUN_SCHEMA = pa.schema(
    [
        ("source_file", pa.string()),
        ("source_format", pa.string()),
        ("source_row", pa.int32()),
        ("run_id", pa.string()),
        ("run_date_partition", pa.string()),
        ("content_sha256", pa.string()),
        ("model_id", pa.string()),
        ("benchmark_type", pa.string()),
        *METADATA_FIELDS,
        ("metadata_sources", pa.string()),
        ("metadata_conflicts", pa.string()),
        ("num_prompts", pa.int64()),
        ("completed", pa.int64()),
        ("failed", pa.int64()),
        ("duration_s", pa.float64()),
        ("total_input_tokens", pa.int64()),
        ("total_output_tokens", pa.int64()),
        ("request_throughput_req_s", pa.float64()),
        ("total_tput_tok_s", pa.float64()),
        ("output_tput_tok_s", pa.float64()),
        ("input_tput_tok_s", pa.float64()),
        ("reported_tput_per_gpu", pa.float64()),
        ("reported_output_tput_per_gpu", pa.float64()),
        ("reported_input_tput_per_gpu", pa.float64()),
        ("reported_median_intvty", pa.float64()),
        ("e2e_norm_intvty_p90", pa.float64()),
        ("e2e_norm_intvty_source", pa.string()),
        # the agentic stand-in when a row has no per-request E2EL/OSL: mean output tokens per request / p90 E2EL
        # (tok/s/user); another statistic than e2e_norm_intvty_p90, never stored under its name (docs/metrics.md 4a)
        ("mean_osl_over_p90_e2el", pa.float64()),
        *[(name, pa.float64()) for name in LATENCY_COLUMNS],
        *[(name, pa.float64()) for name in INTVTY_COLUMNS],
        ("latency_unit_in_file", pa.string()),
        ("percentile_method", pa.string()),
        ("bench_start_unix", pa.float64()),
        ("bench_end_unix", pa.float64()),
        ("bench_end_local", pa.timestamp("s")),
        ("reported_avg_power_w_per_gpu", pa.float64()),
        ("reported_energy_j", pa.float64()),
        ("spec_accept_length", pa.float64()),
        ("spec_accept_rate", pa.float64()),
        ("spec_metric_source", pa.string()),
        ("derivations", pa.string()),
    ]
)
RUN_COLUMNS = tuple(RUN_SCHEMA.names)
# The side key (pipeline.io.columns.SIDE_KEY) with the runs' types, for the schemas of the marts that carry it.
SIDE_KEY_FIELDS: tuple[tuple[str, pa.DataType], ...] = tuple((name, RUN_SCHEMA.field(name).type) for name in SIDE_KEY)
# benchmark_type: how the load was generated (docs/inputs.md). ``fixed_seq``: every request has the nominal ISL/OSL
# (random or fixed-length datasets), x-axis interactivity = 1 / median TPOT. ``agentic_traces``: recorded agentic
# sessions (InferenceX AgentX) replayed with their own lengths, no ISL/OSL, x-axis = E2E-normalized interactivity.
FIXED_SEQ = "fixed_seq"
AGENTIC_TRACES = "agentic_traces"
BENCHMARK_TYPES = (FIXED_SEQ, AGENTIC_TRACES)
# x_intvty_stat: the statistic run_metrics.x_intvty holds (sql/run_metrics.sql, docs/metrics.md section 4a), named
# by its column. A frontier or comparison never mixes two of them.
X_STAT_MEDIAN = "median_intvty"  # fixed_seq: 1 / median TPOT
X_STAT_E2E_NORM = "e2e_norm_intvty_p90"  # agentic_traces: 1 / p90 over requests of (E2EL_i / OSL_i), the definition
X_STAT_STANDIN = "mean_osl_over_p90_e2el"  # agentic_traces without it: mean OSL / p90 E2EL, a stand-in
X_INTVTY_STATS = (X_STAT_MEDIAN, X_STAT_E2E_NORM, X_STAT_STANDIN)
UNDATED = "undated"


def partition_key(run_date: object) -> str:
    """The daily partition a run belongs to: its ``run_date`` as YYYY-MM-DD, or ``undated`` when no source dates it
    (InferenceX agg rows, SGLang and TRT-LLM files without a sidecar date)."""
    return UNDATED if run_date is None else run_date.isoformat()  # type: ignore[attr-defined]

QUARANTINE_SCHEMA = pa.schema(
    [
        ("source_file", pa.string()),
        ("source_format", pa.string()),
        ("source_row", pa.int32()),
        ("reason_code", pa.string()),
        ("detail", pa.string()),
        ("stage", pa.string()),
        ("run_date_partition", pa.string()),
        ("duplicate_of", pa.string()),  # duplicate_run only: run_id of the copy that was kept
    ]
)
