"""The GX suite over validated runs, taken a slice at a time: the same verdicts and statistics as over the whole
table, and defects planted by hand are found with the counts worked out here."""

import shutil

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from dagster_duckdb import DuckDBResource

from pipeline.defs.validate import expectations as check_module
from pipeline.validate import expectations
from pipeline.validate.expectations import duplicates_by_run_id, run_suite
from pipeline.validate.suite_process import InProcessSuite


def _validated(run) -> tuple[pa.Table, list[str]]:
    with duckdb.connect(str(run.db_path), read_only=True) as conn:
        runs = conn.sql("select * from validated_runs").to_arrow_table()
        known_hw = [row[0] for row in conn.execute("select hw from gpu_reference").fetchall()]
    return runs, known_hw


def _set(table: pa.Table, row: int, column: str, value) -> pa.Table:
    values = table[column].to_pylist()
    values[row] = value
    return table.set_column(table.schema.get_field_index(column), column,
                            pa.array(values, table.schema.field(column).type))


def _with_defects(runs: pa.Table) -> pa.Table:
    """Row 0 copied whole at the end (one run_id twice, one duplicate run), row 1 without a model, row 2 with a
    median TPOT of 9 s (outside 0.5 ms-5 s), row 3 with OSL unknown (its OSL ratio is then missing), the first
    later row with token counts given three times its output tokens (its OSL ratio far off nominal: a warning)."""
    runs = pa.concat_tables([runs, runs.slice(0, 1)])
    runs = _set(runs, 1, "model", None)
    runs = _set(runs, 2, "median_tpot_s", 9.0)
    runs = _set(runs, 3, "osl", None)
    counted = next(at for at in range(4, runs.num_rows) if None not in (
        runs["total_output_tokens"][at].as_py(), runs["completed"][at].as_py(), runs["osl"][at].as_py()))
    return _set(runs, counted, "total_output_tokens", 3 * runs["total_output_tokens"][counted].as_py())


def _split(runs: pa.Table, parts: int) -> list[pa.Table]:
    """``runs`` in ``parts`` slices by run_id (every copy of one run_id in one slice), as the check splits them."""
    slot = pa.array([sum(run_id.encode()) % parts for run_id in runs["run_id"].to_pylist()])
    return [runs.filter(pc.equal(slot, part)) for part in range(parts)]


def test_planted_defects_are_found_with_their_counts(sample_run):
    runs, known_hw = _validated(sample_run)
    assert runs.num_rows > 20
    bad = _with_defects(runs)
    outcomes = {o.name: o for o in run_suite([bad], known_hw, duplicates_by_run_id(bad))}
    assert not outcomes["run_id_unique"].success and outcomes["run_id_unique"].unexpected_count == 2
    # the copy at the end is the duplicate; the original (first by file and row) is kept
    assert not outcomes["no_duplicate_runs"].success and outcomes["no_duplicate_runs"].unexpected_count == 1
    assert not outcomes["model_present"].success and outcomes["model_present"].unexpected_count == 1
    assert not outcomes["tpot_in_plausible_range"].success
    assert outcomes["tpot_in_plausible_range"].unexpected_count == 1
    assert outcomes["tpot_in_plausible_range"].examples == ["9.0"]  # the planted value, as GX lists it
    assert outcomes["run_id_unique"].examples == [bad["run_id"][0].as_py()] * 2
    assert all(o.element_count == bad.num_rows for o in outcomes.values() if o.name != "agentic_x_present"
               and not o.name.startswith(("isl_", "osl_")))
    clean = {o.name: o for o in run_suite([runs], known_hw, duplicates_by_run_id(runs))}
    assert all(o.success for o in clean.values()), [o.name for o in clean.values() if not o.success]


def test_a_suite_in_slices_agrees_with_one_over_the_whole_table(sample_run):
    runs, known_hw = _validated(sample_run)
    bad = _with_defects(runs)
    duplicates = duplicates_by_run_id(bad)
    whole = run_suite([bad], known_hw, duplicates)
    sliced = run_suite(_split(bad, 4), known_hw, duplicates)
    assert [(o.name, o.success, o.element_count, o.unexpected_count) for o in sliced] == \
        [(o.name, o.success, o.element_count, o.unexpected_count) for o in whole]
    for a, b in zip(sliced, whole):
        assert a.unexpected_percent == pytest.approx(b.unexpected_percent), a.name
        assert bool(a.examples) == bool(b.examples), a.name  # examples exactly where rows were unexpected
    # the percentage is of the values present: OSL ratio has one missing value (row 3's OSL) and the test works
    # the count out from the table itself
    osl = {o.name: o for o in whole}["measured_osl_near_nominal"]
    per_request = pc.divide(pc.cast(bad["total_output_tokens"], pa.float64()), pc.cast(bad["completed"], pa.float64()))
    ratio = pc.divide(per_request, pc.cast(bad["osl"], pa.float64()))
    present = len(ratio) - ratio.null_count
    outside = pc.sum(pc.or_(pc.less(ratio, 0.5), pc.greater(ratio, 1.5))).as_py() or 0
    assert outside >= 1 and osl.unexpected_count == outside
    assert osl.unexpected_percent == pytest.approx(100.0 * outside / present)


def test_the_check_splits_by_run_id_so_a_repeated_run_id_is_still_caught(sample_run, tmp_path, monkeypatch):
    """Slices of a few rows: the copy of row 0 lands in its original's slice (hash of run_id), so run_id_unique
    and no_duplicate_runs fail as over the whole table, and every row is validated once."""
    db = tmp_path / "warehouse.duckdb"
    shutil.copy2(sample_run.db_path, db)
    with duckdb.connect(str(db)) as conn:
        conn.execute("insert into validated_runs select * from validated_runs limit 1")
        total = conn.execute("select count(*) from validated_runs").fetchall()[0][0]

    def checks() -> dict[str, tuple]:
        return {r.check_name: (r.passed, r.metadata["element_count"].value, r.metadata["unexpected_count"].value)
                for r in check_module.validated_runs_expectations(warehouse=DuckDBResource(database=str(db)),
                                                                   expectation_suite=InProcessSuite())}

    whole = checks()
    monkeypatch.setattr(expectations, "SUITE_CHUNK_ROWS", 5)
    assert expectations.suite_chunks(total) > 4
    sliced = checks()
    assert sliced == whole
    assert whole["run_id_unique"] == (False, total, 2)
    assert whole["no_duplicate_runs"] == (False, total, 1)
    assert whole["columns_match_schema"][0] and whole["hw_in_gpu_reference"] == (True, total, 0)


def _tracked_frames(monkeypatch) -> list:
    """A weak reference to every frame ``with_derived_columns`` makes from now on, in order."""
    import weakref

    frames: list[weakref.ref] = []
    derive = expectations.with_derived_columns

    def tracked(chunk, duplicate_of):
        frame = derive(chunk, duplicate_of)
        frames.append(weakref.ref(frame))
        return frame

    monkeypatch.setattr(expectations, "with_derived_columns", tracked)
    return frames


def test_the_suite_keeps_no_dataframe_alive_after_it_returns(sample_run, monkeypatch):
    """GX makes its context the process-wide project, which held the last chunk's DataFrame after the checks
    (onto 1M runs ~0.3 GiB in the process that ran them): once ``run_suite`` returns, no chunk's frame lives."""
    import gc

    runs, known_hw = _validated(sample_run)
    frames = _tracked_frames(monkeypatch)
    outcomes = run_suite(_split(runs, 2), known_hw, duplicates_by_run_id(runs))
    assert all(o.success for o in outcomes)
    gc.collect()  # not needed by the code under test (it collects itself); rules out cycles pytest holds
    assert len(frames) == 2 and all(ref() is None for ref in frames)


def test_the_suite_frees_gx_metric_caches_itself_before_it_returns(sample_run, monkeypatch):
    """No collection but ``run_suite``'s own (the interpreter's automatic one off): once it returns, no GX
    execution engine (whose metric cache holds Series of the last chunk, ~0.2 GiB onto 100k runs) nor any chunk's
    frame lives. Its collection must come after the GX objects' last reference in its frames is gone."""
    import gc

    runs, known_hw = _validated(sample_run)
    frames = _tracked_frames(monkeypatch)

    def engines() -> int:
        return sum(type(o).__name__ == "PandasExecutionEngine" for o in gc.get_objects())

    monkeypatch.setattr(expectations, "COLLECT_MIN_ROWS", 1)  # the sample is below the real threshold
    duplicates = duplicates_by_run_id(runs)
    gc.collect()
    gc.disable()
    try:
        assert engines() == 0
        outcomes = run_suite(_split(runs, 2), known_hw, duplicates)
        alive = engines(), [ref() is not None for ref in frames]
    finally:
        gc.enable()
    assert all(o.success for o in outcomes)
    assert alive == (0, [False, False])


def test_the_stored_duplicate_search_equals_the_one_over_the_whole_table(sample_run, tmp_path):
    """``stored_duplicates_by_run_id`` reads the search columns of the rows that could pair only; on a table
    holding a byte copy under the same run_id, another under a new run_id and file name, and
    rowids with a gap (a deleted row), it gives ``duplicates_by_run_id`` of the whole table, which finds both
    (the keep order decides which copy of the second pair is kept)."""
    import duckdb

    from pipeline.validate.expectations import stored_duplicates_by_run_id

    runs, _ = _validated(sample_run)
    renamed = runs.slice(2, 1)
    for name, value in (("run_id", "renamed-copy"), ("source_file", "copy.json")):
        renamed = renamed.set_column(renamed.schema.get_field_index(name), name, pa.array([value], pa.string()))
    table = pa.concat_tables([_with_defects(runs), renamed])
    with duckdb.connect(str(tmp_path / "w.duckdb")) as conn:
        conn.register("rows", pa.concat_tables([runs.slice(5, 1), table]))
        conn.execute("create table validated_runs as select * from rows")
        conn.execute("delete from validated_runs where rowid = 0")  # the extra first row: rowids start at 1
        stored = stored_duplicates_by_run_id(conn)
    whole = duplicates_by_run_id(table)
    assert stored == whole
    assert len(whole) == 2 and (runs["run_id"][0].as_py(), 1) in whole


def test_a_model_without_a_size_fails_the_blocking_model_set_check():
    """``model_size_known`` holds the accepted table to the keys of data/reference/model_active_params.csv, as the
    row rule ``unknown_model_size`` holds each run (a model key absent there is quarantined first)."""
    from pipeline.ingest.schema import RUN_SCHEMA
    from pipeline.metrics.reference import load_gpu_reference

    base = {name: None for name in RUN_SCHEMA.names}
    rows = [{**base, "run_id": f"r{i}", "source_file": f"f{i}.json", "source_row": 0, "model": model, "hw": "h200",
             "benchmark_type": "fixed_seq"} for i, model in enumerate(("dsr1", "glm-6", "glm-5"))]
    runs = pa.Table.from_pylist(rows, schema=RUN_SCHEMA)
    known_hw = load_gpu_reference().column("hw").to_pylist()
    outcome = {o.name: o for o in run_suite([runs], known_hw, duplicates_by_run_id(runs))}["model_size_known"]
    assert outcome.blocking and not outcome.success
    assert (outcome.element_count, outcome.unexpected_count, outcome.examples) == (3, 1, ["glm-6"])


def test_loading_the_code_location_does_not_import_great_expectations():
    """GX is imported where the suite runs, not by the definitions (``dagster dev``'s load, ``python -m pipeline
    report``); the multiprocess executor's forkserver preloads it for the steps (``pipeline.defs.jobs``)."""
    import subprocess
    import sys

    code = ("import sys; from pipeline.definitions import defs; d = defs(); "
            "d.resolve_job_def('refresh_all'); print('great_expectations' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "False"
