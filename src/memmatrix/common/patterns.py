"""Shapes the harness recognises in any text: ids (UUIDs), date-times and the wall-clock dates of a run.

The recorder normalises answers with them (exchange/transcript.py), the gateway its upstream's answers
(model/upstream.py) and the case rules refuse a target that looks like one (cases).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

_UUID = re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")
_DATETIME = re.compile(r"\b(\d{4}-\d{2}-\d{2})[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?"
                       r"(?: ?[AaPp][Mm]\b)?(?:Z|[+-]\d{2}:?\d{2}| ?(?:UTC|GMT)(?:[+-]\d{2}:?\d{2})?)?")  # 12-hour, zone


def wall_dates(now: datetime | None = None) -> frozenset[str]:
    """The wall-clock dates a system may stamp right now, in any time zone (UTC-12 .. UTC+14)."""
    now = now or datetime.now(timezone.utc)
    return frozenset((now + timedelta(days=d)).date().isoformat() for d in (-1, 0, 1))
