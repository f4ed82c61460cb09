"""A request body read whole by a pure ASGI middleware, then handed to the app once more
(the context check and the served-requests guard both read run bodies)."""

from __future__ import annotations

from starlette.types import Message, Receive


async def buffered_body(receive: Receive) -> tuple[bytes, Receive]:
    """The whole request body, and a ``receive`` that hands it to the app once more."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    body = b"".join(chunks)
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if replayed:
            return await receive()
        replayed = True
        return {"type": "http.request", "body": body, "more_body": False}

    return body, replay


__all__ = ["buffered_body"]
