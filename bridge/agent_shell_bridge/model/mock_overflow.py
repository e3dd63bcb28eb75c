"""The scripted model's answer to a request over its context limit.

A script with ``context_limit`` refuses every request whose prompt (counted as
:func:`~.mock.estimate_usage` counts it) is over the limit, with HTTP 400 and the
body a real provider sends; ``overflow_style`` picks the provider.
"""

from __future__ import annotations

from typing import Literal

from starlette.responses import JSONResponse

from ..types import JSONObject

__all__ = ["OverflowStyle", "overflow_body", "overflow_response"]

OverflowStyle = Literal["openai", "deepseek", "vllm", "openrouter"]


def overflow_body(style: OverflowStyle, limit: int, tokens: int) -> JSONObject:
    """The error body ``style``'s provider answers for a ``tokens``-long request."""
    if style == "openai":
        return {
            "error": {
                "message": f"This model's maximum context length is {limit} tokens. However, "
                f"your messages resulted in {tokens} tokens. Please reduce the length of the "
                "messages.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        }
    if style == "deepseek":
        return {
            "error": {
                "message": f"This model's maximum context length is {limit} tokens. However, "
                f"you requested {tokens} tokens ({tokens} in the messages, 0 in the "
                "completion). Please reduce the length of the messages or completion.",
                "type": "invalid_request_error",
                "param": None,
                "code": "invalid_request_error",
            }
        }
    if style == "vllm":
        return {
            "object": "error",
            "message": f"This model's maximum context length is {limit} tokens. However, you "
            f"requested {tokens} tokens in the messages, Please reduce the length of the "
            "messages.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        }
    return {
        "error": {
            "message": f"This endpoint's maximum context length is {limit} tokens. However, "
            f"you requested about {tokens} tokens ({tokens} of text input). Please reduce "
            'the length of either one, or use the "middle-out" transform to compress your '
            "prompt automatically.",
            "code": 400,
        },
        "user_id": "user_mock",
    }


def overflow_response(style: OverflowStyle, limit: int, tokens: int) -> JSONResponse:
    return JSONResponse(overflow_body(style, limit, tokens), status_code=400)
