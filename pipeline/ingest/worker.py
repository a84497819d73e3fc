"""Worker process of the parallel parse (``pipeline.ingest.parse.parse_files``).

    python -m pipeline.ingest.worker RAW_DIR RELS BLOCK CLAIMS PREFIX

Walks the files named in RELS (POSIX paths relative to RAW_DIR, NUL-separated; sidecars that exist are listed in
``sidecars.rels`` beside RELS when the caller knows them) in blocks of BLOCK files, parses
each block it claims in the folder CLAIMS (``pipeline.ingest.parse.claimed_files``; the other processes take the
rest) exactly as the serial path does, and writes ``PREFIX.{runs,rejects,files}.arrow`` (Arrow IPC). Imports only
the parsers, so it starts in a fraction of a second whatever program started it. Exit status 0, or non-zero with a
traceback on stderr.
"""

import sys
from pathlib import Path

from pipeline.ingest.parse import claimed_files, parse_serial, read_rels, write_result


def main(argv: list[str]) -> int:
    raw_dir, rels_file, block, claims, prefix = Path(argv[0]), Path(argv[1]), int(argv[2]), Path(argv[3]), Path(argv[4])
    rels = read_rels(rels_file) or []
    sidecars = read_rels(rels_file.with_name("sidecars.rels"))
    write_result(parse_serial(raw_dir, claimed_files(rels, block, claims, prefix.name),
                              None if sidecars is None else set(sidecars)), prefix)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
