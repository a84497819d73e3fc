"""The parse cache (pipeline/ingest/parse_cache/): a cached scan returns exactly what a full parse returns, and parses
only the files whose content, sidecar or runs.csv changed."""

import json
import os
import shutil
import time
from pathlib import Path

import pyarrow.compute as pc
import pytest
from conftest import REAL_LOGS, SAMPLE_DIR

from pipeline.ingest.folder import ingest_folder, ingest_folder_cached
from pipeline.io.storage import content_hash, read_arrow, write_arrow_atomic

VLLM_DIR = "vllm/mi355x"
VLLM_RUN = "vllm/mi355x/qwen3.5-397b-a17b_8k1k_mi355x_fp8_vllm_none_conc8.json"


def _same(a, b) -> bool:
    """Same rows (content hash) in the same order (source files) for runs, rejects and files."""
    return all(content_hash(getattr(a, t)) == content_hash(getattr(b, t))
               and getattr(a, t).column("source_file").equals(getattr(b, t).column("source_file"))
               for t in ("runs", "rejects", "files"))


def _same_table(a, b) -> bool:
    """Same rows (content hash) in the same order (source files)."""
    return content_hash(a) == content_hash(b) and a.column("source_file").equals(b.column("source_file"))


def _age(folder, seconds=3600):
    """Move every file's mtime into the past, out of the racy window, as for logs written long ago."""
    past = time.time_ns() - seconds * 1_000_000_000
    for path in folder.rglob("*"):
        if path.is_file():
            os.utime(path, ns=(past, past))



def set_everywhere(monkeypatch, name: str, value) -> None:
    """Set the parse cache's limit ``name`` in every module of the package that reads it (each holds its own
    binding of the imported constant)."""
    import importlib

    holders = [importlib.import_module(f"pipeline.ingest.parse_cache.{module}")
               for module in ("store", "rows", "listing", "lookup", "save", "load", "stream")]
    holders = [module for module in holders if hasattr(module, name)]
    assert holders, name
    for module in holders:
        monkeypatch.setattr(module, name, value)

@pytest.fixture
def raw(tmp_path):
    folder = tmp_path / "raw"
    shutil.copytree(SAMPLE_DIR, folder)
    _age(folder)
    return folder


@pytest.mark.parametrize("folder", [SAMPLE_DIR, REAL_LOGS], ids=["sample", "real-logs"])
def test_cached_scan_equals_full_parse(folder, tmp_path):
    if not folder.is_dir():
        pytest.skip(f"{folder} not present")
    full = ingest_folder(folder)
    cold, cold_stats = ingest_folder_cached(folder, tmp_path / "cache")
    warm, warm_stats = ingest_folder_cached(folder, tmp_path / "cache")
    assert (cold_stats.cache_used, cold_stats.parsed) == (False, full.files.num_rows)
    assert (warm_stats.cache_used, warm_stats.parsed, warm_stats.reused) == (True, 0, full.files.num_rows)
    assert _same(full, cold) and _same(full, warm)


def test_unchanged_old_files_are_neither_read_nor_parsed(raw, tmp_path):
    ingest_folder_cached(raw, tmp_path / "cache")
    _, stats = ingest_folder_cached(raw, tmp_path / "cache")
    assert (stats.parsed, stats.hashed, stats.removed) == (0, 0, 0)


def test_new_file_is_the_only_one_parsed(raw, tmp_path):
    ingest_folder_cached(raw, tmp_path / "cache")
    doc = json.loads((raw / VLLM_RUN).read_text())
    doc["duration"] *= 1.01
    (raw / "vllm" / "new_run.json").write_text(json.dumps(doc))
    result, stats = ingest_folder_cached(raw, tmp_path / "cache")
    assert (stats.parsed, stats.hashed) == (1, 0)
    assert "vllm/new_run.json" in result.runs.column("source_file").to_pylist()
    assert _same(ingest_folder(raw), result)


@pytest.mark.parametrize("max_splices", [64, 1], ids=["spliced", "sorted"])
def test_new_and_changed_files_anywhere_land_where_a_full_parse_puts_them(raw, tmp_path, monkeypatch,
                                                                          max_splices):
    """Fresh rows go in between the cached ones at every place a new or changed file sits (first in the
    folder, in the middle, last, a new sub-folder, a file of the root); with fewer places allowed than that, the
    rows are sorted into place instead. Either way the rows and their order are a full parse's."""
    set_everywhere(monkeypatch, "MAX_SPLICES", max_splices)
    ingest_folder_cached(raw, tmp_path / "cache")
    doc = json.loads((raw / VLLM_RUN).read_text())
    for n, rel in enumerate(["aaa_first.json", "vllm/mi355x/m_middle.json", "vllm/zzz_last.json",
                             "sglang/new_night/run.json", "trtllm/0_first_in_folder.json"]):
        doc["duration"] *= 1.01 + n / 100
        (raw / rel).parent.mkdir(exist_ok=True)
        (raw / rel).write_text(json.dumps(doc))
    (raw / "vllm" / "mi355x" / "broken.json").write_text("{not json")  # a reject row, no run
    changed = next((raw / "trtllm").glob("*.report.json"))
    changed.write_text(changed.read_text().replace("{", "{ ", 1))
    result, stats = ingest_folder_cached(raw, tmp_path / "cache")
    assert stats.parsed == 7
    assert _same(ingest_folder(raw), result)
    assert (result.files["source_file"].num_chunks > 1) == (max_splices > 1)  # cached slices, or one sorted copy


def test_the_look_ups_positions_are_checked_not_trusted(raw, tmp_path):
    """The merge takes the fresh files' places from the look-up; places that do not name those files (off by
    one, too few) are found again by walking the listing, with the same rows."""
    from pipeline.ingest.parse import parse_files
    from pipeline.ingest.parse_cache import load_cache, look_up, merge_in_scan_order
    from pipeline.ingest.scan import scan_folder

    ingest_folder_cached(raw, tmp_path / "cache")
    for rel in ("aaa_first.json", "vllm/zzz_last.json"):
        (raw / rel).write_text((raw / VLLM_RUN).read_text().replace("{", "{ ", 1))
    listing = scan_folder(raw)
    lookup = look_up(load_cache(tmp_path / "cache", raw), listing, raw)
    fresh = parse_files(raw, lookup.to_parse, listed=listing.rel)
    assert [listing.rel[at] for at in lookup.positions] == lookup.to_parse == ["aaa_first.json", "vllm/zzz_last.json"]
    full = ingest_folder(raw)
    for positions in (lookup.positions, [at + 1 for at in lookup.positions], lookup.positions[:1], None):
        assert _same(merge_in_scan_order(lookup.kept, fresh, listing, positions), full), positions


def test_changed_sidecar_reparses_its_run_with_the_new_metadata(raw, tmp_path):
    ingest_folder_cached(raw, tmp_path / "cache")
    sidecar = raw / (VLLM_RUN + ".meta.json")
    meta = json.loads(sidecar.read_text())
    meta["image"] = "vllm/vllm-openai:v0.99.0"
    sidecar.write_text(json.dumps(meta))
    result, stats = ingest_folder_cached(raw, tmp_path / "cache")
    assert stats.parsed == 2  # the sidecar itself (a ledger row) and the run it describes
    (run,) = [r for r in result.runs.to_pylist() if r["source_file"] == VLLM_RUN]
    assert run["image"] == "vllm/vllm-openai:v0.99.0"
    assert _same(ingest_folder(raw), result)


def test_changed_runs_csv_reparses_its_folder_only(raw, tmp_path):
    manifest = next(raw.rglob("runs.csv"))
    folder_files = [p for p in manifest.parent.iterdir() if p.is_file()]
    ingest_folder_cached(raw, tmp_path / "cache")
    manifest.write_text(manifest.read_text() + "\n")  # same rows, new bytes
    result, stats = ingest_folder_cached(raw, tmp_path / "cache")
    assert stats.parsed == len(folder_files)
    assert _same(ingest_folder(raw), result)


def test_touched_but_unchanged_file_is_hashed_not_parsed(raw, tmp_path):
    ingest_folder_cached(raw, tmp_path / "cache")
    os.utime(raw / VLLM_RUN)  # mtime now, content the same
    _, stats = ingest_folder_cached(raw, tmp_path / "cache")
    assert (stats.hashed, stats.parsed) == (1, 0)


def test_same_size_rewrite_with_restored_mtime_is_caught_in_the_racy_window(tmp_path):
    raw = tmp_path / "raw"
    shutil.copytree(SAMPLE_DIR / "vllm", raw, copy_function=shutil.copy)  # mtimes now: inside the racy window
    path = raw / "mi355x" / "qwen3.5-397b-a17b_8k1k_mi355x_fp8_vllm_none_conc8.json"
    ingest_folder_cached(raw, tmp_path / "cache")
    before = os.stat(path)
    text = path.read_text()
    changed = text.replace('"num_prompts": 80', '"num_prompts": 81')
    assert changed != text and len(changed) == len(text)
    path.write_text(changed)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # same size, same mtime: stat cannot tell
    result, _ = ingest_folder_cached(raw, tmp_path / "cache")
    (run,) = [r for r in result.runs.to_pylist() if r["source_file"].endswith(path.name)]
    assert run["num_prompts"] == 81


def test_removed_file_leaves_every_table(raw, tmp_path):
    ingest_folder_cached(raw, tmp_path / "cache")
    (raw / VLLM_RUN).unlink()
    result, stats = ingest_folder_cached(raw, tmp_path / "cache")
    assert stats.removed == 1
    assert VLLM_RUN not in result.files.column("source_file").to_pylist()
    assert _same(ingest_folder(raw), result)


def test_torn_cache_is_ignored_not_trusted(raw, tmp_path):
    """Two writers at once can leave base files of different generations: the reader parses everything instead."""
    cache = tmp_path / "cache"
    ingest_folder_cached(raw, cache)
    old_runs = read_arrow(cache / "runs.arrow")
    shutil.rmtree(raw / VLLM_DIR)  # more than DELTA_MAX_SHARE of the files: the second save writes a new base
    ingest_folder_cached(raw, cache)
    assert not (cache / "delta.runs.arrow").exists()
    write_arrow_atomic(old_runs, cache / "runs.arrow")  # runs of the first generation beside files of the second
    result, stats = ingest_folder_cached(raw, cache)
    assert not stats.cache_used
    assert _same(ingest_folder(raw), result)


def test_a_night_saves_a_delta_and_the_base_stays_as_it_was(raw, tmp_path):
    """A save onto a loaded cache writes the night's files' rows beside the base (``delta.*.arrow``), not the
    base again; loaded back, base and delta are the folder's rows in scan order, night after night (new, changed
    and removed files, in old and new folders), until the delta outgrows ``DELTA_MAX_SHARE`` and a new base
    takes it in."""
    from pipeline.ingest.parse_cache import DELTA_MAX_SHARE, cache_generation, load_cache

    cache = tmp_path / "cache"
    ingest_folder_cached(raw, cache)
    base_files = {name: (cache / f"{name}.arrow").stat().st_mtime_ns for name in ("files", "runs", "rejects")}
    doc = json.loads((raw / VLLM_RUN).read_text())
    n_files = len(ingest_folder(raw).files)
    for night in range(3):
        folder = raw / "vllm" / f"night{night}"
        folder.mkdir()
        for n in range(2):
            doc["duration"] *= 1.01
            (folder / f"run_{n}.json").write_text(json.dumps(doc))
        (raw / VLLM_DIR / f"late_{night}.json").write_text(json.dumps({**doc, "duration": doc["duration"] * 1.5}))
        if night == 1:
            (raw / VLLM_RUN).unlink()  # a base file leaves
            (raw / "vllm" / "night0" / "run_0.json").unlink()  # and a delta file
        if night == 2:
            changed = raw / "vllm" / "night0" / "run_1.json"
            changed.write_text(changed.read_text().replace('"num_prompts": 80', '"num_prompts": 81'))
        result, stats = ingest_folder_cached(raw, cache)
        assert (cache / "delta.runs.arrow").exists() and stats.cache_used
        assert {name: (cache / f"{name}.arrow").stat().st_mtime_ns for name in base_files} == base_files
        assert _same(ingest_folder(raw), result)
        loaded = load_cache(cache, raw)
        assert loaded.generation == stats.generation == cache_generation(cache, raw) != loaded.base_generation
        assert _same_table(loaded.runs, result.runs) and _same_table(loaded.rejects, result.rejects)
        assert loaded.files["source_file"].equals(result.files["source_file"])
    assert read_arrow(cache / "delta.files.arrow").num_rows < n_files * DELTA_MAX_SHARE

    big = raw / "vllm" / "big_night"
    big.mkdir()
    for n in range(int(n_files * DELTA_MAX_SHARE) + 1):
        doc["duration"] *= 1.01
        (big / f"run_{n}.json").write_text(json.dumps(doc))
    result, stats = ingest_folder_cached(raw, cache)
    assert not (cache / "delta.runs.arrow").exists()
    assert (cache / "runs.arrow").stat().st_mtime_ns != base_files["runs"]
    assert load_cache(cache, raw).generation == load_cache(cache, raw).base_generation == stats.generation
    assert _same(ingest_folder(raw), result)


def test_a_loaded_cache_is_mapped_not_copied(raw, tmp_path):
    """``load_cache`` memory-maps the cache's files: its rows are the files' pages, not a copy in Arrow's heap
    (onto a million runs a copy was ~1.4 GB and 0.3-1.8 s of every sensor tick that finds a new file), with a
    night's delta spliced in as slices; the rows are the folder's as a full parse gives them."""
    import pyarrow as pa

    from pipeline.ingest.parse_cache import load_cache

    cache = tmp_path / "cache"
    ingest_folder_cached(raw, cache)
    night = raw / "vllm" / "night"
    night.mkdir()
    (night / "run.json").write_text((raw / VLLM_RUN).read_text().replace('"num_prompts": 80', '"num_prompts": 81'))
    ingest_folder_cached(raw, cache)
    assert (cache / "delta.runs.arrow").exists()
    before = pa.total_allocated_bytes()
    loaded = load_cache(cache, raw)
    grew = pa.total_allocated_bytes() - before
    size = loaded.runs.nbytes + loaded.files.nbytes + loaded.rejects.nbytes
    assert grew < size / 20, (grew, size)
    full = ingest_folder(raw)
    assert _same_table(loaded.runs, full.runs) and _same_table(loaded.rejects, full.rejects)


@pytest.mark.parametrize("limit", ["MAX_SPLICES", "MAX_SLICES"])
def test_a_delta_that_would_load_slowly_is_folded_into_a_new_base(raw, tmp_path, monkeypatch, limit):
    """A delta whose files sit at more places than ``MAX_SPLICES`` (new files in two folders), or whose kept base
    files form more runs than ``MAX_SLICES`` (two base files far apart removed), is not written: the save writes
    a new base, and the answer is a full parse's."""
    from pipeline.ingest.parse_cache import load_cache

    cache = tmp_path / "cache"
    ingest_folder_cached(raw, cache)
    set_everywhere(monkeypatch, limit, 1)
    doc = json.loads((raw / VLLM_RUN).read_text())
    if limit == "MAX_SPLICES":
        for folder in (raw / "aaa", raw / "zzz"):
            folder.mkdir()
            (folder / "run.json").write_text(json.dumps(doc))
    else:
        files = ingest_folder(raw).files["source_file"].to_pylist()
        for rel in (files[1], files[-2]):
            (raw / rel).unlink()
    result, stats = ingest_folder_cached(raw, cache)
    assert not (cache / "delta.runs.arrow").exists()
    assert load_cache(cache, raw).base_generation == stats.generation
    assert _same(ingest_folder(raw), result)


def test_a_torn_delta_falls_back_to_its_base(raw, tmp_path):
    """Delta files of two saves side by side (a writer killed between them): the base alone is the cache, an
    older state whose changed files are parsed again, and the answer is still a full parse's."""
    from pipeline.ingest.parse_cache import cache_generation, load_cache

    cache = tmp_path / "cache"
    _, first = ingest_folder_cached(raw, cache)
    doc = json.loads((raw / VLLM_RUN).read_text())
    (raw / "vllm" / "one.json").write_text(json.dumps({**doc, "duration": doc["duration"] * 1.1}))
    ingest_folder_cached(raw, cache)
    old_runs = read_arrow(cache / "delta.runs.arrow")
    (raw / "vllm" / "two.json").write_text(json.dumps({**doc, "duration": doc["duration"] * 1.2}))
    ingest_folder_cached(raw, cache)
    write_arrow_atomic(old_runs, cache / "delta.runs.arrow")
    assert cache_generation(cache, raw) == load_cache(cache, raw).generation == first.generation
    result, stats = ingest_folder_cached(raw, cache)
    assert stats.cache_used and stats.parsed == 2
    assert _same(ingest_folder(raw), result)


def test_cache_of_another_folder_is_not_used(raw, tmp_path):
    ingest_folder_cached(raw, tmp_path / "cache")
    other = tmp_path / "other"
    shutil.copytree(raw, other)
    (other / VLLM_RUN).write_text((other / VLLM_RUN).read_text().replace('"num_prompts": 80', '"num_prompts": 81'))
    result, stats = ingest_folder_cached(other, tmp_path / "cache")
    assert not stats.cache_used
    assert _same(ingest_folder(other), result)


def test_a_file_that_kills_its_worker_costs_only_that_file(monkeypatch, tmp_path):
    """A worker process that dies (``os._exit``, as a crash in native code or an out-of-memory kill) breaks the
    pool; the files in flight are parsed again, each alone, and only the file that kills its worker again becomes
    a ``parse_crashed`` row: every other file gives the rows of the serial parse, in scan order."""
    import parse_crash

    import pipeline.ingest.parse

    raw = tmp_path / "raw"
    shutil.copytree(SAMPLE_DIR, raw)
    (raw / "poison.json").write_text((raw / VLLM_RUN).read_text())  # a good run log: only the crash rejects it
    serial = ingest_folder(raw, workers=1)
    monkeypatch.setattr(pipeline.ingest.parse, "_parse_block", parse_crash.parse_block_or_die)
    parallel = ingest_folder(raw, workers=2)

    def without_poison(table):
        return table.filter(pc.not_equal(table["source_file"], "poison.json"))

    for part in ("runs", "rejects", "files"):
        assert _same_table(without_poison(getattr(serial, part)), without_poison(getattr(parallel, part))), part
    assert parallel.files["source_file"].to_pylist() == serial.files["source_file"].to_pylist()  # scan order
    assert "poison.json" in serial.runs["source_file"].to_pylist()
    assert "poison.json" not in parallel.runs["source_file"].to_pylist()
    [reject] = parallel.rejects.filter(pc.equal(parallel.rejects["source_file"], "poison.json")).to_pylist()
    assert (reject["reason_code"], reject["stage"], reject["source_row"]) == ("parse_crashed", "ingest", None)
    assert reject["detail"].startswith("poison.json: the parse worker process died reading this file, alone, twice")
    [ledger] = parallel.files.filter(pc.equal(parallel.files["source_file"], "poison.json")).to_pylist()
    assert ledger == {"source_file": "poison.json", "kind": "unreadable", "source_format": None,
                      "size_bytes": (raw / "poison.json").stat().st_size, "sha256": None, "rows_read": 1, "runs": 0,
                      "rejected": 1, "request_arrays": None}


def test_a_first_parse_in_workers_is_saved_block_by_block_and_given_back_mapped(monkeypatch, tmp_path):
    """With no cache, the workers' blocks (and a file that killed its worker, in memory) go into the cache a group
    of blocks at a time, never concatenated whole (onto a million runs ~1.6 GB), and the answer is the saved
    cache's rows, memory-mapped: the rows of a parse without a cache, in scan order; a second scan reuses all."""
    import parse_crash
    import pyarrow as pa

    import pipeline.ingest.parse
    import pipeline.ingest.parse_cache as parse_cache
    from pipeline.ingest.parse import ParsedBlocks

    raw = tmp_path / "raw"
    shutil.copytree(SAMPLE_DIR, raw)
    (raw / "poison.json").write_text((raw / VLLM_RUN).read_text())
    monkeypatch.setattr(pipeline.ingest.parse, "_parse_block", parse_crash.parse_block_or_die)
    monkeypatch.setattr(pipeline.ingest.parse, "PARALLEL_BLOCK_FILES", 4)  # the sample in many blocks
    expected = ingest_folder(raw, workers=2)
    assert "poison.json" in expected.rejects["source_file"].to_pylist()

    groups = []
    real_groups = ParsedBlocks.groups
    monkeypatch.setattr(ParsedBlocks, "groups", lambda self, name, count: (
        groups.append((name, len(self.parts), count)), real_groups(self, name, count))[1])
    real_result = ParsedBlocks.result
    monkeypatch.setattr(ParsedBlocks, "result", lambda self: pytest.fail("the blocks were concatenated whole"))
    before = pa.total_allocated_bytes()
    first, stats = ingest_folder_cached(raw, tmp_path / "cache", workers=2)
    grew = pa.total_allocated_bytes() - before
    assert not stats.cache_used and stats.parsed == len(expected.files) and stats.generation
    assert [(name, count) for name, _, count in groups] == [
        ("files", pipeline.ingest.parse.RESULT_CHUNKS), ("runs", parse_cache.MAX_CACHE_CHUNKS),
        ("rejects", parse_cache.MAX_CACHE_CHUNKS)]
    assert all(parts > 10 for _, parts, _ in groups)
    size = first.runs.nbytes + first.rejects.nbytes + first.files.nbytes
    assert grew < size / 4, (grew, size)  # the rows are the cache file's pages, not a copy
    assert _same(expected, first)
    monkeypatch.setattr(ParsedBlocks, "result", real_result)  # a scan onto the cache merges its few files
    again, again_stats = ingest_folder_cached(raw, tmp_path / "cache", workers=2)
    # the file that killed its worker has no sha256, so every scan tries it again: one file, parsed in this
    # process, where it does not crash; the rest comes from the saved cache
    assert again_stats.cache_used and again_stats.parsed == 1 and _same(ingest_folder(raw, workers=1), again)


def test_a_pool_that_breaks_before_reading_any_file_is_an_error(monkeypatch):
    """Workers that die before their first file leave no file to blame: after two such pools the parse stops with
    an error instead of retrying forever."""
    import parse_crash

    import pipeline.ingest.parse

    monkeypatch.setattr(pipeline.ingest.parse, "_parse_block", parse_crash.die_at_once)
    with pytest.raises(RuntimeError, match=r"the parse worker pool broke twice with no file in flight; \d+ blocks "
                                           r"unparsed, from "):
        ingest_folder(SAMPLE_DIR, workers=2)


def test_a_sensor_snapshot_is_read_without_scanning_again(raw, tmp_path, monkeypatch):
    """The run a sensor tick started reads the folder as the tick saw it, from the cache, with no second scan;
    a snapshot the cache no longer holds (the folder changed and a later scan saved) is scanned as usual."""
    import pipeline.ingest.folder as folder

    cache = tmp_path / "cache"
    tick, tick_stats = ingest_folder_cached(raw, cache)
    assert tick_stats.generation
    real_scan = folder.scan_tree
    monkeypatch.setattr(folder, "scan_tree", lambda *_: pytest.fail("scanned again"))
    run, run_stats = ingest_folder_cached(raw, cache, snapshot=tick_stats.generation)
    assert _same(tick, run) and (run_stats.parsed, run_stats.generation) == (0, tick_stats.generation)

    monkeypatch.setattr(folder, "scan_tree", real_scan)
    (raw / VLLM_RUN).unlink()
    later, later_stats = ingest_folder_cached(raw, cache)  # a later tick saves another state
    assert later_stats.generation != tick_stats.generation
    stale, _ = ingest_folder_cached(raw, cache, snapshot=tick_stats.generation)
    assert _same(later, stale) and VLLM_RUN not in stale.files.column("source_file").to_pylist()


@pytest.mark.parametrize("quick_scan", [False, True], ids=["full-scan", "quick-scan"])
def test_a_saved_cache_records_every_files_dependencies_as_a_whole_look_up_does(raw, tmp_path, quick_scan,
                                                                                 monkeypatch):
    """The save takes the kept files' sidecar and runs.csv sha256 as recorded and looks up only the parsed
    files'; what it writes equals a look-up of every file (``file_dependencies``) after new files with a sidecar
    and a runs.csv arrive in a new folder, a new run lands in an old folder, a sidecar and a runs.csv change."""
    from pipeline.ingest.parse_cache import file_dependencies, load_cache, save

    partial = []  # the save looked up only some files (the path under test, not its whole-table fallback)
    monkeypatch.setattr(save, "file_dependencies", lambda files, only=None: (
        partial.append(only is not None), file_dependencies(files, only))[1])

    cache = tmp_path / "cache"
    ingest_folder_cached(raw, cache, quick_scan=quick_scan)
    doc = json.loads((raw / VLLM_RUN).read_text())
    night = raw / "vllm" / "night"
    night.mkdir()
    for n in range(3):
        doc["duration"] *= 1.01
        (night / f"run_{n}.json").write_text(json.dumps(doc))
    (night / "run_0.json.meta.json").write_text(json.dumps({"hw": "mi355x"}))
    (night / "runs.csv").write_text("file,conc\nrun_1.json,16\n")
    (raw / VLLM_DIR / "late_run.json").write_text(json.dumps({**doc, "duration": doc["duration"] * 1.5}))
    sidecar = next(raw.rglob("*.meta.json"))
    sidecar.write_text(sidecar.read_text().replace("{", '{"run_url": "https://example.com/1", ', 1))
    manifest = next(p for p in raw.rglob("runs.csv") if p.parent != night)
    manifest.write_text(manifest.read_text() + "\n")
    partial.clear()
    _, stats = ingest_folder_cached(raw, cache, quick_scan=quick_scan)
    assert True in partial
    assert stats.parsed >= 6 and stats.reused > 0  # a quick scan sees the in-place rewrites on the next full scan
    saved = load_cache(cache, raw).files  # the base and the night's delta on it
    whole = file_dependencies(saved.select(["source_file", "sha256"]))
    for column in ("sidecar_sha256", "manifest_sha256"):
        assert saved[column].equals(whole[column]), column
    assert pc.sum(pc.is_valid(saved["manifest_sha256"])).as_py() > 0
    assert pc.sum(pc.is_valid(saved["sidecar_sha256"])).as_py() > 0


@pytest.mark.parametrize("share", [0.01, 0.5], ids=["a-night", "half-the-files"])
def test_dependencies_of_some_files_are_those_of_a_whole_look_up(share):
    """``file_dependencies(only=mask)`` answers the masked rows as the whole look-up does, whether it builds their
    dependency names (few rows) or answers every file and keeps some (many): sidecars of files and of sidecars,
    runs.csv at the top and in nested folders, a folder whose runs.csv or sidecar is unknown or absent, names that
    only look like dependencies."""
    import numpy as np
    import pyarrow as pa

    from pipeline.ingest.parse_cache import file_dependencies

    rng = np.random.default_rng(7)
    names = ["runs.csv", "top.json", "top.json.meta.json", "runs.csv.meta.json", "a/runs.csv.bak", "a/xruns.csv"]
    for folder in range(400):
        base = f"m{folder % 7}/d{folder}/" + ("deep/" if folder % 3 == 0 else "")
        for run in range(int(rng.integers(1, 6))):
            names.append(f"{base}run_{run}.json")
            if rng.random() < 0.4:
                names.append(f"{base}run_{run}.json.meta.json")
        if folder % 2 == 0:
            names.append(f"{base}runs.csv")
    shas = [None if rng.random() < 0.05 else ("<changed>" if rng.random() < 0.05 else f"{i:064x}")
            for i in range(len(names))]
    files = pa.table({"source_file": pa.array(names, pa.string()), "sha256": pa.array(shas, pa.string())})
    files = pa.Table.from_batches(files.to_batches(max_chunksize=97))  # a merged result arrives in chunks
    whole = file_dependencies(files)
    assert pc.sum(pc.is_valid(whole["sidecar_sha256"])).as_py() > 100
    assert pc.sum(pc.is_valid(whole["manifest_sha256"])).as_py() > 100
    for seed in range(5):
        mask = pa.array(np.random.default_rng(seed).random(len(names)) < share)
        assert file_dependencies(files, only=mask).equals(whole.filter(mask))


def _shortcut_and_queries(cache, listing, raw, monkeypatch):
    """``look_up``'s answer with the unchanged-folder shortcut (and what the shortcut said) and without it."""
    from pipeline.ingest.parse_cache import lookup

    asked = []
    shortcut = lookup._unchanged_since_cached
    monkeypatch.setattr(lookup, "_unchanged_since_cached", lambda *a: asked.append(shortcut(*a)) or asked[-1])
    fast = lookup.look_up(cache, listing, raw)
    monkeypatch.setattr(lookup, "_unchanged_since_cached", lambda *a: None)
    queried = lookup.look_up(cache, listing, raw)
    monkeypatch.setattr(lookup, "_unchanged_since_cached", shortcut)
    return asked, fast, queried


@pytest.mark.parametrize("folder", [SAMPLE_DIR, REAL_LOGS], ids=["sample", "real-logs"])
def test_an_unchanged_folder_is_answered_from_the_cache_as_the_queries_answer_it(folder, tmp_path, monkeypatch):
    """A full scan that finds the folder as the cache holds it (the CLI's second run, the nightly schedule's)
    reuses every cached row without the look-up's queries; the answer is field for field the queries' answer."""
    if not folder.is_dir():
        pytest.skip(f"{folder} not present")
    import pipeline.ingest.parse_cache as parse_cache
    from pipeline.ingest.scan import scan_folder

    raw = tmp_path / "raw"
    shutil.copytree(folder, raw)
    _age(raw)
    ingest_folder_cached(raw, tmp_path / "cache")
    cache, listing = parse_cache.load_cache(tmp_path / "cache", raw), scan_folder(raw)
    asked, fast, queried = _shortcut_and_queries(cache, listing, raw, monkeypatch)
    assert asked == [[]] and fast.reused == queried.reused == len(listing) > 0
    for name in ("to_parse", "hashed", "removed", "positions"):
        assert getattr(fast, name) == getattr(queried, name), name
    assert fast.stale.to_pylist() == queried.stale.to_pylist() == []
    assert _same(fast.kept, queried.kept) and fast.listed.equals(queried.listed)
    assert fast.kept_dependencies.equals(queried.kept_dependencies)
    # a file whose mtime moved (still long ago), or whose size changed (mtime put back), is not answered so
    racy_before = cache.scan_started_ns - parse_cache.RACY_WINDOW_NS
    first, second = [raw / r for r in listing.rel if r.endswith(".json")][:2]
    cached = os.stat(first)
    os.utime(first, ns=(cached.st_atime_ns, cached.st_mtime_ns - 60_000_000_000))
    shortcut = parse_cache.lookup._unchanged_since_cached
    assert shortcut(parse_cache.listing_table(scan_folder(raw)), cache.files, racy_before) is None
    os.utime(first, ns=(cached.st_atime_ns, cached.st_mtime_ns))
    assert shortcut(parse_cache.listing_table(scan_folder(raw)), cache.files, racy_before) == []  # as cached again
    before = os.stat(second)
    second.write_bytes(second.read_bytes() + b" ")
    os.utime(second, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert shortcut(parse_cache.listing_table(scan_folder(raw)), cache.files, racy_before) is None


def test_files_written_just_before_the_caches_scan_are_hashed_and_the_folder_answered_as_unchanged(tmp_path,
                                                                                                 monkeypatch):
    """A full scan right after a save whose scan started within the racy window of some files' mtimes (the
    sensor's tick read a night's drop, then the CLI or the schedule runs): those files are hashed, and when
    their content is the cached one every row is reused without the look-up's queries, as the queries answer
    it; a racy file whose bytes changed under the same size and mtime is parsed again."""
    import pipeline.ingest.parse_cache as parse_cache
    from pipeline.ingest.scan import scan_folder

    raw = tmp_path / "raw"
    shutil.copytree(SAMPLE_DIR, raw)
    _age(raw)
    recent = sorted(raw.rglob("*.json"))[:3]
    for path in recent:  # written "now": within the racy window of the scan that saves the cache
        path.write_bytes(path.read_bytes())
    ingest_folder_cached(raw, tmp_path / "cache")
    cache, listing = parse_cache.load_cache(tmp_path / "cache", raw), scan_folder(raw)
    asked, fast, queried = _shortcut_and_queries(cache, listing, raw, monkeypatch)
    assert sorted(listing.rel[at] for at in asked[0]) == sorted(str(p.relative_to(raw)) for p in recent)
    assert fast.to_parse == queried.to_parse == [] and fast.hashed == queried.hashed == len(recent)
    for name in ("reused", "removed", "positions"):
        assert getattr(fast, name) == getattr(queried, name), name
    assert fast.stale.to_pylist() == queried.stale.to_pylist() == []
    assert _same(fast.kept, queried.kept) and fast.kept_dependencies.equals(queried.kept_dependencies)

    monkeypatch.undo()
    changed = recent[0]
    stat = os.stat(changed)
    text = changed.read_bytes()
    changed.write_bytes(text.replace(b"{", b" ", 1) if text.startswith(b"{") else b" " + text[1:])
    os.utime(changed, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert os.stat(changed).st_size == stat.st_size
    assert parse_cache.look_up(cache, scan_folder(raw), raw).to_parse == [str(changed.relative_to(raw))]


def _fork_servers() -> list[int]:
    """The pids of this process's children that are multiprocessing fork servers (their command line says so)."""
    servers = []
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except (OSError, ValueError):
            continue
        # the parent pid is the second field after the parenthesised command name
        if int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid() and b"multiprocessing.forkserver" in cmdline:
            servers.append(int(entry.name))
    return servers


def test_a_parallel_parse_leaves_no_fork_server_behind(tmp_path):
    """The fork server the parse's workers came from is stopped when the parse ends: idle, it would hold pyarrow,
    pandas and the parsers imported through every later step of the run. A scan that started it for a parse
    that then ran serially stops it too; the next parallel parse starts it again, with the same rows."""
    from pipeline.ingest.parse import start_fork_server

    first = ingest_folder(SAMPLE_DIR, workers=2)
    assert _fork_servers() == []
    start_fork_server()
    # multiprocessing returns as the server's process starts its exec, before /proc shows the new command line
    deadline = time.monotonic() + 10
    while not _fork_servers() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(_fork_servers()) == 1  # the probe sees a running server
    ingest_folder(SAMPLE_DIR, workers=1)
    assert _fork_servers() == []
    again = ingest_folder(SAMPLE_DIR, workers=2)
    assert _fork_servers() == [] and _same(first, again)
