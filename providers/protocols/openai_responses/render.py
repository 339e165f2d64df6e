"""Neutral events -> what a Responses client reads.

``ResponseRenderer`` turns neutral events into Responses SSE semantic events
(``response.created`` / ``in_progress``; ``output_item.added`` / ``done`` around each
message, function call and reasoning item; ``content_part.added`` / ``done``,
``output_text.delta`` / ``done``, ``function_call_arguments.delta`` / ``done``,
``reasoning_text.delta`` / ``done``; then ``response.completed``, ``response.incomplete``
or ``response.failed``) and keeps the Response they describe, which is also the whole
reply of a call that was not streamed (``render_response``).
"""

from __future__ import annotations

from typing import Any

import orjson

from .. import types as ev

INCOMPLETE = {"length": "max_output_tokens", "content_filter": "content_filter"}


def sse(kind: str, data: dict[str, Any]) -> bytes:
    return b"event: " + kind.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"


def usage_object(usage: ev.UsageReport | None, prompt_estimate: int) -> dict[str, Any]:
    """Responses' usage; the prompt estimate when the provider reported none."""
    if usage is None:
        usage = ev.UsageReport(prompt_tokens=prompt_estimate, completion_tokens=0)
    return {
        "input_tokens": usage.prompt_tokens,
        "input_tokens_details": {"cached_tokens": usage.cached_tokens},
        "output_tokens": usage.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.prompt_tokens + usage.completion_tokens,
    }


def skeleton(request: dict[str, Any], response_id: str, model: str, created_at: int) -> dict:
    """The Response's fields that echo the request (OpenAI's Response carries them)."""
    reasoning = request.get("reasoning") or {}
    metadata = request.get("metadata")
    return {
        "id": response_id,
        "object": "response",
        "created_at": created_at,
        "status": "in_progress",
        "background": False,
        "error": None,
        "incomplete_details": None,
        "instructions": request.get("instructions"),
        "max_output_tokens": request.get("max_output_tokens"),
        "model": model,
        "output": [],
        "parallel_tool_calls": request.get("parallel_tool_calls") is not False,
        "previous_response_id": None,
        "reasoning": {"effort": reasoning.get("effort"), "summary": reasoning.get("summary")},
        "store": False,
        "temperature": request.get("temperature"),
        "text": request.get("text") or {"format": {"type": "text"}},
        "tool_choice": request.get("tool_choice") or "auto",
        "tools": request.get("tools") or [],
        "top_p": request.get("top_p"),
        "truncation": "disabled",
        "usage": None,
        "user": request.get("user"),
        "metadata": metadata if isinstance(metadata, dict) else {},
    }


class ResponseRenderer:
    """Neutral events in, Responses SSE bytes out; the Response kept (one per call)."""

    def __init__(
        self, response: dict[str, Any], namespaces: dict[str, str], prompt_estimate: int
    ) -> None:
        self.response = response
        self.namespaces = namespaces
        self.prompt_estimate = prompt_estimate
        self.output: list[dict[str, Any]] = []
        self.open: dict[str, Any] | None = None  # the item being streamed
        self.tool_index: int | None = None  # the open function call's index in the chunks
        self.sequence = 0
        self.finish_reason = "stop"
        self.usage: ev.UsageReport | None = None
        self.ended = False
        self.base = str(response["id"]).removeprefix("gen-")

    def _event(self, kind: str, **fields: Any) -> bytes:
        self.sequence += 1
        return sse(kind, {"type": kind, "sequence_number": self.sequence - 1, **fields})

    def snapshot(self, status: str) -> dict[str, Any]:
        response = {**self.response, "status": status, "output": self.output}
        if status != "in_progress":
            response["usage"] = usage_object(self.usage, self.prompt_estimate)
        return response

    def start(self) -> bytes:
        snapshot = self.snapshot("in_progress")
        return self._event("response.created", response=snapshot) + self._event(
            "response.in_progress", response=snapshot
        )

    def _open(self, prefix: str, item: dict[str, Any]) -> bytes:
        closing = self._close()
        item = {"id": f"{prefix}_{self.base}{len(self.output)}", **item}
        self.output.append(item)
        self.open = item
        added = self._event(
            "response.output_item.added", output_index=len(self.output) - 1, item=item
        )
        return closing + added

    def _where(self) -> dict[str, Any]:
        assert self.open is not None
        return {"item_id": self.open["id"], "output_index": len(self.output) - 1}

    def _close(self) -> bytes:
        item = self.open
        if item is None:
            return b""
        where = self._where()
        if item["type"] == "message":
            part = item["content"][0]
            out = self._event(
                "response.output_text.done",
                **where,
                content_index=0,
                text=part["text"],
                logprobs=[],
            )
            out += self._event("response.content_part.done", **where, content_index=0, part=part)
        elif item["type"] == "function_call":
            out = self._event(
                "response.function_call_arguments.done",
                **where,
                arguments=item["arguments"],
                name=item["name"],
            )
        else:
            out = self._event(
                "response.reasoning_text.done",
                **where,
                content_index=0,
                text=item["content"][0]["text"],
            )
        item["status"] = "completed"
        self.open, self.tool_index = None, None
        return out + self._event(
            "response.output_item.done", output_index=where["output_index"], item=item
        )

    def _text(self, text: str) -> bytes:
        out = b""
        if self.open is None or self.open["type"] != "message":
            out = self._open(
                "msg",
                {"type": "message", "status": "in_progress", "role": "assistant", "content": []},
            )
            part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            out += self._event(
                "response.content_part.added", **self._where(), content_index=0, part=part
            )
            self.open["content"].append(part)  # type: ignore[index]
        assert self.open is not None
        self.open["content"][0]["text"] += text
        return out + self._event(
            "response.output_text.delta", **self._where(), content_index=0, delta=text, logprobs=[]
        )

    def _reasoning(self, text: str) -> bytes:
        out = b""
        if self.open is None or self.open["type"] != "reasoning":
            out = self._open("rs", {"type": "reasoning", "summary": [], "content": []})
            self.open["content"].append({"type": "reasoning_text", "text": ""})  # type: ignore[index]
        assert self.open is not None
        self.open["content"][0]["text"] += text
        return out + self._event(
            "response.reasoning_text.delta", **self._where(), content_index=0, delta=text
        )

    def _call(self, index: int, call_id: str, name: str) -> bytes:
        item = {
            "type": "function_call",
            "status": "in_progress",
            "call_id": call_id,
            "name": name,
            "arguments": "",
        }
        if name in self.namespaces:
            item["namespace"] = self.namespaces[name]
        out = self._open("fc", item)
        self.tool_index = index
        return out

    def _arguments(self, index: int, arguments: str) -> bytes:
        if self.open is None or self.open["type"] != "function_call" or self.tool_index != index:
            return b""  # a fragment for a call already closed: cannot be placed
        self.open["arguments"] += arguments
        return self._event(
            "response.function_call_arguments.delta", **self._where(), delta=arguments
        )

    def render(self, event: ev.ChatEvent) -> bytes:
        """The SSE events for one neutral event (none for finish and usage)."""
        match event:
            case ev.TextDelta(text):
                return self._text(text)
            case ev.ReasoningDelta(text):
                return self._reasoning(text)
            case ev.ReasoningSignature(signature) if self.open and self.open["type"] == "reasoning":
                self.open["encrypted_content"] = signature
            case ev.ToolCallStart(index, call_id, name):
                return self._call(index, call_id, name)
            case ev.ToolCallDelta(index, arguments):
                return self._arguments(index, arguments)
            case ev.Finish(reason):
                self.finish_reason = reason
            case ev.UsageReport():
                self.usage = event
            case ev.StreamError(message):
                return self.fail(message)
        return b""

    def fail(self, message: str) -> bytes:
        """``response.failed``: the stream ends here."""
        if self.ended:
            return b""
        closing, self.ended = self._close(), True
        self.response = {**self.response, "error": {"code": "server_error", "message": message}}
        return closing + self._event("response.failed", response=self.snapshot("failed"))

    def final_status(self) -> str:
        return "incomplete" if self.finish_reason in INCOMPLETE else "completed"

    def finish(self) -> bytes:
        """The last items' ``done`` events and ``response.completed`` (or ``incomplete``)."""
        if self.ended:
            return b""
        closing, self.ended = self._close(), True
        status = self.final_status()
        if status == "incomplete":
            reason = INCOMPLETE[self.finish_reason]
            self.response = {**self.response, "incomplete_details": {"reason": reason}}
        return closing + self._event(f"response.{status}", response=self.snapshot(status))


def render_response(renderer: ResponseRenderer, events: list[ev.ChatEvent]) -> dict[str, Any]:
    """A whole reply (the events of a ``chat.completion``) as one Response object."""
    for event in events:
        renderer.render(event)
    renderer.finish()
    return renderer.snapshot(renderer.final_status())
