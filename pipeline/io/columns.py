"""Every column the pipeline publishes, described once: its unit and what it means.

This module is the one place for column documentation. ``pipeline.defs.ui.table_metadata`` attaches these
descriptions to each materialization's ``dagster/column_schema`` (the Dagster UI's column table), and
``python -m pipeline docs`` writes ``docs/marts.md`` from ``MARTS``, ``DESCRIPTIONS`` and ``GLOSSARY``
(``tests/test_column_docs.py`` holds the committed file to the generated one and every mart column to a
description).

A description is keyed by column name: a name means the same thing in every table it appears in (``tput_per_gpu``
is tok/s/GPU in ``runs/``, ``frontiers.parquet`` and ``comparisons.parquet``). Where one mart gives a name a narrower
meaning (a frontier point's value vs a splined comparison cell), ``MART_NOTES`` adds a mart-specific sentence.
"""

from __future__ import annotations

# Short words used in column names, for readers who have not seen the InferenceX dashboard.
GLOSSARY: tuple[tuple[str, str], ...] = (
    ("intvty", "interactivity: tokens per second one user sees while a response streams, tok/s/user; for "
               "fixed-sequence runs 1000 / TPOT in ms (median unless the column says mean, p90 or p99)"),
    ("tput", "throughput in tokens per second (tok/s); `_per_gpu` divides the deployment's throughput by its GPU "
             "count (tok/s/GPU)"),
    ("mtok", "one million tokens; `cost_per_mtok_*` is US dollars per million tokens ($/M tok)"),
    ("conc", "concurrency: the number of requests the client keeps in flight (users)"),
    ("ttft", "time to first token, seconds"),
    ("tpot", "time per output token after the first, seconds"),
    ("itl", "inter-token latency between consecutive streamed chunks, seconds"),
    ("e2el", "end-to-end latency of one request, seconds"),
    ("isl / osl", "nominal input / output sequence length of the workload, tokens"),
    ("tok_s_per_mw", "tok/s per megawatt of all-in power: tok/s/GPU × 1000 / kW per GPU"),
    ("hyperscaler / neocloud / rental", "the three $/GPU-hour price tiers of the price book"),
    ("price book", "a named set of per-GPU power (kW) and $/GPU-hour prices; every row of a priced mart belongs "
                   "to one (`price_book`)"),
    ("side", "every run of one (model, ISL/OSL, GPU, precision[, spec decoding][, framework]); keys a comparison "
             "does not fix are pooled (`all`) into one frontier"),
    ("frontier", "the Pareto-optimal runs of a side: no other run has both higher tok/s/GPU and higher "
                 "interactivity"),
    ("slo", "service-level objective: latency bounds a request must meet (data/reference/slos.csv); goodput counts "
            "only the output tokens of requests meeting them"),
    ("target", "an interactivity (tok/s/user) at which both sides of a comparison are read off their frontiers"),
)

# The keys that name one serving stack on one workload (a frontier side, a trend group, a comparison side), in the
# order every mart that carries them lists them: a key added here reaches every such schema and this table.
SIDE_KEY = ("model", "isl", "osl", "hw", "precision", "spec_decoding", "framework", "benchmark_type")

# The marts under PIPELINE_OUT_DIR: name -> (file or folder, grain, columns in file order).
MARTS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "runs": ("runs/<model>/<run_date|undated>/part-0.parquet", "one accepted run per price book", (
        "source_file", "source_format", "source_row", "run_id", "run_date_partition", "content_sha256", "model_id",
        "benchmark_type", "model", "hw", "framework", "precision", "spec_decoding", "tp", "pp", "pcp", "ep",
        "dp_attention", "disagg", "num_prefill_gpu", "num_decode_gpu", "isl", "osl", "random_range_ratio", "conc", "kv_offload", "image",
        "run_date", "power_log", "start_time_unix", "prefill_tp", "prefill_ep", "prefill_dp_attention",
        "prefill_num_workers", "decode_num_workers", "is_multinode", "run_url", "metadata_sources", "metadata_conflicts",
        "num_prompts",
        "completed", "failed", "duration_s", "total_input_tokens", "total_output_tokens",
        "request_throughput_req_s", "total_tput_tok_s", "output_tput_tok_s", "input_tput_tok_s",
        "e2e_norm_intvty_p90", "e2e_norm_intvty_source", "mean_osl_over_p90_e2el",
        *(f"{stat}_{metric}_s" for metric in ("ttft", "tpot", "itl", "e2el")
          for stat in ("mean", "median", "std", "p90", "p95", "p99")),
        "latency_unit_in_file", "percentile_method", "bench_start_unix", "bench_end_unix", "bench_end_local",
        "spec_accept_length", "spec_accept_rate", "spec_metric_source", "derivations", "num_gpus", "tput_per_gpu",
        "output_tput_per_gpu", "input_tput_per_gpu", "mean_intvty", "median_intvty", "p90_intvty", "p99_intvty",
        "x_intvty", "x_intvty_stat", "mean_input_len", "mean_output_len", "latency_output_len", "expected_input_len",
        "expected_output_len", "length_check", "length_off_nominal", "failure_rate", "price_book",
        "price_book_version", "power_kw", "hyperscaler_usd_per_gpu_hour", "neocloud_usd_per_gpu_hour",
        "rental_usd_per_gpu_hour", "cost_per_mtok_hyperscaler", "cost_per_mtok_neocloud", "cost_per_mtok_rental",
        "input_cost_per_mtok_hyperscaler", "input_cost_per_mtok_neocloud", "input_cost_per_mtok_rental",
        "output_cost_per_mtok_hyperscaler", "output_cost_per_mtok_neocloud", "output_cost_per_mtok_rental",
        "tok_s_per_mw", "j_per_token", "power_source", "window_source", "power_valid", "power_invalid_reason",
        "energy_j", "avg_power_w_per_gpu", "measured_tok_s_per_mw", "measured_j_per_token",
        "measured_j_per_output_token", "line_id", "sweep_id", "superseded_by", "repeat_group", "repeat_n")),
    "quarantine": ("quarantine/{base,recent}.parquet", "one rejected file or row", (
        "source_file", "source_format", "source_row", "reason_code", "detail", "stage", "run_date_partition", "duplicate_of")),
    "ingest_ledger": ("ingest_ledger/{base,recent}.parquet", "one input file", (
        "source_file", "content_sha256", "size_bytes", "kind", "source_format", "rows_read", "accepted_rows",
        "length_off_nominal_rows", "quarantined_rows", "reason_codes", "pending_rows", "outcome")),
    "frontiers": ("frontiers.parquet", "one (side, price book, frontier point)", (
        "side_id", "price_book", "price_book_version", *SIDE_KEY, "side_runs", "excluded_runs", "side_intvty_min", "side_intvty_max",
        "point_index", "run_id", "source_file", "point_framework", "point_spec_decoding",
        "point_spec_metric_source", "median_intvty", "x_intvty", "x_intvty_stat", "tput_per_gpu", "cost_per_mtok_hyperscaler",
        "cost_per_mtok_neocloud", "cost_per_mtok_rental", "tok_s_per_mw", "concurrency", "output_tput_per_gpu",
        "input_tput_per_gpu", "measured_tok_s_per_mw", "output_cost_per_mtok_hyperscaler",
        "output_cost_per_mtok_neocloud", "output_cost_per_mtok_rental", "input_cost_per_mtok_hyperscaler",
        "input_cost_per_mtok_neocloud", "input_cost_per_mtok_rental", "line_id", "sweep_id", "repeat_group",
        "repeat_n", "tput_per_gpu_ci_lo", "tput_per_gpu_ci_hi", "median_intvty_ci_lo", "median_intvty_ci_hi",
        "repeat_spread", "repeats_disagree")),
    "comparisons": ("comparisons.parquet", "one (comparison, price book, target, side)", (
        "comparison_id", "price_book", "price_book_version", "kind", "title", "side", "side_label", "side_id",
        *SIDE_KEY, "x_intvty_stat", "side_runs",
        "excluded_runs", "frontier_points", "band_min", "band_max", "band_is_union", "band_display_min",
        "band_display_max", "target_index", "target_intvty", "evaluated_intvty", "target_clamped",
        "bracket_lo_intvty", "bracket_hi_intvty", "bracket_ratio", "bracket_lo_repeat_spread",
        "bracket_hi_repeat_spread", "tput_per_gpu", "cost_per_mtok_hyperscaler",
        "cost_per_mtok_neocloud", "cost_per_mtok_rental", "tok_s_per_mw", "concurrency", "output_tput_per_gpu",
        "input_tput_per_gpu", "measured_tok_s_per_mw", "output_cost_per_mtok_hyperscaler",
        "output_cost_per_mtok_neocloud", "output_cost_per_mtok_rental", "input_cost_per_mtok_hyperscaler",
        "input_cost_per_mtok_neocloud", "input_cost_per_mtok_rental", "implied_cost_per_mtok_hyperscaler",
        "sparse_frontier", "cell_basis", "cell_note", "measured_power_coverage", "cross_engine", "band_phrase",
        "cost_sentence",
        "tput_sentence", "sentence_caveat", "repeat_points", "tput_per_gpu_ci_lo", "tput_per_gpu_ci_hi",
        "median_intvty_ci_lo", "median_intvty_ci_hi", "cost_per_mtok_hyperscaler_ci_lo",
        "cost_per_mtok_hyperscaler_ci_hi", "cost_per_mtok_neocloud_ci_lo", "cost_per_mtok_neocloud_ci_hi",
        "cost_per_mtok_rental_ci_lo", "cost_per_mtok_rental_ci_hi", "difference_significant")),
    # the same rows restricted to the runs meeting each SLO of slos.csv, keyed by slo (pipeline.frontiers.points.
    # split_by_slo): kept out of frontiers.parquet and comparisons.parquet so that each of those has one grain
    "frontiers_slo": ("frontiers_slo.parquet", "one (SLO, side, price book, frontier point)", ()),
    "comparisons_slo": ("comparisons_slo.parquet", "one (SLO, comparison, price book, target, side)", ()),
    "trends": ("trends/<model>/<run_date|undated>/part-0.parquet",
               "one (price book, frontier group, run date, comparison, target) for each comparison a side of which "
               "holds the group", (
        "price_book", *SIDE_KEY, "x_intvty_stat", "run_date", "comparison_id", "side", "target_index", "target_intvty",
        "runs", "frontier_points", "frontier_intvty_min", "frontier_intvty_max",
        "in_range", "tput_per_gpu", "output_tput_per_gpu", "cost_per_mtok_hyperscaler", "cost_per_mtok_neocloud",
        "cost_per_mtok_rental", "tok_s_per_mw", "concurrency")),
    "regressions": ("regressions.parquet", "one change point of one series and metric", (
        "regression_id", "series_kind", "series_id", *SIDE_KEY, "line_id", "conc", "price_book", "target_intvty", "metric", "better",
        "direction", "status", "last_good_date", "first_bad_date", "latest_date", "before_points", "after_points",
        "before_sweeps", "after_sweeps", "last_good_run", "first_bad_run", "mean_before", "mean_after",
        "latest_value", "magnitude_pct", "p_value", "noise_pct", "noise_source", "method", "detected_at",
        "notified_at")),
    "requests": ("requests/<model>/<run_date|undated>/part-0.parquet", "one request of an accepted run whose harness "
                 "saved per-request data", (
        "run_id", "request_index", "ttft_s", "tpot_s", "e2el_s", "itl_p50_s", "itl_p99_s", "input_tokens",
        "output_tokens", "error", "model", "run_date", "run_date_partition")),
    "run_slo": ("run_slo/<model>/<run_date|undated>/part-0.parquet", "one (accepted run, SLO of slos.csv)", (
        "run_id", "model", "run_date", "run_date_partition", "slo", "slo_basis", "requests", "requests_meeting_slo",
        "slo_attainment", "slo_met", "goodput_tok_s_per_gpu", "slo_ttft_s", "slo_tpot_s", "slo_e2el_s",
        "slo_min_attainment")),
}

for _name in ("frontiers", "comparisons"):
    MARTS[f"{_name}_slo"] = (*MARTS[f"{_name}_slo"][:2], (*MARTS[_name][2], "slo"))

# Files a generation writes about itself (names starting with "_", which readers skip): name -> (file, grain,
# columns, what the Parquet footer holds).
GENERATION_FILES: dict[str, tuple[str, str, tuple[str, ...], str]] = {
    "accepted_runs": ("_accepted_runs.parquet", "one (role, line, run date)",
                      ("role", "line_id", "run_date_partition", "accepted_runs"),
                      "The footer's key `inference_frontier.publish` holds JSON: `generation`, `published_at`, "
                      "`warehouse_path`, `warehouse_id` and `out_dir` (the warehouse that published it and the "
                      "mart folder, pipeline/io/publish_guard.py), `accepted_runs` and `baseline_runs` (totals; "
                      "null without a baseline), `judged_against` (the last confirmed publish, whose baseline "
                      "this one was judged against), `lost_runs`, `lost_share`, `max_run_loss_share`, "
                      "`allow_shrink`, `confirmed` (no baseline, nothing lost, or `allow_shrink`), `raw_snapshot` (the parse-cache generation the warehouse's raw tables held: where the sensor's first tick starts) and "
                      "`baseline_since` (the last confirmed publish for the next one: this generation when "
                      "`confirmed`). The next publish's baseline is, per line and date, these counts when "
                      "`confirmed`, else the larger of the baseline's and these counts (a line a newer sweep "
                      "replaced: these counts)."),
}

_STAT = {"mean": "mean", "median": "median", "std": "standard deviation", "p90": "90th percentile",
         "p95": "95th percentile", "p99": "99th percentile"}
_LATENCY = {"ttft": "time to first token", "tpot": "time per output token (after the first)",
            "itl": "inter-token latency", "e2el": "end-to-end request latency"}
_TIER = {"hyperscaler": "hyperscaler", "neocloud": "neocloud", "rental": "rental"}

# name -> (unit, description). Unit "" for text, keys and flags.
DESCRIPTIONS: dict[str, tuple[str, str]] = {
    # line, sweep and repeats (docs/metrics.md "Latest run per line")
    "prefill_tp": ("GPUs", "tensor-parallel size of the prefill workers (disaggregated runs)"),
    "prefill_ep": ("GPUs", "expert-parallel size of the prefill workers (disaggregated runs)"),
    "prefill_dp_attention": ("", "data-parallel attention on the prefill workers (disaggregated runs)"),
    "prefill_num_workers": ("", "number of prefill workers (disaggregated runs)"),
    "decode_num_workers": ("", "number of decode workers (disaggregated runs)"),
    "is_multinode": ("", "the deployment spans several nodes"),
    "run_url": ("", "URL of the workflow run that produced the result (InferenceX), the sweep's id"),
    "line_id": ("", "the run's line: one configuration (model, ISL/OSL, GPU, engine, precision, spec method, whole "
                    "topology) read as a text id"),
    "sweep_id": ("", "the run's sweep: gha:<workflow run id> (gha:<id>/attempt/<k> for a re-run attempt k ≥ 2, "
                     "which replaces the earlier attempts), sweep:<sweep_id>, date:<run date> or undated"),
    "superseded_by": ("", "the next newer sweep of the same line, which replaced this run's sweep on frontiers "
                          "(follow the chain to the current sweep), or the higher attempt of the same workflow run "
                          "that replaced this run's attempt on every line; null when current"),
    "repeat_group": ("", "line|sweep|conc: runs of one group are repeats of one measurement, averaged"),
    "repeat_n": ("runs", "runs in the repeat group (1 = no repeat)"),
    "repeat_points": ("points", "frontier points of the side that average two or more repeats"),
    "tput_per_gpu_ci_lo": ("tok/s/GPU", "lower end of the 95 % Student-t interval of tok/s/GPU over the repeats "
                                        "(null when fewer than two)"),
    "tput_per_gpu_ci_hi": ("tok/s/GPU", "upper end of the 95 % Student-t interval of tok/s/GPU over the repeats"),
    "median_intvty_ci_lo": ("tok/s/user", "lower end of the 95 % Student-t interval of median interactivity over "
                                          "the repeats"),
    "median_intvty_ci_hi": ("tok/s/user", "upper end of the 95 % Student-t interval of median interactivity over "
                                          "the repeats"),
    **{f"cost_per_mtok_{t}_ci_{end}": ("$/M tok", f"{'lower' if end == 'lo' else 'upper'} end of the 95 % interval "
                                                  f"of the {t} cost at the target: the side's {t} $/GPU-h / 0.0036 "
                                                  f"over the tok/s/GPU interval's {'upper' if end == 'lo' else 'lower'} "
                                                  "end (null when the side has no tok/s/GPU interval)")
       for t in ("hyperscaler", "neocloud", "rental") for end in ("lo", "hi")},
    "repeat_spread": ("", "the repeat group's (max − min) / min of its runs' tok/s/GPU, 0.14 = 14 % apart; null "
                          "for a single run"),
    "repeats_disagree": ("", "repeat_spread is above 10 % (REPEAT_SPREAD_LIMIT): the runs averaged into this point "
                             "differ by more than run-to-run noise; the point is still their mean"),
    "bracket_lo_repeat_spread": ("", "repeat_spread of the frontier point at bracket_lo_intvty (null: no repeats or "
                                     "no such point)"),
    "bracket_hi_repeat_spread": ("", "repeat_spread of the frontier point at bracket_hi_intvty (null: no repeats or "
                                     "no such point)"),
    "difference_significant": ("", "the two sides' tok/s/GPU intervals at this target do not overlap; null when "
                                   "either side has no interval"),
    "duplicate_of": ("", "run_id of the accepted run this row measures again (duplicate_run only)"),
    # provenance
    "source_file": ("", "path of the raw file, relative to PIPELINE_RAW_DIR"),
    "source_format": ("", "detected format of the raw file (docs/inputs.md section 3), e.g. vllm_bench_serve"),
    "source_row": ("", "row or block index inside a multi-run file; null for a whole file"),
    "run_id": ("", "stable id of the run: 16 hex digits of sha1(source_file#source_row)"),
    "run_date_partition": ("", "run-date partition: YYYY-MM-DD, or undated when no source dates the run"),
    "content_sha256": ("", "sha256 of the raw file's bytes"),
    "model_id": ("", "model id or path as the engine printed it"),
    "benchmark_type": ("", "fixed_seq (every request has the nominal ISL/OSL) or agentic_traces (recorded agentic "
                           "sessions, no fixed ISL/OSL)"),
    "metadata_sources": ("", "where each metadata key came from, key=source;… (file, sidecar, runs.csv, …)"),
    "metadata_conflicts": ("", "metadata keys where the file and a sidecar or runs.csv disagreed"),
    "derivations": ("", "values the parser derived rather than read (e.g. total = input + output throughput)"),
    # run metadata (docs/inputs.md)
    "model": ("", "model key, e.g. dsr1, gpt-oss-120b"),
    "hw": ("", "GPU key of the GPU reference table, e.g. h200, b200, mi355x"),
    "framework": ("", "serving engine key (vllm, sglang, trtllm, dynamo-trt, …); all = pooled over engines"),
    "precision": ("", "weight/activation precision key (fp4, fp8, bf16, …)"),
    "spec_decoding": ("", "speculative decoding method (none, mtp, eagle, …); all = pooled over methods"),
    "tp": ("GPUs", "tensor-parallel size"),
    "pp": ("GPUs", "pipeline-parallel size (null counts as 1)"),
    "pcp": ("GPUs", "context-parallel size (null counts as 1)"),
    "ep": ("GPUs", "expert-parallel size (runs on the TP group's GPUs; not added to the count)"),
    "dp_attention": ("", "data-parallel attention on"),
    "disagg": ("", "prefill and decode on separate GPUs (disaggregated serving)"),
    "num_prefill_gpu": ("GPUs", "prefill GPUs of a disaggregated run"),
    "num_decode_gpu": ("GPUs", "decode GPUs of a disaggregated run"),
    "isl": ("tokens", "nominal input sequence length; null for agentic_traces"),
    "osl": ("tokens", "nominal output sequence length; null for agentic_traces"),
    "random_range_ratio": ("fraction", "the random dataset's lengths are uniform in [ratio × n, n] (SGLang, "
                                       "InferenceX's RANDOM_RANGE_RATIO); null when no source states it (read as 1)"),
    "conc": ("requests", "client concurrency: requests kept in flight"),
    "kv_offload": ("", "KV-cache offload setting, when the run states one"),
    "image": ("", "container image the run used"),
    "run_date": ("date", "date the benchmark ran; null for undated runs"),
    "power_log": ("", "telemetry file linked to the run, relative to its folder or the raw dir"),
    "start_time_unix": ("s since epoch", "benchmark start from the metadata, for the power window"),
    # counts and system throughput
    "num_prompts": ("requests", "requests the client was asked to send"),
    "completed": ("requests", "requests that completed"),
    "failed": ("requests", "requests that failed"),
    "duration_s": ("s", "benchmark duration"),
    "total_input_tokens": ("tokens", "input tokens over the completed requests"),
    "total_output_tokens": ("tokens", "output tokens over the completed requests"),
    "request_throughput_req_s": ("req/s", "completed requests per second"),
    "total_tput_tok_s": ("tok/s", "input + output tokens per second of the whole deployment"),
    "output_tput_tok_s": ("tok/s", "output tokens per second of the whole deployment"),
    "input_tput_tok_s": ("tok/s", "input tokens per second of the whole deployment"),
    "reported_tput_per_gpu": ("tok/s/GPU", "per-GPU total throughput as an InferenceX row reports it"),
    "reported_output_tput_per_gpu": ("tok/s/GPU", "per-GPU output throughput as an InferenceX row reports it"),
    "reported_input_tput_per_gpu": ("tok/s/GPU", "per-GPU input throughput as an InferenceX row reports it"),
    "reported_median_intvty": ("tok/s/user", "median interactivity as the file reports it (checked against TPOT)"),
    "reported_avg_power_w_per_gpu": ("W/GPU", "average power per GPU as an InferenceX row reports it"),
    "reported_energy_j": ("J", "energy as an InferenceX row reports it"),
    "e2e_norm_intvty_p90": ("tok/s/user", "E2E-normalized interactivity, 1 / p90 over requests of (E2EL / OSL): "
                                          "the row's own (dashboard) value, else from the run's per-request "
                                          "records; null without either (never the stand-in)"),
    "e2e_norm_intvty_source": ("", "where e2e_norm_intvty_p90 comes from: dashboard:p90_e2e_norm_intvty (the row's "
                                   "own value) or requests:p90(e2el/osl) (the run's per-request records)"),
    "mean_osl_over_p90_e2el": ("tok/s/user", "agentic stand-in from the row's aggregates: mean output tokens per "
                                             "request / p90 E2EL; not the dashboard's E2E-normalized interactivity "
                                             "(a percentile of ratios cannot be rebuilt from aggregates)"),
    **{f"{stat}_{metric}_s": ("s", f"{_STAT[stat]} {_LATENCY[metric]}")
       for metric in _LATENCY for stat in _STAT},
    "latency_unit_in_file": ("", "the latency unit the raw file used (ms or s); columns here are always s"),
    "percentile_method": ("", "how the engine computed its percentiles, when it says"),
    "bench_start_unix": ("s since epoch", "client's benchmark start"),
    "bench_end_unix": ("s since epoch", "client's benchmark end"),
    "bench_end_local": ("local time", "benchmark end in the machine's local clock (vLLM's date)"),
    "spec_accept_length": ("tokens/step", "speculative decoding: tokens emitted per verification step, bonus "
                                          "token included"),
    "spec_accept_rate": ("fraction", "speculative decoding: share of drafted tokens accepted (0–1)"),
    "spec_metric_source": ("", "engine field the acceptance metrics came from"),
    # per-GPU metrics (sql/run_metrics.sql)
    "num_gpus": ("GPUs", "GPUs of the deployment: tp × pp × pcp, or num_prefill_gpu + num_decode_gpu when "
                         "disaggregated"),
    "tput_per_gpu": ("tok/s/GPU", "total (input + output) tokens per second per GPU"),
    "output_tput_per_gpu": ("tok/s/GPU", "output tokens per second per GPU (per decode GPU when disaggregated)"),
    "input_tput_per_gpu": ("tok/s/GPU", "input tokens per second per GPU (per prefill GPU when disaggregated)"),
    "mean_intvty": ("tok/s/user", "interactivity from mean TPOT: 1000 / mean_tpot_ms"),
    "median_intvty": ("tok/s/user", "interactivity from median TPOT: 1000 / median_tpot_ms"),
    "p90_intvty": ("tok/s/user", "interactivity from p90 TPOT: 1000 / p90_tpot_ms"),
    "p99_intvty": ("tok/s/user", "interactivity from p99 TPOT: 1000 / p99_tpot_ms"),
    "x_intvty": ("tok/s/user", "frontier x-axis: median_intvty (fixed_seq; e2e_norm_intvty_p90 for a run without "
                               "TPOT, LLMPerf); e2e_norm_intvty_p90, else the stand-in mean_osl_over_p90_e2el "
                               "(agentic_traces); x_intvty_stat names which"),
    "x_intvty_stat": ("", "the statistic x_intvty holds, by its column name: median_intvty, e2e_norm_intvty_p90 or "
                          "mean_osl_over_p90_e2el; a frontier or comparison never mixes two"),
    "mean_input_len": ("tokens", "measured mean input length: total_input_tokens / completed"),
    "mean_output_len": ("tokens", "measured mean output length: total_output_tokens / completed"),
    "latency_output_len": ("tokens", "without token totals: (median E2EL − median TTFT) / median TPOT + 1, the output "
                                     "length a median request's latencies imply"),
    "expected_input_len": ("tokens", "mean input length the nominal ISL and random_range_ratio imply: "
                                     "isl × (1 + ratio) / 2"),
    "expected_output_len": ("tokens", "mean output length the nominal OSL and random_range_ratio imply: "
                                      "osl × (1 + ratio) / 2"),
    "length_check": ("", "how the lengths were checked: totals, latencies (OSL only) or unverified; null without "
                         "ISL/OSL (agentic traces)"),
    "length_off_nominal": ("", "measured ISL or OSL more than 10 % off its expected mean (a latency-implied OSL: 25 "
                               "%), or lengths unverified; kept here, left off frontiers"),
    "failure_rate": ("fraction", "failed / (failed + completed)"),
    "price_book": ("", "price-book scenario of the row's power and prices (inferencex-seed is the default)"),
    "price_book_version": ("", "version of the price book (e.g. the reference table's month)"),
    "power_kw": ("kW/GPU", "all-in power per GPU from the price book"),
    **{f"{t}_usd_per_gpu_hour": ("$/GPU-h", f"{t} price per GPU-hour from the price book") for t in _TIER},
    **{f"cost_per_mtok_{t}": ("$/M tok", f"{t} $/GPU-h / (tput_per_gpu × 3600 / 1e6): dollars per million total "
                                         "tokens") for t in _TIER},
    **{f"input_cost_per_mtok_{t}": ("$/M tok", f"{t} $/GPU-h / (input_tput_per_gpu × 3600 / 1e6): dollars per "
                                               "million input tokens") for t in _TIER},
    **{f"output_cost_per_mtok_{t}": ("$/M tok", f"{t} $/GPU-h / (output_tput_per_gpu × 3600 / 1e6): dollars per "
                                                "million output tokens") for t in _TIER},
    "tok_s_per_mw": ("tok/s/MW", "tput_per_gpu × 1000 / power_kw (all-in power of the price book)"),
    "j_per_token": ("J/tok", "power_kw × 1000 / tput_per_gpu (all-in power)"),
    # measured power (pipeline/metrics/power.py)
    "power_source": ("", "telemetry format the measured power came from (nvidia-smi, amd-smi, …)"),
    "window_source": ("", "how the benchmark window was found (start_time_unix + duration, client epoch window, "
                          "local date − duration)"),
    "window_clock": ("", "clock of the window: epoch or local_naive"),
    "window_start": ("s", "benchmark window start on window_clock"),
    "window_end": ("s", "benchmark window end on window_clock"),
    "gpus_seen": ("GPUs", "GPUs with samples in the telemetry"),
    "samples_in_window": ("samples", "telemetry samples inside the window"),
    "power_valid": ("", "telemetry covered the window well enough to integrate"),
    "power_invalid_reason": ("", "why measured power is null (too_few_samples, gap_too_long, window_not_covered, …)"),
    "power_detail": ("", "one line with the numbers behind power_valid"),
    "energy_j": ("J", "energy integrated over the window, all GPUs"),
    "avg_power_w_per_gpu": ("W/GPU", "measured average power per GPU over the window"),
    "measured_tok_s_per_mw": ("tok/s/MW", "tput_per_gpu × 1e6 / avg_power_w_per_gpu (measured GPU power, not "
                                          "all-in)"),
    "measured_j_per_token": ("J/tok", "avg_power_w_per_gpu / tput_per_gpu"),
    "measured_j_per_output_token": ("J/tok", "measured energy per output token"),
    # quarantine and ledger
    "reason_code": ("", "stable snake_case reason (docs/inputs.md), e.g. invalid_json, not_a_run_log:<kind>"),
    "detail": ("", "one line naming the file, the field and the reason"),
    "stage": ("", "where it was rejected: ingest or validate"),
    "size_bytes": ("bytes", "file size"),
    "kind": ("", "ledger: run_log, metadata_sidecar, power_telemetry, …; comparisons: spec_decoding, precision, hardware or "
                 "framework"),
    "rows_read": ("rows", "runs or rows the file gave"),
    "accepted_rows": ("rows", "runs that became validated runs"),
    "length_off_nominal_rows": ("rows", "accepted runs flagged length_off_nominal"),
    "quarantined_rows": ("rows", "rows or whole-file entries in the quarantine"),
    "reason_codes": ("", "the quarantine reason codes of the file's rows"),
    "pending_rows": ("rows", "runs of the file dated in a run date that no run has ingested yet (the sensor runs one "
                             "date at a time; 0 after a full refresh)"),
    "outcome": ("", "accepted, partially_accepted, quarantined, not_a_run_log, or pending (some of its runs' date "
                    "not ingested yet)"),
    # frontiers
    "side_id": ("", "side key, e.g. dsr1|1024/1024|mi355x|fp4|spec=mtp|framework=all"),
    "side_runs": ("runs", "runs of the side used for its frontier (per run, not per price book)"),
    "excluded_runs": ("runs", "runs of the side left off the frontier (length_off_nominal)"),
    "side_intvty_min": ("tok/s/user", "lowest x_intvty among the side's runs"),
    "side_intvty_max": ("tok/s/user", "highest x_intvty among the side's runs"),
    "point_index": ("", "position of the point along the frontier, 0 = lowest interactivity"),
    "point_framework": ("", "engine of the run at this frontier point"),
    "point_spec_decoding": ("", "spec-decoding method of the run at this frontier point"),
    "point_spec_metric_source": ("", "acceptance-metric source of the run at this frontier point"),
    "concurrency": ("requests", "client concurrency (conc) at the point, or splined between points"),
    # comparisons
    "comparison_id": ("", "<kind>:<side a id>~<side b id>"),
    "title": ("", "page title, e.g. MI355X FP4: MTP vs Off"),
    "side": ("", "a (the challenger) or b"),
    "side_label": ("", "display label of the side, e.g. MTP"),
    "frontier_points": ("points", "measured frontier points of the side (trends: of the day's frontier)"),
    "band_min": ("tok/s/user", "low end of the interactivity band both frontiers cover"),
    "band_max": ("tok/s/user", "high end of the interactivity band"),
    "band_is_union": ("", "the sides do not overlap: the band is their union, and some cells are clamped"),
    "band_display_min": ("tok/s/user", "band_min rounded as the page shows it"),
    "band_display_max": ("tok/s/user", "band_max rounded as the page shows it"),
    "target_index": ("", "1, 2, 3: which target of the comparison"),
    "target_intvty": ("tok/s/user", "interactivity the cell is read at"),
    "evaluated_intvty": ("tok/s/user", "interactivity actually evaluated: target_intvty, or the side's frontier "
                                       "end when clamped"),
    "target_clamped": ("", "the target lies outside this side's frontier; the value is the frontier end's, not "
                           "the target's"),
    "bracket_lo_intvty": ("tok/s/user", "measured frontier point just below the target (null: none)"),
    "bracket_hi_intvty": ("tok/s/user", "measured frontier point just above the target (null: none)"),
    "bracket_ratio": ("", "bracket_hi_intvty / bracket_lo_intvty: how far apart the measured neighbours are (1.0 on "
                          "a point; above 1.5 the cell is interpolated across a gap); null when clamped"),
    "cell_basis": ("", "how the cell was read: measured (the target is a frontier point), interpolated (between two "
                       "points at most 1.5× apart whose splines agree), interpolated_gap (points more than 1.5× "
                       "apart, or sparse_frontier), clamped (the target is outside the frontier)"),
    "implied_cost_per_mtok_hyperscaler": ("$/M tok", "hyperscaler cost implied by the splined tput_per_gpu, for "
                                                     "the sparse_frontier test"),
    "sparse_frontier": ("", "splined cost and throughput-implied cost differ by more than 5 %: the points around "
                            "the target are too far apart to trust the cell"),
    "cell_note": ("", "why the cell is not a measured value (clamped, or interpolated across a gap), and which "
                      "bracketing point averages repeats more than 10 % apart, in words; null when none applies"),
    "measured_power_coverage": ("fraction", "share of the side's frontier points with valid telemetry"),
    "cross_engine": ("", "spec-decoding points come from engines whose acceptance rates are defined differently"),
    "band_phrase": ("", "where the target sits in the band (near the low end, around the middle, …)"),
    "cost_sentence": ("", "the page's cost sentence at this target (hyperscaler): N% cheaper, the ratio form at N ≥ "
                          "100, essentially tied, or within run-to-run noise where the 95 % intervals overlap"),
    "tput_sentence": ("", "the page's throughput sentence at this target: N% more tok/s/GPU, essentially tied, or "
                          "within run-to-run noise where the 95 % intervals overlap"),
    "sentence_caveat": ("", "caveat appended to the sentences: the two sides' cell_note at this target, joined"),
    # trends
    "runs": ("runs", "runs of the group on that date"),
    "frontier_intvty_min": ("tok/s/user", "lowest interactivity on the day's frontier"),
    "frontier_intvty_max": ("tok/s/user", "highest interactivity on the day's frontier"),
    "in_range": ("", "target_intvty lies on the day's frontier; metrics are null when false"),
    # regressions (docs/regressions.md)
    "regression_id": ("", "the change's id: first 16 hex digits of sha256 over series, metric, direction and the "
                          "first bad date it was found with (kept when later runs date it a point or two apart)"),
    "series_kind": ("", "line: one line (line_id) at one concurrency, a point per sweep; frontier: one frontier "
                        "group and price book read at target_intvty, a point per date"),
    "series_id": ("", "the series as text: <line_id>|conc=<N>, or <price_book>|<frontier group>|at=<target>"),
    "metric": ("", "the metric that changed (data/reference/regression_metrics.csv)"),
    "better": ("", "higher or lower: the direction of the metric that is an improvement"),
    "direction": ("", "regression (the metric moved the worse way) or improvement"),
    "status": ("", "new: first found by this run; ongoing: found by an earlier run and still there; recovered: "
                   "a later change brought the series back within the minimum magnitude of the level before"),
    "last_good_date": ("", "date of the last point before the change"),
    "first_bad_date": ("", "date of the first point after the change"),
    "latest_date": ("", "date of the series' newest point"),
    "before_points": ("points", "points before the change that mean_before and the test use (at most the window)"),
    "after_points": ("points", "points after the change that mean_after and the test use (at most the window)"),
    "before_sweeps": ("", "the sweep ids (line) or dates (frontier) of the points before the change"),
    "after_sweeps": ("", "the sweep ids (line) or dates (frontier) of the points after the change"),
    "last_good_run": ("", "the last good point's run: its InferenceX run_url, else its source_file; null for a "
                          "frontier"),
    "first_bad_run": ("", "the first bad point's run: its InferenceX run_url, else its source_file; null for a "
                          "frontier"),
    "mean_before": ("metric units", "mean of the points before the change (tok/s/GPU, s, $/M tok, tok/s/MW or a "
                                    "fraction, as the metric)"),
    "mean_after": ("metric units", "mean of the points after the change"),
    "latest_value": ("metric units", "the series' newest point"),
    "magnitude_pct": ("%", "(mean_after / mean_before − 1) × 100; for failure_rate the change in percentage points"),
    "p_value": ("", "two-sided Student t-test of the points before against the points after, noise pooled from "
                    "the series' residuals or its repeats"),
    "noise_pct": ("%", "the per-point noise the test used, as a coefficient of variation (failure_rate: "
                       "percentage points)"),
    "noise_source": ("", "residuals (around the series' segments, at least the robust first-difference "
                         "estimate), repeats (within a point's runs), or floor (the metric's noise_floor)"),
    "method": ("", "the detection method: ruptures' binary segmentation (L2 cost) and a Student t-test"),
    "detected_at": ("UTC", "when a run first found the change"),
    "notified_at": ("UTC", "when the webhook announced it; null = not announced (no webhook, an improvement, or "
                           "recovered before one was configured)"),
    # per-request data and SLOs (docs/metrics.md "SLOs, attainment and goodput")
    "request_index": ("", "position of the request in its run's per-request records, 0 first"),
    "ttft_s": ("s", "the request's time to first token; null for an errored request"),
    "tpot_s": ("s", "the request's time per output token after the first: (e2el − ttft) / (output tokens − 1), or "
                    "the harness's own per-request value (AIPerf, GuideLLM); null with one output token or fewer"),
    "e2el_s": ("s", "the request's end-to-end latency: the file's own, else ttft + sum of its inter-token gaps"),
    "itl_p50_s": ("s", "median of the request's inter-token gaps (numpy linear interpolation)"),
    "itl_p99_s": ("s", "99th percentile of the request's inter-token gaps (numpy linear interpolation)"),
    "input_tokens": ("tokens", "the request's prompt length"),
    "output_tokens": ("tokens", "the request's generated tokens"),
    "error": ("", "the harness's error text for a failed request (at most 300 characters); null on success"),
    "slo": ("", "the SLO of data/reference/slos.csv the row is about: the runs meeting it (frontiers_slo, "
                "comparisons_slo: the frontiers and comparisons of only those runs; in the warehouse tables 'none' "
                "marks the rows of every run, which the files frontiers.parquet and comparisons.parquet hold)"),
    "slo_basis": ("", "per_request: judged request by request from the requests mart; p99_summary: the run's "
                      "summary p99 TTFT/TPOT/E2EL against the bounds (no per-request data)"),
    "requests": ("requests", "requests of the run, errored included (per_request basis; null on p99_summary)"),
    "requests_meeting_slo": ("requests", "requests without error whose every bounded latency is within its bound"),
    "slo_attainment": ("fraction", "requests_meeting_slo / requests (null on p99_summary)"),
    "slo_met": ("", "per_request: slo_attainment ≥ slo_min_attainment; p99_summary: every bounded p99 within its "
                    "bound; null when a bounded p99 is missing"),
    "goodput_tok_s_per_gpu": ("tok/s/GPU", "output tokens of the requests meeting the SLO / duration_s / num_gpus "
                                           "(per_request basis only)"),
    "slo_ttft_s": ("s", "the SLO's TTFT bound; null = no bound"),
    "slo_tpot_s": ("s", "the SLO's TPOT bound; null = no bound"),
    "slo_e2el_s": ("s", "the SLO's E2EL bound; null = no bound"),
    "slo_min_attainment": ("fraction", "share of requests that must meet every bound for slo_met"),
    # reference tables
    # a generation's record of its accepted runs (GENERATION_FILES)
    "role": ("", "published: this generation's accepted runs; baseline: the counts it was judged against "
                 "(the last confirmed publish's, or larger where a loss under the allowed share was let through)"),
    "accepted_runs": ("runs", "accepted runs of the line on that run date, each counted once whatever its price "
                              "books (distinct run_id of runs/)"),
    "display_name": ("", "GPU name as pages show it"),
    "reference_version": ("", "version of the GPU reference table"),
}

# Mart-specific sentences appended to the shared description.
MART_NOTES: dict[tuple[str, str], str] = {
    ("frontiers", "tput_per_gpu"): "measured value of the frontier run",
    ("comparisons", "tput_per_gpu"): "splined along the side's frontier at evaluated_intvty",
    ("comparisons", "cost_per_mtok_hyperscaler"): "splined at evaluated_intvty",
    ("trends", "tput_per_gpu"): "the day's frontier splined at target_intvty",
    ("trends", "target_intvty"): "the comparison's target_index-th default target (25/50/75 % of its band, as "
                                 "in comparisons.parquet)",
    ("trends", "comparison_id"): "a comparison one of whose sides holds the frontier group (its pooled keys take "
                                 "any value)",
    ("trends", "side"): "the side of the comparison that holds the frontier group",
    ("regressions", "target_intvty"): "the trend target a frontier series is read at; null for a line",
    ("regressions", "conc"): "a line series' concurrency; null for a frontier",
    ("regressions", "price_book"): "a frontier series' price book; null for a line",
    ("regressions", "line_id"): "null for a frontier",
}


def describe(name: str, mart: str | None = None) -> str | None:
    """One line for column ``name``: ``"<description> [<unit>]"`` (no brackets for unitless columns), with the
    ``MART_NOTES`` sentence for ``mart`` appended; ``None`` for a column this module does not know."""
    entry = DESCRIPTIONS.get(name)
    if entry is None:
        return None
    unit, text = entry
    note = MART_NOTES.get((mart, name)) if mart else None
    return f"{text}{'; ' + note if note else ''}{f' [{unit}]' if unit else ''}"


def field_metadata(name: str, mart: str | None = None) -> dict[str, str]:
    """The Parquet field metadata of column ``name`` in mart ``mart`` (a ``MARTS`` key; other names get no
    mart note): ``{"description": describe(name, mart)}`` plus ``{"unit": <unit>}`` where ``DESCRIPTIONS`` gives
    the column a unit (``"tok/s/GPU"``, ``"s"``, ``"$/M tok"``, …); ``{}`` for a column this module does not
    know. ``pipeline.io.storage`` attaches it to every column of every mart file it writes, so a reader of one
    file (``pyarrow.parquet.read_schema(f).field("tput_per_gpu").metadata``) finds the same text as
    docs/marts.md. Raises nothing."""
    text = describe(name, mart)
    if text is None:
        return {}
    unit = DESCRIPTIONS[name][0]
    return {"description": text, **({"unit": unit} if unit else {})}


def marts_markdown() -> str:
    """The text of ``docs/marts.md``: the glossary, then per mart its path, grain and a column / unit / meaning
    table, in ``MARTS`` order, then the same for ``GENERATION_FILES``."""
    lines = [
        "# Marts: every column, its unit and its meaning",
        "",
        "Generated by `python -m pipeline docs` from `pipeline/io/columns.py`, the same descriptions the Dagster UI",
        "shows in each asset's column schema. Do not edit by hand; `tests/test_column_docs.py` fails when this",
        "file and the module disagree, or when a mart has a column without a description.",
        "",
        "Marts live under `PIPELINE_OUT_DIR` (default `data/marts/`). Units: latencies in s, throughput in tok/s",
        "(per GPU: tok/s/GPU), interactivity in tok/s/user, cost in $ per million tokens, all-in power in kW per GPU,",
        "measured power in W per GPU, energy in J. Formulas: [metrics.md](metrics.md).",
        "",
        "Each Parquet file of a mart carries the same text in its schema: every column's field metadata holds",
        "`description` (the meaning, the mart's note and the unit in brackets) and, where the column has one, `unit`",
        "(`pyarrow.parquet.read_schema(f).field(\"tput_per_gpu\").metadata`).",
        "",
        "A mart with a folder is read as the folder: `runs/` and `trends/` have one file per (model, run date);",
        "`quarantine/` and `ingest_ledger/` are the rows of `base.parquet` and `recent.parquet` together (the rows",
        "of the files a night changed go to `recent`, so a night does not rewrite the history's rows; each file is",
        "sorted by `source_file`, the folder is not: sort when the order matters; the empty `_WHOLE` file beside",
        "them, which readers skip, tells the publisher to keep the two from one run).",
        "",
        "## Glossary",
        "",
        "| term | meaning |",
        "| --- | --- |",
        *[f"| `{term}` | {text} |" for term, text in GLOSSARY],
    ]
    for mart, (path, grain, columns) in MARTS.items():
        lines += ["", f"## `{mart}`", "", f"`{path}`; one row per {grain.removeprefix('one ')}.", "",
                  "| column | unit | meaning |", "| --- | --- | --- |"]
        for column in columns:
            unit, text = DESCRIPTIONS[column]
            note = MART_NOTES.get((mart, column))
            lines.append(f"| `{column}` | {unit} | {text}{'; ' + note if note else ''} |")
    lines += ["", "## Files of a generation about itself", "",
              "Each published generation (`current`, `.generations/<generation>/`) also holds files whose names start",
              "with `_`, which readers skip and no later generation inherits: each publish writes its own."]
    for path, grain, columns, footer in GENERATION_FILES.values():
        lines += ["", f"### `{path}`", "", f"One row per {grain.removeprefix('one ')}. {footer}", "",
                  "| column | unit | meaning |", "| --- | --- | --- |"]
        lines += [f"| `{column}` | {DESCRIPTIONS[column][0]} | {DESCRIPTIONS[column][1]} |" for column in columns]
    return "\n".join(lines) + "\n"
