"""Publishing as one generation: a run's marts become visible together or not at all; a kill after any step
leaves the previous generation whole and consistent; two runs at once lose nothing; the layout before generations
is carried over."""

import os
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import SAMPLE_DIR

from pipeline.io.generations import (
    CURRENT,
    GENERATIONS,
    KEEP_GENERATIONS,
    WHOLE,
    discard,
    publish,
    published_dir,
    staging_dir,
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
    assert materialize_all(dg.DagsterInstance.ephemeral(), config).success
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
