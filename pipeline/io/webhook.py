"""Posting a notification to a chat webhook (Slack's incoming-webhook JSON, which Mattermost, Discord's
``/slack`` endpoint and Microsoft Teams' Slack-compatible connectors read too): a plain HTTP POST with the
standard library."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Mapping

TIMEOUT_S = 10.0  # a chat service answers in well under this; a hung one must not hold the warehouse lock


class WebhookError(RuntimeError):
    """The webhook did not accept the message: the URL's scheme is not http(s), the server could not be
    reached, or it answered with a status other than 2xx. The message names the URL's host and the cause."""


def post_json(url: str, payload: Mapping[str, Any], timeout_s: float = TIMEOUT_S) -> int:
    """POST ``payload`` as UTF-8 JSON (``Content-Type: application/json``) to ``url``; return the HTTP status.

    Raises:
        WebhookError: ``url`` is not http:// or https://, the connection failed or timed out, or the status is
            not 2xx (Slack answers 200 "ok"; 4xx for a revoked hook).
    """
    if not url.lower().startswith(("http://", "https://")):
        raise WebhookError(f"webhook URL must start with http:// or https://, got {url.split(':', 1)[0]!r}")
    host = urllib.parse.urlparse(url).netloc
    request = urllib.request.Request(url, data=json.dumps(payload).encode("utf-8"), method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310 (scheme checked)
            status = response.status
    except urllib.error.HTTPError as exc:
        raise WebhookError(f"webhook at {host} answered HTTP {exc.code}") from exc
    except (urllib.error.URLError, OSError) as exc:
        raise WebhookError(f"webhook at {host} unreachable: {getattr(exc, 'reason', exc)}") from exc
    if not 200 <= status < 300:
        raise WebhookError(f"webhook at {host} answered HTTP {status}")
    return status
