"""The harness clock. Protocols never read wall time: every event time comes from here."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

_DURATION = re.compile(r"^P(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$")


def parse_duration(text: str) -> timedelta:
    """ISO 8601 durations restricted to weeks, days, hours, minutes and seconds (``P90D``, ``PT5M``)."""
    m = _DURATION.match(text)
    if not m or text in ("P", "PT"):
        raise ValueError(f"duration {text!r} is not like P90D, PT5M or P1DT2H")
    weeks, days, hours, minutes, seconds = (int(g or 0) for g in m.groups())
    return timedelta(weeks=weeks, days=days, hours=hours, minutes=minutes, seconds=seconds)


def parse_time(text: str) -> datetime:
    if not text.endswith("Z"):
        raise ValueError(f"time {text!r} must be UTC, written with a trailing Z")
    return datetime.fromisoformat(text[:-1]).replace(tzinfo=timezone.utc)


def format_time(t: datetime) -> str:
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class HarnessClock:
    """A virtual clock: starts at the case file's start time and moves only when told."""

    mode = "virtual"

    def __init__(self, start: str, step: str = "PT1M"):
        self._now = parse_time(start)
        self._step = parse_duration(step)

    def now(self) -> str:
        return format_time(self._now)

    def advance(self, by: str | timedelta | None = None) -> str:
        delta = self._step if by is None else (parse_duration(by) if isinstance(by, str) else by)
        self._now += delta
        return self.now()
