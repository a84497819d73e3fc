"""Values of the validation rules that read several columns (the tok/s/GPU ceiling, the duration ratios, the
GPU-count and finite-and-positive checks) and of their screens, each on rows whose outcome is worked out by hand.

A screen is held to exactly the rows written here: flagging one too few would let a bad run through
``validate_table``; flagging a clean run would make the table path apply every rule to every row again.
Reference numbers come from a ``Plausibility`` built in the test, so no expectation depends on the reference files.
"""

import datetime as dt
import math
import warnings

import pyarrow as pa
import pytest

from pipeline.ingest.schema import QUARANTINE_SCHEMA, RUN_SCHEMA
from pipeline.metrics.reference import load_gpu_reference
from pipeline.validate import rules as rules_module
from pipeline.validate.plausibility import Plausibility, Range, load_plausibility
from pipeline.validate.rules import (
    _VERBATIM_KEY,
    RUN_SCHEMA_PAIRING,
    _could_pair,
    accepted_runs,
    ceiling_rule,
    duplicates_in_table,
    range_rule,
    rules,
    same_measurement,
    unknown_hw_rule,
    validate_table,
)

KNOWN_HW = load_gpu_reference().column("hw").to_pylist()

# ceilings (tok/s/GPU) = peak PFLOP/s × 1e15 / (2 × active params × 1e9):
#   h200 (2 PFLOP/s) running dsr1 (40 B active): 2e15 / 8e10 = 25,000;   h200 running "other" (10 B): 100,000
#   b200 (8 PFLOP/s) running dsr1: 8e15 / 8e10 = 100,000;                 lowest of all: 25,000
#   a model not listed has no ceiling (unknown_model_size judges it)
OUTPUT_RATIO = Range("output_duration_ratio", "output_throughput", 0.5, 2.0, "ratio")
TOTAL_RATIO = Range("total_duration_ratio", "total_token_throughput", 0.5, 2.0, "ratio")
PP_RANGE = Range("pp", "pp", 1, 64, "GPUs")
TPOT_RANGE = Range("median_tpot_s", "median_tpot_ms", 0.0005, 5.0, "s")  # the unit rule reads its ends
REFERENCE = Plausibility(ranges=(OUTPUT_RATIO, TOTAL_RATIO, PP_RANGE, TPOT_RANGE), peak_pflops={"h200": 2.0, "b200": 8.0},
                         active_params_b={"dsr1": 40.0, "other": 10.0}, bandwidth_tb_s={"h200": 4.8, "b200": 8.0},
                         e2el_decode_ratio=Range("e2el_decode_ratio", "e2el", 0.0, 10.0, "ratio"),
                         weight_bytes_per_param=0.5, max_tokens_per_step=8.0)
CEILING_TAIL = ("(dense peak ÷ 2 FLOPs per activated parameter; data/reference/gpu_peak_flops.csv, "
                "model_active_params.csv)")


def _row(**values) -> dict:
    row = dict.fromkeys(RUN_SCHEMA.names)
    row.update(hw="h200", model="dsr1")
    row.update(values)
    return row


def _table(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=RUN_SCHEMA)


# --- the tok/s/GPU ceiling -------------------------------------------------------------------------------------

# (row, per-GPU value the rule reports or None when it passes, whether the screen flags it: per-GPU > 25,000)
CEILING_CASES = [
    (dict(tp=2, pp=3, pcp=5, total_tput_tok_s=825000.0), "27500", True),        # 30 GPUs: 27,500 > 25,000
    (dict(tp=2, pp=3, pcp=5, total_tput_tok_s=675000.0), None, False),          # 30 GPUs: 22,500
    (dict(tp=2, pp=3, total_tput_tok_s=135000.0), None, False),                 # 6 GPUs: 22,500 (pp counts)
    (dict(tp=2, pcp=3, total_tput_tok_s=135000.0), None, False),                # 6 GPUs: 22,500 (pcp counts)
    (dict(tp=2, pp=3, total_tput_tok_s=165000.0), "27500", True),               # 6 GPUs: 27,500
    (dict(tp=2, total_tput_tok_s=55000.0), "27500", True),                      # pp, pcp absent: 2 GPUs
    (dict(tp=2, disagg=None, total_tput_tok_s=55000.0), "27500", True),         # null disagg: aggregated
    (dict(disagg=True, num_prefill_gpu=3, num_decode_gpu=5, total_tput_tok_s=220000.0), "27500", True),  # 8 GPUs
    (dict(disagg=True, tp=1, num_prefill_gpu=3, num_decode_gpu=5, total_tput_tok_s=180000.0), None, False),
    (dict(reported_tput_per_gpu=30000.0), "30000", True),                       # no total: the reported value
    (dict(tp=0, total_tput_tok_s=1e9, reported_tput_per_gpu=20000.0), None, False),  # 0 GPUs: the reported value
    (dict(hw="b200", tp=1, total_tput_tok_s=99999.0), None, True),              # under b200's 100,000
    (dict(hw="b200", tp=1, total_tput_tok_s=100001.0), "100001", True),
    (dict(model="other", tp=1, total_tput_tok_s=99000.0), None, True),          # "other": 100,000
    (dict(model="unlisted", tp=1, total_tput_tok_s=1e9), None, True),           # no size: unknown_model_size
    (dict(hw="rtx", tp=1, total_tput_tok_s=1e9), None, True),                   # no peak: unknown_hw judges it
    (dict(tp=1), None, False),                                                  # nothing to divide
]


@pytest.mark.parametrize("values, per_gpu, _", CEILING_CASES)
def test_ceiling_rule_divides_by_every_gpu(values, per_gpu, _):
    row = _row(**values)
    finding = ceiling_rule(REFERENCE)(row)
    if per_gpu is None:
        assert finding is None
        return
    ceiling = "100000" if row["hw"] == "b200" else "25000"
    assert finding == ("implausible:tput_per_gpu", f"{per_gpu} tok/s/GPU is above the {ceiling} a {row['hw']} can "
                                                   f"compute for model {row['model']!r} {CEILING_TAIL}")


def test_ceiling_screen_flags_every_run_above_the_lowest_ceiling():
    rows = [_row(**values) for values, _, _ in CEILING_CASES]
    assert ceiling_rule(REFERENCE).screen(_table(rows)).to_pylist() == [flag for _, _, flag in CEILING_CASES]


def test_the_reference_given_is_the_one_applied():
    run = _row(tp=2, total_tput_tok_s=53000.0)  # 26,500 tok/s/GPU: above the test's 25,000, below the files' 26,743

    def codes(rule_list):
        return {finding[0] for finding in (rule(run) for rule in rule_list) if finding}

    assert "implausible:tput_per_gpu" in codes(rules(["h200"], REFERENCE))
    assert "implausible:tput_per_gpu" not in codes(rules(["h200"]))


def test_the_default_reference_is_read_once_from_the_files(monkeypatch):
    rules_module._LOADED.clear()
    first = rules_module._default_plausibility()
    assert first == load_plausibility() and rules_module._default_plausibility() is first
    # h200 running dsr1 per data/reference: 1.979e15 / (2 × 37e9) = 26,743.2 tok/s/GPU
    assert first.ceiling("h200", "dsr1") == pytest.approx(1.979e15 / 74e9)
    run = _row(tp=1, total_tput_tok_s=26800.0)
    assert ceiling_rule(first)(run)[1].startswith("26800 tok/s/GPU is above the 26743.2 a h200")
    assert [rule(run) for rule in rules(["h200"])][13][0] == "implausible:tput_per_gpu"


# --- duration ratios and plain ranges --------------------------------------------------------------------------

# output ratio = total_output_tokens / output_tput_tok_s / duration_s
# total ratio  = (total_input_tokens + total_output_tokens) / total_tput_tok_s / duration_s
# (row, output-ratio rule's shown value or None, total-ratio rule's, output screen, total screen)
RATIO_CASES = [
    (dict(total_output_tokens=3000, output_tput_tok_s=10.0, duration_s=100.0), "3", None, True, False),
    (dict(total_output_tokens=1500, output_tput_tok_s=10.0, duration_s=100.0), None, None, False, False),
    (dict(total_output_tokens=40, output_tput_tok_s=1.0, duration_s=100.0), "0.4", None, True, False),
    (dict(total_output_tokens=50, output_tput_tok_s=1.0, duration_s=100.0), None, None, False, False),  # 0.5: in
    (dict(total_output_tokens=200, output_tput_tok_s=1.0, duration_s=100.0), None, None, False, False),  # 2: in
    # total (1000 + 2000) / 10 / 100 = 3 while output 2000 / 10 / 100 = 2 is in range
    (dict(total_input_tokens=1000, total_output_tokens=2000, total_tput_tok_s=10.0, output_tput_tok_s=10.0,
          duration_s=100.0), None, "3", False, True),
    # total (3000 + 1000) / 20 / 100 = 2 (in) while output 1000 / 1 / 100 = 10
    (dict(total_input_tokens=3000, total_output_tokens=1000, total_tput_tok_s=20.0, output_tput_tok_s=1.0,
          duration_s=100.0), "10", None, True, False),
    (dict(total_input_tokens=None, total_output_tokens=2000, total_tput_tok_s=1.0, output_tput_tok_s=1.0,
          duration_s=100.0),
     "20", None, True, False),  # no input tokens: no total ratio
    # below the guards: a missing, zero or negative input is judged by other rules, never a ratio
    (dict(total_output_tokens=0, output_tput_tok_s=10.0, duration_s=100.0), None, None, True, False),
    (dict(total_output_tokens=1000, output_tput_tok_s=10.0, duration_s=-100.0), None, None, True, False),
    (dict(total_output_tokens=1000, output_tput_tok_s=-10.0, duration_s=100.0), None, None, True, False),
    (dict(total_output_tokens=1000, output_tput_tok_s=0.0, duration_s=100.0), None, None, True, False),
    (dict(total_output_tokens=1000, output_tput_tok_s=10.0, duration_s=0.0), None, None, True, False),
    (dict(total_output_tokens=1000, output_tput_tok_s=None, duration_s=100.0), None, None, False, False),
    (dict(total_output_tokens=1000, output_tput_tok_s=10.0, duration_s=None), None, None, False, False),
    # small positive inputs are real ratios: 1000 / 0.5 / 100 = 20, 1000 / 10 / 0.5 = 200, 1 / 0.001 / 100 = 10
    (dict(total_output_tokens=1000, output_tput_tok_s=0.5, duration_s=100.0), "20", None, True, False),
    (dict(total_output_tokens=1000, output_tput_tok_s=10.0, duration_s=0.5), "200", None, True, False),
    (dict(total_output_tokens=1, output_tput_tok_s=0.001, duration_s=100.0), "10", None, True, False),
    (dict(total_output_tokens=1000, output_tput_tok_s=math.nan, duration_s=100.0), "nan", None, True, False),
]


@pytest.mark.parametrize("values, output_shown, total_shown, _o, _t", RATIO_CASES)
def test_duration_ratio_rules(values, output_shown, total_shown, _o, _t):
    row = _row(**values)
    for bound, shown in ((OUTPUT_RATIO, output_shown), (TOTAL_RATIO, total_shown)):
        expected = None if shown is None else (
            f"implausible:{bound.reason_field}",
            f"{bound.field} = {shown} ratio is outside [0.5, 2] (data/reference/plausibility.csv)")
        assert range_rule(bound)(row) == expected


def test_duration_ratio_screens():
    table = _table([_row(**values) for values, *_ in RATIO_CASES])
    assert range_rule(OUTPUT_RATIO).screen(table).to_pylist() == [case[3] for case in RATIO_CASES]
    assert range_rule(TOTAL_RATIO).screen(table).to_pylist() == [case[4] for case in RATIO_CASES]


def test_plain_column_range_rule_and_screen():
    rows = [_row(pp=value) for value in (0, 1, 64, 65, None)]
    assert [range_rule(PP_RANGE)(row) for row in rows] == [
        ("implausible:pp", "pp = 0 GPUs is outside [1, 64] (data/reference/plausibility.csv)"), None, None,
        ("implausible:pp", "pp = 65 GPUs is outside [1, 64] (data/reference/plausibility.csv)"), None]
    assert range_rule(PP_RANGE).screen(_table(rows)).to_pylist() == [True, False, False, True, False]


# --- screens of the single-column rules ------------------------------------------------------------------------


def _rule(name_prefix: str):
    """One rule of ``rules()``, by its place in the reporting order."""
    return {
        "total": rules(KNOWN_HW)[1], "tpot": rules(KNOWN_HW)[2], "agentic_x": rules(KNOWN_HW)[3],
        "gpu_count": rules(KNOWN_HW)[10], "unknown_hw": rules(KNOWN_HW)[8],
    }[name_prefix]


def test_finite_and_positive_screen():
    values = [None, math.nan, math.inf, -1.0, 0.0, 0.5, 1.0, 2.0]
    table = _table([_row(total_tput_tok_s=v) for v in values])
    assert _rule("total").screen(table).to_pylist() == [True, True, True, True, True, False, False, False]
    # the reported per-GPU value stands in for an absent total
    table = _table([_row(reported_tput_per_gpu=v) for v in values])
    assert _rule("total").screen(table).to_pylist() == [True, True, True, True, True, False, False, False]


def test_typed_screen_looks_only_at_its_benchmark_type():
    rows = [_row(benchmark_type=kind, median_tpot_s=tpot, e2e_norm_intvty_p90=x)
            for kind, tpot, x in (("fixed_seq", None, None), (None, 0.0, None), ("fixed_seq", 0.02, None),
                                  ("agentic_traces", None, None), ("agentic_traces", None, 2.0))]
    table = _table(rows)
    assert _rule("tpot").screen(table).to_pylist() == [True, True, False, False, False]
    assert _rule("agentic_x").screen(table).to_pylist() == [False, False, False, True, False]


def test_gpu_count_screen():
    cases = [  # (values, flagged): no reported per-GPU value and no usable count
        (dict(tp=8), False), (dict(tp=0), True), (dict(tp=None), True), (dict(tp=1), False),
        (dict(tp=None, reported_tput_per_gpu=5.0), False),
        (dict(tp=8, disagg=None), False),
        (dict(disagg=True, num_prefill_gpu=2, num_decode_gpu=6), False),
        (dict(disagg=True, tp=8, num_prefill_gpu=0, num_decode_gpu=6), True),
        (dict(disagg=True, tp=8, num_prefill_gpu=2, num_decode_gpu=None), True),
    ]
    table = _table([_row(**values) for values, _ in cases])
    assert _rule("gpu_count").screen(table).to_pylist() == [flag for _, flag in cases]


def test_unknown_hw_screen_with_a_reference_and_with_none():
    table = _table([_row(hw="h200"), _row(hw="rtx"), _row(hw=None)])
    assert unknown_hw_rule(["h200", "b200"]).screen(table).to_pylist() == [False, True, True]
    assert unknown_hw_rule([]).screen(table).to_pylist() == [True, True, True]
    assert unknown_hw_rule([])(_row(hw="h200")) == ("unknown_hw", "hw 'h200' is not in the GPU reference ()")


def _clean(i: int, **values) -> dict:
    row = _row(source_file=f"f{i}.json", source_format="vllm_bench_serve", source_row=0, run_id=f"r{i}",
               content_sha256=f"sha{i}", metadata_conflicts="", benchmark_type="fixed_seq", framework="vllm",
               precision="fp8", spec_decoding="none", isl=1024, osl=1024, conc=8 + i, tp=8, disagg=False,
               completed=80, failed=0, num_prompts=80, total_tput_tok_s=5000.0, output_tput_tok_s=2500.0,
               median_tpot_s=0.02, median_ttft_s=0.5, median_e2el_s=20.0, latency_unit_in_file="ms",
               duration_s=100.0, total_output_tokens=250000, total_input_tokens=250000,
               run_date=dt.date(2026, 1, 1), run_date_partition="2026-01-01")
    row.update(values)
    return row


def test_percentile_order_screen_allows_the_rule_tolerance():
    """The percentile-order screen flags only percentiles out of order by more than its rule's 1e-9 relative."""
    rule = rules_module.latency_statistics_rule(load_plausibility())
    # median TTFT 0.5 against p90 0.5 (equal), 0.5(1 − 5e-10) (median above by 5e-10) and 0.5(1 − 2e-9) (by 2e-9)
    rows = [_row(median_ttft_s=0.5, p90_ttft_s=p90) for p90 in (0.5, 0.5 * (1 - 5e-10), 0.5 * (1 - 2e-9))]
    assert rule.screen(_table(rows)).to_pylist() == [False, False, True]
    assert [rule(row) for row in rows[:2]] == [None, None]


def test_no_screen_flags_a_clean_run():
    table = _table([_clean(0), _clean(1, hw="b200", tp=4)])
    assert {rule(row) for rule in rules(KNOWN_HW) for row in table.to_pylist()} == {None}
    assert [rule.screen(table).to_pylist() for rule in rules(KNOWN_HW)] == [[False, False]] * len(rules(KNOWN_HW))


# --- validate_table's bookkeeping ------------------------------------------------------------------------------


def test_rejected_rows_keep_their_partition_and_leave_the_accepted_table():
    rows = [_clean(0), _clean(1, failed=2, run_date_partition="2026-02-03"), _clean(2, conc=40)]
    accepted, rejected = validate_table(_table(rows), KNOWN_HW)
    assert accepted["run_id"].to_pylist() == ["r0", "r2"]
    assert rejected.to_pylist() == [{
        "source_file": "f1.json", "source_format": "vllm_bench_serve", "source_row": 0,
        "reason_code": "failed_requests", "detail": "f1.json row 0: failed_requests: 2 of 82 requests failed (2.4%)",
        "stage": "validate", "run_date_partition": "2026-02-03", "duplicate_of": None}]


def test_runs_accepted_elsewhere_when_every_new_run_is_rejected():
    elsewhere = _table([_clean(0)])
    accepted, rejected = validate_table(_table([_clean(1, failed=1)]), KNOWN_HW, accepted_elsewhere=elsewhere)
    assert accepted.num_rows == 0 and rejected["reason_code"].to_pylist() == ["failed_requests"]


def test_duplicate_of_a_run_accepted_elsewhere():
    elsewhere = _table([_clean(0)])
    copy = _clean(1, conc=8, run_date_partition=None)  # the same measurement as r0, in another partition
    accepted, rejected = validate_table(_table([copy, _clean(2, conc=30)]), KNOWN_HW, accepted_elsewhere=elsewhere)
    assert accepted["run_id"].to_pylist() == ["r2"]
    assert rejected.select(["source_file", "reason_code", "duplicate_of", "run_date_partition"]).to_pylist() == [
        {"source_file": "f1.json", "reason_code": "duplicate_run", "duplicate_of": "r0", "run_date_partition": None}]


def test_duplicate_search_reads_only_rows_that_could_pair():
    """Only rows that share a content hash, or share the line's verbatim columns and ``conc`` with a median TPOT
    within 2e-9 relative of a neighbour's, are searched in Python: a repeat (same line and conc, other numbers)
    and a row that shares nothing never are."""
    rows = [_clean(0), _clean(1, conc=8, median_tpot_s=0.021),  # same line and conc, TPOT 5 % apart: a repeat
            _clean(2, conc=50), _clean(3, conc=60, content_sha256="sha2"),  # same content hash
            _clean(4, conc=70),  # shares nothing
            _clean(5, conc=90), _clean(6, conc=90, median_tpot_s=0.02 * (1 + 1.5e-9)),  # TPOTs within 2e-9
            _clean(7, conc=90, median_tpot_s=0.02 * (1 + 4e-9))]  # 2.5e-9 from its nearest neighbour: not
    candidates, duplicates = duplicates_in_table(_table(rows))
    assert sorted(candidates) == [2, 3, 5, 6]
    assert [candidates[i]["run_id"] for i in (2, 3, 5, 6)] == ["r2", "r3", "r5", "r6"]
    # 5 and 6 are compared: 1.5e-9 apart is more than the 1e-9 of one measurement, so both are kept
    assert duplicates == {3: ("duplicate_run", "same content as f2.json row 0 (kept)", "r2")}
    rows[6]["median_tpot_s"] = 0.02 * (1 + 5e-10)
    assert duplicates_in_table(_table(rows))[1][6] == (
        "duplicate_run", "same measurement as f5.json row 0 (kept): line "
        "dsr1|1024/1024|h200|vllm|fp8|spec=none|tp=8,ep=1,dpa=false|conc=90, every number within 1e-09 relative",
        "r5")


def test_duplicate_search_skips_neighbours_on_different_lines():
    """Equal TPOTs on lines that differ beyond the verbatim columns (tp), with hashes of their own: no candidates."""
    rows = [_clean(0), _clean(1, conc=8, tp=4)]  # same model, hw, framework, precision, spec, conc 8 and TPOT
    assert duplicates_in_table(_table(rows)) == ({}, {})


def test_duplicate_search_keeps_the_copy_on_nominal_lengths():
    """Of two copies of one measurement the one with off-nominal lengths is the duplicate, whatever its file name."""
    # 80 requests: 250000 tokens each way = 3125 per request, far off ISL/OSL 1024; 81920 = 80 × 1024 is nominal
    rows = [_clean(0), _clean(1, conc=8, total_input_tokens=81920, total_output_tokens=81920)]
    candidates, duplicates = duplicates_in_table(_table(rows))
    assert [candidates[i]["length_off_nominal"] for i in (0, 1)] == [True, False]
    assert duplicates == {0: (
        "duplicate_run", "same measurement as f1.json row 0 (kept): line "
        "dsr1|1024/1024|h200|vllm|fp8|spec=none|tp=8,ep=1,dpa=false|conc=8, every number within 1e-09 relative",
        "r1")}


def test_duplicate_search_rows_accepted_before_come_first():
    """The first ``accepted_before`` rows are kept even when a new copy's file sorts first."""
    # r1 (f1.json) was accepted earlier; r0 (f0.json) is new and would be kept by file order alone
    rows = [_clean(1), _clean(0, conc=9)]
    assert duplicates_in_table(_table(rows), accepted_before=1)[1] == {1: (
        "duplicate_run", "same measurement as f1.json row 0 (kept): line "
        "dsr1|1024/1024|h200|vllm|fp8|spec=none|tp=8,ep=1,dpa=false|conc=9, every number within 1e-09 relative",
        "r1")}
    # both new: f0.json is kept
    assert list(duplicates_in_table(_table(rows))[1]) == [0]


def test_a_rejected_run_never_makes_a_passing_run_its_duplicate():
    """A run that fails a rule is left out of the duplicate search: its passing twin (sorting later) is accepted."""
    rows = [_clean(1), _clean(0, conc=9, content_sha256="sha1", failed=10)]  # r0: 10 of 90 requests failed
    accepted, rejected = accepted_runs(_table(rows), KNOWN_HW)
    assert accepted.tolist() == [True, False]
    assert rejected.select(["source_file", "reason_code", "detail", "duplicate_of"]).to_pylist() == [
        {"source_file": "f0.json", "reason_code": "failed_requests",
         "detail": "f0.json row 0: failed_requests: 10 of 90 requests failed (11.1%)", "duplicate_of": None}]


def test_accepted_runs_quarantine_rows_have_the_quarantine_schema():
    """The quarantine rows are ``QUARANTINE_SCHEMA`` whether there are none, rule rejects or duplicates."""
    assert accepted_runs(_table([_clean(0)]), KNOWN_HW)[1].schema == QUARANTINE_SCHEMA
    both = accepted_runs(_table([_clean(0), _clean(1, conc=8), _clean(2, failed=10)]), KNOWN_HW)
    assert both[0].tolist() == [True, False, False]
    assert both[1].schema == QUARANTINE_SCHEMA
    assert both[1]["reason_code"].to_pylist() == ["failed_requests", "duplicate_run"]


def _pairing(*rows: dict) -> pa.Table:
    """``_could_pair``'s columns: one line (dsr1 h200 vllm fp8, no spec decoding, conc 8), TPOT 0.02 s, no hash."""
    base = dict(content_sha256=None, model="dsr1", hw="h200", framework="vllm", precision="fp8",
                spec_decoding="none", conc=8, median_tpot_s=0.02)
    return pa.Table.from_pylist([{**base, **row} for row in rows], schema=RUN_SCHEMA_PAIRING)


def test_could_pair_with_two_rows_and_fewer():
    """Two rows of one line and conc with equal TPOTs pair; a single row or none never does."""
    assert _could_pair(_pairing({}, {})).tolist() == [0, 1]
    assert _could_pair(_pairing({})).tolist() == []
    assert _could_pair(_pairing()).tolist() == []


@pytest.mark.parametrize("name, other", [("model", "gptoss"), ("hw", "b200"), ("framework", "sglang"),
                                         ("precision", "fp4"), ("spec_decoding", "mtp"), ("conc", 16)])
def test_could_pair_needs_every_verbatim_column_equal(name, other):
    """Equal TPOTs pair only when every ``_VERBATIM_KEY`` column is equal and not null (null equals nothing)."""
    assert name in _VERBATIM_KEY
    assert _could_pair(_pairing({}, {name: other})).tolist() == []
    assert _could_pair(_pairing({name: None}, {name: None})).tolist() == []
    # a third row of the same line as the first pairs with it, whatever order the sort puts them in
    assert _could_pair(_pairing({}, {name: other}, {})).tolist() == [0, 2]


def test_could_pair_by_content_hash_alone():
    """A content hash two rows share pairs them whatever their line; a hash one row has and a null hash never do."""
    rows = [{"content_sha256": "a", "conc": 1}, {"content_sha256": "b", "conc": 2}, {"content_sha256": "a", "conc": 3},
            {"content_sha256": None, "conc": 4}, {"content_sha256": None, "conc": 5}]
    assert _could_pair(_pairing(*rows)).tolist() == [0, 2]
    # three copies of one hash: all three
    rows[1]["content_sha256"] = "a"
    assert _could_pair(_pairing(*rows)).tolist() == [0, 1, 2]


def test_could_pair_tpot_tolerance_is_relative_to_the_larger_tpot():
    """Neighbouring TPOTs pair within 2e-9 of the larger magnitude (zeros, negatives too); null TPOTs never pair."""
    a, b = 0.020065, 0.02006500004013
    # worked by hand in floats: the gap is above 2e-9 of the smaller TPOT, not above 2e-9 of the larger one
    assert (b - a) > 2e-9 * a and (b - a) <= 2e-9 * b
    assert _could_pair(_pairing({"median_tpot_s": a}, {"median_tpot_s": b})).tolist() == [0, 1]
    # gap 0 is within 2e-9 × 0
    assert _could_pair(_pairing({"median_tpot_s": 0.0}, {"median_tpot_s": 0.0})).tolist() == [0, 1]
    # -0.02 and -0.02(1 + 1e-9): the gap is 1e-9 of the magnitudes, within 2e-9 of |−0.02(1 + 1e-9)|
    assert _could_pair(_pairing({"median_tpot_s": -0.02}, {"median_tpot_s": -0.02 * (1 + 1e-9)})).tolist() == [0, 1]
    assert _could_pair(_pairing({"median_tpot_s": None}, {"median_tpot_s": None})).tolist() == []
    assert _could_pair(_pairing({"median_tpot_s": 0.02}, {"median_tpot_s": 0.02 * (1 + 3e-9)})).tolist() == []


def test_could_pair_compares_each_tpot_with_its_own_neighbour():
    """Each TPOT's tolerance is set by its sorted neighbour, not by a large TPOT on another line sorting first."""
    # sorted: conc 1 (TPOT 1e6) first, then conc 8 with 0.02 and 0.021 (5 % apart, far beyond 2e-9)
    rows = [{"conc": 8, "median_tpot_s": 0.021}, {"conc": 1, "median_tpot_s": 1e6}, {"conc": 8, "median_tpot_s": 0.02}]
    assert _could_pair(_pairing(*rows)).tolist() == []


def test_could_pair_infinite_tpots_never_pair_and_warn_nothing():
    """Two infinite TPOTs of one sign (inf − inf is NaN) do not pair, and no floating-point warning escapes."""
    rows = [{"median_tpot_s": math.inf}, {"median_tpot_s": math.inf}, {"median_tpot_s": -math.inf, "conc": 9},
            {"median_tpot_s": -math.inf, "conc": 9}]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _could_pair(_pairing(*rows)).tolist() == []


# --- same measurement ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("a, b, same", [
    (dict(median_tpot_s=0.02, total_tput_tok_s=5000.0, median_ttft_s=0.5),
     dict(median_tpot_s=0.02, total_tput_tok_s=5000.0, median_ttft_s=0.5), True),   # three shared, TPOT among them
    (dict(median_tpot_s=0.02, total_tput_tok_s=5000.0),
     dict(median_tpot_s=0.02, total_tput_tok_s=5000.0), False),                      # only two shared
    (dict(median_tpot_s=None, total_tput_tok_s=5000.0, median_ttft_s=0.5, output_tput_tok_s=10.0),
     dict(median_tpot_s=0.02, total_tput_tok_s=5000.0, median_ttft_s=0.5, output_tput_tok_s=10.0), False),
    (dict(median_tpot_s=0.02, total_tput_tok_s=5000.0, median_ttft_s=0.5, output_tput_tok_s=10.0),
     dict(median_tpot_s=None, total_tput_tok_s=5000.0, median_ttft_s=0.5, output_tput_tok_s=10.0), False),
    (dict(median_tpot_s=None, total_tput_tok_s=5000.0, median_ttft_s=0.5),
     dict(median_tpot_s=0.02, total_tput_tok_s=5000.0, median_ttft_s=0.5), False),  # two shared, one TPOT
    (dict(median_tpot_s=0.02, total_tput_tok_s=5000.0, median_ttft_s=0.5),
     dict(median_tpot_s=0.02 * (1 + 5e-10), total_tput_tok_s=5000.0, median_ttft_s=0.5), True),   # within 1e-9
    (dict(median_tpot_s=0.02, total_tput_tok_s=5000.0, median_ttft_s=0.5),
     dict(median_tpot_s=0.02 * (1 + 2e-9), total_tput_tok_s=5000.0, median_ttft_s=0.5), False),
    (dict(median_tpot_s=0.02, total_tput_tok_s=0.0, median_ttft_s=0.5),
     dict(median_tpot_s=0.02, total_tput_tok_s=1e-300, median_ttft_s=0.5), False),  # relative only: no abs slack
])
def test_same_measurement(a, b, same):
    assert same_measurement(a, b) is same and same_measurement(b, a) is same


def test_same_measurement_skips_a_number_one_row_lacks_and_reads_on():
    """A number only one row gives is skipped, not the end of the comparison: the later shared numbers count."""
    # mean_ttft_s comes first in MEASUREMENT_COLUMNS and only b has it; TPOT, TTFT and total tok/s are shared (3)
    a = dict(mean_ttft_s=None, median_tpot_s=0.02, total_tput_tok_s=5000.0, median_ttft_s=0.5)
    b = dict(mean_ttft_s=0.4, median_tpot_s=0.02, total_tput_tok_s=5000.0, median_ttft_s=0.5)
    assert same_measurement(a, b) and same_measurement(b, a)
    # and a later number that differs still decides
    assert not same_measurement(a, {**b, "total_tput_tok_s": 5001.0})


# --- every screen covers its rule, for every rule of the list -------------------------------------------------

_NUMBERS = (None, 0.0, -1.0, 1e-5, 4.9e-4, 5e-4, 5.1e-4, 1e-3, 0.01, 0.5, 1.0, 2.0, 4.9, 5.0, 5.1, 10.0, 100.0,
            1000.0, 25_000.0, 1e5, 1e7, math.nan, math.inf, -math.inf)
_COUNTS = (None, 0, -1, 1, 2, 3, 7, 8, 16, 64, 65, 100, 1000, 10**6)
_STRINGS = {
    "hw": (*KNOWN_HW[:4], "x999", None),
    "model": ("dsr1", "gptoss", "llama70b", None),
    "benchmark_type": ("fixed_seq", "agentic_traces", "weird", None),
    "latency_unit_in_file": ("ms", "s", None),
    "metadata_conflicts": ("", "tp: 8 in the file, 4 in runs.csv", None),
}


def _random_runs(n: int, seed: int) -> list[dict]:
    """``n`` ``RUN_SCHEMA`` rows whose every value is drawn from a small pool of edge values (null, 0, negative,
    NaN, ±inf, both sides of every plausibility bound and of the unit screens' thresholds), each column on its own,
    so relations between columns (output vs total throughput, completed vs num_prompts) land on every side."""
    import numpy as np

    bounds = [v for r in load_plausibility().ranges for b in (r.min, r.max) for v in (b, b * (1 - 1e-9), b * (1 + 1e-9))]
    numbers = (*_NUMBERS, *bounds)
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        row = {}
        for field in RUN_SCHEMA:
            if field.name in _STRINGS:
                pool = _STRINGS[field.name]
            elif pa.types.is_floating(field.type):
                pool = numbers
            elif pa.types.is_integer(field.type):
                pool = _COUNTS if field.name != "source_row" else (i,)
            elif pa.types.is_boolean(field.type):
                pool = (None, True, False)
            elif pa.types.is_string(field.type):
                pool = ("a", "b", None)
            elif pa.types.is_date(field.type):
                pool = (None, dt.date(2026, 7, 14))
            else:
                pool = (None,)
            row[field.name] = pool[rng.integers(len(pool))]
        row["source_file"] = "random.json"
        rows.append(row)
    return rows


@pytest.mark.parametrize("seed", [0, 1])
def test_every_screen_flags_every_row_its_rule_rejects(seed):
    """The table path applies a rule only where its screen is True, so a screen that misses one row its rule
    rejects would let that run through. Over 4,000 random rows of edge values, for every rule ``rules()`` returns
    (any rule added later included), the rows the rule rejects are a subset of the rows its screen flags."""
    rows = _random_runs(4000, seed)
    table = pa.Table.from_pylist(rows, schema=RUN_SCHEMA)
    rule_list = rules(KNOWN_HW)
    assert len(rule_list) >= 12
    fired = 0
    for rule in rule_list:
        flagged = rule.screen(table).to_pylist()
        missed = [i for i, row in enumerate(rows) if rule(row) is not None and not flagged[i]]
        assert not missed, f"rule {rule_list.index(rule)} ({rule.__qualname__}) rejects rows its screen does not flag: {rows[missed[0]]}"
        fired += sum(rule(row) is not None for row in rows[:500])
    assert fired > 500  # the pool reaches the rules: most rows fail several


def test_the_default_reference_follows_the_reference_folder(monkeypatch, tmp_path):
    """``PIPELINE_REFERENCE_DIR`` chosen after a first read gives that folder's plausibility, not the cached one
    of the first folder: the cache is per folder."""
    import shutil

    rules_module._LOADED.clear()
    first = rules_module._default_plausibility()
    reference = tmp_path / "reference"
    shutil.copytree(rules_module.reference_dir(), reference)
    peaks = reference / "gpu_peak_flops.csv"
    peaks.write_text(peaks.read_text().replace("h200,", "h200_renamed,", 1))
    monkeypatch.setenv("PIPELINE_REFERENCE_DIR", str(reference))
    second = rules_module._default_plausibility()
    assert first.ceiling("h200", "dsr1") is not None and second.ceiling("h200", "dsr1") is None
    assert second.ceiling("h200_renamed", "dsr1") == first.ceiling("h200", "dsr1")
