"""The protocol seam: neutral chat types and one module per wire format.

- ``types``: the neutral stream events (``TextDelta``, ``ReasoningDelta``,
  ``ToolCallStart``, ``ToolCallDelta``, ``Finish``, ``UsageReport``, ``StreamError``)
  and the neutral error (``ProtocolError``).
- ``openai_chat``: OpenAI Chat Completions, the gateway's neutral request form and the
  wire format of every upstream in the catalog: chunks -> neutral events, errors.
- ``anthropic_messages``: Anthropic Messages: a client request -> the neutral (OpenAI
  chat) request, neutral events -> Messages SSE events, a whole reply -> a Message,
  errors in Anthropic's shape.

A new client format is one module here plus one URL (``routing.gateway.messages`` is
the Messages one). Nothing here imports Django or ``routing``.
"""
