"""The sensor's quick scan: only folders whose mtime moved are listed again, and what it lists is what a full
scan lists, for files that arrive, leave or are renamed; a rewrite in place waits for the next full scan."""

import os
import shutil
import time

import pyarrow as pa
import pytest
from conftest import SAMPLE_DIR

import pipeline.defs.automation as automation
import pipeline.ingest.folder as folder
import pipeline.ingest.parse_cache as parse_cache
import pipeline.ingest.scan as scan
from pipeline.defs.automation import SNAPSHOT_KEY, raw_dir_state
from pipeline.ingest.folder import ingest_folder_cached
from pipeline.ingest.scan import scan_folder, scan_tree

TRUSTED = 2_000_000_000  # the racy window: mtimes this close to a scan are not trusted by the next one


def _now_minus_window() -> int:
    return time.time_ns() - TRUSTED


def _aged_copy(tmp_path):
    """The sample folder with every file and folder dated an hour back, as a fleet's older nights are."""
    raw = tmp_path / "raw"
    shutil.copytree(SAMPLE_DIR, raw)
    return _age(raw)


def _age(raw):
    """Date every file and folder under ``raw`` an hour back (out of the racy window: trusted by a quick scan)."""
    past = time.time_ns() - 3600 * 1_000_000_000
    for path in sorted(raw.rglob("*"), key=lambda p: -len(p.parts)):  # files first, then their folders
        os.utime(path, ns=(past, past))
    os.utime(raw, ns=(past, past))
    return raw


def _listed_folders(monkeypatch) -> list[str]:
    listed: list[str] = []
    real = scan._sorted_entries
    monkeypatch.setattr(scan, "_sorted_entries", lambda folder: listed.append(folder) or real(folder))
    return listed


def test_an_old_folder_is_trusted_and_a_recent_one_is_not(tmp_path):
    raw = _aged_copy(tmp_path)
    _, folders = scan_tree(raw, None, _now_minus_window())
    assert folders.rel[0] == "" and all(m is not None for m in folders.mtime_ns)
    (raw / "vllm" / "late.json").write_text("{}")  # written just now: the folder and the file are racy
    _, folders = scan_tree(raw, None, _now_minus_window())
    untrusted = {rel for rel, m in zip(folders.rel, folders.mtime_ns) if m is None}
    assert untrusted == {"vllm"}


@pytest.mark.parametrize("cuts", ["slices", "one-take"])
@pytest.mark.parametrize("saved", ["lists", "arrow"])
def test_quick_scan_lists_what_a_full_scan_lists_after_files_arrive_leave_and_move(tmp_path, monkeypatch, saved,
                                                                                   cuts):
    """Whether the previous scan is held as lists (this process's) or as Arrow (the saved one), and whether the
    folders taken from it are cut out as slices or in one take."""
    raw = _aged_copy(tmp_path)
    before = scan_tree(raw, None, _now_minus_window())
    if saved == "arrow":
        before = (scan.Listing(table=before[0].table), before[1])
    if cuts == "one-take":
        monkeypatch.setattr(scan, "MAX_SLICES", 0)
    (raw / "vllm" / "mi355x" / "new_conc4.json").write_text("{}")  # arrives in an existing folder
    (raw / "sglang" / "2026-09-01").mkdir()  # a new night's folder
    (raw / "sglang" / "2026-09-01" / "run.json").write_text("{}")
    gone = next((raw / "trtllm").glob("*.json"))
    gone.unlink()  # leaves
    moved = next((raw / "inferencex").glob("agg_*.json"))
    moved.rename(moved.with_name("renamed_" + moved.name))  # renamed
    listed = _listed_folders(monkeypatch)
    quick, _ = scan_tree(raw, before, _now_minus_window())
    # only the folders whose entries changed were listed again (the new one is new)
    assert {os.path.relpath(f, raw) for f in listed} == {"vllm/mi355x", "sglang", "sglang/2026-09-01", "trtllm",
                                                         "inferencex"}
    assert quick == scan_folder(raw)
    assert quick.table.equals(scan_folder(raw).table)


def test_nothing_moved_lists_no_folder(tmp_path, monkeypatch):
    raw = _aged_copy(tmp_path)
    before = scan_tree(raw, None, _now_minus_window())
    listed = _listed_folders(monkeypatch)
    again = scan_tree(raw, before, _now_minus_window())
    assert again == before and listed == []


def test_a_rewrite_in_place_waits_for_the_next_full_scan(tmp_path):
    raw = _aged_copy(tmp_path)
    before = scan_tree(raw, None, _now_minus_window())
    target = next((raw / "trtllm").glob("*.json"))
    target.write_text(target.read_text() + " ")  # same name, new bytes: the folder's mtime does not move
    quick, _ = scan_tree(raw, before, _now_minus_window())
    full = scan_folder(raw)
    assert quick == before[0]  # the documented blind spot of the quick scan
    assert full != before[0] and full.rel == before[0].rel  # a full scan sees the new size and mtime


def test_a_quiet_tick_reuses_the_last_state_and_a_busy_one_equals_a_full_one(tmp_path, monkeypatch):
    raw = _aged_copy(tmp_path)
    first = raw_dir_state(raw, tmp_path / "cache")
    assert first[SNAPSHOT_KEY]
    monkeypatch.setattr(automation, "sql_text", lambda name: pytest.fail(f"read the runs again ({name})"))
    # nor are the cache's rows loaded (a million runs' cache is ~1.4 GB): its stamps and saved scan suffice
    monkeypatch.setattr(folder, "load_cache", lambda *args: pytest.fail("loaded the cache's rows"))
    assert raw_dir_state(raw, tmp_path / "cache", first) == first
    monkeypatch.undo()

    shutil.copy(raw / "vllm" / "mi355x" / "qwen3.5-397b-a17b_8k1k_mi355x_fp8_vllm_none_conc8.json",
                raw / "vllm" / "copy_conc8.json")
    quick = raw_dir_state(raw, tmp_path / "cache", first)
    full = raw_dir_state(raw, tmp_path / "fresh_cache")
    assert {k: v for k, v in quick.items() if k != SNAPSHOT_KEY} == {k: v for k, v in full.items()
                                                                    if k != SNAPSHOT_KEY}
    assert quick != first


def test_a_quiet_tick_after_a_parser_upgrade_parses_again(tmp_path, monkeypatch):
    """The quiet tick skips the cache's rows only for a cache this code would use: after an upgrade of the
    parsers (another ``parser_version``) nothing moved in the folder, yet every file is parsed again."""
    raw = _aged_copy(tmp_path)
    cache = tmp_path / "cache"
    first = raw_dir_state(raw, cache)
    for module in (parse_cache.store, parse_cache.save):  # the version checked on load and stamped on save
        monkeypatch.setattr(module, "parser_version", lambda: "an upgraded parser")
    _, stats = ingest_folder_cached(raw, cache, quick_scan=True, rows=False)
    assert stats.parsed == stats.files > 0 and stats.generation != first[SNAPSHOT_KEY]


def test_a_cache_saved_between_its_stamp_and_its_rows_is_read_as_it_is_now(tmp_path, monkeypatch):
    """The tick reads the cache's stamps, then its rows only when a folder moved; another writer saving in
    between (a run's ingest) must not make the tick look the folder up against a scan of the older
    generation: it starts over, and its state is the full one."""
    raw = _aged_copy(tmp_path)
    cache = tmp_path / "cache"
    first = raw_dir_state(raw, cache)
    shutil.copy(next((raw / "vllm" / "h200").glob("*_conc16.json")), raw / "vllm" / "h200" / "copy_conc16.json")
    ingest_folder_cached(raw, cache)  # the other writer: a new generation
    assert folder.cache_generation(cache, raw) != first[SNAPSHOT_KEY]
    real = folder.cache_generation
    stamps = iter([first[SNAPSHOT_KEY]])  # the stamp as read just before that save
    monkeypatch.setattr(folder, "cache_generation", lambda *args: next(stamps, None) or real(*args))
    after = raw_dir_state(raw, cache, first)
    full = raw_dir_state(raw, tmp_path / "fresh_cache")
    assert {k: v for k, v in after.items() if k != SNAPSHOT_KEY} == {k: v for k, v in full.items()
                                                                    if k != SNAPSHOT_KEY}
    assert after != first


def test_a_run_ingest_after_a_quick_tick_scans_in_full(tmp_path):
    """A rewrite in place that the tick did not see is seen by the run's own ingest (no snapshot given)."""
    raw = _aged_copy(tmp_path)
    cache = tmp_path / "cache"
    ingest_folder_cached(raw, cache)
    target = next((raw / "trtllm").glob("*.json"))
    target.write_text(target.read_text().replace("{", "{ ", 1))
    _, tick = ingest_folder_cached(raw, cache, quick_scan=True)
    assert tick.parsed == 0
    _, run = ingest_folder_cached(raw, cache)
    assert run.parsed == 1


def _replace(path, text: str) -> None:
    """Rewrite ``path`` as writers that publish atomically do (new file, rename over): its folder's mtime moves."""
    staged = path.with_name(path.name + ".tmp")
    staged.write_text(text)
    os.replace(staged, path)


def test_a_busy_tick_digests_only_the_touched_dates_and_equals_a_full_state(tmp_path, monkeypatch):
    """Night after night (a new run, a run rewritten, a run removed, a sidecar, a runs.csv and a power log
    changed, a non-run file added), the tick that updates the last state gives exactly the state a tick
    without a last state computes from every run, and digests only the dates the change touched."""
    raw = _aged_copy(tmp_path)
    cache = tmp_path / "cache"
    state = raw_dir_state(raw, cache)
    assert state[automation.FILES_KEY].startswith(automation.FILES_DIGEST)
    digested: list[list[str]] = []
    real_sql = automation.sql_text
    monkeypatch.setattr(automation, "sql_text", lambda name: digested.append(name) or real_sql(name))
    h200 = raw / "vllm" / "h200"
    vllm_run = next(h200.glob("*_conc16.json"))
    sidecar = next((raw / "trtllm").glob("*.meta.json"))
    nights = [
        lambda: shutil.copy(vllm_run, h200 / "copy_conc16.json"),
        lambda: _replace(vllm_run, vllm_run.read_text().replace("{", "{ ", 1)),
        lambda: (h200 / "copy_conc16.json").unlink(),
        lambda: _replace(sidecar, sidecar.read_text().replace('"conc": ', '"conc":  ')),
        lambda: _replace(h200 / "runs.csv", (h200 / "runs.csv").read_text() + "\n"),
        lambda: _replace(next((h200 / "power").glob("*_conc16.nvidia-smi.csv")),
                         next((h200 / "power").glob("*_conc16.nvidia-smi.csv")).read_text() + "\n"),
        lambda: (raw / "NOTES.txt").write_text("a note, not a run"),
    ]
    for night, change in enumerate(nights):
        change()
        digested.clear()
        updated = raw_dir_state(raw, cache, state)
        assert "raw_partitions_touched" in digested, night  # the update, not a full digest
        full = raw_dir_state(raw, tmp_path / f"full_{night}")
        assert {k: v for k, v in updated.items() if k != SNAPSHOT_KEY} == \
               {k: v for k, v in full.items() if k != SNAPSHOT_KEY}, night
        assert updated != state, night
        state = updated


def test_a_tick_after_another_writer_saved_the_cache_digests_everything(tmp_path, monkeypatch):
    """A run's own ingest saved the cache between two ticks: the changes since the last state are not the
    changes since the cache's state, so the tick computes the state in full (and sees the run's change)."""
    raw = _aged_copy(tmp_path)
    cache = tmp_path / "cache"
    state = raw_dir_state(raw, cache)
    shutil.copy(next((raw / "vllm" / "h200").glob("*_conc16.json")), raw / "vllm" / "h200" / "copy_conc16.json")
    ingest_folder_cached(raw, cache)  # the other writer
    digested: list[str] = []
    real_sql = automation.sql_text
    monkeypatch.setattr(automation, "sql_text", lambda name: digested.append(name) or real_sql(name))
    after = raw_dir_state(raw, cache, state)
    assert digested == ["raw_partition_digests"]
    assert after != state


def test_a_quick_look_up_reads_only_moved_folders_and_answers_as_a_full_one(tmp_path, monkeypatch):
    """Night after night, the quick scan's look-up sends only the files of folders listed again to the cache's
    SQL, and the rows it gives (runs, rejects, files, in scan order) are those of parsing every file."""
    import pipeline.ingest.parse_cache as parse_cache
    from pipeline.ingest.folder import ingest_folder
    from pipeline.io.storage import content_hash

    raw = _aged_copy(tmp_path)
    cache = tmp_path / "cache"
    ingest_folder_cached(raw, cache, quick_scan=True)
    looked_up: list[list[str]] = []
    real = parse_cache.moved_entries

    def spy(listing, *rest):
        positions, before = real(listing, *rest)
        looked_up.append(sorted({listing.rel[p].rpartition("/")[0] for p in positions}))
        return positions, before

    monkeypatch.setattr(parse_cache.lookup, "moved_entries", spy)
    h200, trtllm = raw / "vllm" / "h200", raw / "trtllm"
    vllm_run = next(h200.glob("*_conc16.json"))
    nights = [
        (lambda: shutil.copy(vllm_run, h200 / "copy_conc16.json"), ["vllm/h200"]),
        (lambda: _replace(vllm_run, vllm_run.read_text()), ["vllm/h200"]),  # touched, same bytes: hashed only
        (lambda: _replace(h200 / "runs.csv", (h200 / "runs.csv").read_text() + "\n"), ["vllm/h200"]),
        (lambda: (raw / "sglang" / "new-night").mkdir() or shutil.copy(vllm_run, raw / "sglang" / "new-night" / "a.json"),
         ["sglang", "sglang/new-night"]),
        (lambda: shutil.rmtree(raw / "sglang" / "new-night"), ["sglang"]),
        (lambda: next(trtllm.glob("*.meta.json")).unlink(), ["trtllm"]),
    ]
    for night, (change, moved) in enumerate(nights):
        time.sleep(0.01)
        change()
        looked_up.clear()
        quick, stats = ingest_folder_cached(raw, cache, quick_scan=True)
        full = ingest_folder(raw)
        assert looked_up and set(moved) <= set(looked_up[0]), (night, looked_up)
        assert "inferencex" not in looked_up[0] and "vllm/mi355x" not in looked_up[0], night  # taken as saved
        for name in ("runs", "rejects", "files"):
            assert content_hash(getattr(quick, name)) == content_hash(getattr(full, name)), (night, name)
            assert getattr(quick, name)["source_file"].equals(getattr(full, name)["source_file"]), (night, name)
        if night == 1:
            assert stats.parsed == 0 and stats.hashed >= 1  # the night-0 copy is racy-recent too
        if night == 4:
            assert stats.removed == 1


def test_on_many_fires_once_when_the_listing_reaches_its_count(tmp_path):
    for name in ("a", "b", "c"):
        (tmp_path / name).mkdir()
        for i in range(4):
            (tmp_path / name / f"run_{i}.json").write_text("{}")
    calls = []
    listing, _ = scan_tree(tmp_path, on_many=(5, lambda: calls.append("started")))
    assert calls == ["started"] and len(listing.rel) == 12
    assert scan_tree(tmp_path, on_many=(12, lambda: calls.append("at twelve")))[0].rel == listing.rel
    assert calls == ["started", "at twelve"]
    scan_tree(tmp_path, on_many=(13, lambda: calls.append("never")))  # fewer files than the count
    assert calls == ["started", "at twelve"]


def test_a_small_folder_with_no_cache_starts_no_fork_server(tmp_path, monkeypatch):
    started = []
    monkeypatch.setattr(folder, "start_fork_server", lambda: started.append(True))
    ingest_folder_cached(SAMPLE_DIR, tmp_path / "cache")
    assert started == []
    monkeypatch.setattr(folder, "PARALLEL_MIN_FILES", 10)  # the sample as a "large" folder: started once, mid-scan
    ingest_folder_cached(SAMPLE_DIR, tmp_path / "cache2")
    assert started == [True]
    ingest_folder_cached(SAMPLE_DIR, tmp_path / "cache2")  # a cache exists: nothing is started
    assert started == [True]


def test_a_save_that_touched_no_file_keeps_the_night_incremental(tmp_path):
    """A folder's mtime moves with no file changed (a temporary file came and went): the tick saves a new cache
    generation with the same rows. The next night's changes still start from the generation before it, so a
    warehouse that never saw the quiet generation rewrites only the night's files (``write_file_tables``), not
    every file; a generation that did change files ends that chain."""
    import duckdb

    from pipeline.defs.ingest.assets import write_file_tables

    raw = _aged_copy(tmp_path)
    cache = tmp_path / "cache"
    result, first = ingest_folder_cached(raw, cache, quick_scan=True)
    conn = duckdb.connect()
    conn.execute("create table raw_runs (source_file varchar)")
    write_file_tables(conn, result.rejects, result.files, first)  # the warehouse holds the first generation

    trtllm = raw / "trtllm"
    (trtllm / "upload.tmp").write_text("partial")
    (trtllm / "upload.tmp").unlink()
    past = time.time_ns() - 1800 * 1_000_000_000
    os.utime(trtllm, ns=(past, past))
    _, quiet = ingest_folder_cached(raw, cache, quick_scan=True)
    assert quiet.parsed == 0 and len(quiet.changes.touched) == 0
    assert quiet.generation != first.generation and quiet.changes.base_generation == first.generation

    h200 = raw / "vllm" / "h200"
    shutil.copy(next(h200.glob("*_conc16.json")), h200 / "copy_conc16.json")
    os.utime(h200 / "copy_conc16.json", ns=(past, past))
    os.utime(h200, ns=(past + 1, past + 1))
    night_result, night = ingest_folder_cached(raw, cache, quick_scan=True)
    assert night.changes.base_generation == quiet.generation
    assert night.changes.starts_from(first.generation) and not night.changes.starts_from("another")
    _, run = ingest_folder_cached(raw, cache, snapshot=night.generation)  # the run the sensor starts
    assert run.changes.starts_from(first.generation)

    write_file_tables(conn, night_result.rejects, night_result.files, run)
    noted = conn.execute("select kind, value from raw_changes where kind <> 'all' or value is not null "
                         "order by all").fetchall()
    assert conn.execute("select count(*) from raw_changes where kind = 'all'").fetchone()[0] == 1  # the first
    assert noted == [("file", "vllm/h200/copy_conc16.json")]

    (h200 / "copy_conc16.json").unlink()
    os.utime(h200, ns=(past + 3, past + 3))
    _, gone = ingest_folder_cached(raw, cache, quick_scan=True)
    assert len(gone.changes.touched) == 1
    (trtllm / "upload.tmp").write_text("partial")
    (trtllm / "upload.tmp").unlink()
    os.utime(trtllm, ns=(past + 4, past + 4))
    _, after = ingest_folder_cached(raw, cache, quick_scan=True)
    assert after.changes.starts_from(gone.generation)
    assert not after.changes.starts_from(night.generation)  # a file left between them


def test_a_first_tick_streams_the_cache_and_equals_a_state_from_the_whole_rows(tmp_path, monkeypatch):
    """A tick that finds the folder as the cache saved it, in a state it does not hold (its first tick; a run's
    ingest saved since), digests every date from the cache's runs streamed a record batch at a time, never
    loading the cache whole: the state is the one the whole rows give, on a base alone and on a base with a
    delta (new and removed files), and after a run's ingest saved a new generation."""
    raw = _aged_copy(tmp_path)
    cache = tmp_path / "cache"

    def whole(folder_state):  # the state from the rows in memory, as before streaming
        result, _ = ingest_folder_cached(raw, tmp_path / "whole_cache")
        return automation._whole_state(result.runs, result.files, folder_state[SNAPSHOT_KEY])

    ingest_folder_cached(raw, cache)
    monkeypatch.setattr(folder, "load_cache", lambda *args: pytest.fail("loaded the cache whole"))
    first = raw_dir_state(raw, cache)
    monkeypatch.undo()
    assert first == whole(first)

    shutil.copy(next((raw / "vllm" / "h200").glob("*_conc16.json")), raw / "vllm" / "h200" / "copy_conc16.json")
    next((raw / "trtllm").glob("*.json")).unlink()
    _age(raw)
    _, saved = ingest_folder_cached(raw, cache)  # a run's ingest: a delta on the base
    assert (cache / "delta.runs.arrow").exists()
    monkeypatch.setattr(folder, "load_cache", lambda *args: pytest.fail("loaded the cache whole"))
    after = raw_dir_state(raw, cache, first)
    monkeypatch.undo()
    assert after[SNAPSHOT_KEY] == saved.generation and after != first
    assert after == whole(after)


def test_a_stream_of_the_cache_is_its_rows_in_order(tmp_path):
    """``stream_cache`` gives what ``load_cache`` gives, runs in the same order, for a base alone and a base
    with a delta; a generation the cache no longer holds gives None."""
    import pyarrow as pa

    from pipeline.io.storage import content_hash

    raw = _aged_copy(tmp_path)
    cache = tmp_path / "cache"
    _, base = ingest_folder_cached(raw, cache)
    alone = parse_cache.stream_cache(cache, raw, base.generation, rejects=True)
    loaded = parse_cache.load_cache(cache, raw)
    assert alone.runs.read_all().equals(loaded.runs) and alone.rejects.equals(loaded.rejects)
    for copy in range(3):  # new files at two places, one base file gone
        shutil.copy(next((raw / "vllm" / "h200").glob("*_conc16.json")), raw / "vllm" / "h200" / f"c{copy}.json")
    shutil.copy(next((raw / "trtllm").glob("*.json")), raw / "aaa_first.json")
    next((raw / "sglang").rglob("*.jsonl")).unlink()
    _, delta = ingest_folder_cached(raw, cache)
    assert (cache / "delta.runs.arrow").exists()
    loaded = parse_cache.load_cache(cache, raw)
    for generation, cache_now in ((delta.generation, loaded), (base.generation, None)):
        stream = parse_cache.stream_cache(cache, raw, generation, ("source_file", "sha256", "runs"), rejects=True)
        if cache_now is None:  # a later state is the cache's now
            assert stream is None
            continue
        runs = pa.Table.from_batches(list(stream.runs), schema=stream.runs.schema)
        assert content_hash(runs) == content_hash(cache_now.runs)
        assert runs["source_file"].equals(cache_now.runs["source_file"])
        assert stream.num_runs == cache_now.runs.num_rows
        assert stream.files.equals(cache_now.files.select(["source_file", "sha256", "runs"]))
        assert content_hash(stream.rejects) == content_hash(cache_now.rejects)
        assert stream.rejects["source_file"].equals(cache_now.rejects["source_file"])


def _base_in_batches_of_8(raw, cache):
    """The cache of ``raw`` saved under ``cache``, its base runs rewritten in record batches of 8 runs, as a
    large parse writes it in blocks (same rows, same stamp); returns (the state's stats, the runs)."""
    import pyarrow as pa

    from pipeline.io.storage import write_arrow_atomic

    _, state = ingest_folder_cached(raw, cache)
    runs = pa.ipc.open_file(pa.memory_map(str(cache / "runs.arrow"))).read_all()
    write_arrow_atomic(pa.Table.from_batches(runs.to_batches(max_chunksize=8), schema=runs.schema),
                       cache / "runs.arrow", compression=None)
    return state, runs


def test_a_stream_for_some_dates_skips_the_base_batches_without_them(tmp_path, monkeypatch):
    """A run's ingest keeps only its dates' runs: ``stream_cache(dates=…)`` reads only the base's record batches
    that hold one of them (the others' ``run_date_partition`` column alone), and its rows of those dates are
    ``load_cache``'s, in order; ``num_runs`` still counts every run (the ingest's input-loss check)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    raw = _aged_copy(tmp_path)
    cache = tmp_path / "cache"
    state, _ = _base_in_batches_of_8(raw, cache)
    loaded = parse_cache.load_cache(cache, raw)
    batches = loaded.runs.to_batches(max_chunksize=8)
    dates = {batch["run_date_partition"][0].as_py() for batch in batches}
    date = min(dates)  # a date some batches hold and some do not
    holding = [i for i, batch in enumerate(batches) if date in batch["run_date_partition"].to_pylist()]
    assert 0 < len(holding) < len(batches)

    reads: list[int] = []
    real = parse_cache.stream._runs_in_order
    monkeypatch.setattr(parse_cache.stream, "_runs_in_order", lambda source, read_batch, *rest: real(
        source, lambda i: reads.append(i) or read_batch(i), *rest))
    stream = parse_cache.stream_cache(cache, raw, state.generation, dates=[date])
    streamed = pa.Table.from_batches(list(stream.runs), schema=stream.runs.schema)
    assert reads == holding and stream.num_runs == loaded.runs.num_rows
    of_date = lambda table: table.filter(pc.equal(table["run_date_partition"], date))  # noqa: E731
    assert of_date(streamed).equals(of_date(loaded.runs))


def _bytes_read() -> int:
    """Bytes this process has read through read() calls (``rchar`` of /proc/self/io): a mapped file's pages
    are not counted."""
    with open("/proc/self/io") as io:
        return next(int(line.split()[1]) for line in io if line.startswith("rchar:"))


@pytest.mark.skipif(not os.path.exists("/proc/self/io"), reason="needs Linux's /proc/self/io")
def test_choosing_a_streams_batches_reads_their_dates_not_their_runs(tmp_path, monkeypatch):
    """Which base batches a dated stream needs is read from their ``run_date_partition`` pages alone, through
    a mapping: Arrow's reader of an ordinary file read each batch's whole body for that one column (onto a
    million runs ~1 GB allocated and ~0.3 s before a row was streamed)."""
    raw = _aged_copy(tmp_path)
    cache = tmp_path / "cache"
    state, runs = _base_in_batches_of_8(raw, cache)
    date = min(runs["run_date_partition"].to_pylist())
    read: list[int] = []
    real = parse_cache.stream._batches_holding

    def counted(*args):
        before = _bytes_read()
        try:
            return real(*args)
        finally:
            read.append(_bytes_read() - before)

    monkeypatch.setattr(parse_cache.stream, "_batches_holding", counted)
    stream = parse_cache.stream_cache(cache, raw, state.generation, dates=[date])
    assert stream is not None and stream.runs.read_all().num_rows > 0
    assert read and read[0] < (cache / "runs.arrow").stat().st_size / 10, (read, (cache / "runs.arrow").stat())


def test_a_streams_files_are_the_mapped_cache_not_a_copy(tmp_path):
    """The files of a stream are the cache's ``files.arrow`` as mapped, not copied into memory (Arrow copies a
    mapped file's batches when told which fields to read: 335 MB onto a million runs)."""
    import sys

    import pyarrow as pa
    from conftest import REPO

    sys.path.insert(0, str(REPO))
    from benchmarks.generate import generate

    raw = tmp_path / "raw"
    generate(600, raw, run_date="2026-05-01")
    _age(raw)
    cache = tmp_path / "cache"
    _, state = ingest_folder_cached(raw, cache)
    before = pa.total_allocated_bytes()
    stream = parse_cache.stream_cache(cache, raw, state.generation, ("source_file", "sha256", "runs"))
    assert stream is not None and stream.files.num_rows >= 600
    grew = pa.total_allocated_bytes() - before
    assert grew < stream.files.nbytes / 4, (grew, stream.files.nbytes)


def test_a_base_replaced_while_a_stream_opens_gives_none(tmp_path, monkeypatch):
    """A save that replaces the base's runs file after the stream opened it (another process's scan) is noticed
    where the batches' dates are read: the stream is None (the caller reads the folder) instead of a mix of two
    files."""
    from pipeline.io.storage import write_arrow_atomic

    raw = _aged_copy(tmp_path)
    cache = tmp_path / "cache"
    state, runs = _base_in_batches_of_8(raw, cache)
    real = parse_cache.stream.row_offsets

    def replace_then_count(files, count):  # runs just before the batches' dates are read
        other = runs.replace_schema_metadata({**runs.schema.metadata, b"replaced": b"yes"})
        write_arrow_atomic(other, cache / "runs.arrow", compression=None)
        return real(files, count)

    monkeypatch.setattr(parse_cache.stream, "row_offsets", replace_then_count)
    assert parse_cache.stream_cache(cache, raw, state.generation, dates=["2025-01-01"]) is None
    monkeypatch.setattr(parse_cache.stream, "row_offsets", real)
    assert parse_cache.stream_cache(cache, raw, state.generation, dates=["2025-01-01"]) is not None


def test_a_listing_kept_as_arrow_alone_answers_as_before(tmp_path):
    """``Listing.keep_table_only`` (the first save lets the Python lists go) changes nothing a reader sees: the
    same names, sizes and mtimes, in order, as lists and as the table, and the same length."""
    shutil.copytree(SAMPLE_DIR, tmp_path / "raw")
    listing = scan_folder(tmp_path / "raw")
    lists, table, count = (list(listing.rel), list(listing.size), list(listing.mtime_ns)), listing.table, len(listing)
    listing.keep_table_only()
    assert listing._lists is None  # the point: only the table is held
    assert len(listing) == count > 50 and listing.table.equals(table)
    assert listing.rels_at([0, count - 1]) == [lists[0][0], lists[0][-1]]
    assert (listing.rel, listing.size, listing.mtime_ns) == lists  # built again from the table when asked


def _saved_scan(raw, cache):
    """The scan the cache's current state saved, as the next quick scan reads it (``load_scan``)."""
    generation = parse_cache.cache_generation(cache, raw)
    return parse_cache.load_scan(cache, generation, lambda: parse_cache.load_cache(cache, raw).files)


def test_the_saved_scan_is_the_states_file_rows_unless_they_differ(tmp_path, monkeypatch):
    """A save does not write the listing a second time when the state's file rows are it (names, sizes, mtimes
    in order): a first save, a night's delta. It writes ``listing.arrow`` when they differ: a file touched with
    the same bytes (its row keeps the recorded mtime) or a file whose size changed between the scan's stat and
    its read. Either way the saved scan is what the scan saw."""
    raw = _aged_copy(tmp_path)
    cache = tmp_path / "cache"
    ingest_folder_cached(raw, cache, quick_scan=True)  # the first save: a base
    assert not (cache / "listing.arrow").exists()
    assert _saved_scan(raw, cache)[0].table.equals(scan_folder(raw).table)

    h200 = raw / "vllm" / "h200"
    run = next(h200.glob("*_conc16.json"))
    shutil.copy(run, h200 / "copy_conc16.json")  # a night: saved as a delta on the base
    _, night = ingest_folder_cached(raw, cache, quick_scan=True)
    assert night.parsed == 1 and (cache / "delta.files.arrow").exists()
    assert not (cache / "listing.arrow").exists()
    assert _saved_scan(raw, cache)[0].table.equals(scan_folder(raw).table)

    time.sleep(0.01)
    _replace(run, run.read_text())  # same bytes under a new mtime: hashed, the row kept as recorded
    _, touched = ingest_folder_cached(raw, cache, quick_scan=True)
    assert touched.parsed == 0 and touched.hashed >= 1
    assert (cache / "listing.arrow").exists()
    assert _saved_scan(raw, cache)[0].table.equals(scan_folder(raw).table)

    real_scan = folder.scan_tree

    def grown_after_stat(*args, **kwargs):  # the scan saw one byte less than the parse then read
        listing, folders = real_scan(*args, **kwargs)
        table = listing.table
        at = table["rel"].to_pylist().index(os.path.relpath(run, raw))
        sizes = table["size"].to_pylist()
        sizes[at] -= 1
        return scan.Listing(table=table.set_column(1, "size", pa.array(sizes, pa.int64()))), folders

    monkeypatch.setattr(folder, "scan_tree", grown_after_stat)
    fresh = tmp_path / "fresh_cache"
    ingest_folder_cached(raw, fresh, quick_scan=True)
    monkeypatch.undo()
    assert (fresh / "listing.arrow").exists()
    saved = _saved_scan(raw, fresh)[0].table
    assert saved["size"].to_pylist() != scan_folder(raw).table["size"].to_pylist()  # the scan's size, as seen
    assert saved["rel"].equals(scan_folder(raw).table["rel"])


def test_moved_entries_are_the_entries_of_folders_not_taken_from_the_saved_scan():
    """Hand-built scans: "a" taken (same trusted mtime), "b" moved, "c" untrusted when saved, "d" gone, "e" new,
    "f" untrusted now. The look-up gets this scan's entries of b, c, e, f and the saved entries of b, c, d."""
    saved = scan.Listing(["a/1", "b/1", "b/2", "c/1", "d/1", "d/2", "f/1"], [1] * 7, [1] * 7)
    saved_folders = scan.Folders(["a", "b", "c", "d", "f"], [10, 20, None, 40, 60], [0, 1, 3, 4, 6], [1, 2, 1, 2, 1])
    listing = scan.Listing(["a/1", "b/1", "b/3", "c/1", "e/1", "f/1"], [1] * 6, [1] * 6)
    folders = scan.Folders(["a", "b", "c", "e", "f"], [10, 21, 30, 50, None], [0, 1, 3, 4, 5], [1, 2, 1, 1, 1])
    positions, before = parse_cache.moved_entries(listing, saved, saved_folders, folders)
    assert positions == [1, 2, 3, 4, 5]
    assert before == ["b/1", "b/2", "c/1", "d/1", "d/2", "f/1"]
