"""WebSocket ``/ws/activity/``: pushes "something changed" events to a logged-in
member's Activity page, scoped to their organisation (the session authenticates)."""

from __future__ import annotations

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from . import selectors
from .live import activity_group


@database_sync_to_async
def _organisation_id(user) -> int | None:
    membership = selectors.membership_for_user(user)
    return membership.organisation_id if membership else None


class ActivityConsumer(AsyncJsonWebsocketConsumer):
    group: str | None = None

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        organisation_id = await _organisation_id(user)
        if organisation_id is None:
            await self.close(code=4403)
            return
        self.group = activity_group(organisation_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        if self.group:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content, **kwargs) -> None:
        """The browser only listens; anything it sends is ignored."""

    async def activity_update(self, event: dict) -> None:
        """One change, or several (the gateway's ledger writer sends one message per
        organisation and batch of rows)."""
        for payload in event.get("payloads") or [event["payload"]]:
            await self.send_json(payload)
