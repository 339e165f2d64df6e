"""The live gateway's chat path: a lean ASGI handler (``asgi``), acceptance (``accept``),
the asyncio shell around the gateway session (``call``), the relay of upstream chunks
(``relay``), the live router (``router``) and the one place a call finishes
(``finish``)."""
