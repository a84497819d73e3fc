"""Shared fixtures: paths to the bundled sample and the real logs, and a helper that runs the whole Dagster job
against a temporary warehouse and mart folder."""

import json
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pytest

from pipeline.io.storage import read_mart

REPO = Path(__file__).resolve().parents[1]
SAMPLE_DIR = REPO / "data" / "sample"
REAL_LOGS = REPO.parent / "shared" / "real-logs"


@pytest.fixture
def real_logs() -> Path:
    if not REAL_LOGS.is_dir():
        pytest.skip(f"real logs not found at {REAL_LOGS} (clone with ../shared beside the repo)")
    return REAL_LOGS


def load_json(path: Path):
    """The file's own numbers, read with the standard library (independent of our parsers)."""
    return json.loads(path.read_text(encoding="utf-8"))


@dataclass
class StagedResult:
    """The stage runs of ``materialize_all`` seen as one result."""

    results: list

    @property
    def success(self) -> bool:
        from pipeline.__main__ import STAGES

        return len(self.results) == len(STAGES) and all(r.success for r in self.results)

    @property
    def all_events(self) -> list:
        return [e for r in self.results for e in r.all_events]


@dataclass
class PipelineRun:
    result: StagedResult
    out_dir: Path
    db_path: Path

    def mart(self, name: str):
        return read_mart(self.out_dir, name)

    def check_results(self) -> dict[str, bool]:
        return {
            e.event_specific_data.check_name: e.event_specific_data.passed
            for e in self.result.all_events
            if e.event_type_value == "ASSET_CHECK_EVALUATION"
        }


@pytest.fixture
def run_pipeline(tmp_path, monkeypatch):
    """Callable: materialize everything over ``raw_dir`` (all stages, all partitions) with a tmp DuckDB and marts."""

    def run(raw_dir: Path, run_config: dict | None = None, instance: dg.DagsterInstance | None = None) -> PipelineRun:
        out_dir, db_path = tmp_path / "marts", tmp_path / "warehouse.duckdb"
        monkeypatch.setenv("PIPELINE_RAW_DIR", str(raw_dir))
        monkeypatch.setenv("PIPELINE_OUT_DIR", str(out_dir))
        monkeypatch.setenv("PIPELINE_DB_PATH", str(db_path))
        from pipeline.__main__ import materialize_all

        results = materialize_all(instance or dg.DagsterInstance.ephemeral(), run_config)
        return PipelineRun(StagedResult(results), out_dir, db_path)

    return run
