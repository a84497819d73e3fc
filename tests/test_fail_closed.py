"""Fail closed on input loss: a missing, empty or shrunken raw folder stops the run before anything is published,
with one line naming the cause, and the previous marts stay byte for byte; an unreadable sub-folder is a ledger row
with a reason, never a silent gap."""

import os
import shutil
from pathlib import Path

import pytest
from conftest import SAMPLE_DIR

from pipeline.__main__ import main
from pipeline.ingest.folder import ingest_folder

MARTS = ("runs", "trends", "quarantine", "frontiers", "comparisons", "ingest_ledger")


def _mart_bytes(out_dir: Path) -> dict[str, bytes]:
    """Every file under the marts folder with its bytes (the report included)."""
    return {p.relative_to(out_dir).as_posix(): p.read_bytes() for p in sorted(out_dir.rglob("*")) if p.is_file()}


@pytest.fixture
def env(tmp_path, monkeypatch):
    """A raw folder holding the sample's H200 vLLM logs (19 run logs), and warehouse and marts in tmp."""
    raw = tmp_path / "raw"
    shutil.copytree(SAMPLE_DIR / "vllm" / "h200", raw)
    monkeypatch.setenv("PIPELINE_RAW_DIR", str(raw))
    monkeypatch.setenv("PIPELINE_OUT_DIR", str(tmp_path / "marts"))
    monkeypatch.setenv("PIPELINE_DB_PATH", str(tmp_path / "w.duckdb"))
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    return raw, tmp_path / "marts"


def _run_logs(raw: Path) -> list[Path]:
    """The run logs (one run each; the FAILED one is a parsed run too, quarantined later by validation)."""
    return sorted(raw.glob("*.json"))


def test_emptied_folder_after_a_good_run_publishes_nothing(env, capsys):
    raw, out = env
    assert main(["run"]) == 0
    before = _mart_bytes(out)
    assert {"comparisons.parquet", "frontiers.parquet"} <= set(before)
    for path in raw.iterdir():
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    capsys.readouterr()
    assert main(["run"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert f"ingest__parsed_runs: raw folder {raw} is empty" in err[0]
    assert len(err) == 2 and "nothing after it was published" in err[1]  # the cause, then where it stopped
    assert _mart_bytes(out) == before


def test_missing_folder_is_one_line(env, capsys, monkeypatch):
    _, out = env
    monkeypatch.setenv("PIPELINE_RAW_DIR", str(out.parent / "not-mounted"))
    assert main(["run"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"pipeline stopped before any stage, nothing published: raw folder {out.parent / 'not-mounted'} "
                   "does not exist (set PIPELINE_RAW_DIR)"]
    assert not out.exists()


def test_shrink_over_a_fifth_needs_allow_shrink(env, capsys):
    raw, out = env
    assert main(["run"]) == 0
    before = _mart_bytes(out)
    logs = _run_logs(raw)
    assert len(logs) == 19  # 6 DeepSeek-R1 + 13 Qwen (one of them the failed conc256 run)
    for path in logs[:4]:  # 19 -> 15 runs: 21 % lost, over the 20 % allowed
        path.unlink()
    capsys.readouterr()
    assert main(["run"]) == 1
    assert "gives 15 runs, 4 fewer than the last scan's 19 (over 20% lost)" in capsys.readouterr().err
    assert _mart_bytes(out) == before
    assert main(["run", "--allow-shrink"]) == 0
    from pipeline.io.storage import read_mart

    assert read_mart(out, "runs").num_rows == 14  # 15 runs, the failed one among them quarantined


def test_shrink_within_a_fifth_is_published(env):
    raw, out = env
    assert main(["run"]) == 0
    for path in _run_logs(raw)[:3]:  # 19 -> 16: 16 % lost
        path.unlink()
    assert main(["run"]) == 0
    from pipeline.io.storage import read_mart

    assert read_mart(out, "runs").num_rows == 15  # 16 runs, the failed one quarantined


def test_unreadable_subfolder_is_a_ledger_row(tmp_path, monkeypatch):
    raw = tmp_path / "raw"
    shutil.copytree(SAMPLE_DIR / "vllm" / "h200", raw / "h200")
    (raw / "locked").mkdir()
    shutil.copy(SAMPLE_DIR / "vllm" / "h200" / "dsr1_1k1k_h200_fp8_vllm_none_conc4.json", raw / "locked" / "a.json")
    real_scandir = os.scandir

    def scandir(path="."):  # tests run as root, where chmod 000 does not stop a read
        if os.fspath(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    result = ingest_folder(raw)
    (reject,) = [r for r in result.rejects.to_pylist() if r["source_file"] == "locked"]
    assert reject["reason_code"] == "unreadable_folder" and "Permission denied" in reject["detail"]
    assert [f["rows_read"] for f in result.files.to_pylist() if f["source_file"] == "locked"] == [1]
    assert result.runs.num_rows == 19  # every run of the readable folder, none of the locked one
