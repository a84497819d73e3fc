"""Worker process of the parallel parse (``pipeline.ingest.ingest_paths``).

    python -m pipeline.parse_worker RAW_DIR PREFIX

Parses the files named in ``PREFIX.rels`` (POSIX paths relative to RAW_DIR, NUL-separated) exactly as the serial
path does and writes ``PREFIX.{runs,rejects,files}.arrow`` (Arrow IPC). Imports only the parsers, so it starts in
a fraction of a second whatever program started it. Exit status 0, or non-zero with a traceback on stderr.
"""

import sys
from pathlib import Path

from pipeline.ingest import _ingest_files, write_result


def main(argv: list[str]) -> int:
    raw_dir, prefix = Path(argv[0]), Path(argv[1])
    text = prefix.with_suffix(".rels").read_bytes().decode("utf-8", "surrogateescape")
    rels = text.split("\0") if text else []
    write_result(_ingest_files(raw_dir, rels), prefix)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
