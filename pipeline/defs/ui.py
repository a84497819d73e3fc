"""Metadata that makes each materialization document itself in the Dagster UI."""


from pathlib import Path
from typing import Any

import dagster as dg
import pyarrow as pa

from pipeline.io.storage import markdown_preview, markdown_text, type_name


def table_metadata(table: pa.Table, *, path: Path | None = None, preview_columns: list[str] | None = None,
                   preview_rows: int = 12) -> dict[str, Any]:
    """``dagster/row_count``, ``dagster/column_schema``, a Markdown preview and the mart path (when written)."""
    metadata: dict[str, Any] = {
        "dagster/row_count": table.num_rows,
        "dagster/column_schema": dg.TableSchema(
            columns=[dg.TableColumn(name=f.name, type=type_name(f.type)) for f in table.schema]
        ),
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
