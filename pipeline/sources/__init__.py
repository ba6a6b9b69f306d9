"""The corpus sources, declared once: ``SOURCES`` is read by the driver (listing every unit), by the
per-unit work (reading one) and by ``trajpipe run``'s input checks.

A new source is one module defining ``SOURCE`` (a :class:`~pipeline.sources.base.Source`), one line
here and its config key (a ``Config`` field holding its locations).
"""

from __future__ import annotations

from pipeline.core.config import Config, check_exists, is_url
from pipeline.sources import affine, swelego
from pipeline.sources.base import Source, SourceName

# In listing order: the driver lists each source's units in this order.
SOURCES: tuple[Source, ...] = (
    affine.SOURCE,
    swelego.SOURCE,
)

_BY_UNIT: dict[SourceName, Source] = {name: s for s in SOURCES for name in s.unit_sources}


def source_of(unit_source: SourceName) -> Source:
    """The source that reads units of ``unit_source``."""
    return _BY_UNIT[unit_source]


def locations(config: Config, source: Source) -> tuple[str, ...]:
    """The locations ``config`` names for ``source`` (its config key's value)."""
    value: tuple[str, ...] = getattr(config, source.key)
    return value


def check_inputs(config: Config) -> None:
    """Refuse, with one line naming the option, a local input that does not exist (or is a file
    where the source reads a folder). URLs are checked when read."""
    for source in SOURCES:
        for loc in locations(config, source):
            if not is_url(loc):
                check_exists(loc, f"--{source.key}", folder=source.folder)
