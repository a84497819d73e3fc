"""The hostile corpus in one run: over a thousand seeded mutants of the real logs and of the sidecars,
``runs.csv`` files and power logs that describe sample runs, plus links out of the folder, FIFOs, a device, a
2 GiB sparse power log, names that are not UTF-8, and hostile model names (``tests/fuzz_corpus.py``), beside
untouched copies of the same files. The whole pipeline runs over it as a user runs it (``python -m pipeline
run``) and must publish: no crash, no hang, the good runs' numbers exactly those of a run without the corpus, no
mutant that is not one true run accepted, no accepted mutant whose headline numbers moved from its seed's, no
byte of a file outside the folder in any output, no output outside the mart folder, and memory ≤ 2 GiB."""

import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import REPO, SAMPLE_DIR
from fuzz_corpus import SECRET, build, judge

from pipeline.io.storage import read_mart

MEMORY_LIMIT_KIB = 2 * 1024 * 1024


def run_clis(*jobs: tuple[Path, Path]) -> list[subprocess.CompletedProcess]:
    """``python -m pipeline run`` over each ``(raw, out)`` as a user runs it, marts, warehouse and parse cache
    under ``out``, all started at once (each run has its own folders, so they share nothing) and waited for;
    their results in the order given."""
    procs = []
    for raw, out in jobs:
        env = dict(os.environ, PIPELINE_RAW_DIR=str(raw), PIPELINE_OUT_DIR=str(out / "marts"),
                   PIPELINE_DB_PATH=str(out / "warehouse.duckdb"), PIPELINE_CACHE_DIR=str(out / "cache"))
        env.pop("DAGSTER_HOME", None)
        command = [sys.executable, "-m", "pipeline", "run"]
        procs.append((command, subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE,
                                                stderr=subprocess.PIPE, text=True)))
    done = []
    for command, proc in procs:
        try:
            stdout, stderr = proc.communicate(timeout=900)
        finally:
            if proc.poll() is None:
                proc.kill()
        done.append(subprocess.CompletedProcess(command, proc.returncode, stdout, stderr))
    return done


def secret_in(path: Path) -> bool:
    """Whether any string of the file holds ``SECRET``: Parquet is read and its string columns searched (its pages
    may be compressed), any other file searched as bytes."""
    if path.suffix == ".parquet":
        table = pq.read_table(path)
        return any(SECRET in (value or "") for field in table.schema
                   if pa.types.is_string(field.type) or pa.types.is_large_string(field.type)
                   for value in table[field.name].to_pylist())
    return SECRET.encode() in path.read_bytes()


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    real_logs = REPO.parent / "shared" / "real-logs"
    if not real_logs.is_dir():
        pytest.skip(f"real logs not found at {real_logs} (clone with ../shared beside the repo)")
    root = tmp_path_factory.mktemp("fuzz")
    corpus = build(root / "hostile", real_logs, SAMPLE_DIR)
    clean_raw = root / "clean"
    for good in corpus.good:  # the same good files at the same relative paths, nothing else
        shutil.copytree(corpus.raw / good, clean_raw / good, symlinks=True)
    clean, hostile = run_clis((clean_raw, root / "clean-out"), (corpus.raw, root / "hostile-out"))
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # the largest child: either run or a worker
    return corpus, clean, hostile, root / "clean-out" / "marts", root / "hostile-out" / "marts", peak_kib


@pytest.mark.long(2)
def test_the_hostile_corpus_is_published_without_harm(runs):
    corpus, clean, hostile, clean_out, hostile_out, peak_kib = runs
    assert len(corpus.mutants) >= 1000
    assert clean.returncode == 0, clean.stderr[-2000:]
    assert hostile.returncode == 0, (hostile.stdout[-1500:], hostile.stderr[-1500:])
    clean_runs = read_mart(clean_out, "runs").to_pylist()
    published = read_mart(hostile_out, "runs").to_pylist()
    assert clean_runs, "the clean run accepted nothing"
    verdict = judge(corpus, clean_runs, published, read_mart(hostile_out, "quarantine").to_pylist(), hostile_out,
                    secret_in)
    # the good runs: every one accepted alone is accepted beside the corpus, with the same numbers
    assert not verdict.good_lost and not verdict.good_changed, (verdict.good_lost[:5], verdict.good_changed[:5])
    # no mutant that cannot be one true run is accepted; an accepted value mutant stays near its seed
    assert not verdict.wrongly_accepted, verdict.wrongly_accepted[:10]
    assert not verdict.moved, verdict.moved[:10]
    # nothing outside the raw folder reached an output, and no output lies outside the mart folder
    assert not verdict.leaked and not verdict.outside, (verdict.leaked[:5], verdict.outside[:5])
    assert SECRET not in hostile.stdout + hostile.stderr
    assert sorted(p.name for p in hostile_out.iterdir() if not p.name.startswith(".")) == \
        sorted(p.name for p in clean_out.iterdir() if not p.name.startswith("."))
    # every frontier point is a published run, and the ledger counts every published run
    assert {r["run_id"] for r in read_mart(hostile_out, "frontiers").to_pylist()} <= {r["run_id"] for r in published}
    assert sum(r["accepted_rows"] for r in read_mart(hostile_out, "ingest_ledger").to_pylist()) == len(published)
    assert peak_kib <= MEMORY_LIMIT_KIB, f"peak resident memory {peak_kib / 1024:.0f} MiB"
