"""One stable colour per provider slug, the same on every page and chart.

The colour depends on the slug only (a CRC of it), never on a row's position, so a
provider keeps its colour whatever else is on screen. ``static/dashboard/dashboard.css``
repeats the palette as ``.prov-0`` … ``.prov-9`` (a test checks they agree)."""

from __future__ import annotations

import zlib

PALETTE: tuple[str, ...] = (
    "#3b5bdb",
    "#2b8a3e",
    "#e67700",
    "#c92a2a",
    "#862e9c",
    "#0b7285",
    "#5c940d",
    "#a61e4d",
    "#5f3dc4",
    "#495057",
)


def provider_index(slug: str | None) -> int:
    """The palette index of a provider slug (0 for none)."""
    return zlib.crc32(slug.encode()) % len(PALETTE) if slug else 0


def provider_colour(slug: str | None) -> str:
    return PALETTE[provider_index(slug)]


def provider_colours(slugs) -> dict[str, str]:
    """``{slug: "#rrggbb"}`` for the charts' data."""
    return {slug: provider_colour(slug) for slug in slugs if slug}
