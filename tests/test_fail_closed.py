"""Fail closed on input loss: a missing, empty or shrunken raw folder stops the run before anything is published,
with one line naming the cause, and the previous marts stay byte for byte; an unreadable sub-folder is a ledger row
with a reason, never a silent gap."""

import json
import math
import os
import shutil
from pathlib import Path

import pytest
from conftest import SAMPLE_DIR

from pipeline.__main__ import main, with_report_config
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


@pytest.fixture(scope="module")
def _good_night(tmp_path_factory) -> Path:
    """``env``'s folder after one good ``python -m pipeline run``: raw logs, published marts, warehouse and parse
    cache under one folder, made once per module (``after_a_good_run`` copies it)."""
    root = tmp_path_factory.mktemp("good-night")
    shutil.copytree(SAMPLE_DIR / "vllm" / "h200", root / "raw")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PIPELINE_RAW_DIR", str(root / "raw"))
        mp.setenv("PIPELINE_OUT_DIR", str(root / "marts"))
        mp.setenv("PIPELINE_DB_PATH", str(root / "w.duckdb"))
        mp.delenv("DAGSTER_HOME", raising=False)
        assert main(["run"]) == 0
    return root


@pytest.fixture
def after_a_good_run(_good_night, tmp_path, monkeypatch):
    """``env`` the morning after a good run: a copy of ``_good_night`` (symlinks of the published generation kept)
    at this test's paths, with ``PIPELINE_*`` pointing at it. Returns (raw folder, marts folder)."""
    shutil.copytree(_good_night, tmp_path, symlinks=True, dirs_exist_ok=True)
    monkeypatch.setenv("PIPELINE_RAW_DIR", str(tmp_path / "raw"))
    monkeypatch.setenv("PIPELINE_OUT_DIR", str(tmp_path / "marts"))
    monkeypatch.setenv("PIPELINE_DB_PATH", str(tmp_path / "w.duckdb"))
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    return tmp_path / "raw", tmp_path / "marts"


def _run_logs(raw: Path) -> list[Path]:
    """The run logs (one run each; the FAILED one is a parsed run too, quarantined later by validation)."""
    return sorted(raw.glob("*.json"))


def test_emptied_folder_after_a_good_run_publishes_nothing(after_a_good_run, capsys):
    raw, out = after_a_good_run
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
    # --allow-shrink accepts a smaller history, never an empty one: no mart can be built from nothing
    assert main(["run", "--allow-shrink"]) == 1
    assert f"raw folder {raw} is empty" in capsys.readouterr().err.splitlines()[0]
    assert _mart_bytes(out) == before


def test_missing_folder_is_one_line(env, capsys, monkeypatch):
    _, out = env
    monkeypatch.setenv("PIPELINE_RAW_DIR", str(out.parent / "not-mounted"))
    assert main(["run"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"pipeline stopped before any step, nothing published: raw folder {out.parent / 'not-mounted'} "
                   "does not exist (set PIPELINE_RAW_DIR)"]
    assert not out.exists()


def test_shrink_over_a_fifth_needs_allow_shrink(after_a_good_run, capsys):
    raw, out = after_a_good_run
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


def test_shrink_within_a_fifth_is_published(after_a_good_run):
    raw, out = after_a_good_run
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
    assert reject == {**reject, "reason_code": "unreadable_folder",  # its own words, not this machine's path
                      "detail": "locked: folder cannot be listed, its files are not read (PermissionError: "
                                "Permission denied)"}
    assert [f["rows_read"] for f in result.files.to_pylist() if f["source_file"] == "locked"] == [1]
    assert result.runs.num_rows == 19  # every run of the readable folder, none of the locked one


def _published_hashes(out: Path) -> dict[str, str]:
    from pipeline.io.storage import content_hash, read_mart

    return {name: content_hash(read_mart(out, name)) for name in MARTS}


@pytest.mark.parametrize("damage", ["zero_bytes", "garbage", "truncated"])
def test_corrupt_warehouse_is_set_aside_and_rebuilt_in_one_line(after_a_good_run, capsys, tmp_path, damage):
    _, out = after_a_good_run
    before = _published_hashes(out)
    db = tmp_path / "w.duckdb"
    if damage == "zero_bytes":
        db.write_bytes(b"")
    elif damage == "garbage":
        db.write_bytes(b"not a database\n" * 100)
    else:
        db.write_bytes(db.read_bytes()[:20000])
    damaged = db.read_bytes()
    capsys.readouterr()
    assert main(["run"]) == 0
    notice = capsys.readouterr().err.strip().splitlines()
    assert len(notice) == 1 and notice[0].startswith(f"warehouse {db} was corrupt (")
    (moved,) = tmp_path.glob("w.duckdb.corrupt-*")
    assert f"moved aside to {moved}" in notice[0] and moved.read_bytes() == damaged  # kept for inspection
    assert _published_hashes(out) == before  # rebuilt from the raw folder: the same marts


def test_a_partial_run_on_a_rebuilt_warehouse_publishes_nothing(after_a_good_run, tmp_path):
    """A nightly run for one date on a warehouse just rebuilt after corruption would publish frontiers of that
    date alone: it stops at the publish step, the previous generation stays; a full run publishes again."""
    import dagster as dg

    from pipeline.definitions import defs
    from pipeline.defs.partitions import discover_partition_keys, register_partitions
    from pipeline.io.generations import published_dir

    raw, out = after_a_good_run
    before, published = _published_hashes(out), published_dir(out)
    (tmp_path / "w.duckdb").write_bytes(b"garbage")
    instance = dg.DagsterInstance.ephemeral()
    keys = register_partitions(instance, discover_partition_keys(str(raw), str(tmp_path / "w.duckdb.parse_cache")))
    assert len(keys) > 1
    result = defs().resolve_job_def("refresh_all").execute_in_process(
        instance=instance, partition_key=keys[0], run_config=with_report_config(None, instance), raise_on_error=False)
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    assert failure.step_key == "comparisons__published_marts"
    assert "warehouse rebuilt after corruption" in str(failure.event_specific_data.error.cause.message)
    assert published_dir(out) == published and _published_hashes(out) == before
    assert main(["run"]) == 0  # every date refilled: published again, the same numbers
    assert published_dir(out) != published and _published_hashes(out) == before


def test_an_unreadable_file_is_a_ledger_row_in_its_own_words(tmp_path, monkeypatch):
    """A run log the opener cannot read is an ``unreadable_file`` ledger row whose detail is the error's type and
    words after the file's name (as every ledger detail starts), never this machine's path to the file."""
    from pipeline.ingest import parse

    raw = tmp_path / "raw"
    shutil.copytree(SAMPLE_DIR / "vllm" / "h200", raw)
    locked = "dsr1_1k1k_h200_fp8_vllm_none_conc4.json"
    real_read_path = parse.read_path

    def read_path(path, root=None):  # tests run as root, where chmod 000 does not stop a read
        if os.fspath(path).endswith(locked):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_read_path(path, root)

    monkeypatch.setattr(parse, "read_path", read_path)
    result = ingest_folder(raw)
    (reject,) = [r for r in result.rejects.to_pylist() if r["source_file"] == locked]
    assert (reject["reason_code"], reject["detail"]) == ("unreadable_file",
                                                         f"{locked}: PermissionError: Permission denied")


@pytest.mark.parametrize("case", ["out_is_a_file", "out_cannot_be_created", "db_is_a_folder", "out_read_only"])
def test_unwritable_output_locations_are_one_line(env, capsys, monkeypatch, tmp_path, case):
    _, out = env
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    expected = {
        "out_is_a_file": f"PIPELINE_OUT_DIR {blocker} is a file, not a folder: nothing run",
        "out_cannot_be_created": f"PIPELINE_OUT_DIR {blocker / 'marts'} cannot be created (Not a directory): "
                                 "nothing run",
        "db_is_a_folder": f"PIPELINE_DB_PATH {tmp_path} is a folder, not a DuckDB file: nothing run",
        "out_read_only": f"PIPELINE_OUT_DIR {out} is not writable (read-only volume or permissions): nothing run",
    }[case]
    if case == "out_is_a_file":
        monkeypatch.setenv("PIPELINE_OUT_DIR", str(blocker))
    elif case == "out_cannot_be_created":
        monkeypatch.setenv("PIPELINE_OUT_DIR", str(blocker / "marts"))
    elif case == "db_is_a_folder":
        monkeypatch.setenv("PIPELINE_DB_PATH", str(tmp_path))
    else:  # tests run as root, which a chmod does not stop: the volume answers as a read-only one would
        out.mkdir()
        real_access = os.access
        monkeypatch.setattr(os, "access", lambda path, mode, **kw: False if Path(path) == out
                            else real_access(path, mode, **kw))
    assert main(["run"]) == 1
    assert capsys.readouterr().err.strip().splitlines() == [f"pipeline not started: {expected}"]


def test_a_failed_blocking_check_stops_the_run_with_exit_2_and_publishes_nothing(after_a_good_run, capsys, monkeypatch):
    """A frontier that is not strictly monotone fails the blocking check ``frontier_strictly_monotone``: Dagster
    skips everything downstream of it in the one run, the CLI names the check and where the run stopped, exits 2,
    and the previous night's marts stay published byte for byte."""
    import pyarrow as pa

    import pipeline.defs.frontiers.assets as frontier_assets

    raw, out = after_a_good_run
    before = _mart_bytes(out)
    build = frontier_assets.build_frontiers

    def flat_frontiers(*args, **kwargs):  # every point at the same tok/s/GPU: no frontier of 2+ points is monotone
        table = build(*args, **kwargs)
        at = table.column_names.index("tput_per_gpu")
        return table.set_column(at, "tput_per_gpu", pa.array([1.0] * table.num_rows, table.schema.field(at).type))

    monkeypatch.setattr(frontier_assets, "build_frontiers", flat_frontiers)
    capsys.readouterr()
    assert main(["run"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0] == "BLOCKING check failed: frontiers/pareto_frontiers frontier_strictly_monotone"
    assert err[-1].startswith("pipeline stopped at frontiers__pareto_frontiers_frontier_strictly_monotone after ")
    assert err[-1].endswith("downstream numbers would be wrong; the previous marts stay published")
    assert len(err) == 2, err  # the check failure is not repeated as a step error
    assert _mart_bytes(out) == before


def test_an_agentic_re_measurement_is_a_repeat_not_a_crash(real_logs, tmp_path, run_pipeline):
    """Two real AgentX sweeps (Kimi-K2.5 on B200 and on MI355X) plus an honest re-measurement of the MI355X one
    (every latency +2 %, throughput unchanged): the re-measurement is a repeat with a tok/s/GPU interval, the
    interactivity interval is none (an agentic run has no median TPOT), and the comparison is published. It used
    to stop the run at matched_comparisons ("`y` must contain only finite values"), publishing nothing."""
    raw = tmp_path / "raw"
    (raw / "a").mkdir(parents=True)
    (raw / "b").mkdir()
    mi355x = real_logs / "inferencex" / "ajith_0601_agentx_kimik2.5_fp4_mi355x_vllm_agg_bmk.json"
    b200 = real_logs / "inferencex" / "ajith_0603_agentx_kimik2.5_fp4_b200_vllm_lmcache_agg_bmk.json"
    shutil.copy(mi355x, raw / "a" / mi355x.name)
    shutil.copy(b200, raw / "a" / b200.name)
    latency = ("ttft", "e2el", "itl", "tpot")
    again = [{k: v * 1.02 if isinstance(v, float) and any(k.endswith(f"_{m}") for m in latency) else v
              for k, v in row.items()} for row in json.loads(mi355x.read_text())]
    (raw / "b" / "repeat.json").write_text(json.dumps(again))
    result = run_pipeline(raw)
    assert result.result.success
    frontier = [p for p in result.mart("frontiers").to_pylist() if p["hw"] == "mi355x"]
    repeated = [p for p in frontier if p["repeat_n"] == 2]
    assert repeated
    for point in repeated:  # the same throughput twice: a zero-width interval at the mean
        assert point["tput_per_gpu_ci_lo"] == pytest.approx(point["tput_per_gpu"])
        assert point["tput_per_gpu_ci_hi"] == pytest.approx(point["tput_per_gpu"])
        assert point["median_intvty_ci_lo"] is None and point["median_intvty_ci_hi"] is None
    rows = result.mart("comparisons").to_pylist()
    assert {r["kind"] for r in rows} == {"hardware"} and len(rows) == 6
    assert all(r[c] is None or math.isfinite(r[c]) for r in rows for c in r if c.endswith(("_ci_lo", "_ci_hi")))


@pytest.mark.parametrize("change, code", [
    ({"p99_itl_ms": 1e308}, "implausible:p99_itl_ms"),
    ({"std_ttft_ms": -5.0}, "implausible:std_ttft_ms"),
    ({"p90_tpot_ms": 260.0}, "inconsistent:tpot_percentiles"),  # above the file's p99 TPOT, 248.9 ms
    ({"p99_e2el_ms": 200000.0}, "inconsistent:e2el_percentiles"),  # below its p90 E2EL, 234,439 ms
])
def test_secondary_statistics_that_cannot_be_true_are_quarantined(real_logs, tmp_path, change, code):
    """A real Kimi-K2.5 MTP result with one secondary statistic broken: a p99 of 1e308 ms, a negative std, or
    percentiles out of order is a broken file, whatever its median says."""
    from pipeline.ingest.keys import gpu_keys
    from pipeline.validate.rules import validate_table

    src = real_logs / "vllm" / "ix_kimik2.5_8k1k_int4_vllm_tp8-ep1-dpafalse_disagg-false_spec-mtp_conc32_MI355.json"
    doc = json.loads(src.read_text())
    assert doc["p99_tpot_ms"] < 260.0 and doc["p90_e2el_ms"] > 200000.0
    raw = tmp_path / "raw"
    raw.mkdir()
    meta = {"model": "kimik2.5", "hw": "mi355x", "framework": "vllm", "precision": "int4", "spec_decoding": "mtp",
            "tp": 8, "ep": 1, "isl": 8192, "osl": 1024, "random_range_ratio": 0.8}
    (raw / "good.json").write_text(src.read_text())
    (raw / "good.json.meta.json").write_text(json.dumps(meta))
    (raw / "bad.json").write_text(json.dumps({**doc, **change, "date": "20260527-120000"}))
    (raw / "bad.json.meta.json").write_text(json.dumps(meta))
    accepted, rejected = validate_table(ingest_folder(raw).runs, gpu_keys())
    assert accepted.column("source_file").to_pylist() == ["good.json"]  # the good file beside it is untouched
    assert [(q["source_file"], q["reason_code"]) for q in rejected.to_pylist()] == [("bad.json", code)]
