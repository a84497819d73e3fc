"""Plausibility without a wildcard: a model missing from ``model_active_params.csv`` is
quarantined (``unknown_model_size``) instead of being bounded by a guessed size; median tok/s/user is held under what
the GPU's memory bandwidth can decode for the model (``implausible:median_intvty``); E2EL − TTFT must agree with
TPOT × (OSL − 1) (``inconsistent:e2el``).

The real-log cases take a file of ``../shared/real-logs``, read it with the standard library, change it as the
reported fault would (a ×1000 throughput, a TPOT written 100 times too small), write it to a temporary folder and let
the pipeline parse it; beside each changed file the untouched one is accepted. Every expected number is worked out
here from the file's own numbers and the reference figures written out below (with the file they are in), never by
the code under test. Every case goes through both validation paths: every rule on every run (``rule_reference``)
and ``validate_table`` (screens, then rules on the flagged rows), which must agree.
"""

import csv
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from conftest import REAL_LOGS, load_json
from rule_reference import good_run, reference_tables

from pipeline.ingest.folder import ingest_folder
from pipeline.ingest.gpus import decode_gpu_column, run_decode_gpus
from pipeline.ingest.schema import RUN_SCHEMA
from pipeline.io.paths import REFERENCE_DIR
from pipeline.metrics.reference import load_gpu_reference
from pipeline.validate.plausibility import Plausibility, Range, load_plausibility
from pipeline.validate.rules import (
    interactivity_ceiling_rule,
    unknown_model_size_rule,
    validate_table,
)

KNOWN_HW = load_gpu_reference().column("hw").to_pylist()

# The reference figures the expectations below use, as data/reference states them:
H200_DENSE_PFLOPS = 1.979   # gpu_peak_flops.csv
H200_TB_S = 4.8             # gpu_reference.csv, mem_bandwidth_tb_s
GLM5_ACTIVE_B = 40.0        # model_active_params.csv, glm-5
DSR1_ACTIVE_B = 37.0        # model_active_params.csv, dsr1
FEWEST_BYTES = 0.5          # plausibility.csv, weight_bytes_per_param min (FP4)
E2EL_RATIO_MAX = 10.0       # plausibility.csv, e2el_decode_ratio max
OLD_WILDCARD_H200 = H200_DENSE_PFLOPS * 1e15 / (2 * 1e9)  # the former '*' row's 1B: 989,500 tok/s/GPU

GLM5_FOLDER = REAL_LOGS / "inferencex-decode-slo" / "glm-5"
GLM5_FILE = "glm5_fp8_vllm_tp8_isl16384_osl128_conc64.json"  # H200, TP 8, ISL 16384, OSL 128, conc 64 (runs.csv)
KIMI_AGG = (REAL_LOGS / "inferencex"
            / "ix_agg_kimik2.5_8k1k_int4_vllm_tp8-ep1-dpafalse_disagg-false_spec-mtp_conc32_MI355.json")


def _both_paths(runs: pa.Table) -> dict[str, tuple[str, str] | None]:
    """{source file: (reason code, detail) or None when accepted}, the same from both validation paths."""
    slow, fast = reference_tables(runs, KNOWN_HW), validate_table(runs, KNOWN_HW)
    for s, f in zip(slow, fast):
        assert f.to_pylist() == s.to_pylist()
    out: dict[str, tuple[str, str] | None] = {name: None for name in slow[0]["source_file"].to_pylist()}
    for row in slow[1].to_pylist():
        out[row["source_file"]] = (row["reason_code"], row["detail"])
    return out


def _glm5_manifest_row(model: str) -> str:
    """The glm-5 runs.csv header and this file's row, its model key replaced by ``model``."""
    with open(GLM5_FOLDER / "runs.csv", encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    (row,) = [r for r in rows if r["file"] == GLM5_FILE]
    assert (row["model"], row["hw"], row["tp"], row["osl"]) == ("glm-5", "h200", "8", "128")
    row = {**row, "model": model}
    return ",".join(row) + "\n" + ",".join(row.values()) + "\n"


def _glm5_folder(tmp_path: Path, changes: dict[str, dict], model: str = "glm-5") -> pa.Table:
    """The GLM-5 file as ``{name}.json`` once per entry of ``changes`` (keys multiplied by the factors given), each
    with its manifest row, parsed by the pipeline."""
    folder = tmp_path / "raw"
    folder.mkdir()
    doc = load_json(GLM5_FOLDER / GLM5_FILE)
    manifest = []
    for name, factors in changes.items():
        changed = {k: (v * factors[k] if k in factors else v) for k, v in doc.items()}
        (folder / f"{name}.json").write_text(json.dumps(changed), encoding="utf-8")
        header, line = _glm5_manifest_row(model).splitlines()
        manifest.append(line.replace(GLM5_FILE, f"{name}.json", 1))
    (folder / "runs.csv").write_text(header + "\n" + "\n".join(manifest) + "\n", encoding="utf-8")
    return ingest_folder(folder).runs


# a throughput 1000 times too large, every count and rate with it, so tokens / throughput / duration still hold
X1000 = {key: 1000 for key in ("input_throughput", "output_throughput", "request_throughput", "total_input_tokens",
                               "total_output_tokens", "completed", "num_prompts")}


@pytest.mark.usefixtures("real_logs")
def test_a_listed_model_x1000_is_above_its_tok_s_per_gpu_ceiling(tmp_path):
    doc = load_json(GLM5_FOLDER / GLM5_FILE)
    # tok/s/GPU = (input + output throughput) / 8 GPUs = (7671.35 + 59.93) / 8 = 966.41; ×1000: 966,410
    per_gpu = (doc["input_throughput"] + doc["output_throughput"]) * 1000 / 8
    assert 966_000 < per_gpu < OLD_WILDCARD_H200  # under the old 1B bound of an unlisted model: it was published
    ceiling = H200_DENSE_PFLOPS * 1e15 / (2 * GLM5_ACTIVE_B * 1e9)  # 24,737.5
    verdicts = _glm5_folder(tmp_path, {"original": {}, "x1000": X1000})
    found = _both_paths(verdicts)
    assert found["original.json"] is None
    code, detail = found["x1000.json"]
    assert code == "implausible:tput_per_gpu"
    assert f"{per_gpu:.6g} tok/s/GPU is above the {ceiling:.6g} a h200 can compute for model 'glm-5'" in detail
    assert f"{ceiling:.6g}" == "24737.5"


@pytest.mark.usefixtures("real_logs")
def test_an_unknown_model_x1000_is_quarantined_not_bounded_by_a_guess(tmp_path):
    with open(REFERENCE_DIR / "model_active_params.csv", encoding="utf-8", newline="") as handle:
        listed = {row["model"] for row in csv.DictReader(handle)}
    assert "glm-6" not in listed and "*" not in listed  # no row for the model, and no wildcard row
    found = _both_paths(_glm5_folder(tmp_path, {"original": {}, "x1000": X1000}, model="glm-6"))
    for name in ("original.json", "x1000.json"):  # the honest copy waits for the size too: nothing can judge it
        code, detail = found[name]
        assert code == "unknown_model_size"
        assert detail == (f"{name} row 0: unknown_model_size: model 'glm-6' has no activated-parameter count: add a "
                          "row (model, active_params_b, basis) to data/reference/model_active_params.csv from its "
                          "model card; the tok/s/GPU and tok/s/user ceilings divide by it")


@pytest.mark.usefixtures("real_logs")
def test_tpot_a_hundredth_with_the_medians_e2el_is_inconsistent(tmp_path):
    doc = load_json(GLM5_FOLDER / GLM5_FILE)
    # the file gives medians only (median_ttft, median_tpot, median_e2el, in seconds): (E2EL − TTFT) / (TPOT × 127)
    honest = (doc["median_e2el"] - doc["median_ttft"]) / (doc["median_tpot"] * 127)
    wrong = (doc["median_e2el"] - doc["median_ttft"]) / (doc["median_tpot"] / 100 * 127)
    assert 0.99 < honest < 1.0 and 99 < wrong < 100  # 26.65 s of decoding against 0.268 s
    # still under the tok/s/user ceiling (1 / 2.11 ms = 473 < 4.8 TB/s × 8 / (40B × 0.5 B) = 1920) and above the
    # 0.5 ms TPOT floor: only the E2EL relation can see it
    assert 100 / doc["median_tpot"] < H200_TB_S * 1e12 * 8 / (GLM5_ACTIVE_B * 1e9 * FEWEST_BYTES)
    found = _both_paths(_glm5_folder(tmp_path, {"original": {}, "tpot": {"median_tpot": 0.01, "p99_tpot": 0.01}}))
    assert found["original.json"] is None
    code, detail = found["tpot.json"]
    assert code == "inconsistent:e2el"
    assert (f"(median E2EL {doc['median_e2el']:.6g} s − median TTFT {doc['median_ttft']:.6g} s) / (median TPOT "
            f"{doc['median_tpot'] * 10:.4g} ms × (OSL 128 − 1)) = {wrong:.6g}, outside [0, 10]") in detail


@pytest.mark.usefixtures("real_logs")
def test_tpot_a_hundredth_with_the_means_e2el_is_inconsistent(tmp_path):
    doc = load_json(KIMI_AGG)
    assert (doc["hw"], doc["osl"], doc["spec_decoding"]) == ("mi355x", 1024, "mtp")
    # means first: (mean E2EL − mean TTFT) / (mean TPOT × 1023) = 206.99 / 229.26 = 0.903; TPOT / 100: 90.3
    honest = (doc["mean_e2el"] - doc["mean_ttft"]) / (doc["mean_tpot"] * 1023)
    wrong = (doc["mean_e2el"] - doc["mean_ttft"]) / (doc["mean_tpot"] / 100 * 1023)
    assert 0.90 < honest < 0.91 and 90 < wrong < 91
    # a TPOT unit slip: every TPOT statistic / 100, every interactivity × 100
    slipped = {k: v / 100 if k.endswith("_tpot") else v * 100 if k.endswith("_intvty") else v for k, v in doc.items()}
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "original.json").write_text(json.dumps(doc), encoding="utf-8")
    (raw / "tpot.json").write_text(json.dumps(slipped), encoding="utf-8")
    found = _both_paths(ingest_folder(raw).runs)
    assert found["original.json"] is None
    code, detail = found["tpot.json"]
    assert code == "inconsistent:e2el"
    assert f"(mean E2EL {doc['mean_e2el']:.6g} s − mean TTFT {doc['mean_ttft']:.6g} s)" in detail
    assert f"= {wrong:.6g}, outside [0, 10]" in detail


# --- the E2EL tolerance at its ends, through both paths with the reference files --------------------------------


# TPOT 2⁻⁷ s over OSL 1025: TPOT × (OSL − 1) = 8 s exactly, so E2EL − TTFT = 80 s is the ratio 10 exactly
EXACT = {"osl": 1025, "mean_ttft_s": 0.5, "mean_tpot_s": 2 ** -7}
E2EL_CASES = [
    (dict(EXACT, mean_e2el_s=80.5), None),                          # 80 / 8 = 10: the tolerance's end belongs to it
    (dict(EXACT, mean_e2el_s=80.50001), "inconsistent:e2el"),       # 80.00001 / 8 = 10.0000013
    (dict(EXACT, mean_e2el_s=0.5), None),                           # 0 / 8 = 0: one token, the decoding took no time
    (dict(EXACT, mean_e2el_s=0.49), "inconsistent:e2el"),           # the last token before the first: −0.00125
    (dict(EXACT, mean_e2el_s=80.58), "inconsistent:e2el"),          # 80.08 / 8 = 10.01 (the detail below)
    # means first: medians 20× off ((20 − 0.5) / (0.001 × 1024) = 19.04) do not count when all three means exist
    (dict(EXACT, mean_e2el_s=40.5, median_tpot_s=0.001), None),
    # a mean missing: the medians decide, 19.04
    (dict(EXACT, mean_e2el_s=40.5, mean_tpot_s=None, median_tpot_s=0.001), "inconsistent:e2el"),
    (dict(median_e2el_s=220.0), "inconsistent:e2el"),               # medians: 219.5 / 20.46 = 10.73
    (dict(median_e2el_s=200.0), None),                              # 199.5 / 20.46 = 9.75
    (dict(median_e2el_s=None, median_tpot_s=0.0005), None),         # no E2EL: not checked
    (dict(osl=1, median_e2el_s=220.0), None),                       # OSL 1: no decoding to compare
    (dict(osl=2, median_e2el_s=1.5), "inconsistent:e2el"),          # 1 s over 0.02 s of decoding: 50
    # agentic-trace runs have no fixed OSL: not checked even with one written
    (dict(benchmark_type="agentic_traces", e2e_norm_intvty_p90=2.0, isl=None, median_e2el_s=220.0), None),
]


def test_e2el_tolerance_at_its_ends_on_both_paths():
    runs = pa.Table.from_pylist([good_run(i, **over) for i, (over, _) in enumerate(E2EL_CASES)], schema=RUN_SCHEMA)
    found = _both_paths(runs)
    assert {name: (v[0] if v else None) for name, v in found.items()} == {
        f"f{i}.json": code for i, (_, code) in enumerate(E2EL_CASES)}
    assert found["f4.json"][1] == (
        "f4.json row 0: inconsistent:e2el: (mean E2EL 80.58 s − mean TTFT 0.5 s) / (mean TPOT 7.812 ms × "
        "(OSL 1025 − 1)) = 10.01, outside [0, 10]: the decoding time and the TPOT disagree (e2el_decode_ratio, "
        "data/reference/plausibility.csv)")


# --- the tok/s/user ceiling -------------------------------------------------------------------------------------

# A reference of round numbers: 5.12 TB/s, 40B activated at 0.5 bytes → 5.12e12 / 2e10 = 256 tok/s/user per decode
# GPU and token per step.
REFERENCE = Plausibility(ranges=(), peak_pflops={"h200": 2.0}, active_params_b={"dsr1": 40.0},
                         bandwidth_tb_s={"h200": 5.12},
                         e2el_decode_ratio=Range("e2el_decode_ratio", "e2el", 0, 10, "ratio"),
                         weight_bytes_per_param=0.5, max_tokens_per_step=8.0)
AT_512 = 1 / 512  # 2⁻⁹ s: exactly 512 tok/s/user
# (row, ceiling the rule names or None when it passes, whether the screen flags the row)
INTVTY_CASES = [
    (dict(tp=2, median_tpot_s=AT_512), None, True),                         # 2 GPUs: 512, at it (the screen's hair)
    (dict(tp=2, median_tpot_s=AT_512 * (1 - 1e-9)), "512", True),           # 512.0000005 > 512
    (dict(tp=2, median_tpot_s=1 / (512 * (1 - 1e-10))), None, False),      # within 1e-10 under: not even the screen
    (dict(tp=2, median_tpot_s=1 / 100), None, False),
    (dict(tp=2, pp=2, median_tpot_s=1 / 1000), None, False),                # 4 GPUs (pp counts: generous): 1024
    (dict(tp=2, pp=2, median_tpot_s=1 / 1100), "1024", True),
    (dict(disagg=True, num_prefill_gpu=6, num_decode_gpu=2, median_tpot_s=1 / 600), "512", True),  # decode GPUs only
    (dict(disagg=True, num_prefill_gpu=6, num_decode_gpu=None, median_tpot_s=1 / 600), None, False),
    (dict(tp=2, spec_decoding="mtp", median_tpot_s=1 / 4000), None, False),  # no acceptance stated: 8/step, 4096
    (dict(tp=2, spec_decoding="mtp", median_tpot_s=1 / 4100), "4096", True),
    (dict(tp=2, spec_decoding=None, median_tpot_s=1 / 4000), None, False),   # method unknown: 8/step too
    (dict(tp=2, spec_decoding="mtp", spec_accept_length=2.5, median_tpot_s=1 / 1300), "1280", True),
    (dict(tp=2, spec_decoding="mtp", spec_accept_length=2.5, median_tpot_s=1 / 1200), None, False),
    (dict(tp=2, hw="rtx", median_tpot_s=1e-6), None, False),               # no bandwidth: unknown_hw judges
    (dict(tp=2, model="glm-6", median_tpot_s=1e-6), None, False),          # no size: unknown_model_size judges
    (dict(tp=None, median_tpot_s=1e-6), None, False),                      # no GPU count: missing_metadata:tp
    (dict(tp=2, median_tpot_s=0.0), None, False),                          # non_positive:median_tpot_ms
    (dict(tp=2, median_tpot_s=None), None, False),
]


def _row(**values) -> dict:
    row = dict.fromkeys(RUN_SCHEMA.names)
    row.update(hw="h200", model="dsr1", spec_decoding="none", disagg=False)
    row.update(values)
    return row


@pytest.mark.parametrize("values, ceiling, _", INTVTY_CASES)
def test_interactivity_ceiling_rule(values, ceiling, _):
    row = _row(**values)
    finding = interactivity_ceiling_rule(REFERENCE)(row)
    if ceiling is None:
        assert finding is None
        return
    code, detail = finding
    assert code == "implausible:median_intvty"
    assert detail.startswith(f"{1 / row['median_tpot_s']:.6g} tok/s/user (median TPOT {row['median_tpot_s'] * 1e3:.4g} "
                             f"ms) is above the {ceiling} a h200 can decode for model 'dsr1': 5.12 TB/s × ")
    assert detail.endswith("(40B activated parameters × 0.5 bytes) (data/reference/gpu_reference.csv, "
                           "model_active_params.csv, plausibility.csv)")


def test_interactivity_ceiling_screen():
    table = pa.Table.from_pylist([_row(**values) for values, _, _ in INTVTY_CASES], schema=RUN_SCHEMA)
    assert interactivity_ceiling_rule(REFERENCE).screen(table).to_pylist() == [flag for *_, flag in INTVTY_CASES]


def test_interactivity_ceiling_with_the_reference_files_on_both_paths():
    # DeepSeek-R1 on one H200: 4.8e12 / (37e9 × 0.5) = 259.46 tok/s/user; E2EL kept at TTFT + TPOT × 1023
    ceiling = H200_TB_S * 1e12 / (DSR1_ACTIVE_B * 1e9 * FEWEST_BYTES)
    assert 259.4 < ceiling < 259.5
    runs = [good_run(i, tp=1, median_tpot_s=1 / x, median_e2el_s=0.5 + 1023 / x) for i, x in enumerate((259.0, 260.0))]
    found = _both_paths(pa.Table.from_pylist(runs, schema=RUN_SCHEMA))
    assert found["f0.json"] is None
    assert found["f1.json"][0] == "implausible:median_intvty"
    assert f"above the {ceiling:.6g} a h200 can decode for model 'dsr1': 4.8 TB/s × 1 decode GPUs × 1 tokens/step" \
        in found["f1.json"][1]


def test_the_fastest_real_run_is_far_below_its_interactivity_ceiling(real_logs, tmp_path):
    # the highest tok/s/user of the real logs: a DeepSeek-R1 MTP point on GB300, dynamo-trt, 2 prefill + 56 decode
    # GPUs; its ceiling: 8 TB/s × 56 × 8 tokens/step / (37e9 × 0.5) = 193,730 tok/s/user, 500× above 380
    raw = tmp_path / "raw"
    raw.mkdir()
    shutil.copy(real_logs / "inferencex" / "rafaykhan_app_api_benchmarks_dsr1_2026-05.json", raw)
    runs = ingest_folder(raw).runs
    fastest = max((r for r in runs.to_pylist() if r["median_tpot_s"]), key=lambda r: 1 / r["median_tpot_s"])
    assert (fastest["model"], fastest["hw"], fastest["num_decode_gpu"], fastest["spec_decoding"]) == (
        "dsr1", "gb300", 56, "mtp")
    assert 380 < 1 / fastest["median_tpot_s"] < 381
    assert interactivity_ceiling_rule(load_plausibility())(fastest) is None


# --- decode GPUs, the model's size -------------------------------------------------------------------------------


def test_decode_gpu_count_row_and_column_agree():
    cases = [  # (values, decode GPUs)
        (dict(tp=8), 8), (dict(tp=2, pp=3, pcp=2), 12), (dict(tp=None), None), (dict(tp=0), 0),
        (dict(disagg=None, tp=4), 4), (dict(disagg=True, tp=8, num_prefill_gpu=2, num_decode_gpu=6), 6),
        (dict(disagg=True, num_prefill_gpu=2, num_decode_gpu=None), None),
    ]
    rows = [_row(**values) for values, _ in cases]
    assert [run_decode_gpus(row) for row in rows] == [gpus for _, gpus in cases]
    column = decode_gpu_column(pa.Table.from_pylist(rows, schema=RUN_SCHEMA)).to_pylist()
    assert column == [None if gpus is None else float(gpus) for _, gpus in cases]


def test_unknown_model_size_rule_and_screen():
    rule = unknown_model_size_rule(REFERENCE)
    rows = [_row(model="dsr1"), _row(model="glm-6"), _row(model=None)]
    assert [rule(row) for row in rows] == [None, (
        "unknown_model_size", "model 'glm-6' has no activated-parameter count: add a row (model, active_params_b, "
        "basis) to data/reference/model_active_params.csv from its model card; the tok/s/GPU and tok/s/user ceilings "
        "divide by it"), None]  # a null model is missing_metadata's
    assert rule.screen(pa.Table.from_pylist(rows, schema=RUN_SCHEMA)).to_pylist() == [False, True, True]


def test_a_reference_without_models_or_gpus_judges_every_model_unknown_and_bounds_nothing():
    """A model_active_params.csv of its header alone (or a GPU table without rows) is a reference the screens
    still read: every model is unknown_model_size, and no ceiling is computed (nor fails)."""
    empty = Plausibility(ranges=(), peak_pflops={}, active_params_b={}, bandwidth_tb_s={},
                         e2el_decode_ratio=REFERENCE.e2el_decode_ratio, weight_bytes_per_param=0.5,
                         max_tokens_per_step=8.0)
    table = pa.Table.from_pylist([_row(tp=2, median_tpot_s=1e-6), _row(model=None, tp=2)], schema=RUN_SCHEMA)
    assert unknown_model_size_rule(empty).screen(table).to_pylist() == [True, True]
    assert unknown_model_size_rule(empty)(table.to_pylist()[0])[0] == "unknown_model_size"
    assert interactivity_ceiling_rule(empty).screen(table).to_pylist() == [False, False]
    assert interactivity_ceiling_rule(empty)(table.to_pylist()[0]) is None

