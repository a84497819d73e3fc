"""The bad-input corpus: every file in tests/bad_inputs/ gets exactly the reason code EXPECTED.csv names, and
the good files beside it are ingested unchanged."""

import csv
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pipeline.ingest.folder import ingest_folder
from pipeline.metrics.reference import load_gpu_reference
from pipeline.validate.rules import validate_table

HERE = Path(__file__).parent
BAD, GOOD = HERE / "bad_inputs", HERE / "good_inputs"
CASES = list(csv.DictReader((BAD / "EXPECTED.csv").open()))
KNOWN_HW = load_gpu_reference().column("hw").to_pylist()


def _process(raw_dir: Path) -> tuple[list[dict], list[dict]]:
    """Ingest + validate a folder as the assets do: (accepted runs, quarantine rows)."""
    result = ingest_folder(raw_dir)
    accepted, rejected = validate_table(result.runs, KNOWN_HW)
    return accepted.to_pylist(), result.rejects.to_pylist() + rejected.to_pylist()


def _comparable(run: dict) -> dict:
    return {k: v for k, v in run.items() if k not in ("source_file", "run_id")}


@pytest.fixture(scope="module")
def good_alone(tmp_path_factory) -> list[dict]:
    raw = tmp_path_factory.mktemp("good") / "raw"
    shutil.copytree(GOOD, raw / "good")
    accepted, quarantined = _process(raw)
    assert len(accepted) == 4 and {q["reason_code"] for q in quarantined} == {"not_a_run_log:metadata_sidecar"}
    return accepted


def test_corpus_is_large_enough():
    assert len(CASES) >= 40
    listed = {c["file"] for c in CASES}
    on_disk = {p.name for p in BAD.iterdir() if p.name != "EXPECTED.csv" and not p.name.endswith(".meta.json")}
    assert listed == on_disk


@pytest.mark.parametrize("case", CASES, ids=[c["file"] for c in CASES])
def test_bad_input_reason_code(case, tmp_path, good_alone):
    raw = tmp_path / "raw"
    shutil.copytree(GOOD, raw / "good")
    for path in BAD.glob(case["file"] + "*"):
        shutil.copy(path, raw / path.name)
    accepted, quarantined = _process(raw)

    mine = [q for q in quarantined if q["source_file"] == case["file"]]
    assert {q["reason_code"] for q in mine} == {case["reason_code"]}, mine
    assert all(q["detail"].startswith(case["file"]) for q in mine)  # the detail names the file
    # the good files beside it are ingested unchanged
    good_now = sorted((_comparable(r) for r in accepted if r["source_file"].startswith("good/")), key=str)
    assert good_now == sorted((_comparable(r) for r in good_alone), key=str)
    # nothing is lost: every row of the case file is either accepted or quarantined
    case_runs = [r for r in accepted if r["source_file"] == case["file"]]
    if case["file"] == "jsonl_one_bad_line.jsonl":
        assert len(case_runs) == 2 and len(mine) == 1
    else:
        assert case_runs == []


def test_symlink_loop_is_recorded_not_followed(tmp_path, good_alone):
    raw = tmp_path / "raw"
    shutil.copytree(GOOD, raw / "good")
    os.symlink("..", raw / "good" / "loop")  # good/loop -> raw: a cycle
    accepted, quarantined = _process(raw)
    assert [q["reason_code"] for q in quarantined if q["source_file"] == "good/loop"] == ["symlink_not_followed"]
    assert sorted(map(str, map(_comparable, accepted))) == sorted(map(str, map(_comparable, good_alone)))


def test_reingesting_the_same_folder_changes_nothing(tmp_path):
    raw = tmp_path / "raw"
    shutil.copytree(GOOD, raw / "good")
    first = _process(raw)
    shutil.copy(GOOD / "good_vllm_h200_conc8.json", raw / "good" / "z_again.json")
    shutil.copy(GOOD / "good_vllm_h200_conc8.json.meta.json", raw / "good" / "z_again.json.meta.json")
    second = _process(raw)
    assert second[0] == first[0]  # the copy is quarantined as duplicate_run, accepted runs are identical
    assert [q["reason_code"] for q in second[1] if q["source_file"] == "good/z_again.json"] == ["duplicate_run"]


@pytest.mark.long
def test_200_mb_detailed_result_ingests_under_1_gib(tmp_path):
    """A vLLM --save-detailed result of ~200 MB (per-request arrays), generated here, parsed in a fresh process."""
    raw = tmp_path / "raw"
    raw.mkdir()
    big = raw / "detailed_conc64.json"
    summary = json.loads((GOOD / "good_vllm_h200_conc8.json").read_text())
    n = 72_000
    with big.open("w") as fh:
        fh.write(json.dumps(summary)[:-1])
        fh.write(', "input_lens": [' + ",".join(["1024"] * n) + "]")
        fh.write(', "output_lens": [' + ",".join(["1024"] * n) + "]")
        fh.write(', "ttfts": [' + ",".join(["0.14012"] * n) + "]")
        row = "[" + ",".join(["0.011203"] * 300) + "]"
        fh.write(', "itls": [' + ",".join([row] * n) + "]")
        fh.write(', "generated_texts": [' + ",".join(['"' + "token " * 40 + '"'] * n) + "]")
        fh.write(', "errors": [' + ",".join(['""'] * n) + "]}")
    shutil.copy(GOOD / "good_vllm_h200_conc8.json.meta.json", raw / "detailed_conc64.json.meta.json")
    size_mb = big.stat().st_size / 2**20
    assert size_mb > 190
    script = textwrap.dedent(f"""
        import resource, sys
        from pathlib import Path
        from pipeline.ingest.folder import ingest_folder
        result = ingest_folder(Path({str(raw)!r}))
        run = result.runs.to_pylist()[0]
        print(result.runs.num_rows, run["median_tpot_s"], run["completed"],
              resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.split()
    rows, tpot, completed, max_rss_kib = int(out[0]), float(out[1]), int(out[2]), int(out[3])
    assert (rows, completed) == (1, 80) and tpot == pytest.approx(0.0112)
    assert max_rss_kib * 1024 < 2**30, f"peak RSS {max_rss_kib / 1024:.0f} MiB for a {size_mb:.0f} MB file"
