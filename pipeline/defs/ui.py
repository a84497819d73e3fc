"""Metadata that makes each materialization document itself in the Dagster UI."""


from pathlib import Path
from typing import Any

import dagster as dg
import pyarrow as pa

from pipeline.io.columns import describe
from pipeline.io.storage import markdown_preview, markdown_text, type_name


def _compile_dagster_records() -> None:
    """Make one instance of each Dagster metadata record this module builds, at import.

    Dagster compiles a record class's checked constructor on its first instantiation and keeps a copy of that
    caller's local variables to resolve type names (``dagster_shared.record.JitCheckedNew``). Made first inside
    ``column_schema`` or ``table_metadata``, the table an asset describes (and, one frame up, every Arrow table
    of the asset) would stay alive for the rest of the process, however large. Made here, the copy holds this
    module's names only. ``tests/test_ui_metadata.py`` checks it in a fresh interpreter.
    """
    dg.MetadataValue.table_schema(dg.TableSchema(columns=[dg.TableColumn(name="_", type="string")]))
    dg.MetadataValue.md("")
    dg.MetadataValue.path(".")
    dg.MetadataValue.json({})
    dg.MetadataValue.int(0)
    dg.MetadataValue.float(0.0)
    dg.MetadataValue.text("")


_compile_dagster_records()


def column_schema(table: pa.Table, mart: str | None = None) -> dg.TableSchema:
    """``dagster/column_schema`` of ``table``: every column's name, type and its description with unit from
    ``pipeline.io.columns`` (the same text as docs/marts.md; ``mart`` picks mart-specific notes)."""
    return dg.TableSchema(columns=[dg.TableColumn(name=f.name, type=type_name(f.type),
                                                  description=describe(f.name, mart)) for f in table.schema])


PREVIEW_ROWS = 12  # rows of a table's Markdown preview in the Dagster UI


def table_metadata(table: pa.Table, *, path: Path | None = None, preview_columns: list[str] | None = None,
                   preview_rows: int = PREVIEW_ROWS, mart: str | None = None) -> dict[str, Any]:
    """``dagster/row_count``, ``dagster/column_schema`` (with each column's description and unit), a Markdown
    preview of the first ``preview_rows`` rows and the mart path (when written). ``mart`` names the mart of
    ``pipeline.io.columns.MARTS`` the table is written as, for its mart-specific column notes."""
    metadata: dict[str, Any] = {
        "dagster/row_count": table.num_rows,
        "dagster/column_schema": column_schema(table, mart),
        "preview": dg.MetadataValue.md(markdown_preview(table, preview_columns, preview_rows)),
    }
    if path is not None:
        metadata["path"] = dg.MetadataValue.path(str(path))
    return metadata


def counts_markdown(counts: dict[str, int], key_header: str) -> dg.MetadataValue:
    """A two-column Markdown table of counts, largest first; the header and every key pass ``markdown_text`` (a
    key such as a reason code or a format name may carry text from the raw files)."""
    lines = [f"| {markdown_text(key_header)} | rows |", "|---|---|"]
    lines += [f"| {markdown_text(k)} | {v} |" for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    return dg.MetadataValue.md("\n".join(lines))


def value_counts(column: pa.Array | pa.ChunkedArray) -> dict[str | None, int]:
    """{value: rows} of a column, counted in Arrow (for ``counts_markdown``), never as a Python object per row."""
    import pyarrow.compute as pc

    return {item["values"]: item["counts"] for item in pc.value_counts(column).to_pylist()}
