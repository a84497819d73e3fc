"""Reference data of the metrics stage: the GPU reference table and the price books (cost scenarios)."""

import dagster as dg
from dagster_duckdb import DuckDBResource
from pydantic import Field

from pipeline.defs.resources import WAREHOUSE_POOL
from pipeline.defs.ui import table_metadata
from pipeline.io.paths import reference_dir
from pipeline.io.storage import write_table
from pipeline.metrics.reference import (
    build_price_books,
    load_gpu_reference,
    load_overrides_csv,
)

GPU_REFERENCE_KEY = dg.AssetKey(["metrics", "gpu_reference"])
PRICE_BOOKS_KEY = dg.AssetKey(["metrics", "price_books"])


@dg.asset(key=GPU_REFERENCE_KEY, group_name="metrics", kinds={"csv", "duckdb"}, pool=WAREHOUSE_POOL)
def gpu_reference(warehouse: DuckDBResource) -> dg.MaterializeResult:
    """GPU reference: one row per GPU key (h100 … mi355x) with all-in ``power_kw`` (kW per GPU) and
    ``{hyperscaler,neocloud,rental}_usd_per_gpu_hour`` ($ per GPU-hour), from
    ``data/reference/gpu_reference.csv`` (docs/metrics.md, figures of the seed pages, version 2026-07)."""
    table = load_gpu_reference()
    with warehouse.get_connection() as conn:
        write_table(conn, "gpu_reference", table)
    return dg.MaterializeResult(metadata={**table_metadata(table),
                                          "source": dg.MetadataValue.path(str(reference_dir() / "gpu_reference.csv"))})


class PriceOverride(dg.Config):
    """One cell change of a cost scenario: GPU ``hw`` in book ``price_book`` gets these values ($/GPU-h, kW)."""

    price_book: str
    hw: str
    power_kw: float | None = None
    hyperscaler_usd_per_gpu_hour: float | None = None
    neocloud_usd_per_gpu_hour: float | None = None
    rental_usd_per_gpu_hour: float | None = None


class PriceBooksConfig(dg.Config):
    """Run config of ``metrics/price_books``: overrides on top of ``data/reference/overrides.csv``."""

    overrides: list[PriceOverride] = Field(default_factory=list)


@dg.asset(key=PRICE_BOOKS_KEY, group_name="metrics", kinds={"csv", "duckdb"}, deps=[GPU_REFERENCE_KEY],
          pool=WAREHOUSE_POOL)
def price_books(config: PriceBooksConfig, warehouse: DuckDBResource) -> dg.MaterializeResult:
    """Cost scenarios: one row per (price_book, hw) with ``power_kw`` and the three $/GPU-hour tiers.

    ``inferencex-seed`` is the GPU reference unchanged; every other book is the reference with the overrides of
    ``data/reference/overrides.csv`` (optional; columns price_book, hw and any of power_kw,
    {hyperscaler,neocloud,rental}_usd_per_gpu_hour) and of this asset's run config applied. Each book carries a
    ``price_book_version`` (reference version + hash of its overrides) that every downstream mart records.
    """
    overrides = load_overrides_csv(reference_dir() / "overrides.csv")
    overrides += [{**o.model_dump(), "_source": f"run config override {i}"} for i, o in enumerate(config.overrides)]
    with warehouse.get_connection() as conn:
        reference = conn.sql("select * from gpu_reference").to_arrow_table()
        table = build_price_books(reference, overrides)
        write_table(conn, "price_books", table)
    books = sorted(set(table.column("price_book").to_pylist()))
    return dg.MaterializeResult(metadata={**table_metadata(table, preview_rows=20), "price_books": ", ".join(books)})
