"""Proxying one accepted chat request: attempts across the route plan, relay, ledger."""

from .complete import complete_response
from .state import CallState
from .stream import stream_response

__all__ = ["CallState", "complete_response", "stream_response"]
