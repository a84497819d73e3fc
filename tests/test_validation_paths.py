"""The validation path (``validate_table`` of pipeline/validate/rules.py: screens over Arrow columns, then the rules
on the flagged rows, what the ``validate/accepted_runs`` asset runs) gives the same accepted runs and the same
quarantine rows, in the same order, as every rule applied to every run (``rule_reference``, written in the tests):
no screen flags too little."""

import shutil

import pyarrow as pa
import pytest
from conftest import REAL_LOGS, SAMPLE_DIR
from rule_reference import reference_tables

from pipeline.ingest.folder import ingest_folder
from pipeline.ingest.schema import QUARANTINE_SCHEMA, RUN_SCHEMA
from pipeline.io.storage import content_hash
from pipeline.metrics.reference import load_gpu_reference
from pipeline.validate.plausibility import load_plausibility
from pipeline.validate.rules import rules, validate_table

HERE = SAMPLE_DIR.parents[1] / "tests"
KNOWN_HW = load_gpu_reference().column("hw").to_pylist()


def _both_paths(runs: pa.Table) -> tuple[tuple[pa.Table, pa.Table], tuple[pa.Table, pa.Table]]:
    return reference_tables(runs, KNOWN_HW), validate_table(runs, KNOWN_HW)


def _assert_same(slow, fast) -> None:
    for s, f in zip(slow, fast):
        assert f.schema.equals(s.schema)
        assert f.to_pylist() == s.to_pylist()  # same rows in the same order
        assert content_hash(f) == content_hash(s)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """The bad-input corpus beside the good files, as one raw folder."""
    raw = tmp_path_factory.mktemp("corpus")
    shutil.copytree(HERE / "bad_inputs", raw / "bad")
    shutil.copytree(HERE / "good_inputs", raw / "good")
    return raw


@pytest.mark.parametrize("which", ["sample", "bad_inputs", "real-logs"])
def test_fast_path_equals_reference_path(which, corpus):
    folder = {"sample": SAMPLE_DIR, "bad_inputs": corpus, "real-logs": REAL_LOGS}[which]
    if not folder.is_dir():
        pytest.skip(f"{folder} not present")
    runs = ingest_folder(folder).runs
    slow, fast = _both_paths(runs)
    assert slow[1].num_rows > 0 and slow[0].num_rows > 0  # both outcomes are exercised
    _assert_same(slow, fast)


def _beyond(bound, side: str, good: dict):
    """A value just outside ``bound`` on ``side``, of the column's type (int columns stay int)."""
    value = bound.min * 0.5 - 1 if side == "below" else bound.max * 2 + 1
    return int(value) if isinstance(good[bound.field], int) else float(value)


def test_paths_agree_on_every_rule_and_on_duplicates():
    """One good run and, per rule, copies broken so that rule (and only the screens) decides; plus copies that
    share only the content hash or only the natural key with a kept run."""
    runs = ingest_folder(SAMPLE_DIR).runs.to_pylist()
    good = next(dict(run, metadata_conflicts=None, failed=0) for run in runs if run["source_format"] == "vllm_bench_serve")
    broken = {
        "no_completed_requests": dict(completed=0), "failed_requests": dict(failed=3),
        "lost_prompts": dict(completed=1, num_prompts=2),
        "missing_total": dict(total_tput_tok_s=None, reported_tput_per_gpu=None),
        "reported_only": dict(total_tput_tok_s=None, reported_tput_per_gpu=12.5, conc=good["conc"] + 3,
                              content_sha256="d" * 64),
        "agentic_no_x": dict(benchmark_type="agentic_traces", e2e_norm_intvty_p90=None, isl=None, osl=None),
        "nan_tpot": dict(median_tpot_s=float("nan")), "negative_tpot": dict(median_tpot_s=-1.0),
        "tpot_ms_slip": dict(median_tpot_s=1e-5, latency_unit_in_file="ms"),
        "tpot_s_slip": dict(median_tpot_s=9.0, latency_unit_in_file="s"),
        "output_gt_total": dict(output_tput_tok_s=good["total_tput_tok_s"] * 2),
        "ttft_gt_e2el": dict(median_ttft_s=good["median_e2el_s"] * 2),
        "conflict": dict(metadata_conflicts="conc: file=8 sidecar=16"),
        "unknown_hw": dict(hw="rtx-4070"), "no_hw": dict(hw=None), "no_conc": dict(conc=None),
        "no_tp": dict(tp=None, reported_tput_per_gpu=None),
        "disagg_no_decode": dict(disagg=True, num_prefill_gpu=4, num_decode_gpu=0, reported_tput_per_gpu=None),
        "implied_counts": dict(disagg=True, num_prefill_gpu=1, num_decode_gpu=1, reported_tput_per_gpu=None,
                               metadata_sources="num_decode_gpu=engine;num_prefill_gpu=engine"),
        "spec_evident": dict(spec_decoding="none", mean_itl_s=2.5 * good["median_tpot_s"],
                             mean_tpot_s=good["median_tpot_s"]),
        "huge_p99": dict(p99_itl_s=1e308), "unordered": dict(p99_ttft_s=good["median_ttft_s"] / 2),
        "same_content": dict(conc=good["conc"] + 1),
        "same_key": dict(content_sha256="f" * 64),
        "other_run": dict(conc=good["conc"] + 2, content_sha256="e" * 64),
        "above_ceiling": dict(total_tput_tok_s=1e9, output_tput_tok_s=1.0),
        "unknown_model": dict(model="not-in-the-reference"),
        "above_intvty_ceiling": dict(median_tpot_s=1e-5, latency_unit_in_file=None),
        "e2el_off": dict(mean_e2el_s=good["mean_e2el_s"] * 49, p99_e2el_s=good["mean_e2el_s"] * 49),
        "unknown_type": dict(benchmark_type="mystery"),
        "duration_off": dict(duration_s=good["duration_s"] / 100),
        "ttft_nan": dict(median_ttft_s=float("nan")),
        **{f"{bound.field}_{side}": {bound.field: _beyond(bound, side, good)}
           for bound in load_plausibility().ranges if bound.field in RUN_SCHEMA.names for side in ("below", "above")
           if not (side == "below" and bound.min == 0)},
    }
    table = [good] + [dict(good, source_row=row, **change) for row, change in enumerate(broken.values(), 1)]
    slow, fast = _both_paths(pa.Table.from_pylist(table, schema=RUN_SCHEMA))
    n_ranges = len(load_plausibility().ranges)
    assert len(rules(KNOWN_HW)) == 17 + n_ranges and all(hasattr(rule, "screen") for rule in rules(KNOWN_HW))
    row_of = {name: row for row, name in enumerate(broken, 1)}
    assert slow[0].column("source_row").to_pylist() == [good["source_row"], row_of["reported_only"], row_of["other_run"]]
    assert slow[1].column("reason_code").to_pylist()[-2:] == ["duplicate_run", "duplicate_run"]
    _assert_same(slow, fast)


def test_no_runs_give_empty_tables_of_both_schemas():
    """A date whose files are all gone reaches validation with no rows."""
    accepted, rejected = validate_table(RUN_SCHEMA.empty_table(), KNOWN_HW)
    assert (accepted.num_rows, rejected.num_rows) == (0, 0)
    assert accepted.schema.equals(RUN_SCHEMA) and rejected.schema.equals(QUARANTINE_SCHEMA)
