"""Two properties of a decoded JSON document that ``orjson`` does not report: how deep it nests and whether an
object gave a key twice.

A key given twice in one object is read by every JSON library as its last value, silently: a file that says
``"total_token_throughput": 1359.6`` and later ``"total_token_throughput": 135960.0`` is read as the second. Such a
file is not trusted (``duplicate_key:<key>``). ``orjson`` keeps no record of it, so the check is done in two
steps: a cheap count (key tokens in the text against keys in the decoded document; each repeated key makes the
decoded count one smaller; ``key_tokens_at_least``) and, only when the counts differ, an exact parse with the standard library's
``object_pairs_hook`` that names the repeated keys. Nesting deeper than ``MAX_DEPTH`` is refused (``too_deep``):
no run format nests beyond a handful of levels, and deep documents exhaust the recursion of the encoders the
pipeline hashes runs with.
"""

from __future__ import annotations

import json
import re
from typing import Any

# Deepest nesting accepted (objects and arrays, the top level being depth 1). Run formats nest at most ~6 levels.
MAX_DEPTH = 64
# Every object key ends with a quote, JSON whitespace (space, tab, CR, LF) and a colon. Counting ``":`` plus
# ``"<whitespace>:`` therefore counts every key token of the text, and more when a string value holds such a
# sequence; never fewer. Two C-speed scans of the text, no parse.
_QUOTE_SPACE_COLON = re.compile(r'"[ \t\r\n]+:')


def key_tokens_at_least(text: str) -> int:
    """A count of the object keys written in the JSON ``text`` that is never smaller than the true count
    (duplicates included), and equal to it unless a string value contains a quote followed by a colon."""
    return text.count('":') + len(_QUOTE_SPACE_COLON.findall(text))


def depth_and_keys(doc: Any) -> tuple[int, int]:
    """(nesting depth, number of object keys) of a decoded document, without recursion.

    Args:
        doc: a value as ``json.loads``/``orjson.loads`` return it.
    Returns:
        depth: 0 for a scalar, 1 for a flat object or array, +1 per level of containers; keys: summed over every
        object at every level.
    """
    depth, keys = 0, 0
    stack = [(doc, 1)]
    while stack:
        value, level = stack.pop()
        if type(value) is dict:
            keys += len(value)
            children = value.values()
        elif type(value) is list:
            children = value
        else:
            continue
        if level > depth:
            depth = level
        stack.extend((child, level + 1) for child in children if type(child) is dict or type(child) is list)
    return depth, keys


def duplicate_keys(text: str, doc: Any, decoded_keys: int | None = None) -> list[str]:
    """The keys that appear twice in one object of the JSON ``text`` (whose decoded value is ``doc``), sorted;
    empty when none does.

    Args:
        text: the JSON text (a whole document, or one JSON Lines line).
        doc: ``text`` decoded.
        decoded_keys: ``depth_and_keys(doc)[1]`` when the caller has it (saves a walk).
    Returns:
        The repeated keys (each once), sorted; [] in the common case, found by a count without a second parse.
    """
    decoded = depth_and_keys(doc)[1] if decoded_keys is None else decoded_keys
    # written ≥ true = decoded + repeated, so equal counts prove that no key was repeated
    if key_tokens_at_least(text) == decoded:
        return []
    repeated: set[str] = set()

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: set[str] = set()
        for key, _ in items:
            if key in seen:
                repeated.add(key)
            seen.add(key)
        return dict(items)

    try:
        json.loads(text, object_pairs_hook=pairs)
    except (ValueError, RecursionError):  # the count was off for another reason; the caller's parse stands
        return []
    return sorted(repeated)
