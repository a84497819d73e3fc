"""Input loss judged at publish against the last confirmed publish, and one warehouse per mart folder
(pipeline/io/publish_guard.py): each scenario runs ``python -m pipeline run`` the morning after the shared sample
run (``sample_run_copy``: 84 accepted runs on 14 lines of 6 runs each).

What the sample holds, read from its files (data/sample/README.md), which gives every expected number below:
- ``inferencex/``: 12 ``agg_*`` rows (MI355X FP4, undated), ``results_…fp8…json`` (6 undated MI355X FP8 runs) and
  the dashboard export (6 GB200 runs dated 2026-07-14): 24 runs that describe themselves;
- ``trtllm/``: 12 one-run reports with sidecars (B200 FP4, MTP and no spec: 2 lines);
- ``sglang/``: 4 JSONL files of 6 runs each with sidecars (B200, 4 lines);
- ``vllm/h200/``: 19 one-run results described by ``runs.csv`` (one FAILED, quarantined: 18 accepted, 3 lines);
- ``vllm/mi355x/``: 6 one-run results with sidecars (1 line).
"""

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import SAMPLE_DIR

from pipeline.__main__ import main, with_report_config
from pipeline.io.generations import published_dir
from pipeline.io.publish_guard import (
    RECORD,
    OtherWarehouseError,
    RecordUnreadableError,
    WarehouseIdentity,
    guarded_publish,
    judge,
    read_record,
)
from pipeline.io.storage import read_mart

SAMPLE_RUNS = 84
TRTLLM = "dsr1|1024/1024|b200|trtllm|fp4|spec={}|tp=8,ep=1,dpa=false"


@dataclass
class Morning:
    raw: Path
    out: Path
    db: Path


@pytest.fixture
def morning(sample_run_copy, tmp_path, monkeypatch) -> Morning:
    """The shared sample run copied (published marts, warehouse, parse cache) with a raw folder of its own."""
    raw = tmp_path / "raw"
    shutil.copytree(SAMPLE_DIR, raw)
    monkeypatch.setenv("PIPELINE_RAW_DIR", str(raw))
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    return Morning(raw, sample_run_copy.out_dir, sample_run_copy.db_path)


def _run(capsys, *flags: str) -> tuple[int, list[str]]:
    """``python -m pipeline run``: its exit code and its stderr lines."""
    capsys.readouterr()
    code = main(["run", *flags])
    return code, capsys.readouterr().err.strip().splitlines()


def _files(out: Path) -> dict[str, bytes]:
    """Every file of the published generation, with its bytes."""
    current = published_dir(out)
    return {p.relative_to(current).as_posix(): p.read_bytes() for p in sorted(current.rglob("*")) if p.is_file()}


def _accepted(out: Path) -> int:
    return len(set(read_mart(out, "runs").column("run_id").to_pylist()))


def _refused(code: int, err: list[str], before: int, after: int, lost: int, share: str, since: str) -> str:
    """The refusal is exit 1 and one line at the publish step with the numbers; returns that line."""
    assert code == 1
    assert len(err) == 2 and "pipeline stopped at comparisons__published_marts" in err[1], err
    line = err[0]
    assert line.startswith(f"comparisons__published_marts: accepted runs fell from {before} (last confirmed "
                           f"publish {since}) to {after}: {lost} of them lost ({share}, over the 20% allowed); "
                           "biggest lost lines: "), line
    assert "nothing published, the previous generation stays current" in line and "--allow-shrink" in line
    return line


def _forget_the_warehouse(m: Morning) -> None:
    for path in m.db.parent.glob(f"{m.db.name}*"):
        shutil.rmtree(path) if path.is_dir() else path.unlink()


def test_thirty_percent_of_the_logs_lost_with_a_removed_warehouse_is_refused(morning, capsys):
    """No last scan to compare with (the warehouse is gone): the scan-level check cannot see the loss; the
    publish compares the accepted runs with the last publish and refuses."""
    m = morning
    before, since = _files(m.out), published_dir(m.out).name
    for path in [*(m.raw / "trtllm").glob("*.report.json"), *(m.raw / "sglang").glob("qwen3.5*.jsonl")]:
        path.unlink()  # 12 one-run reports and 2 files of 6 runs: 24 of 84
    _forget_the_warehouse(m)
    code, err = _run(capsys)
    line = _refused(code, err, SAMPLE_RUNS, 60, 24, "28.6%", since)
    assert "-6" in line and "sglang|fp8|spec=mtp" in line  # a lost line of 6 runs, named
    assert published_dir(m.out).name == since and _files(m.out) == before


def test_every_sidecar_and_runs_csv_lost_is_refused(morning, capsys):
    """The files still parse (the scan finds every run), but without their metadata every run but the
    self-describing InferenceX ones is quarantined: 84 -> 24."""
    m = morning
    before, since = _files(m.out), published_dir(m.out).name
    for path in [*m.raw.rglob("*.meta.json"), *m.raw.rglob("runs.csv")]:
        path.unlink()
    code, err = _run(capsys)
    _refused(code, err, SAMPLE_RUNS, 24, 60, "71.4%", since)
    assert _files(m.out) == before


def test_a_reference_edit_that_drops_gpus_is_refused(morning, capsys, monkeypatch, tmp_path):
    m = morning
    since = published_dir(m.out).name
    reference = tmp_path / "reference"
    shutil.copytree(SAMPLE_DIR.parent / "reference", reference)
    table = (reference / "gpu_reference.csv").read_text(encoding="utf-8").splitlines()
    kept = [row for row in table if row.split(",")[0] not in ("h100", "h200", "gb200")]
    assert len(kept) == len(table) - 3
    (reference / "gpu_reference.csv").write_text("\n".join(kept) + "\n", encoding="utf-8")
    monkeypatch.setenv("PIPELINE_REFERENCE_DIR", str(reference))
    code, err = _run(capsys)
    # the 18 accepted H200 runs and the 6 GB200 runs
    _refused(code, err, SAMPLE_RUNS, 60, 24, "28.6%", since)
    assert published_dir(m.out).name == since


@pytest.mark.long
def test_two_losses_under_the_share_add_up_and_allow_shrink_moves_the_baseline(morning, capsys):
    m = morning
    first = published_dir(m.out).name
    for path in [*(m.raw / "trtllm").glob("*_mtp_*.report.json"),
                 *(m.raw / "vllm" / "h200").glob("dsr1_*.json")]:
        path.unlink()  # 6 + 6 of 84: 14.3 %
    code, err = _run(capsys)
    assert (code, err) == (0, []), err
    record = read_record(published_dir(m.out))
    assert record.meta["lost_runs"] == 12 and record.meta["baseline_runs"] == SAMPLE_RUNS
    assert record.meta["baseline_since"] == first and not record.meta["confirmed"]  # the baseline stays
    assert record.published.get((TRTLLM.format("mtp"), "2026-07-14")) is None
    assert record.baseline[(TRTLLM.format("mtp"), "2026-07-14")] == 6

    for path in [*(m.raw / "trtllm").glob("*_none_*.report.json"), *(m.raw / "vllm" / "mi355x").glob("*.json")]:
        path.unlink()  # 6 + 6 more: 14.3 % of the last publish, 28.6 % of the last confirmed one
    kept = _files(m.out)
    code, err = _run(capsys)
    _refused(code, err, SAMPLE_RUNS, 60, 24, "28.6%", first)
    assert _files(m.out) == kept

    code, err = _run(capsys, "--allow-shrink")
    assert (code, err) == (0, []), err
    allowed = published_dir(m.out)
    record = read_record(allowed)
    assert record.meta["allow_shrink"] and record.meta["confirmed"] and record.meta["lost_runs"] == 24
    assert _accepted(m.out) == 60
    code, err = _run(capsys)  # the next night is judged against the allowed publish: nothing lost
    assert (code, err) == (0, []), err
    record = read_record(published_dir(m.out))
    assert record.meta["judged_against"] == allowed.name and record.meta["baseline_runs"] == 60
    assert record.meta["lost_runs"] == 0


def _move_to(raw: Path, run_date: str, folders: tuple[str, ...] = ("trtllm", "sglang")) -> int:
    """Replace the TRT-LLM reports and the SGLang files of ``folders`` (12 runs on 2 lines, 24 runs on 4) by copies
    under new names whose sidecars date them ``run_date``, as a fleet that keeps only each line's latest sweep;
    returns the runs moved."""
    moved = 0
    globs = {"trtllm": "*.report.json", "sglang": "*.jsonl"}
    for path in [path for folder in folders for path in sorted((raw / folder).glob(globs[folder]))]:
        sidecar = path.with_name(path.name + ".meta.json")
        meta = json.loads(sidecar.read_text(encoding="utf-8"))
        meta["run_date"] = run_date
        new = path.with_name(f"sweep-{run_date}_{path.name}")
        new.write_bytes(path.read_bytes())
        new.with_name(new.name + ".meta.json").write_text(json.dumps(meta), encoding="utf-8")
        moved += len(path.read_text(encoding="utf-8").splitlines()) if path.suffix == ".jsonl" else 1
        path.unlink()
        sidecar.unlink()
    return moved


def test_a_newer_sweep_replacing_a_line_is_not_loss(morning, capsys):
    """36 of 84 runs leave 2026-07-14 for 2026-07-21 (43 %, which a count per date alone would refuse): the same
    six lines' latest sweep, which supersedes the old one; nothing is lost and this publish is the baseline."""
    m = morning
    since = published_dir(m.out).name
    assert _move_to(m.raw, "2026-07-21") == 36
    code, err = _run(capsys)
    assert (code, err) == (0, []), err
    record = read_record(published_dir(m.out))
    assert record.meta["lost_runs"] == 0 and record.meta["confirmed"] and record.meta["baseline_runs"] == 84
    assert record.meta["judged_against"] == since
    assert record.published[(TRTLLM.format("none"), "2026-07-21")] == 6
    assert (TRTLLM.format("none"), "2026-07-14") not in record.published
    assert record.baseline[(TRTLLM.format("none"), "2026-07-14")] == 6


def test_a_sweep_moved_to_an_older_date_is_loss(morning, capsys):
    """The same 36 runs moved to 2026-07-01 instead: as many runs as before, but the lines' newest sweep is now
    older than the one published, so the runs of 2026-07-14 are lost, not replaced."""
    m = morning
    since = published_dir(m.out).name
    assert _move_to(m.raw, "2026-07-01") == 36
    code, err = _run(capsys)
    _refused(code, err, SAMPLE_RUNS, SAMPLE_RUNS, 36, "42.9%", since)


@pytest.mark.long
def test_a_date_whose_runs_all_went_is_not_carried_over_from_the_last_publish(morning, capsys):
    """The TRT-LLM lines' newer sweep (12 runs, 2026-07-21) is published; then its files go with 12 SGLang Qwen runs
    and the warehouse. The new warehouse never saw 2026-07-21, so the run must not carry that date's runs/ files
    over from the last publish (that would count 72 runs, 14 %, and publish files of runs that are gone): 84 -> 60,
    refused; refused again the next night (the refused run already wrote its warehouse); with --allow-shrink the
    published runs/ holds no 2026-07-21 partition."""
    m = morning
    assert _move_to(m.raw, "2026-07-21", ("trtllm",)) == 12
    code, err = _run(capsys)
    assert (code, err) == (0, []), err
    since = published_dir(m.out).name
    assert {p.name for p in (m.out / "runs" / "dsr1").iterdir()} == {"2026-07-21", "2026-07-14", "undated"}
    for path in [*(m.raw / "trtllm").glob("sweep-2026-07-21_*"), *(m.raw / "sglang").glob("qwen3.5*.jsonl")]:
        path.unlink()
    _forget_the_warehouse(m)
    for _ in range(2):
        code, err = _run(capsys)
        _refused(code, err, SAMPLE_RUNS, 60, 24, "28.6%", since)
    code, err = _run(capsys, "--allow-shrink")
    assert (code, err) == (0, []), err
    assert _accepted(m.out) == 60
    assert {p.name for p in (m.out / "runs" / "dsr1").iterdir()} == {"2026-07-14", "undated"}


@pytest.mark.long
def test_a_nightly_run_for_one_date_rewrites_what_a_refused_run_left_unpublished(morning, capsys):
    """A full run that loses 24 runs of 2026-07-14 (their sidecars) is refused, but has written its warehouse. A sensor's run for
    the date ``undated`` alone must not publish 2026-07-14's old runs/ files beside the new warehouse's frontiers:
    it rewrites that date too (table unpublished_mart_dates), sees the same loss and is refused."""
    import dagster as dg

    from pipeline.definitions import defs
    from pipeline.defs.partitions import discover_partition_keys, register_partitions
    from pipeline.io.paths import parse_cache_dir

    m = morning
    since = published_dir(m.out).name
    # their sidecars go: the runs still parse (the scan sees no loss) but are quarantined for missing metadata
    for path in [*(m.raw / "trtllm").glob("*.meta.json"), *(m.raw / "sglang").glob("qwen3.5*.meta.json")]:
        path.unlink()
    code, err = _run(capsys)
    _refused(code, err, SAMPLE_RUNS, 60, 24, "28.6%", since)
    kept = _files(m.out)
    instance = dg.DagsterInstance.ephemeral()
    assert register_partitions(instance, discover_partition_keys(str(m.raw), parse_cache_dir())) == \
        ["2026-07-14", "undated"]
    result = defs().resolve_job_def("refresh_all").execute_in_process(
        instance=instance, partition_key="undated", run_config=with_report_config(None, instance), raise_on_error=False)
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    assert failure.step_key == "comparisons__published_marts"
    assert "accepted runs fell from 84" in failure.event_specific_data.error.cause.message
    assert " to 60: 24 of them lost (28.6%" in failure.event_specific_data.error.cause.message
    assert published_dir(m.out).name == since and _files(m.out) == kept


def test_a_second_warehouse_on_the_same_mart_folder_is_refused_in_one_line(morning, capsys, monkeypatch, tmp_path):
    m = morning
    before, since = _files(m.out), published_dir(m.out).name
    other = tmp_path / "other.duckdb"
    monkeypatch.setenv("PIPELINE_DB_PATH", str(other))
    code, err = _run(capsys)
    assert code == 1 and len(err) == 2, err
    assert err[0].startswith(f"ingest__parsed_runs: mart folder {m.out} is published from warehouse ")
    recorded = read_record(published_dir(m.out)).meta["warehouse_id"]
    assert f"(id {recorded[:8]}), this run's warehouse is {other} (id " in err[0]
    assert "--switch-warehouse" in err[0]
    assert "pipeline stopped at ingest__parsed_runs" in err[1]  # before any work
    assert _files(m.out) == before and published_dir(m.out).name == since

    code, err = _run(capsys, "--switch-warehouse")  # the way through: this warehouse takes the folder over
    assert (code, err) == (0, []), err
    assert read_record(published_dir(m.out)).meta["warehouse_path"] == str(other)


def test_a_moved_warehouse_is_still_the_writer(morning, capsys, monkeypatch, tmp_path):
    m = morning
    moved = tmp_path / "moved" / "w.duckdb"
    moved.parent.mkdir()
    m.db.rename(moved)
    monkeypatch.setenv("PIPELINE_DB_PATH", str(moved))
    code, err = _run(capsys)
    assert (code, err) == (0, []), err
    assert read_record(published_dir(m.out)).meta["warehouse_path"] == str(moved)


def test_the_publish_itself_refuses_another_warehouse(sample_run_copy):
    """Two runs that both passed the ingest's check (no generation yet when they started) meet under the
    publish lock: the second one's warehouse is not the one the current generation records."""
    from pipeline.io.generations import staging_dir

    out = sample_run_copy.out_dir
    before = published_dir(out)
    staging_dir(out, "second-writer")
    with pytest.raises(OtherWarehouseError, match="this run's warehouse is /elsewhere/w.duckdb"):
        guarded_publish(out, "second-writer", WarehouseIdentity("/elsewhere/w.duckdb", "f" * 32))
    assert published_dir(out) == before and (before / RECORD).is_file()


def test_an_unreadable_record_publishes_nothing(sample_run_copy):
    """Without the current generation's record the baseline and the writer are unknown: refused in one line
    naming the file, not judged against nothing."""
    from pipeline.io.generations import staging_dir

    out = sample_run_copy.out_dir
    before = published_dir(out)
    record = before / RECORD
    record.unlink()  # the copy's own file (a copy, not a hard link of the shared run's)
    record.write_bytes(b"not parquet")
    staging_dir(out, "after-damage")
    with pytest.raises(RecordUnreadableError, match=f"^{record} cannot be read \\(") as refused:
        guarded_publish(out, "after-damage", read_record_identity(sample_run_copy))
    assert "\n" not in str(refused.value) and "move the file aside" in str(refused.value)
    assert published_dir(out) == before


def read_record_identity(run) -> WarehouseIdentity:
    """The identity the sample copy's warehouse holds (read from it, not from the record)."""
    import duckdb

    with duckdb.connect(str(run.db_path), read_only=True) as conn:
        (wid,) = conn.execute("select id from warehouse_identity").fetchone()
    return WarehouseIdentity(str(run.db_path), wid)


def test_loss_per_line_and_date_by_hand():
    """The rule on hand-made counts: growth never offsets a loss; a line whose newest date moved later loses
    nothing; undated is older than every date."""
    baseline = {("a", "2026-01-01"): 10, ("b", "2026-01-01"): 10, ("c", "undated"): 4, ("d", "2026-01-02"): 6}
    now = {("a", "2026-01-01"): 4,  # 6 lost
           ("b", "2026-01-01"): 30,  # growth, does not cover a's loss
           ("c", "2026-01-01"): 1,  # c's newer sweep: its undated runs are replaced
           ("d", "2026-01-01"): 6}  # d moved to an older date: its 6 runs at 2026-01-02 are lost
    verdict = judge(baseline, now)
    assert verdict.before == 30 and verdict.after == 41
    assert verdict.lost == {("a", "2026-01-01"): 6, ("d", "2026-01-02"): 6} and verdict.replaced == {"c"}
    assert verdict.lost_runs == 12 and verdict.lost_share == pytest.approx(0.4)
    assert judge(None, now).lost_runs == 0
