"""Cards that report hardware trouble: what was last seen of each card's error fields, and the
report of new trouble to the API, which drains those cards. The decision is `metrics`'s."""

from __future__ import annotations

import asyncio
import logging

from gshare.operator.metrics import (
    CardSeen,
    MetricsError,
    card_errors_body,
    new_card_trouble,
    parse_card_errors,
)
from gshare.operator.report import CLUSTER, Outcome, ReportTarget, _send

log = logging.getLogger(__name__)


class CardErrorWatch:
    """Reports each card's new trouble once. What was seen is kept only once the API has the
    report (or can never take it): trouble the API did not get is reported again next time."""

    def __init__(self, target: ReportTarget) -> None:
        self.target = target
        self._seen: dict[str, CardSeen] = {}

    async def check(self, text: str) -> Outcome | None:
        """Look at the exporter's text; the report's outcome, or None when there was nothing
        new to report."""
        try:
            cards = await asyncio.to_thread(parse_card_errors, text)
        except MetricsError as exc:
            log.warning("card errors cannot be read from the metrics source: %s", exc)
            return None
        trouble, seen = new_card_trouble(cards, self._seen)
        if not trouble:
            self._seen = seen
            return None
        for t in trouble:
            log.warning("card %s reports %s: %s", t.card_uuid, t.kind, t.detail)
        path = f"/internal/v1/clusters/{CLUSTER}/card-errors"
        outcome = await _send(self.target, "card_errors", "PUT", path, card_errors_body(trouble))
        if outcome in ("delivered", "dropped"):
            self._seen = seen
        return outcome
