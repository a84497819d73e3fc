"""Parse-worker tasks that die the way a native crash or an out-of-memory kill does (``os._exit``: no exception,
no cleanup), for the crash tests of the parallel parse (``tests/test_parse_cache.py``). The tests put them in
place of ``pipeline.ingest.parse._parse_block``; a worker process imports this module to run them."""

import os

import pipeline.ingest.parse as parse

POISON = "poison.json"
_read = parse._read


def _read_or_die(path: str, root: str):
    if os.path.basename(path) == POISON:
        os._exit(9)
    return _read(path, root)


def parse_block_or_die(rels: list[str], prefix: str) -> str:
    """The real task, in a worker whose file reader kills the process on reaching a file named ``poison.json``."""
    parse._read = _read_or_die  # in this worker process only
    return parse._parse_block(rels, prefix)


def die_at_once(rels: list[str], prefix: str) -> str:
    """A worker that dies before reading any file."""
    os._exit(3)
