"""Webhook notifications, posted to a real HTTP receiver on 127.0.0.1."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from agent_shell_bridge.agent.turn.notify import NotifyEvent, build_payload, post_webhook


@dataclass
class Receiver:
    """A tiny HTTP server recording every POST; answers are scripted per path."""

    server: ThreadingHTTPServer
    requests: list[tuple[str, dict[str, str], bytes]] = field(default_factory=list)
    answers: dict[str, tuple[int, bytes]] = field(default_factory=dict)

    @property
    def base(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def bodies(self) -> list[Any]:
        return [json.loads(body) for _, _, body in self.requests]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    holder: dict[str, Receiver] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            rec = holder["r"]
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
            rec.requests.append((self.path, dict(self.headers), body))
            status, answer = rec.answers.get(self.path.split("?")[0], (200, b'{"ok":true}'))
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    holder["r"] = Receiver(server)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield holder["r"]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


FAILED = NotifyEvent(
    status="failed",
    task="修复中文 JSON 解析",
    session_id="s-1",
    failed_step="run_test: go test ./...",
    reason="exit 1 <panic> & more",
    log_path="/p/.agent-shell/logs/2026-11-30-101500-s-1.org",
    project="cli",
)


async def test_notify_generic_posts_json(receiver: Receiver) -> None:
    """The generic payload carries every field, Chinese intact."""
    async with httpx.AsyncClient(trust_env=False) as http:
        await post_webhook(f"{receiver.base}/hook", "generic", FAILED, http=http)
    assert len(receiver.requests) == 1
    path, headers, raw = receiver.requests[0]
    assert path == "/hook"
    assert headers["Content-Type"] == "application/json"
    body = json.loads(raw)
    assert body["event"] == "task_failed"
    assert body["task"] == "修复中文 JSON 解析"
    assert body["failed_step"] == "run_test: go test ./..."
    assert body["log_path"].endswith("s-1.org")


async def test_notify_wecom_markdown(receiver: Receiver) -> None:
    """WeCom gets a markdown message naming the task, failed step, reason and log."""
    receiver.answers["/cgi-bin/webhook/send"] = (200, b'{"errcode":0,"errmsg":"ok"}')
    async with httpx.AsyncClient(trust_env=False) as http:
        await post_webhook(
            f"{receiver.base}/cgi-bin/webhook/send?key=SECRET", "wecom", FAILED, http=http
        )
    (body,) = receiver.bodies()
    assert body["msgtype"] == "markdown"
    content = body["markdown"]["content"]
    assert content.startswith("**agent-shell task failed**: 修复中文 JSON 解析")
    assert "Failed step: run_test: go test ./..." in content
    assert "Reason: exit 1 <panic> & more" in content
    assert "Log: /p/.agent-shell/logs/" in content


async def test_notify_slack_text_is_escaped(receiver: Receiver) -> None:
    """Slack gets mrkdwn text with &, < and > escaped as Slack requires."""
    done = NotifyEvent(status="completed", task="add <tests>", session_id="s-2")
    async with httpx.AsyncClient(trust_env=False) as http:
        await post_webhook(f"{receiver.base}/slack", "slack", FAILED, http=http)
        await post_webhook(f"{receiver.base}/slack", "slack", done, http=http)
    failed_body, done_body = receiver.bodies()
    assert set(failed_body) == {"text"}
    assert "Reason: exit 1 &lt;panic&gt; &amp; more" in failed_body["text"]
    assert done_body["text"].startswith("*agent-shell task completed*: add &lt;tests&gt;")


def test_notify_wecom_content_fits_limit() -> None:
    """A huge reason is cut to WeCom's 4096-byte limit on a character boundary."""
    event = NotifyEvent(status="failed", task="t", session_id="s", reason="错" * 5000)
    content = build_payload("wecom", event)["markdown"]["content"]
    assert len(content.encode("utf-8")) <= 4096
    assert content.endswith("…")


async def test_notify_failures_are_logged_not_raised(
    receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    """HTTP errors, WeCom error codes and a dead port never raise; the key stays secret."""
    receiver.answers["/down"] = (500, b"boom")
    receiver.answers["/wecom"] = (200, b'{"errcode":93000,"errmsg":"invalid webhook url"}')
    # A port that was just free: nothing listens there.
    free = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    dead_port = free.server_address[1]
    free.server_close()
    caplog.set_level(logging.WARNING, logger="agent_shell_bridge.agent.turn.notify")
    async with httpx.AsyncClient(trust_env=False) as http:
        await post_webhook(f"{receiver.base}/down", "generic", FAILED, http=http)
        await post_webhook(f"{receiver.base}/wecom?key=SECRET", "wecom", FAILED, http=http)
        await post_webhook(f"http://127.0.0.1:{dead_port}/x", "slack", FAILED, http=http)
    messages = [r.getMessage() for r in caplog.records]
    assert any("HTTP 500" in m for m in messages)
    assert any("errcode 93000" in m for m in messages)
    assert any("unreachable" in m for m in messages)
    assert len(receiver.requests) == 2
    assert not any("SECRET" in m for m in messages)
