"""A new GPU without code: rows in the reference folder's files (docs/inputs.md, "A new GPU without code") are all
it takes for its runs to be accepted and priced."""

import json
import shutil
from pathlib import Path

import dagster as dg
import duckdb
import pytest

REPO = Path(__file__).resolve().parents[1]
GOOD = REPO / "tests" / "good_inputs" / "good_vllm_h200_conc8.json"


def _reference_with_x900(folder: Path) -> Path:
    reference = folder / "reference"
    shutil.copytree(REPO / "data" / "reference", reference)
    with open(reference / "gpu_reference.csv", "a", encoding="utf-8") as handle:
        handle.write("x900,X900,1.5,2.0,2.5,3.0,6,2026-07\n")  # 6 TB/s: the tok/s/user ceiling's bandwidth
    with open(reference / "gpu_aliases.csv", "a", encoding="utf-8") as handle:
        handle.write("Acme X900 96GB,x900\n")
    with open(reference / "gpu_peak_flops.csv", "a", encoding="utf-8") as handle:
        handle.write('x900,5,fp8,"made-up GPU for a test"\n')
    return reference


def _raw(folder: Path, hw: str) -> Path:
    raw = folder / "raw"
    raw.mkdir()
    shutil.copy(GOOD, raw / "x900_conc8.json")
    meta = json.loads(GOOD.with_name(GOOD.name + ".meta.json").read_text())
    (raw / "x900_conc8.json.meta.json").write_text(json.dumps({**meta, "hw": hw}))
    return raw


def test_a_made_up_gpu_in_a_reference_folder_is_accepted_and_priced(tmp_path, monkeypatch):
    from pipeline.__main__ import materialize_all
    from pipeline.io.storage import read_mart

    reference = _reference_with_x900(tmp_path)
    monkeypatch.setenv("PIPELINE_REFERENCE_DIR", str(reference))
    monkeypatch.setenv("PIPELINE_RAW_DIR", str(_raw(tmp_path, "Acme X900 96GB")))  # the alias, as a driver prints it
    monkeypatch.setenv("PIPELINE_OUT_DIR", str(tmp_path / "marts"))
    monkeypatch.setenv("PIPELINE_DB_PATH", str(tmp_path / "w.duckdb"))
    assert materialize_all(dg.DagsterInstance.ephemeral()).success
    runs = read_mart(tmp_path / "marts", "runs").to_pylist()
    assert [(r["hw"], r["num_gpus"], r["power_kw"]) for r in runs] == [("x900", 8, 1.5)]
    # the file's 1359.6 tok/s over TP 8 = 169.95 tok/s/GPU; $/M tok = $/GPU-h / (tok/s/GPU × 3600 / 1e6)
    assert runs[0]["tput_per_gpu"] == pytest.approx(169.95, rel=1e-12)
    assert runs[0]["cost_per_mtok_hyperscaler"] == pytest.approx(2.0 / (169.95 * 0.0036), rel=1e-12)
    assert runs[0]["cost_per_mtok_neocloud"] == pytest.approx(2.5 / (169.95 * 0.0036), rel=1e-12)
    assert runs[0]["cost_per_mtok_rental"] == pytest.approx(3.0 / (169.95 * 0.0036), rel=1e-12)
    assert runs[0]["tok_s_per_mw"] == pytest.approx(169.95 * 1000 / 1.5, rel=1e-12)


def test_without_the_reference_rows_the_same_run_is_unknown_hw(tmp_path, monkeypatch):
    from pipeline.__main__ import materialize_all

    monkeypatch.delenv("PIPELINE_REFERENCE_DIR", raising=False)
    monkeypatch.setenv("PIPELINE_RAW_DIR", str(_raw(tmp_path, "Acme X900 96GB")))
    monkeypatch.setenv("PIPELINE_OUT_DIR", str(tmp_path / "marts"))
    monkeypatch.setenv("PIPELINE_DB_PATH", str(tmp_path / "w.duckdb"))
    result = materialize_all(dg.DagsterInstance.ephemeral())
    # its only run quarantined, the run publishes nothing (no accepted run): the warehouse's quarantine says why
    assert not result.success and not (tmp_path / "marts" / "current").exists()
    with duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True) as conn:
        codes = conn.execute("select reason_code from quarantine where source_file = 'x900_conc8.json'").fetchall()
    assert codes == [("unknown_hw",)]


def test_the_reference_table_is_the_one_list_of_gpus_and_their_order(tmp_path, monkeypatch):
    """No GPU list in code: a GPU added as a row is a key the parse recognizes (longest match first, so ``x9000``
    is not read as ``x900``), and comparisons list GPUs in the table's row order; a GPU removed from the table is
    no longer a key."""
    from pipeline.frontiers.sides import _gpu_rank
    from pipeline.ingest.keys import gpu_display_order, gpu_keys, normalize_hw

    reference = tmp_path / "reference"
    shutil.copytree(REPO / "data" / "reference", reference)
    header, *rows = (reference / "gpu_reference.csv").read_text(encoding="utf-8").splitlines()
    rows = [r for r in rows if not r.startswith("h100,")]  # dropped
    rows.insert(0, "x9000,X9000,1.5,2.0,2.5,3.0,2026-07")  # listed first
    rows.append("x900,X900,1.5,2.0,2.5,3.0,2026-07")
    (reference / "gpu_reference.csv").write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    monkeypatch.setenv("PIPELINE_REFERENCE_DIR", str(reference))
    assert gpu_display_order()[:2] == ("x9000", "h200") and gpu_display_order()[-1] == "x900"
    assert "h100" not in gpu_keys() and gpu_keys().index("x9000") < gpu_keys().index("x900")
    assert normalize_hw("x9000") == "x9000" and normalize_hw("x900") == "x900"
    assert sorted(["mi355x", "x900", "h200", "x9000"], key=_gpu_rank) == ["x9000", "h200", "mi355x", "x900"]
