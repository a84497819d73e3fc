"""Every format gives interactivity where it gives TPOT: ``*_intvty`` is set exactly when ``*_tpot_s`` is, and
equals 1 / TPOT (s) to the last few bits (ms files are computed from their own ms value, so they may differ from
1 / tpot_s in the last bit, never more)."""

import math

import pytest
from conftest import REAL_LOGS, REPO, SAMPLE_DIR

from pipeline.ingest.folder import ingest_folder
from pipeline.ingest.schema import INTVTY_STATS

FOLDERS = [SAMPLE_DIR, REPO / "tests" / "fixtures", REAL_LOGS]


@pytest.mark.parametrize("folder", FOLDERS, ids=["sample", "fixtures", "real-logs"])
def test_interactivity_present_wherever_tpot_is(folder):
    if not folder.is_dir():
        pytest.skip(f"{folder} not found")
    runs = ingest_folder(folder).runs.to_pylist()
    assert runs
    formats_checked = set()
    for run in runs:
        for stat in INTVTY_STATS:
            tpot, intvty = run[f"{stat}_tpot_s"], run[f"{stat}_intvty"]
            where = (run["source_file"], run["source_format"], stat)
            if tpot is None or tpot == 0:
                assert intvty is None, where
                continue
            assert intvty is not None, where
            assert math.isclose(intvty, 1.0 / tpot, rel_tol=4e-16), where
            formats_checked.add(run["source_format"])
    assert formats_checked
