"""Publishing as one generation: a run's marts become visible together or not at all; a kill after any step
leaves the previous generation whole and consistent; two runs at once lose nothing; the layout before generations
is carried over."""

import errno
import hashlib
import locale
import os
import re
import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import SAMPLE_DIR

from pipeline.io import generations
from pipeline.io.generations import (
    CURRENT,
    GENERATIONS,
    KEEP_GENERATIONS,
    STALE_STAGING_S,
    WHOLE,
    cli_generation_id,
    discard,
    publish,
    published_dir,
    staging_dir,
    staging_path,
)
from pipeline.io.storage import content_hash, read_mart

MARTS = ("runs", "trends", "quarantine", "frontiers", "comparisons", "ingest_ledger")


def _write(path: Path, value: int) -> None:
    """Replace ``path`` with a one-row Parquet file, as the marts' writers do (temporary, then rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    pq.write_table(pa.table({"x": [value]}), tmp)
    os.replace(tmp, path)


def _value(path: Path) -> int:
    return pq.read_table(path).column("x")[0].as_py()


def test_every_file_of_the_published_marts_is_staged_as_a_hard_link(tmp_path):
    """The next run's staging folder shares every file of the published generation, Parquet or not (a report page,
    a ``_WHOLE`` marker): nothing is copied; a page the run writes anew leaves the published page as it was."""
    out = tmp_path / "marts"
    first = staging_dir(out, "run1")
    _write(first / "quarantine" / "part-0.parquet", 1)
    (first / "quarantine" / "_WHOLE").touch()
    (first / "report").mkdir()
    (first / "report" / "index.html").write_text("first", encoding="utf-8")
    gen1 = publish(out, "run1")
    second = staging_dir(out, "run2")
    for name in ("quarantine/part-0.parquet", "quarantine/_WHOLE", "report/index.html"):
        assert os.path.samefile(second / name, gen1 / name), name
    (second / "report" / "index.html").unlink()  # as the report step empties its folder before writing
    (second / "report" / "index.html").write_text("second", encoding="utf-8")
    assert (gen1 / "report" / "index.html").read_text(encoding="utf-8") == "first"
    publish(out, "run2")
    assert (out / "report" / "index.html").read_text(encoding="utf-8") == "second"


def test_without_hard_links_the_staged_files_are_copies(tmp_path, monkeypatch):
    """On a file system that refuses hard links, the staging folder holds copies: the same bytes, other files."""
    out = tmp_path / "marts"
    first = staging_dir(out, "run1")
    _write(first / "frontiers.parquet", 1)
    (first / "report").mkdir()
    (first / "report" / "index.html").write_text("first", encoding="utf-8")
    gen1 = publish(out, "run1")

    def refuse(src, dst):
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", refuse)
    second = staging_dir(out, "run2")
    assert not os.path.samefile(second / "report" / "index.html", gen1 / "report" / "index.html")
    assert (second / "report" / "index.html").read_text(encoding="utf-8") == "first"
    assert _value(second / "frontiers.parquet") == 1


def test_a_page_written_again_with_the_same_bytes_is_no_change_to_apply_on_a_later_generation(tmp_path):
    """Two runs stage from one generation; the other publishes a new page first. This run wrote the page again as
    it was (a new file, the same bytes: the report rewrites every page): not a change of this run, so its publish
    keeps the other run's page and applies only what it changed."""
    out = tmp_path / "marts"
    first = staging_dir(out, "run1")
    (first / "report").mkdir()
    (first / "report" / "index.html").write_text("first", encoding="utf-8")
    publish(out, "run1")
    ours, theirs = staging_dir(out, "ours"), staging_dir(out, "theirs")
    (theirs / "report" / "index.html").unlink()
    (theirs / "report" / "index.html").write_text("theirs", encoding="utf-8")
    publish(out, "theirs")
    (ours / "report" / "index.html").unlink()
    (ours / "report" / "index.html").write_text("first", encoding="utf-8")
    _write(ours / "frontiers.parquet", 2)
    publish(out, "ours")
    assert (out / "report" / "index.html").read_text(encoding="utf-8") == "theirs"
    assert _value(out / "frontiers.parquet") == 2


def test_a_run_is_invisible_until_it_publishes_and_the_old_generation_stays_readable(tmp_path):
    out = tmp_path / "marts"
    first = staging_dir(out, "run1")
    _write(first / "frontiers.parquet", 1)
    _write(first / "runs" / "m" / "2026-01-01" / "part-0.parquet", 10)
    assert not (out / "frontiers.parquet").exists()  # staged, not published
    gen1 = publish(out, "run1")
    assert (out / CURRENT).resolve() == gen1.resolve() and published_dir(out) == gen1.resolve()
    assert _value(out / "frontiers.parquet") == 1 and _value(out / "runs" / "m" / "2026-01-01" / "part-0.parquet") == 10

    second = staging_dir(out, "run2")
    # the next run starts from the published marts, sharing their files (hard links), not copying them
    assert os.path.samefile(second / "frontiers.parquet", gen1 / "frontiers.parquet")
    _write(second / "frontiers.parquet", 2)
    assert _value(out / "frontiers.parquet") == 1  # a replaced link leaves the published file as it was
    gen2 = publish(out, "run2")
    assert _value(out / "frontiers.parquet") == 2
    assert _value(gen1 / "frontiers.parquet") == 1  # a reader that resolved the old generation reads on
    assert _value(out / "runs" / "m" / "2026-01-01" / "part-0.parquet") == 10  # carried over unchanged
    assert gen2 != gen1 and not (out / GENERATIONS / "run2.staging").exists()


def test_old_generations_are_pruned_but_the_last_ones_kept(tmp_path):
    out = tmp_path / "marts"
    published = []
    for i in range(KEEP_GENERATIONS + 2):
        _write(staging_dir(out, f"run{i}") / "frontiers.parquet", i)
        published.append(publish(out, f"run{i}"))
    assert [g.exists() for g in published] == [False, False] + [True] * KEEP_GENERATIONS
    assert _value(out / "frontiers.parquet") == KEEP_GENERATIONS + 1


def test_two_runs_at_once_both_keep_their_partitions(tmp_path):
    """Run A and run B stage from the same generation; B publishes after A and is rebased onto A's generation:
    A's new date survives, B's new date and removal apply, files neither touched stay shared."""
    out = tmp_path / "marts"
    base = staging_dir(out, "base")
    _write(base / "runs" / "m" / "2026-01-01" / "part-0.parquet", 1)
    _write(base / "runs" / "m" / "2026-01-02" / "part-0.parquet", 2)
    _write(base / "frontiers.parquet", 0)
    (base / "report").mkdir()
    (base / "report" / "index.html").write_text("base report")
    publish(out, "base")
    a, b = staging_dir(out, "a"), staging_dir(out, "b")
    _write(a / "runs" / "m" / "2026-01-03" / "part-0.parquet", 3)
    _write(a / "frontiers.parquet", 30)
    (a / "report" / "index.html").write_text("report of a")
    _write(b / "runs" / "m" / "2026-01-04" / "part-0.parquet", 4)
    shutil.rmtree(b / "runs" / "m" / "2026-01-01")  # b's night removed this date's runs
    publish(out, "a")
    publish(out, "b")
    runs = out / "runs" / "m"
    assert sorted(p.name for p in runs.iterdir()) == ["2026-01-02", "2026-01-03", "2026-01-04"]
    assert _value(out / "frontiers.parquet") == 30  # b did not write it: a's stays
    assert (out / "report" / "index.html").read_text() == "report of a"  # b's unchanged copy does not win


@pytest.mark.parametrize("last", ["a", "b"])
def test_a_folder_marked_whole_is_published_from_one_run(tmp_path, last):
    """A mart whose files only make sense together (pipeline.io.file_marts: base + recent): run A writes a
    night into recent, run B folds (a new base, no recent); whichever publishes last, the folder is that run's,
    never B's base beside A's recent (A's rows twice)."""
    out = tmp_path / "marts"
    base = staging_dir(out, "base")
    _write(base / "ledger" / "base.parquet", 1)
    (base / "ledger" / WHOLE).touch()
    publish(out, "base")
    a, b = staging_dir(out, "a"), staging_dir(out, "b")
    _write(a / "ledger" / "recent.parquet", 2)
    _write(b / "ledger" / "base.parquet", 3)
    _write(b / "frontiers.parquet", 4)
    for run in sorted(("a", "b"), key=lambda r: r == last):
        publish(out, run)
    files = {path.name: _value(path) for path in (out / "ledger").glob("*.parquet")}
    assert files == {"a": {"base.parquet": 1, "recent.parquet": 2}, "b": {"base.parquet": 3}}[last]
    assert _value(out / "frontiers.parquet") == 4  # other marts are still rebased file by file


def test_marts_of_the_layout_before_generations_are_carried_over(tmp_path):
    out = tmp_path / "marts"
    _write(out / "runs" / "m" / "2025-12-31" / "part-0.parquet", 7)
    _write(out / "quarantine.parquet", 8)
    staging = staging_dir(out, "upgrade")
    _write(staging / "frontiers.parquet", 9)
    publish(out, "upgrade")
    assert (out / "runs").is_symlink() and (out / "quarantine.parquet").is_symlink()
    assert _value(out / "runs" / "m" / "2025-12-31" / "part-0.parquet") == 7
    assert _value(out / "quarantine.parquet") == 8 and _value(out / "frontiers.parquet") == 9


def test_a_discarded_run_publishes_nothing(tmp_path):
    out = tmp_path / "marts"
    _write(staging_dir(out, "good") / "frontiers.parquet", 1)
    publish(out, "good")
    _write(staging_dir(out, "failed") / "frontiers.parquet", 2)
    discard(out, "failed")
    assert publish(out, "failed") is None
    assert _value(out / "frontiers.parquet") == 1


def _hashes(out_dir: Path) -> dict[str, str]:
    return {name: content_hash(read_mart(out_dir, name)) for name in MARTS}


def _files(generation: Path) -> dict[str, tuple[str, int]]:
    """Every file of a generation folder (marts, report pages and scripts, markers): its bytes' sha256 and its
    modification time (ns), by relative path."""
    return {p.relative_to(generation).as_posix(): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
            for p in sorted(generation.rglob("*")) if p.is_file()}


def _consistent(out_dir: Path) -> None:
    """The published marts come from one run: every frontier point and every accepted run in the ledger is a run
    of ``runs/``, and every comparison's side has frontier points."""
    run_ids = set(read_mart(out_dir, "runs").column("run_id").to_pylist())
    frontier = read_mart(out_dir, "frontiers")
    assert set(frontier.column("run_id").to_pylist()) <= run_ids
    sides = set(frontier.column("side_id").to_pylist())
    comparisons = read_mart(out_dir, "comparisons")
    assert set(comparisons.column("side_id").to_pylist()) <= sides
    ledger = read_mart(out_dir, "ingest_ledger")
    assert sum(ledger.column("accepted_rows").to_pylist()) == len(run_ids)


@pytest.mark.long
def test_a_kill_after_every_step_leaves_the_previous_generation(sample_run_copy, monkeypatch, tmp_path):
    """The night after a good run, a quarter of the sample's H200 logs are gone (a deliberate shrink): the CLI's run
    is stopped after each asset step in turn, as a kill would (no clean-up runs); every time the published marts
    are exactly the previous night's, and the run that completes publishes a consistent new generation.

    A kill after step k leaves what steps 1..k wrote into the run's staging folder and the warehouse: here each
    step runs as its own run under the same generation tag, so after run k the state is that of one run killed
    after step k (one pass over the steps instead of one run per prefix)."""
    import dagster as dg

    from pipeline.__main__ import materialize_all, with_report_config
    from pipeline.definitions import defs
    from pipeline.defs.partitions import all_partitions_tags, discover_partition_keys, register_partitions
    from pipeline.defs.resources import GENERATION_TAG
    from pipeline.io.generations import cli_generation_id
    from pipeline.io.paths import parse_cache_dir

    run = sample_run_copy
    raw = tmp_path / "raw"
    shutil.copytree(SAMPLE_DIR, raw)
    for log in sorted((raw / "vllm" / "h200").glob("*.json"))[::4]:
        log.unlink()
    monkeypatch.setenv("PIPELINE_RAW_DIR", str(raw))
    before, published = _hashes(run.out_dir), published_dir(run.out_dir)
    files = _files(published)  # the staged files are hard links of these: no step may write one in place
    assert any(name.startswith("report/") for name in files) and "quarantine/_WHOLE" in files
    config = {"ops": {"ingest__parsed_runs": {"config": {"allow_shrink": True}}}}

    definitions = defs()
    job, steps = definitions.resolve_job_def("refresh_all"), definitions.resolve_asset_graph().toposorted_asset_keys
    assert steps[-1] == dg.AssetKey(["comparisons", "published_marts"])
    instance = dg.DagsterInstance.ephemeral()
    register_partitions(instance, discover_partition_keys(str(raw), parse_cache_dir()))
    tags = {GENERATION_TAG: cli_generation_id(), **all_partitions_tags(instance)}
    for step in steps[:-1]:
        run_config = with_report_config(config if step.path[0] == "ingest" else {}, instance, [step])
        ran = job.execute_in_process(instance=instance, run_config=run_config, asset_selection=[step], tags=tags,
                                     raise_on_error=False)
        assert ran.success, step.to_user_string()
        assert published_dir(run.out_dir) == published, f"published after a kill after {step.to_user_string()}"
        assert _hashes(run.out_dir) == before, f"marts changed after a kill after {step.to_user_string()}"
        assert _files(published) == files, f"a published file changed after {step.to_user_string()}"
    assert materialize_all(dg.DagsterInstance.ephemeral(), config).success
    assert _files(published) == files  # the previous generation, kept, holds exactly what it held
    after = _hashes(run.out_dir)
    assert after["runs"] != before["runs"] and after["frontiers"] != before["frontiers"]
    _consistent(run.out_dir)


def test_directly_invoked_assets_with_one_generation_tag_publish_together(tmp_path):
    """Assets invoked directly (the benchmark) with a ``pipeline/generation`` tag stage into that generation and
    publish nothing themselves; ``published_marts`` publishes them at once. Without the tag, each call publishes."""
    import dagster as dg

    from pipeline.defs.comparisons.publish import published_marts
    from pipeline.defs.resources import GENERATION_TAG, PipelinePaths, Warehouse

    out = tmp_path / "marts"
    paths = PipelinePaths(raw_dir=str(tmp_path), out_dir=str(out), cache_dir=str(tmp_path / "cache"))
    warehouse = Warehouse(database=str(tmp_path / "wh.duckdb"))
    tagged = dg.build_asset_context(run_tags={GENERATION_TAG: "bench-1"})
    for name, value in (("a", 1), ("b", 2)):
        _write(paths.mart(tagged, name), value)
        paths.publish_unless_later(tagged, warehouse)
        assert not (out / CURRENT).exists()  # staged, not published
    published_marts(tagged, warehouse=warehouse, paths=paths)
    # the marts, and the generation's own record of its accepted runs (a "_" name, which readers skip)
    assert sorted(p.name for p in published_dir(out).glob("*.parquet")) == ["_accepted_runs.parquet", "a.parquet",
                                                                          "b.parquet"]
    first = published_dir(out)
    untagged = dg.build_asset_context()
    _write(paths.mart(untagged, "c"), 3)
    paths.publish_unless_later(untagged, warehouse)
    assert published_dir(out) != first and (published_dir(out) / "c.parquet").exists()


# Focused tests of each step of a publish, on hand-made mart folders (no Dagster run: fast enough to run per mutant).

STUCK = "stuck.parquet"


def _hidden(out_dir: Path) -> list[str]:
    """Hidden names in the generations folder besides its lock: copies or rebases in progress, or left behind."""
    return sorted(p.name for p in (out_dir / GENERATIONS).iterdir() if p.name.startswith(".") and p.name != ".lock")


def _make_stuck(monkeypatch: pytest.MonkeyPatch) -> None:
    """From now on no file named ``STUCK`` can be deleted, as a file of another user cannot be by a publisher that
    is not root (the tests may run as root, whom file modes refuse nothing, so the refusal is made here)."""
    unlink = os.unlink

    def refusing(path, *, dir_fd=None):
        if os.path.basename(os.fsdecode(path)) == STUCK:
            os.stat(path, dir_fd=dir_fd, follow_symlinks=False)  # no such file: FileNotFoundError, as unlink
            raise PermissionError(errno.EACCES, "Permission denied", os.fsdecode(path))
        return unlink(path, dir_fd=dir_fd)

    monkeypatch.setattr(os, "unlink", refusing)


def _dead_pid() -> int:
    """The process id of a process that has ended (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.fixture
def live_process():
    """A running process other than this one (ended after the test)."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield child
    child.kill()
    child.wait()


def test_a_generation_is_named_by_its_utc_time_and_the_first_eight_characters_of_the_run_id(tmp_path):
    out = tmp_path / "marts"
    _write(staging_dir(out, "abcdefghijkl") / "frontiers.parquet", 1)
    saved = os.environ.get("TZ")
    os.environ["TZ"] = "IST-5:30"  # a machine whose local time is UTC+5:30
    time.tzset()
    try:
        before = datetime.now(timezone.utc).replace(tzinfo=None)
        generation = publish(out, "abcdefghijkl")
        after = datetime.now(timezone.utc).replace(tzinfo=None)
    finally:
        if saved is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = saved
        time.tzset()
    match = re.fullmatch(r"(\d{8}T\d{12}Z)-abcdefgh", generation.name)
    assert match, generation.name
    assert before <= datetime.strptime(match[1], "%Y%m%dT%H%M%S%fZ") <= after


def test_without_a_publish_in_between_the_staging_folder_itself_becomes_the_generation(tmp_path):
    """The guard sees the staging folder, the current generation and the new generation's name; the staging
    folder is renamed (the same folder, not a rebuilt copy)."""
    out = tmp_path / "marts"
    _write(staging_dir(out, "run1") / "frontiers.parquet", 1)
    first = publish(out, "run1")
    staging = staging_dir(out, "run2")
    _write(staging / "frontiers.parquet", 2)
    folder_id = staging.stat().st_ino
    seen = []
    generation = publish(out, "run2", guard=lambda folder, current, name: seen.append((folder, current, name)))
    assert seen == [(staging, first.resolve(), generation.name)]
    assert generation.stat().st_ino == folder_id and not staging.exists()


class Refused(Exception):
    pass


def _refuse(folder: Path, current: Path, name: str) -> None:
    raise Refused(name)


def test_a_refused_publish_moves_nothing_and_leaves_the_staging_folder_to_the_caller(tmp_path):
    out = tmp_path / "marts"
    _write(staging_dir(out, "good") / "frontiers.parquet", 1)
    publish(out, "good")
    a, b = staging_dir(out, "a"), staging_dir(out, "b")
    _write(a / "frontiers.parquet", 2)
    _write(b / "frontiers.parquet", 3)
    with pytest.raises(Refused):
        publish(out, "a", guard=_refuse)  # nothing published since a staged: its staging folder was judged
    assert _value(out / "frontiers.parquet") == 1 and _value(a / "frontiers.parquet") == 2
    publish(out, "b")
    with pytest.raises(Refused):
        publish(out, "a", guard=_refuse)  # b published since a staged: a rebased folder was judged, and deleted
    assert _value(out / "frontiers.parquet") == 3 and _value(a / "frontiers.parquet") == 2
    assert _hidden(out) == []
    discard(out, "a")
    assert not a.exists() and publish(out, "a") is None


def _publish_with_a_stuck_file(out, run_id, value):
    """Publish a first generation, ``run_id``, holding frontiers.parquet = ``value`` and the file ``STUCK``
    (which ``_make_stuck`` makes undeletable)."""
    staged = staging_dir(out, run_id)
    _write(staged / "frontiers.parquet", value)
    _write(staged / STUCK, 0)
    publish(out, run_id)


def test_a_refusal_is_what_the_caller_sees_even_when_the_rebased_folder_cannot_be_deleted(tmp_path, monkeypatch):
    out = tmp_path / "marts"
    _publish_with_a_stuck_file(out, "first", 1)
    a, b = staging_dir(out, "a"), staging_dir(out, "b")
    _write(b / "frontiers.parquet", 2)
    publish(out, "b")
    _write(a / "frontiers.parquet", 3)
    _make_stuck(monkeypatch)
    with pytest.raises(Refused):
        publish(out, "a", guard=_refuse)
    assert _value(out / "frontiers.parquet") == 2


def test_a_rebased_publish_deletes_the_staging_folder_and_succeeds_when_a_file_of_it_stays(tmp_path, monkeypatch):
    out = tmp_path / "marts"
    _write(staging_dir(out, "first") / "frontiers.parquet", 1)
    publish(out, "first")
    a, b, c = staging_dir(out, "a"), staging_dir(out, "b"), staging_dir(out, "c")
    _write(a / "frontiers.parquet", 2)
    _write(b / "quarantine.parquet", 3)
    _write(c / STUCK, 4)
    publish(out, "a")
    publish(out, "b")  # rebased onto a's generation
    assert not b.exists() and _hidden(out) == []
    _make_stuck(monkeypatch)
    generation = publish(out, "c")  # rebased onto b's; c's own file stays in its staging folder
    assert published_dir(out) == generation.resolve()
    assert {p.name: _value(p) for p in generation.glob("*.parquet")} == {"frontiers.parquet": 2,
                                                                         "quarantine.parquet": 3, STUCK: 4}


def test_a_staging_folder_without_its_base_record_is_published_as_staged_from_the_top_of_the_folder(tmp_path):
    """A staging folder whose ``.base`` record is missing (written by hand, or before the records existed) counts
    as staged from the marts at the top of the folder: with no generation yet, it is published as it is."""
    out = tmp_path / "marts"
    _write(out / "quarantine.parquet", 1)  # a mart of the layout before generations
    staging = staging_path(out, "by-hand")
    _write(staging / "frontiers.parquet", 2)
    generation = publish(out, "by-hand")
    assert sorted(p.name for p in generation.iterdir()) == ["frontiers.parquet"]
    assert _value(out / "frontiers.parquet") == 2


def test_a_first_run_that_drops_a_mart_of_the_layout_before_generations_publishes_without_it(tmp_path):
    out = tmp_path / "marts"
    _write(out / "runs" / "m" / "2025-12-31" / "part-0.parquet", 7)
    _write(out / "quarantine.parquet", 8)
    staging = staging_dir(out, "upgrade")
    (staging / "quarantine.parquet").unlink()
    _write(staging / "frontiers.parquet", 9)
    publish(out, "upgrade")
    assert sorted(p.name for p in published_dir(out).iterdir()) == ["frontiers.parquet", "runs"]


def test_the_next_run_stages_none_of_a_generations_own_files(tmp_path):
    """Names starting with ``_`` (what the guard writes, e.g. ``_accepted_runs.parquet``) belong to their
    generation: not staged into the next run, not linked at the top of the mart folder."""
    out = tmp_path / "marts"
    _write(staging_dir(out, "run1") / "frontiers.parquet", 1)
    publish(out, "run1", guard=lambda folder, current, name: _write(folder / "_accepted_runs.parquet", 5))
    assert (published_dir(out) / "_accepted_runs.parquet").is_file()
    assert sorted(p.name for p in staging_dir(out, "run2").iterdir()) == ["frontiers.parquet"]
    assert sorted(p.name for p in out.iterdir()) == [GENERATIONS, CURRENT, "frontiers.parquet"]


def test_a_leftover_copy_of_an_earlier_attempt_of_the_run_is_not_staged(tmp_path):
    """A copy this run's process left half-made (same run, same process id: killed while copying, then started
    again) is replaced, not reused."""
    out = tmp_path / "marts"
    _write(staging_dir(out, "run1") / "frontiers.parquet", 1)
    publish(out, "run1")
    _write(out / GENERATIONS / f".run2.staging-{os.getpid()}" / "junk.parquet", 9)
    staging = staging_dir(out, "run2")
    assert sorted(p.name for p in staging.iterdir()) == ["frontiers.parquet"] and _hidden(out) == []


@pytest.mark.parametrize("cleanup_fails", [False, True])
def test_a_process_that_loses_the_race_to_stage_returns_the_winners_folder(tmp_path, monkeypatch, cleanup_fails):
    """Two processes of one run stage at once: the other one's folder appears while this one copies; this one
    returns that folder and drops its own copy (as far as it can: a file it cannot delete is not an error)."""
    out = tmp_path / "marts"
    first = staging_dir(out, "first")
    _write(first / "frontiers.parquet", 1)
    _write(first / STUCK, 0)
    publish(out, "first")
    published = generations.published_dir

    def other_process_stages_first(out_dir):
        _write(staging_path(out_dir, "run") / "frontiers.parquet", 2)  # and has written into it already
        return published(out_dir)

    monkeypatch.setattr(generations, "published_dir", other_process_stages_first)
    if cleanup_fails:
        _make_stuck(monkeypatch)
    staging = staging_dir(out, "run")
    assert staging == staging_path(out, "run") and sorted(p.name for p in staging.iterdir()) == ["frontiers.parquet"]
    assert _value(staging / "frontiers.parquet") == 2
    if not cleanup_fails:
        assert _hidden(out) == []


def test_discarding_a_run_that_staged_nothing_does_nothing(tmp_path):
    out = tmp_path / "marts"
    discard(out, "never")  # not even the mart folder exists
    _write(staging_dir(out, "run1") / "frontiers.parquet", 1)
    publish(out, "run1")
    before = sorted(p.name for p in (out / GENERATIONS).iterdir())
    discard(out, "never")
    assert sorted(p.name for p in (out / GENERATIONS).iterdir()) == before


def test_only_a_cli_generation_whose_process_is_gone_counts_as_dead(live_process):
    dead = _dead_pid()
    assert generations._process_alive(f"cli-{dead}-0a1b2c") is False
    assert generations._process_alive(f"cli-{live_process.pid}-0a1b2c") is True
    with pytest.raises(subprocess.TimeoutExpired):  # asking sent the process no signal that ends it
        live_process.wait(timeout=0.2)
    # not a CLI generation id: judged by the age of its staging folder, never by a process
    for run_id in (f"bench-{dead}-0a1b2c", f"cli-{dead}", f"cli-{dead}-0a1b2c-d", f"cli-x{dead}-0a1b2c",
                   f"{dead}-{dead}-{dead}", "0e7a1b2c-1234-4a5b-8c9d-0123456789ab"):
        assert generations._process_alive(run_id) is True, run_id


def test_a_cli_process_of_another_user_counts_as_alive(monkeypatch):
    def not_allowed(pid, signal):
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "kill", not_allowed)
    assert generations._process_alive("cli-1-0a1b2c") is True


def test_a_cli_generation_id_names_this_process_and_twelve_random_hex_digits(monkeypatch):
    first, second = cli_generation_id(), cli_generation_id()
    assert re.fullmatch(rf"cli-{os.getpid()}-[0-9a-f]{{12}}", first) and first != second
    asked = []
    monkeypatch.setattr(os, "kill", lambda pid, signal: asked.append((pid, signal)))
    assert generations._process_alive(first) is True
    assert asked == [(os.getpid(), 0)]  # this process is asked whether it runs (signal 0: nothing is sent)


def test_top_level_names_follow_the_marts_of_the_current_generation(tmp_path):
    """Every mart of the new generation gets its name at the top (a name pointed elsewhere is pointed back), the
    name of a mart it no longer has goes, and a link that does not point into ``current`` is left alone."""
    out = tmp_path / "marts"
    one = staging_dir(out, "one")
    for name in ("a", "c", "d"):
        _write(one / f"{name}.parquet", 1)
    publish(out, "one")
    two = staging_dir(out, "two")
    (two / "c.parquet").unlink()
    _write(two / "b.parquet", 2)
    (out / "d.parquet").unlink()
    (out / "d.parquet").symlink_to("backup/d.parquet")
    (out / "notes").symlink_to("shared/notes")
    generation = publish(out, "two")
    links = {p.name: os.readlink(p) for p in out.iterdir() if p.is_symlink()}
    assert links == {CURRENT: f"{GENERATIONS}/{generation.name}", "a.parquet": "current/a.parquet",
                     "b.parquet": "current/b.parquet", "d.parquet": "current/d.parquet", "notes": "shared/notes"}


def test_pruning_keeps_the_base_of_a_run_still_staging_and_no_staging_or_hidden_folder_counts(tmp_path):
    """Generations beyond the newest ``KEEP_GENERATIONS`` go, except one a run still staging started from; a
    staging folder and another process's copy in progress (a hidden folder) neither go nor take a place."""
    out = tmp_path / "marts"
    published = []
    _write(staging_dir(out, "run0") / "frontiers.parquet", 0)
    published.append(publish(out, "run0"))
    waiting = staging_dir(out, "zzz")  # sorts after every generation name (UTC times)
    copying = out / GENERATIONS / ".yyy.staging-99999"
    _write(copying / "frontiers.parquet", 0)
    for i in range(1, 5):
        _write(staging_dir(out, f"run{i}") / "frontiers.parquet", i)
        published.append(publish(out, f"run{i}"))
    assert KEEP_GENERATIONS == 3
    assert [g.exists() for g in published] == [True, False, True, True, True]
    assert _value(waiting / "frontiers.parquet") == 0 and _value(copying / "frontiers.parquet") == 0


def test_publish_discards_the_staging_folders_of_dead_cli_runs_and_of_runs_untouched_for_a_day(tmp_path,
                                                                                               live_process):
    out = tmp_path / "marts"
    _write(staging_dir(out, "first") / "frontiers.parquet", 1)
    publish(out, "first")
    dead, alive = f"cli-{_dead_pid()}-0a1b2c", f"cli-{live_process.pid}-0a1b2c"
    for run_id in (dead, alive, "old-run", "new-run"):
        staging_dir(out, run_id)
    day_ago = time.time() - STALE_STAGING_S - 60
    os.utime(staging_path(out, "old-run"), (day_ago, day_ago))
    _write(staging_dir(out, "last") / "frontiers.parquet", 2)
    publish(out, "last")
    root = out / GENERATIONS
    assert sorted(p.name for p in root.glob("*.staging")) == sorted([f"{alive}.staging", "new-run.staging"])
    assert sorted(p.name for p in root.glob("*.base")) == sorted([f"{alive}.base", "new-run.base"])


def test_a_staging_folder_untouched_exactly_a_day_is_kept(tmp_path, monkeypatch):
    out = tmp_path / "marts"
    _write(staging_dir(out, "first") / "frontiers.parquet", 1)
    publish(out, "first")
    now = 2_000_000_000
    for run_id, age in (("day-old", STALE_STAGING_S), ("older", STALE_STAGING_S + 1)):
        os.utime(staging_dir(out, run_id), ns=((now - age) * 10**9,) * 2)
    monkeypatch.setattr(generations, "time", SimpleNamespace(time=lambda: float(now)))
    _write(staging_dir(out, "last") / "frontiers.parquet", 2)
    publish(out, "last")
    assert sorted(p.name for p in (out / GENERATIONS).glob("*.staging")) == ["day-old.staging"]


def test_a_generation_that_cannot_be_deleted_entirely_does_not_fail_the_publish(tmp_path, monkeypatch):
    out = tmp_path / "marts"
    _publish_with_a_stuck_file(out, "run0", 0)
    _make_stuck(monkeypatch)
    for i in range(1, KEEP_GENERATIONS + 1):  # the last one prunes run0's generation
        _write(staging_dir(out, f"run{i}") / "frontiers.parquet", i)
        last = publish(out, f"run{i}")
    assert published_dir(out) == last.resolve() and _value(out / "frontiers.parquet") == KEEP_GENERATIONS


def test_a_rebased_run_adds_new_folders_and_whole_folders_and_removes_what_it_removed(tmp_path):
    out = tmp_path / "marts"
    base = staging_dir(out, "base")
    for date, value in (("2026-01-01", 1), ("2026-01-02", 2)):
        _write(base / "runs" / "m" / date / "part-0.parquet", value)
    _write(base / "quarantine.parquet", 5)
    _write(base / "frontiers.parquet", 0)
    _write(base / "ledger" / "base.parquet", 7)
    (base / "ledger" / WHOLE).touch()
    publish(out, "base")
    a, b = staging_dir(out, "a"), staging_dir(out, "b")
    shutil.rmtree(a / "runs" / "m" / "2026-01-01")
    _write(a / "frontiers.parquet", 30)
    shutil.rmtree(b / "runs" / "m" / "2026-01-01")  # both runs dropped this date
    (b / "quarantine.parquet").unlink()
    _write(b / "ledger" / "base.parquet", 8)  # a whole folder, listed before the runs b added
    _write(b / "newwhole" / "base.parquet", 9)  # a whole folder the published generation does not have
    (b / "newwhole" / WHOLE).touch()
    _write(b / "runs" / "new" / "2026-01-05" / "part-0.parquet", 4)  # a model the published runs do not have
    publish(out, "a")
    publish(out, "b")
    marts = published_dir(out)
    assert {p.relative_to(marts).as_posix(): _value(p) for p in marts.rglob("*.parquet")} == {
        "frontiers.parquet": 30, "ledger/base.parquet": 8, "newwhole/base.parquet": 9,
        "runs/m/2026-01-02/part-0.parquet": 2, "runs/new/2026-01-05/part-0.parquet": 4}
    assert not b.exists() and _hidden(out) == []


def test_a_rebased_run_that_folded_a_whole_folder_and_dropped_dates_removes_all_of_them(tmp_path):
    """Run B folds the recent files of a whole folder (kept in a subfolder) into its base and drops eight dates;
    run A published in between: every file B removed is gone, whichever order the removals are applied in, and the
    whole folder is B's as B left it (its emptied subfolder too)."""
    out = tmp_path / "marts"
    base = staging_dir(out, "base")
    for day in range(1, 10):
        _write(base / "runs" / "m" / f"2026-01-0{day}" / "part-0.parquet", day)
    _write(base / "ledger" / "base.parquet", 0)
    (base / "ledger" / WHOLE).touch()
    for night in range(1, 9):
        _write(base / "ledger" / "recent" / f"night-{night}.parquet", night)
    publish(out, "base")
    a, b = staging_dir(out, "a"), staging_dir(out, "b")
    _write(a / "frontiers.parquet", 1)
    for night in range(1, 9):
        (b / "ledger" / "recent" / f"night-{night}.parquet").unlink()
    _write(b / "ledger" / "base.parquet", 36)
    for day in range(1, 9):
        shutil.rmtree(b / "runs" / "m" / f"2026-01-0{day}")
    publish(out, "a")
    publish(out, "b")
    marts = published_dir(out)
    assert {p.relative_to(marts).as_posix(): _value(p) for p in marts.rglob("*.parquet")} == {
        "frontiers.parquet": 1, "ledger/base.parquet": 36, "runs/m/2026-01-09/part-0.parquet": 9}
    assert sorted(p.name for p in (marts / "ledger").iterdir()) == [WHOLE, "base.parquet", "recent"]
    assert list((marts / "ledger" / "recent").iterdir()) == []


def test_a_rewritten_file_of_the_same_size_and_time_counts_as_changed(tmp_path):
    """``shutil.copy2`` keeps a file's time, and on a file system that keeps times to the second a rewrite in the
    same second keeps it too: a file of the same size and time as the base's is compared by content."""
    out = tmp_path / "marts"
    base = staging_dir(out, "base")
    (base / "report").mkdir()
    (base / "report" / "page.html").write_text("aaaa")
    publish(out, "base")
    a, b = staging_dir(out, "a"), staging_dir(out, "b")
    _write(a / "frontiers.parquet", 1)
    page = b / "report" / "page.html"
    stat = page.stat()
    (b / "report" / ".page.html.tmp").write_text("bbbb")
    os.replace(b / "report" / ".page.html.tmp", page)
    os.utime(page, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    publish(out, "a")
    publish(out, "b")
    assert (out / "report" / "page.html").read_text() == "bbbb" and _value(out / "frontiers.parquet") == 1


def test_a_rebase_replaces_a_leftover_folder_of_its_name(tmp_path):
    staging, base, current = tmp_path / "staging", tmp_path / "base", tmp_path / "current"
    staging.mkdir()
    base.mkdir()
    _write(current / "frontiers.parquet", 1)
    _write(tmp_path / ".gen.tmp" / "junk.parquet", 9)  # an earlier rebase to this name, stopped half-way
    built = generations._rebase(staging, base, current, tmp_path / "gen")
    assert built == tmp_path / ".gen.tmp" and sorted(p.name for p in built.iterdir()) == ["frontiers.parquet"]



def test_the_base_records_are_utf8_whatever_the_locale_of_the_process(tmp_path):
    """A generation tag is any text: the name of a generation published from one with accents is recorded by the
    runs that stage from it and read back at publish in UTF-8, also while the process's locale is plain C (ASCII),
    as after a library's ``setlocale``."""
    out = tmp_path / "marts"
    _write(staging_dir(out, "nuit-\u00e9t\u00e9-1") / "frontiers.parquet", 1)
    first = publish(out, "nuit-\u00e9t\u00e9-1")
    assert first.name.endswith("-nuit-\u00e9t\u00e9")
    saved = locale.setlocale(locale.LC_CTYPE)
    locale.setlocale(locale.LC_CTYPE, "C")
    try:
        staging_dir(out, "waiting")  # a run that stays staging, from the accented generation
        _write(staging_dir(out, "last") / "frontiers.parquet", 2)
        publish(out, "last")
    finally:
        locale.setlocale(locale.LC_CTYPE, saved)
    assert (out / GENERATIONS / "waiting.base").read_bytes() == first.name.encode("utf-8")
    assert _value(out / "frontiers.parquet") == 2
