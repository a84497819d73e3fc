"""Scale-out on Dagster's production setup: the documented profile (deploy/postgres/dagster.yaml, PostgreSQL
storage) with two run-date partitions materialized at the same time by the multiprocess executor, and what its
forkserver preloads for the steps' processes."""

import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import dagster as dg
import duckdb
import pytest
from conftest import REPO, SAMPLE_DIR

PROFILE = REPO / "deploy" / "postgres" / "dagster.yaml"
PARTITIONED_CHAIN = [dg.AssetKey(k) for k in (["ingest", "parsed_runs"], ["validate", "accepted_runs"],
                                              ["metrics", "run_power"], ["metrics", "run_metrics"])]

# A run worker: execute_job with the job reconstructable in each step's process; prints RUN_ID=<id>.
RUN_ONE_PARTITION = """
import sys
import dagster as dg
from pipeline.definitions import refresh_all_job
chain = [dg.AssetKey(k) for k in (["ingest", "parsed_runs"], ["validate", "accepted_runs"],
                                  ["metrics", "run_power"], ["metrics", "run_metrics"])]
with dg.DagsterInstance.get() as instance:
    with dg.execute_job(dg.reconstructable(refresh_all_job), instance=instance, asset_selection=chain,
                        tags={"dagster/partition": sys.argv[1]}) as result:
        assert result.success
        print('RUN_ID=' + result.run_id)
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def postgres_url():
    """A throwaway PostgreSQL cluster from the Debian package's binaries (``initdb`` + ``pg_ctl``, run as user
    ``postgres`` when the tests run as root); ``.ci/run`` installs the package when it is missing."""
    bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not bins:
        pytest.skip("PostgreSQL server binaries not installed (apt-get install postgresql)")
    bin_dir = Path(bins[-1]).parent
    root = Path(tempfile.mkdtemp(prefix="inference-frontier-pg-"))
    data, port = root / "data", _free_port()
    as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    if as_postgres:
        shutil.chown(root, "postgres")
    root.chmod(0o755)
    run = lambda *args: subprocess.run([*as_postgres, *args], check=True, capture_output=True)  # noqa: E731
    run(str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres")
    run(str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(root / "server.log"), "-w", "-o",
        f"-p {port} -k {root} -c listen_addresses=127.0.0.1", "start")
    try:
        # SQLAlchemy 2.1 maps plain postgresql:// to psycopg 3; dagster-postgres ships psycopg2
        yield f"postgresql+psycopg2://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*as_postgres, str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                       capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.long(2)
def test_two_partitions_materialize_in_parallel_on_postgres(postgres_url, tmp_path, monkeypatch):
    from pipeline.definitions import defs
    from pipeline.defs.partitions import register_partitions

    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(PROFILE, home / "dagster.yaml")  # the documented profile, unchanged
    for name, value in {"DAGSTER_HOME": home, "DAGSTER_PG_URL": postgres_url, "PIPELINE_RAW_DIR": SAMPLE_DIR,
                        "PIPELINE_OUT_DIR": tmp_path / "marts", "PIPELINE_DB_PATH": tmp_path / "w.duckdb"}.items():
        monkeypatch.setenv(name, str(value))
    instance = dg.DagsterInstance.get()
    assert type(instance.run_storage).__name__ == "PostgresRunStorage"
    assert type(instance.event_log_storage).__name__ == "PostgresEventLogStorage"
    assert type(instance.schedule_storage).__name__ == "PostgresScheduleStorage"
    keys = ["2026-07-14", "undated"]  # the sample's two run dates
    register_partitions(instance, keys)
    reference = defs().resolve_job_def("refresh_all").execute_in_process(
        instance=instance, asset_selection=[dg.AssetKey(["metrics", "gpu_reference"]),
                                            dg.AssetKey(["metrics", "price_books"])])
    assert reference.success

    # one OS process per run, as the daemon's run launcher starts them; each steps with the multiprocess executor
    workers = {key: subprocess.Popen([sys.executable, "-c", RUN_ONE_PARTITION, key], stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True) for key in keys}
    results = {}
    for key, worker in workers.items():
        output, _ = worker.communicate(timeout=600)
        assert worker.returncode == 0, output[-4000:]
        results[key] = next(line for line in output.splitlines() if line.startswith("RUN_ID="))[7:]

    # both runs are in PostgreSQL, ran with the multiprocess executor, and overlapped in time
    records = {key: instance.get_run_record_by_id(run_id) for key, run_id in results.items()}
    assert all(r.dagster_run.status == dg.DagsterRunStatus.SUCCESS for r in records.values())
    a, b = records.values()
    assert a.start_time < b.end_time and b.start_time < a.end_time, "the two partition runs did not overlap"
    # every step ran in its own process (the multiprocess executor's STEP_WORKER_STARTED), in the warehouse pool
    for record in records.values():
        events = [e.dagster_event for e in instance.all_logs(record.dagster_run.run_id) if e.dagster_event]
        in_subprocess = {e.step_key for e in events if e.event_type_value == "STEP_WORKER_STARTED"}
        assert in_subprocess >= {"ingest__parsed_runs", "validate__accepted_runs", "metrics__run_metrics"}
    for key in keys:
        materialized = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=PARTITIONED_CHAIN[-1], asset_partitions=[key]), limit=1).records
        assert materialized and materialized[0].run_id == results[key]
    with duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True) as conn:
        counts = dict(conn.execute("select run_date_partition, count(*) from run_metrics group by 1").fetchall())
    assert set(counts) == set(keys) and all(n > 0 for n in counts.values())


def test_the_forkserver_preloads_every_module_a_step_process_imports_to_load_the_job():
    """Each step process of a multiprocess run loads ``refresh_all`` again, which imports every module of the defs
    folder: each one is in the forkserver's preload list (``pipeline.defs.jobs.PRELOADED``), so no step imports it
    itself, and every name there is an importable module (multiprocessing skips a preload it cannot import,
    silently)."""
    import importlib.util

    from pipeline.defs.jobs import PRELOADED

    code = ("import sys; from pipeline.definitions import refresh_all_job; refresh_all_job(); "
            "print(' '.join(sorted(m for m, mod in sys.modules.items() if m.startswith('pipeline.defs.') "
            "and not hasattr(mod, '__path__'))))")
    loaded = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                            check=True).stdout.split()
    assert "pipeline.defs.ingest.assets" in loaded and "pipeline.defs.validate.expectations" in loaded
    assert set(loaded) <= set(PRELOADED), sorted(set(loaded) - set(PRELOADED))
    assert all(importlib.util.find_spec(name) is not None for name in PRELOADED)
