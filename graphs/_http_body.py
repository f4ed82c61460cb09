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
    return body, body_then(body, receive)


def body_then(body: bytes, later: Receive) -> Receive:
    """A ``receive`` that gives ``body`` as the whole request once, then ``later``'s messages
    (the client's own: a streamed run watches them for a disconnect)."""
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if sent:
            return await later()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


__all__ = ["body_then", "buffered_body"]
