"""One hostile folder, one pipeline run: every bad-input case of ``tests/bad_inputs/`` plus the cases that
cannot be committed as plain files (a file name that is not UTF-8, broken ``runs.csv`` manifests, a symlink out of
the raw folder), beside good runs. The run succeeds, no blocking check fails, the good runs are accepted with the
numbers of their files, and every bad file has its named reason: one bad file costs its own ledger row, nothing
more."""

import csv
import json
import os
import shutil
from pathlib import Path

import pytest

HERE = Path(__file__).parent
BAD, GOOD = HERE / "bad_inputs", HERE / "good_inputs"
EXPECTED = {row["file"]: row["reason_code"] for row in csv.DictReader((BAD / "EXPECTED.csv").open())}
MANIFEST_HEADER = "file,model,hw,precision,tp,isl,osl,run_date\n"


def _vllm_run(conc: int) -> dict:
    run = json.loads((GOOD / "good_vllm_h200_conc8.json").read_text())
    return dict(run, max_concurrency=conc)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """The raw folder and the reason code expected for each bad file in it (relative path → code)."""
    base = tmp_path_factory.mktemp("hostile")
    raw = base / "raw"
    shutil.copytree(BAD, raw)
    (raw / "EXPECTED.csv").unlink()
    shutil.copytree(GOOD, raw / "good")
    expected = dict(EXPECTED)
    # a good run named by a good runs.csv
    (raw / "good_manifest").mkdir()
    (raw / "good_manifest" / "run_conc24.json").write_text(json.dumps(_vllm_run(24)))
    (raw / "good_manifest" / "runs.csv").write_text(MANIFEST_HEADER + "run_conc24.json,dsr1,h200,fp8,8,1024,1024,2026-07-03\n")
    # a Latin-1 byte in runs.csv: the manifest is refused, and so is its folder's run (its metadata is unknown)
    (raw / "latin1_manifest").mkdir()
    (raw / "latin1_manifest" / "run_conc32.json").write_text(json.dumps(_vllm_run(32)))
    (raw / "latin1_manifest" / "runs.csv").write_bytes(
        (MANIFEST_HEADER + "run_conc32.json,dsr1,h200,fp8,8,1024,1024,2026-07-03\n# caf\xe9\n").encode("latin-1"))
    expected |= {"latin1_manifest/runs.csv": "invalid_encoding",
                 "latin1_manifest/run_conc32.json": "invalid_metadata:runs.csv"}
    # a 128 KiB cell in runs.csv
    (raw / "long_cell_manifest").mkdir()
    (raw / "long_cell_manifest" / "run_conc40.json").write_text(json.dumps(_vllm_run(40)))
    (raw / "long_cell_manifest" / "runs.csv").write_text(
        MANIFEST_HEADER.replace("\n", ",image\n") + "run_conc40.json,dsr1,h200,fp8,8,1024,1024,2026-07-03,"
        + "x" * (128 * 1024 + 1) + "\n")
    expected |= {"long_cell_manifest/runs.csv": "cell_too_long",
                 "long_cell_manifest/run_conc40.json": "invalid_metadata:runs.csv"}
    # a file name with the byte 0xff: listed escaped, never opened
    (raw / "good" / "good_vllm_h200_conc8.json").read_bytes()
    with open(os.fsencode(raw) + b"/name_\xff.json", "wb") as handle:
        handle.write(json.dumps(_vllm_run(48)).encode())
    expected["name_\ufffdff.json"] = "invalid_file_name"  # the byte listed as U+FFFD and its two hex digits
    # a symlink to a good run outside the raw folder: not read
    outside = base / "outside.json"
    outside.write_text(json.dumps(_vllm_run(56)))
    (raw / "outside_link.json").symlink_to(outside)
    shutil.copy(GOOD / "good_vllm_h200_conc8.json.meta.json", raw / "outside_link.json.meta.json")
    expected["outside_link.json"] = "symlink_outside_raw_dir"
    return raw, expected


def test_one_run_over_the_hostile_folder(hostile, run_pipeline):
    raw, expected = hostile
    run = run_pipeline(raw)
    assert run.result.success
    checks = run.check_results()
    assert checks and all(checks.values()), {name: ok for name, ok in checks.items() if not ok}

    quarantine = run.mart("quarantine").to_pylist()
    ledger = {row["source_file"]: row for row in run.mart("ingest_ledger").to_pylist()}
    for rel, code in expected.items():
        codes = {q["reason_code"] for q in quarantine if q["source_file"] == rel}
        assert codes == {code}, (rel, codes)
        assert ledger[rel]["accepted_rows"] == (2 if rel == "jsonl_one_bad_line.jsonl" else 0), rel

    accepted = run.mart("runs").to_pylist()
    by_file = {(r["source_file"], r["source_row"]): r for r in accepted}
    # the good runs, with the numbers their files state (read here with the standard library)
    vllm = json.loads((GOOD / "good_vllm_h200_conc8.json").read_text())
    good = by_file[("good/good_vllm_h200_conc8.json", 0)]
    assert good["total_tput_tok_s"] == vllm["total_token_throughput"] == 1359.6
    assert good["median_tpot_s"] == pytest.approx(vllm["median_tpot_ms"] / 1000, rel=1e-12)
    assert (good["conc"], good["tp"], good["completed"]) == (8, 8, 80)
    sglang = [json.loads(line) for line in (GOOD / "good_sglang_b200.jsonl").read_text().splitlines()]
    for row, line in enumerate(sglang):
        run_row = by_file[("good/good_sglang_b200.jsonl", row)]
        assert run_row["total_tput_tok_s"] == line["total_throughput"]
        assert run_row["conc"] == line["max_concurrency"]
    manifest_run = by_file[("good_manifest/run_conc24.json", 0)]
    assert (manifest_run["conc"], manifest_run["hw"], manifest_run["total_tput_tok_s"]) == (24, "h200", 1359.6)
    # nothing else is accepted: every other file is a bad one, with its reason
    assert {f for f, _ in by_file} == {"good/good_vllm_h200_conc8.json", "good/good_sglang_b200.jsonl",
                                       "good_manifest/run_conc24.json", "jsonl_one_bad_line.jsonl"}
    # nothing outside the raw folder was read: the linked run's concurrency is nowhere
    assert all(r["conc"] != 56 for r in accepted)
