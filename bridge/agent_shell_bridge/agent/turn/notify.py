"""Webhook notifications when a task completes or fails.

A user away from Emacs still learns that the agent finished or got stuck.  Three
payload shapes are supported: a generic JSON object, WeCom (企业微信) group-robot
markdown and Slack incoming-webhook text.  Delivery is best effort: every failure is
logged (without the URL's query, which usually carries the secret key) and never
raised into the agent loop.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

import httpx

__all__ = ["NotifyEvent", "WebhookKind", "build_payload", "post_webhook"]

logger = logging.getLogger(__name__)

WebhookKind = Literal["generic", "wecom", "slack"]

#: WeCom rejects markdown content above 4096 bytes.
_WECOM_MAX_BYTES = 4096
_TIMEOUT = httpx.Timeout(10.0)


@dataclass(frozen=True, slots=True)
class NotifyEvent:
    """A task outcome worth telling the user about."""

    status: Literal["completed", "failed"]
    task: str
    session_id: str
    failed_step: str | None = None
    reason: str | None = None
    log_path: str | None = None
    project: str | None = None


def _lines(event: NotifyEvent, *, bold: str) -> list[str]:
    verb = "failed" if event.status == "failed" else "completed"
    lines = [f"{bold}agent-shell task {verb}{bold}: {event.task}"]
    if event.project:
        lines.append(f"Project: {event.project}")
    if event.failed_step:
        lines.append(f"Failed step: {event.failed_step}")
    if event.reason:
        lines.append(f"Reason: {event.reason}")
    if event.log_path:
        lines.append(f"Log: {event.log_path}")
    lines.append(f"Session: {event.session_id}")
    return lines


def _truncate_utf8(text: str, limit: int) -> str:
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[: limit - len("…".encode())].decode("utf-8", errors="ignore") + "…"


def _slack_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def build_payload(kind: WebhookKind, event: NotifyEvent) -> dict[str, Any]:
    """The JSON body for KIND; exposed so its shape can be checked on its own."""
    if kind == "wecom":
        content = "\n".join(_lines(event, bold="**"))
        return {
            "msgtype": "markdown",
            "markdown": {"content": _truncate_utf8(content, _WECOM_MAX_BYTES)},
        }
    if kind == "slack":
        return {"text": _slack_escape("\n".join(_lines(event, bold="*")))}
    return {"event": f"task_{event.status}", **asdict(event)}


def _redacted(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or '?'}{parts.path}"


async def post_webhook(
    url: str, kind: WebhookKind, event: NotifyEvent, *, http: httpx.AsyncClient
) -> None:
    """POST EVENT to URL in KIND's format; log, never raise, on any failure."""
    payload = build_payload(kind, event)
    where = _redacted(url)
    try:
        response = await http.post(url, json=payload, timeout=_TIMEOUT)
    except (httpx.HTTPError, httpx.InvalidURL, ValueError, OSError) as exc:
        # InvalidURL is not an HTTPError; a bad URL must not break the turn's end either.
        logger.warning("webhook %s unreachable: %s", where, type(exc).__name__)
        return
    if response.is_error:
        logger.warning("webhook %s answered HTTP %d", where, response.status_code)
        return
    if kind == "wecom":
        try:
            answer = response.json()
        except ValueError:
            answer = None
        if isinstance(answer, dict) and answer.get("errcode", 0) != 0:
            logger.warning(
                "webhook %s refused the message: errcode %s %s",
                where,
                answer.get("errcode"),
                answer.get("errmsg", ""),
            )
            return
    logger.info("webhook %s notified: task %s", where, event.status)
