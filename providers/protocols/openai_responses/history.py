"""Responses input items -> chat messages, in order.

Items are flat where chat nests: a ``function_call`` item joins the assistant message
before it (or opens one), so the calls of one turn share one message and the ``tool``
messages follow it, as chat requires; a ``reasoning`` item goes on the next assistant
message as ``reasoning_content`` (its ``encrypted_content`` as the signature).
``developer`` becomes ``system``: every upstream of the catalog knows that role.
"""

from __future__ import annotations

from typing import Any


class History:
    """The chat messages built so far from a request's items."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.reasoning = ""
        self.signature = ""
        self.open_turn = False  # the last message is an assistant's that calls may join

    def add_message(self, role: str, parts: list[dict[str, Any]]) -> None:
        if role == "assistant":
            self._assistant(parts)
            return
        self.open_turn = False
        text_only = all(part["type"] == "text" for part in parts)
        if role in ("system", "developer") or (text_only and len(parts) == 1):
            content: Any = "".join(part["text"] for part in parts if part["type"] == "text")
        else:
            content = parts
        self.messages.append(
            {"role": "system" if role == "developer" else role, "content": content}
        )

    def _assistant(self, parts: list[dict[str, Any]]) -> None:
        text = "".join(part.get("text", "") for part in parts if part["type"] == "text")
        self.messages.append(self._with_reasoning({"role": "assistant", "content": text}))
        self.open_turn = True

    def _with_reasoning(self, message: dict[str, Any]) -> dict[str, Any]:
        if self.reasoning:
            message["reasoning_content"] = self.reasoning
            if self.signature:
                message["reasoning_signature"] = self.signature
        self.reasoning, self.signature = "", ""
        return message

    def add_call(self, call_id: str, name: str, arguments: str) -> None:
        if not self.open_turn:
            self.messages.append(self._with_reasoning({"role": "assistant", "content": None}))
            self.open_turn = True
        message = self.messages[-1]
        call = {
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        }
        message.setdefault("tool_calls", []).append(call)
        if message["content"] == "":
            message["content"] = None

    def add_output(self, call_id: str, text: str) -> None:
        self.open_turn = False
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": text})

    def add_reasoning(self, text: str, signature: str) -> None:
        self.reasoning += text
        self.signature = signature or self.signature

    def finished(self) -> list[dict[str, Any]]:
        return self.messages
