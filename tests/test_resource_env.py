"""The resources read their folders through ``dg.EnvVar`` when the variables are set, and fall back to the
documented defaults of ``pipeline.io.paths`` when they are not (the README's run command sets none)."""

import os
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from pipeline.defs.resources import (
    PipelinePaths,
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
