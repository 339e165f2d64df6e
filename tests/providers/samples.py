"""Samples the protocol tests (and the Messages API's) share."""

from providers.protocols import types as ev

# One whole assistant turn as neutral events: reasoning in two pieces and its signature,
# text, one tool call with its arguments in two fragments, the finish and the usage.
TURN = (
    ev.ReasoningDelta("Let"),
    ev.ReasoningDelta(" me"),
    ev.ReasoningSignature("sig"),
    ev.TextDelta("Hi"),
    ev.ToolCallStart(0, "toolu_1", "b"),
    ev.ToolCallDelta(0, '{"x"'),
    ev.ToolCallDelta(0, ":1}"),
    ev.Finish("tool_calls"),
    ev.UsageReport(20, 7, cached_tokens=5, reasoning_tokens=1),
)

PDF = "JVBERi0xLjQK"  # "%PDF-1.4\n", base64
# An Anthropic document block holding that PDF.
PDF_DOCUMENT = {
    "type": "document",
    "title": "spec.pdf",
    "source": {"type": "base64", "media_type": "application/pdf", "data": PDF},
}
