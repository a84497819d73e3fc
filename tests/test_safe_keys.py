"""Safe keys (issue 40, item 3): every metadata value that names a partition folder, a file, a report page or a
label is a bounded key that no two different values share.

- a model key that cannot be one folder name (``..``, ``.``, ``a/b``, ``a\\b``, a leading dot, NUL, 200
  characters) is quarantined ``invalid_metadata:model`` with a detail saying why; the real logs' model keys all
  pass;
- the partition folder of any model string is one component inside the mart, shown to pyarrow and pandas (no
  leading dot or underscore), at most 255 bytes, and different for different models;
- labels of different keys differ."""

from collections import Counter

import pyarrow as pa
import pyarrow.dataset as ds
import pytest
from conftest import SAMPLE_DIR

from pipeline.ingest.keys import framework_label, hw_label, precision_label, spec_label
from pipeline.ingest.metadata import MetadataError, normalize
from pipeline.io.storage import write_mart_partitions

SOURCE = SAMPLE_DIR / "vllm" / "mi355x"
BASE = "qwen3.5-397b-a17b_8k1k_mi355x_fp8_vllm_none_conc{}.json"
INFERENCEX = SAMPLE_DIR / "inferencex" / "agg_dsr1_1k1k_mi355x_fp4_sglang_none_conc{}.json"
LONG = "m" * 200
# model value -> the words the quarantine detail must hold
REFUSED = {
    "..": "starts with '.'",
    ".": "starts with '.'",
    ".hidden": "starts with '.'",
    "a/b": "path separator",
    "a\\b": "path separator",
    "a|b": "'|' or '~'",
    "nul\u0000byte": "control characters",
    LONG: "more than the 120",
    "evil\u202etxt.json": "U+202E",
}
# models kept: Slug-Model is the key slug-model (keys are lowercase), slug.model is another model
KEPT = ["slug.model", "slug-model", "Slug-Model"]
REAL_MODEL_KEYS = ["dsr1", "gptoss", "kimik2.5", "kimik2.7", "qwen3.5", "qwen3.5-397b-a17b", "llama3.3-70b",
                   "deepseek-r1-0528", "minimaxm2.5", "glm5.1", "glm-5"]


# --- keys at normalization ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("value", list(REFUSED))
def test_a_model_key_that_cannot_be_a_folder_name_is_refused_with_why(value):
    with pytest.raises(MetadataError) as caught:
        normalize({"model": value}, "the sidecar")
    assert caught.value.reason_code == "invalid_metadata:model"
    assert REFUSED[value] in caught.value.detail and "from the sidecar" in caught.value.detail


def test_real_model_keys_and_path_free_labels_pass():
    """The model keys the real logs and the InferenceX dashboard use pass unchanged; '/' in a framework or
    spec-decoding name (a label, never a path) is kept; '|' and '~' (the id separators) and 'all' (the pooled
    word) are not."""
    for key in REAL_MODEL_KEYS:
        assert normalize({"model": key}, "the sidecar") == {"model": key}
    assert normalize({"framework": "<b>x</b>", "spec_decoding": "a/b"}, "runs.csv") == {
        "framework": "<b>x</b>", "spec_decoding": "a/b"}
    for field, value in (("framework", "x|y"), ("spec_decoding", "x~y"), ("hw", "x|y"), ("precision", "x|y"),
                         ("framework", "all"), ("spec_decoding", "all")):
        with pytest.raises(MetadataError) as caught:  # "all" is the side ids' word for a pooled key
            normalize({field: value}, "runs.csv")
        assert caught.value.reason_code == f"invalid_metadata:{field}"


def test_the_real_logs_model_keys_all_pass(real_logs):
    """Every model key of a real log's run (every source: file, sidecar, runs.csv, engine path) passes
    normalization: no real run is lost to the key rule."""
    from pipeline.ingest.folder import ingest_folder

    result = ingest_folder(real_logs)
    models = set(result.runs.column("model").to_pylist()) - {None}
    assert {"dsr1", "gptoss", "kimik2.5", "qwen3.5", "minimaxm2.5"} <= models
    reasons = Counter(result.rejects.column("reason_code").to_pylist())
    assert not [code for code in reasons if code.startswith("invalid_metadata")], reasons


def test_labels_of_different_keys_differ():
    """Keys are lowercase; a label upper-cases ASCII letters only, so two keys never share a label ('ß' is not
    'SS')."""
    assert hw_label("ß") != hw_label("ss") and precision_label("ß") != precision_label("ss")
    assert spec_label("ß") != spec_label("ss") and hw_label("mi355x") == "MI355X" and spec_label("none") == "Off"
    assert framework_label("dynamo-trt") != framework_label("dynamo trt-llm")


# --- partition folders -------------------------------------------------------------------------------------------

WRITER_HOSTILE = ["..", ".", ".hidden", "_under", "a/b", "a\\b", "%2F", "a%2Fb", "é" * 120, "/" * 120,
                  "x" * 120, "x" * 119 + "y", "dsr1", "qwen3.5-397b-a17b"]


def test_partition_folders_are_one_visible_bounded_distinct_name():
    """The writer's folder name for any model string (normalization refuses most of these; the writer must be
    safe on its own): one path component, not '.'/'..', no leading '.' or '_' (pyarrow and pandas skip those),
    at most 255 bytes, distinct per model; plain keys keep their own name."""
    from pipeline.io.storage import partition_folder

    names = [partition_folder(model) for model in WRITER_HOSTILE]
    for model, name in zip(WRITER_HOSTILE, names):
        assert "/" not in name and "\\" not in name and name not in (".", ".."), (model, name)
        assert not name.startswith((".", "_")) and len(name.encode()) <= 255, (model, name)
    assert len(set(names)) == len(names)
    assert names[-2:] == ["dsr1", "qwen3.5-397b-a17b"]


def test_written_partitions_stay_inside_and_read_back(tmp_path):
    """Rows of every hostile model written as partitions: every file under the mart folder, and pyarrow's
    dataset reader (as ``read_mart``) returns every row."""
    table = pa.table({"model": WRITER_HOSTILE, "run_date": pa.array([None] * len(WRITER_HOSTILE), pa.date32()),
                      "n": list(range(len(WRITER_HOSTILE)))})
    base = tmp_path / "out" / "runs"
    written = write_mart_partitions(table, base)
    assert len(written) == len(WRITER_HOSTILE)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["runs"]
    for path in written:
        assert path.resolve().is_relative_to(base.resolve()) and path.relative_to(base).parts[1:] == (
            "undated", "part-0.parquet")
    back = ds.dataset(base, format="parquet", partitioning=None).to_table()
    assert sorted(back.column("model").to_pylist()) == sorted(WRITER_HOSTILE)
