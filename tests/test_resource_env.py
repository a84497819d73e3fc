"""The resources read their folders through ``dg.EnvVar`` when the variables are set, and fall back to the
documented defaults of ``pipeline.io.paths`` when they are not (the README's run command sets none)."""

import os
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from pipeline.defs.resources import (
    PipelinePaths,
    SharedWarehouse,
    Warehouse,
    WarehouseOutOfMemoryError,
    paths_resource,
    warehouse_resource,
)
from pipeline.io.paths import PROJECT_ROOT

VARIABLES = ("PIPELINE_RAW_DIR", "PIPELINE_OUT_DIR", "PIPELINE_DB_PATH", "PIPELINE_CACHE_DIR")


def _seen(paths: PipelinePaths, warehouse: Warehouse) -> dict[str, str]:
    """What an asset receives from the two resources, in one materialization."""
    seen: dict[str, str] = {}

    @dg.asset
    def probe(paths: PipelinePaths, warehouse: Warehouse) -> None:
        seen.update(raw=paths.raw_dir, out=paths.out_dir, cache=paths.cache_dir, db=warehouse.database)

    assert dg.materialize([probe], resources={"paths": paths, "warehouse": warehouse}).success
    return seen


def test_unset_variables_give_the_documented_defaults(monkeypatch):
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    seen = _seen(paths_resource(), warehouse_resource())
    assert seen == {"raw": str(PROJECT_ROOT / "data" / "sample"), "out": str(PROJECT_ROOT / "data" / "marts"),
                    "db": str(PROJECT_ROOT / "data" / "warehouse.duckdb"),
                    "cache": str(PROJECT_ROOT / "data" / "warehouse.duckdb") + ".parse_cache"}


def test_set_variables_are_read_when_the_run_starts(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    for name in VARIABLES:
        monkeypatch.setenv(name, f"declared-{name}")
    paths, warehouse = paths_resource(), warehouse_resource()
    # EnvVar defers the read: values changed after the resources were declared are the ones a run sees
    monkeypatch.setenv("PIPELINE_RAW_DIR", "raw")  # relative: taken relative to the current directory
    monkeypatch.setenv("PIPELINE_OUT_DIR", str(tmp_path / "marts"))
    monkeypatch.setenv("PIPELINE_DB_PATH", "~/w.duckdb")
    monkeypatch.setenv("PIPELINE_CACHE_DIR", str(tmp_path / "cache"))
    seen = _seen(paths, warehouse)
    assert seen == {"raw": str(tmp_path.resolve() / "raw"), "out": str(tmp_path / "marts"),
                    "db": str(Path("~/w.duckdb").expanduser()), "cache": str(tmp_path / "cache")}


def test_only_the_database_set_puts_the_cache_beside_it(monkeypatch, tmp_path):
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PIPELINE_DB_PATH", str(tmp_path / "w.duckdb"))
    seen = _seen(paths_resource(), warehouse_resource())
    assert seen["db"] == str(tmp_path / "w.duckdb")
    assert seen["cache"] == str(tmp_path / "w.duckdb") + ".parse_cache"


def test_plain_values_are_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    paths = PipelinePaths(raw_dir="raw", out_dir="out", cache_dir="~/c")
    assert (paths.raw_dir, paths.out_dir, paths.cache_dir) == (
        str(tmp_path.resolve() / "raw"), str(tmp_path.resolve() / "out"), str(Path("~/c").expanduser()))


def _memory_limit_seen(warehouse: Warehouse) -> str:
    """DuckDB's ``memory_limit`` on a connection the warehouse gives an asset."""
    seen: list[str] = []

    @dg.asset
    def probe(warehouse: Warehouse) -> None:
        with warehouse.get_connection() as conn:
            seen.append(conn.execute("select current_setting('memory_limit')").fetchone()[0])

    assert dg.materialize([probe], resources={"warehouse": warehouse}).success
    return seen[0]


def test_duckdb_memory_limit_defaults_to_1gb_and_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("PIPELINE_DB_PATH", str(tmp_path / "w.duckdb"))
    monkeypatch.delenv("PIPELINE_DUCKDB_MEMORY_LIMIT", raising=False)
    assert _memory_limit_seen(warehouse_resource()) == "953.6 MiB"  # 1GB: DuckDB shows 10^9 bytes in MiB
    monkeypatch.setenv("PIPELINE_DUCKDB_MEMORY_LIMIT", "declared")
    capped = warehouse_resource()
    monkeypatch.setenv("PIPELINE_DUCKDB_MEMORY_LIMIT", "2GB")  # read when the run starts, as the folders are
    assert _memory_limit_seen(capped) == "1.8 GiB"
    monkeypatch.setenv("PIPELINE_DUCKDB_MEMORY_LIMIT", "80%")  # DuckDB's own default, a share of the machine
    machine = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    shown = _memory_limit_seen(warehouse_resource())
    number, unit = shown.split()
    assert abs(float(number) * {"MiB": 2**20, "GiB": 2**30}[unit] - 0.8 * machine) < 0.02 * machine, shown


def test_running_out_of_duckdb_memory_names_the_setting_to_raise(tmp_path):
    warehouse = Warehouse(database=str(tmp_path / "w.duckdb"), memory_limit="20MB")
    with pytest.raises(WarehouseOutOfMemoryError) as raised:
        with warehouse.get_connection() as conn:
            conn.execute("select list(i) from range(20000000) t(i)").fetchall()  # a list aggregate cannot spill
    message = str(raised.value)
    assert "PIPELINE_DUCKDB_MEMORY_LIMIT" in message and "20MB" in message and str(tmp_path / "w.duckdb") in message
    assert isinstance(raised.value.__cause__, duckdb.OutOfMemoryException)


def test_an_in_process_run_opens_the_warehouse_once(run_pipeline, tmp_path, monkeypatch):
    """``python -m pipeline run`` (``materialize_all``) hands every step one open warehouse: the file is opened
    once for the whole run (before SharedWarehouse: once or more per step, 26 times on the sample)."""
    from conftest import SAMPLE_DIR

    opened: list[str] = []
    connect = duckdb.connect

    def counting(database=":memory:", *args, **kwargs):
        if str(database) == str(tmp_path / "warehouse.duckdb"):
            opened.append(str(database))
        return connect(database, *args, **kwargs)

    monkeypatch.setattr(duckdb, "connect", counting)
    run = run_pipeline(SAMPLE_DIR)
    assert run.result.success
    assert len(opened) == 1
    # closed when the run ended: the file opens read-only, which DuckDB refuses in a process holding it writable
    with connect(str(run.db_path), read_only=True) as conn:
        assert conn.execute("select count(distinct run_id) from run_metrics").fetchall()[0][0] == 84


def test_a_shared_warehouse_gives_each_use_a_fresh_cursor_of_one_database(tmp_path):
    warehouse = SharedWarehouse(database=str(tmp_path / "w.duckdb"), memory_limit="64MB")
    with warehouse.get_connection() as conn:
        conn.execute("create table t as select range as i from range(1000)")
        conn.register("leftover", conn.sql("select 1 as x").to_arrow_table())  # a step's registered view
        conn.execute("begin")
        conn.execute("insert into t values (-1)")  # a transaction a failing step left open ends with its use
    with warehouse.get_connection() as conn:
        assert conn.execute("select count(*), min(i) from t").fetchall() == [(1000, 0)]
        assert conn.execute("select count(*) from duckdb_views() where view_name = 'leftover'").fetchall() == [(0,)]
        assert conn.execute("select current_setting('memory_limit')").fetchall() == [("61.0 MiB",)]  # restored
    with pytest.raises(WarehouseOutOfMemoryError):
        with warehouse.get_connection() as conn:
            conn.execute("select list(i) from range(20000000) t(i)").fetchall()
    with pytest.raises(duckdb.ConnectionException):  # the database is still open here: a second opening refused
        duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True)
    warehouse.close()
    with duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True) as conn:
        assert conn.execute("select count(*) from t").fetchall() == [(1000,)]


def test_a_shared_warehouse_evicts_after_a_use_that_leaves_much_in_memory_and_not_after_a_small_one(tmp_path):
    """A small use leaves its writes in the WAL (no checkpoint: the file's own blocks unchanged); a use that
    leaves ``EVICT_ABOVE_BYTES`` or more in DuckDB's memory is checkpointed (the WAL emptied into the file) and
    evicted below that size, with ``memory_limit`` restored."""
    from pipeline.defs.resources import EVICT_ABOVE_BYTES

    def held(conn) -> int:
        return conn.execute("select coalesce(sum(memory_usage_bytes), 0) from duckdb_memory()").fetchone()[0]

    database = tmp_path / "w.duckdb"
    wal = tmp_path / "w.duckdb.wal"
    warehouse = SharedWarehouse(database=str(database), memory_limit="1GB")
    with warehouse.get_connection() as conn:
        conn.execute("create table small as select range as i from range(1000)")
    assert wal.stat().st_size > 0  # not checkpointed
    # 30M random doubles, ~230 MiB uncompressed: well over the threshold while in memory
    with warehouse.get_connection() as conn:
        conn.execute("create table big as select random() as x from range(30000000)")
        assert held(conn) >= EVICT_ABOVE_BYTES  # what the use leaves before the eviction
    assert not wal.exists() or wal.stat().st_size == 0  # checkpointed
    with warehouse.get_connection() as conn:
        assert conn.execute("select count(*) from small").fetchone()[0] == 1000
        assert conn.execute("select current_setting('memory_limit')").fetchone()[0] == "953.6 MiB"
    warehouse.close()


def test_a_shared_warehouse_returns_the_memory_a_use_left_behind_without_a_checkpoint(tmp_path, monkeypatch):
    """A use whose work DuckDB's allocator kept (freed, yet resident, and not counted by ``duckdb_memory()``)
    leaves the process no larger: the ``memory_limit`` dip after every use returns it, also after a use too small
    to checkpoint (the threshold is out of reach here)."""
    import pipeline.defs.resources as resources

    def resident_mib() -> float:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

    database = tmp_path / "w.duckdb"
    with duckdb.connect(str(database)) as conn:
        conn.execute("create table big as select range as i, random() as x, 'file/' || range || '.json' as f "
                     "from range(5000000)")
    monkeypatch.setattr(resources, "EVICT_ABOVE_BYTES", 2**62)
    warehouse = SharedWarehouse(database=str(database), memory_limit="1GB")
    with warehouse.get_connection() as conn:
        conn.execute("select count(*) from big").fetchall()
    before = resident_mib()
    with warehouse.get_connection() as conn:
        # a sort of 1.7M rows: some 200 MiB of DuckDB's working memory, freed when the result is read
        assert conn.sql("select f, x from big where i % 3 = 0 order by x").to_arrow_table().num_rows == 1666667
    grown = resident_mib() - before
    warehouse.close()
    assert grown < 100, f"{grown:.0f} MiB still resident after the use"

def test_a_run_that_evicts_after_every_use_succeeds(run_pipeline, monkeypatch):
    """With the threshold at 0 every use of the run's one warehouse is checkpointed and evicted, as a large run's
    are (on the sample no use reaches ``EVICT_ABOVE_BYTES``, so the eviction would otherwise never run in a
    whole-pipeline test): the run succeeds."""
    from conftest import SAMPLE_DIR

    import pipeline.defs.resources as resources

    monkeypatch.setattr(resources, "EVICT_ABOVE_BYTES", 0)
    run = run_pipeline(SAMPLE_DIR)
    assert run.result.success, [e.event_specific_data.error.message for e in run.result.all_events
                                if e.is_step_failure]


def test_pointed_at_sets_the_three_paths_for_the_block_and_restores_them(monkeypatch, tmp_path):
    """``pipeline.io.paths.pointed_at``: inside, the three variables name the given folders and the caller's
    ``PIPELINE_CACHE_DIR`` is unset (the cache goes beside the given warehouse); after (also after an error), a
    variable that was set has its value again and one that was unset is unset again."""
    import os

    from pipeline.io.paths import pointed_at

    monkeypatch.setenv("PIPELINE_RAW_DIR", "/before/raw")
    monkeypatch.delenv("PIPELINE_OUT_DIR", raising=False)
    monkeypatch.setenv("PIPELINE_DB_PATH", "/before/w.duckdb")
    monkeypatch.setenv("PIPELINE_CACHE_DIR", "/before/cache")
    with pytest.raises(RuntimeError), pointed_at(tmp_path / "raw", tmp_path / "out", tmp_path / "w.duckdb"):
        assert [os.environ[n] for n in ("PIPELINE_RAW_DIR", "PIPELINE_OUT_DIR", "PIPELINE_DB_PATH")] == [
            str(tmp_path / "raw"), str(tmp_path / "out"), str(tmp_path / "w.duckdb")]
        assert "PIPELINE_CACHE_DIR" not in os.environ
        raise RuntimeError("the block failed")
    assert os.environ["PIPELINE_RAW_DIR"] == "/before/raw" and "PIPELINE_OUT_DIR" not in os.environ
    assert os.environ["PIPELINE_DB_PATH"] == "/before/w.duckdb" and os.environ["PIPELINE_CACHE_DIR"] == "/before/cache"
