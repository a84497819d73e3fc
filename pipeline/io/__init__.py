"""Shared I/O for every stage: where things live (``paths``) and how tables are stored (``storage``: DuckDB
tables, atomic Parquet and Arrow files, date-partitioned marts, content hashes, Markdown previews)."""
