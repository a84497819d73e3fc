"""Cost scenarios (price books) and speculative-decoding acceptance columns."""

import pyarrow as pa
import pytest
from conftest import unrestricted

from pipeline.comparisons.compare import compare
from pipeline.frontiers.points import build_frontiers, frontiers_by_side
from pipeline.frontiers.sides import enumerate_comparisons
from pipeline.ingest.parsers import read_file
from pipeline.metrics.reference import (
    DEFAULT_PRICE_BOOK,
    PRICE_BOOK_SCHEMA,
    REFERENCE_SCHEMA,
    build_price_books,
    load_gpu_reference,
    load_overrides_csv,
)

COST_COLUMNS = {f"{prefix}cost_per_mtok_{tier}" for prefix in ("", "output_", "input_")
                for tier in ("hyperscaler", "neocloud", "rental")} | {"implied_cost_per_mtok_hyperscaler"}


def test_build_price_books_applies_overrides_and_versions():
    books = build_price_books(load_gpu_reference(), [
        {"price_book": "cheap", "hw": "MI355X", "hyperscaler_usd_per_gpu_hour": 1.0, "_source": "test"}])
    rows = {(r["price_book"], r["hw"]): r for r in books.to_pylist()}
    assert rows[(DEFAULT_PRICE_BOOK, "mi355x")]["hyperscaler_usd_per_gpu_hour"] == 1.48
    assert rows[("cheap", "mi355x")]["hyperscaler_usd_per_gpu_hour"] == 1.0
    assert rows[("cheap", "mi355x")]["neocloud_usd_per_gpu_hour"] == 1.90  # blank cells inherit
    assert rows[("cheap", "h200")] == {**rows[(DEFAULT_PRICE_BOOK, "h200")], "price_book": "cheap",
                                       "price_book_version": rows[("cheap", "h200")]["price_book_version"]}
    assert rows[(DEFAULT_PRICE_BOOK, "h200")]["price_book_version"] == "2026-07"
    assert rows[("cheap", "h200")]["price_book_version"].startswith("2026-07+")


@pytest.mark.parametrize("override, message", [
    ({"price_book": "x", "hw": "rtx4090", "power_kw": 1.0}, "field hw 'rtx4090'"),
    ({"price_book": "x", "hw": "h200", "power_kw": -1.0}, "field power_kw must be > 0"),
    ({"price_book": "", "hw": "h200", "power_kw": 1.0}, "field price_book"),
])
def test_bad_overrides_name_the_field(override, message):
    with pytest.raises(ValueError, match=message):
        build_price_books(load_gpu_reference(), [{**override, "_source": "overrides.csv line 2"}])



def test_overrides_csv_rows_carry_their_line_and_blank_cells_are_null(tmp_path):
    path = tmp_path / "overrides.csv"
    assert load_overrides_csv(path) == []  # no file: no overrides
    path.write_text("price_book,hw,power_kw,hyperscaler_usd_per_gpu_hour,neocloud_usd_per_gpu_hour,"
                    "rental_usd_per_gpu_hour\n"
                    "cheap,h200,,1.5,,\n"
                    "fast,B200,2,,,\n"
                    ",h200,,,,3\n")
    blank = dict.fromkeys(("power_kw", "hyperscaler_usd_per_gpu_hour", "neocloud_usd_per_gpu_hour",
                           "rental_usd_per_gpu_hour"))
    # the header is line 1; an empty cell, text or number, reads as null
    assert load_overrides_csv(path) == [
        {"price_book": "cheap", "hw": "h200", **blank, "hyperscaler_usd_per_gpu_hour": 1.5,
         "_source": "overrides.csv line 2"},
        {"price_book": "fast", "hw": "B200", **blank, "power_kw": 2.0, "_source": "overrides.csv line 3"},
        {"price_book": None, "hw": "h200", **blank, "rental_usd_per_gpu_hour": 3.0,
         "_source": "overrides.csv line 4"},
    ]
    # read as float64 even when written as a whole number: "2" is 2.0 (a book's version hashes the text "2.0")
    assert type(load_overrides_csv(path)[1]["power_kw"]) is float


REFERENCE_HEADER = ("hw,display_name,power_kw,hyperscaler_usd_per_gpu_hour,neocloud_usd_per_gpu_hour,"
                    "rental_usd_per_gpu_hour,mem_bandwidth_tb_s,reference_version\n")


def test_the_gpu_reference_is_read_from_the_path_given_typed_as_its_schema(tmp_path):
    path = tmp_path / "gpus.csv"
    # whole numbers and a version of digits: without the schema CSV inference would make them integers
    path.write_text(REFERENCE_HEADER + "h200,H200,1,2,3,0.5,4.8,2026\n")
    table = load_gpu_reference(path)
    assert table.schema == REFERENCE_SCHEMA  # mem_bandwidth_tb_s is not part of it
    assert table.to_pylist() == [{"hw": "h200", "display_name": "H200", "power_kw": 1.0,
                                  "hyperscaler_usd_per_gpu_hour": 2.0, "neocloud_usd_per_gpu_hour": 3.0,
                                  "rental_usd_per_gpu_hour": 0.5, "reference_version": "2026"}]


def test_gpu_reference_errors_name_the_file_and_the_gpu(tmp_path):
    path = tmp_path / "gpus.csv"

    def error(text):
        path.write_text(text)
        with pytest.raises(ValueError) as caught:
            load_gpu_reference(path)
        return str(caught.value)

    assert error("hw,power_kw,hyperscaler_usd_per_gpu_hour,neocloud_usd_per_gpu_hour,reference_version\n"
                 "h200,1,2,3,2026-07\n") == f"{path}: missing columns ['display_name', 'rental_usd_per_gpu_hour']"
    assert error(REFERENCE_HEADER + "h200,H200,1,2,3,4,4.8,2026-07\nh200,H200,1,2,3,4,4.8,2026-07\n") == \
        f"{path}: duplicate hw keys"
    assert error(REFERENCE_HEADER + "h200,H200,0,2,3,4,4.8,2026-07\n") == \
        f"{path}: h200: power_kw must be > 0, got 0.0"
    assert error(REFERENCE_HEADER + "b200,B200,1,2,,4,8,2026-07\n") == \
        f"{path}: b200: neocloud_usd_per_gpu_hour must be > 0, got None"


def _two_gpu_reference():
    return pa.Table.from_pylist([
        {"hw": hw, "display_name": hw.upper(), "power_kw": 1.0, "hyperscaler_usd_per_gpu_hour": 2.0,
         "neocloud_usd_per_gpu_hour": 3.0, "rental_usd_per_gpu_hour": 4.0, "reference_version": "2026-07"}
        for hw in ("h200", "b200")], schema=REFERENCE_SCHEMA)


def test_override_errors_name_where_they_come_from():
    def error(override):
        with pytest.raises(ValueError) as caught:
            build_price_books(_two_gpu_reference(), [override])
        return str(caught.value)

    # an override without a _source came from the run config; the known keys are listed sorted
    assert error({"price_book": "x", "hw": "rtx4090"}) == \
        "run config: field hw 'rtx4090' is not in the GPU reference (b200, h200)"
    assert error({"price_book": "x"}) == "run config: field hw '' is not in the GPU reference (b200, h200)"
    # 0 $/GPU-h or 0 kW is no price: refused like a negative one
    assert error({"price_book": "x", "hw": "h200", "power_kw": 0.0, "_source": "overrides.csv line 3"}) == \
        "overrides.csv line 3: field power_kw must be > 0, got 0.0"


def test_a_books_version_is_the_reference_version_and_a_hash_of_its_overrides():
    import hashlib

    books = build_price_books(_two_gpu_reference(), [
        {"price_book": "cheap", "hw": "h200", "hyperscaler_usd_per_gpu_hour": 1.5},
        {"price_book": "cheap", "hw": "B200", "power_kw": 2.0},
        {"price_book": "same", "hw": "h200"},  # every cell blank: the default prices under a new name
    ])
    assert books.schema == PRICE_BOOK_SCHEMA
    versions = {r["price_book"]: r["price_book_version"] for r in books.to_pylist()}
    # the hash (sha256, 8 hex digits) of the applied "hw.column=value" entries, sorted, joined by ";"
    applied = "b200.power_kw=2.0;h200.hyperscaler_usd_per_gpu_hour=1.5"
    assert versions == {DEFAULT_PRICE_BOOK: "2026-07",
                        "cheap": "2026-07+" + hashlib.sha256(applied.encode()).hexdigest()[:8],
                        "same": "2026-07+" + hashlib.sha256(b"").hexdigest()[:8]}
    assert versions["same"] == "2026-07+e3b0c442"  # sha256 of nothing, as published
    rows = {(r["price_book"], r["hw"]): r for r in books.to_pylist()}
    assert (rows[("cheap", "b200")]["power_kw"], rows[("cheap", "h200")]["hyperscaler_usd_per_gpu_hour"]) == (2.0, 1.5)


def test_price_override_changes_costs_and_nothing_else(sample_run_two_books):
    run = sample_run_two_books  # the override: mi355x at 1.0 / 1.2 / 1.5 $/GPU-h in book "mi355x-discount"
    assert run.result.success
    rows = unrestricted(run.mart("comparisons")).to_pylist()
    key = lambda r: (r["comparison_id"], r["target_index"], r["side"])  # noqa: E731
    seed = {key(r): r for r in rows if r["price_book"] == DEFAULT_PRICE_BOOK}
    other = {key(r): r for r in rows if r["price_book"] == "mi355x-discount"}
    assert seed.keys() == other.keys() and seed
    changed = 0
    for k, a in seed.items():
        b = other[k]
        differing = {c for c in a if a[c] != b[c]} - {"price_book", "price_book_version"}
        # costs move (and the sentences quoting them); targets, throughput, tok/s/MW, concurrency do not
        assert differing <= COST_COLUMNS | {"cost_sentence"}, (k, differing)
        if a["hw"] == "mi355x":
            # every cost column (total, output, input × three tiers) scales by the tier's price ratio
            for tier, seed_price, new_price in (("hyperscaler", 1.48, 1.0), ("neocloud", 1.90, 1.2),
                                                ("rental", 2.10, 1.5)):
                for prefix in ("", "output_", "input_", *(("implied_",) if tier == "hyperscaler" else ())):
                    column = f"{prefix}cost_per_mtok_{tier}"
                    assert a[column] is not None and b[column] is not None, column
                    assert a[column] == pytest.approx(b[column] * seed_price / new_price), column
            changed += 1
        else:
            assert not differing & COST_COLUMNS
    assert changed > 0


def _vllm(**extra):
    doc = {"date": "20260701-101500", "model_id": "m", "num_prompts": 8, "duration": 10.0, "completed": 8,
           "total_token_throughput": 100.0, "output_throughput": 50.0, "median_tpot_ms": 10.0, **extra}
    import json

    (row, fmt, run), = read_file("r.json", json.dumps(doc).encode()).runs
    return fmt, run.values


def test_vllm_acceptance_percent_becomes_fraction():
    _, v = _vllm(spec_decode_acceptance_rate=44.45, spec_decode_acceptance_length=2.33)
    assert (v["spec_accept_length"], v["spec_accept_rate"]) == (2.33, pytest.approx(0.4445))
    assert v["spec_metric_source"] == "vllm:spec_decode_counters"


def test_acceptance_metrics_without_a_named_method_are_not_called_none(tmp_path):
    import json

    from pipeline.ingest.folder import ingest_folder
    from pipeline.validate.rules import check_run, rules

    doc = {"date": "20260701-101500", "backend": "vllm", "model_id": "m", "num_prompts": 8, "duration": 10.0,
           "completed": 8, "max_concurrency": 8, "total_token_throughput": 100.0, "output_throughput": 50.0, "median_tpot_ms": 10.0,
           "spec_decode_acceptance_length": 2.4}
    (tmp_path / "r.json").write_text(json.dumps(doc))
    (tmp_path / "r.json.meta.json").write_text(json.dumps({"hw": "h200", "precision": "fp8", "tp": 8, "isl": 1024,
                                                           "osl": 1024}))
    (run,) = ingest_folder(tmp_path).runs.to_pylist()
    assert run["spec_decoding"] is None and "spec_decoding=unknown" in run["metadata_sources"]
    assert check_run(run, rules(["h200"]))[0] == "missing_metadata:spec_decoding"


def test_trtllm_serve_decoded_tokens_per_iter():
    fmt, v = _vllm(avg_decoded_tokens_per_iter=2.6, user_throughput=80.0)
    assert fmt == "trtllm_serve"
    assert v["spec_accept_length"] == 2.6 and v["spec_metric_source"] == "trtllm_serve:avg_decoded_tokens_per_iter"


def test_sglang_accept_length_and_rate_from_steps():
    import json

    line = {"backend": "sglang", "duration": 10.0, "completed": 8, "total_throughput": 100.0,
            "output_throughput": 50.0, "median_tpot_ms": 10.0, "accept_length": 2.5,
            "server_info": {"model_path": "m", "tp_size": 8, "speculative_num_steps": 3, "speculative_eagle_topk": 1}}
    (_, _, run), = read_file("s.jsonl", (json.dumps(line) + "\n").encode()).runs
    assert run.values["spec_accept_length"] == 2.5 and run.values["spec_accept_rate"] == pytest.approx(0.5)
    assert run.values["spec_metric_source"] == "sglang:avg_spec_accept_length"


def test_trtllm_bench_decoding_stats():
    import json

    doc = {"engine": {"model": "m"}, "world_info": {"tp_size": 8},
           "performance": {"system_total_throughput_tok_s": 100.0},
           "decoding_stats": {"mode": "MTP", "acceptance_length_percentiles": {"average": 2.8},
                              "draft_acceptance_rate_percentiles": {"average": 0.6}}}
    (_, _, run), = read_file("t.json", json.dumps(doc).encode()).runs
    assert (run.values["spec_accept_length"], run.values["spec_accept_rate"]) == (2.8, 0.6)
    assert run.fallback_meta["spec_decoding"] == "MTP"


def _run(i, spec, framework, x, y):
    return {"run_id": f"r{i}", "price_book": "b", "price_book_version": "v", "spec_metric_source": None,
            "measured_tok_s_per_mw": None, "source_file": f"f{i}", "model": "m", "isl": 1, "osl": 1,
            "hw": "b200", "precision": "fp4", "spec_decoding": spec, "framework": framework, "conc": 4,
            "median_intvty": x, "x_intvty": x, "benchmark_type": "fixed_seq", "tput_per_gpu": y,
            "output_tput_per_gpu": y, "input_tput_per_gpu": 0.0,
            "cost_per_mtok_hyperscaler": 1 / y, "cost_per_mtok_neocloud": 1 / y, "cost_per_mtok_rental": 1 / y,
            **{f"output_cost_per_mtok_{t}": 1 / y for t in ("hyperscaler", "neocloud", "rental")},
            **{f"input_cost_per_mtok_{t}": None for t in ("hyperscaler", "neocloud", "rental")},
            "tok_s_per_mw": y, "length_off_nominal": False, "run_date": None, "line_id": f"line{i}",
            "sweep_id": "undated"}


@pytest.mark.parametrize("frameworks, expected", [(("sglang", "dynamo-sglang"), False), (("sglang", "trtllm"), True)])
def test_cross_engine_flag(frameworks, expected):
    runs = [_run(0, "mtp", frameworks[0], 10, 900), _run(1, "mtp", frameworks[1], 30, 500),
            _run(2, "none", "sglang", 10, 700), _run(3, "none", "sglang", 30, 300)]
    comparison = next(c for c in enumerate_comparisons(runs) if c.kind == "spec_decoding")
    table = build_frontiers(runs, [comparison.a, comparison.b])
    rows = compare(comparison, frontiers_by_side(table.to_pylist()))
    assert {r["cross_engine"] for r in rows} == {expected}
