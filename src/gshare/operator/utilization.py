"""Reading GPU utilization from the cluster's metrics source and reporting it to the API, one
report per interval; a source that cannot be read is reported too, so admins see why. From the
DCGM exporter, the same text also tells which cards report hardware trouble (`card_errors`)."""

from __future__ import annotations

import asyncio
import functools
import logging
import math
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import httpx

from gshare.operator.card_errors import CardErrorWatch
from gshare.operator.manifests import OperatorConfig
from gshare.operator.metrics import (
    MAX_TEXT_CHARS,
    SOURCES,
    MetricsError,
    Sample,
    Source,
    parse_dcgm,
    parse_hami,
    utilization_body,
)
from gshare.operator.report import CLUSTER, Outcome, ReportTarget, _send, next_sequence

log = logging.getLogger(__name__)

URL_VARIABLE = "GSHARE_OPERATOR_METRICS_URL"
SOURCE_VARIABLE = "GSHARE_OPERATOR_METRICS_SOURCE"
INTERVAL_VARIABLE = "GSHARE_OPERATOR_METRICS_INTERVAL"
DEFAULT_INTERVAL_SECONDS = 30.0
MIN_INTERVAL_SECONDS, MAX_INTERVAL_SECONDS = 5.0, 3600.0
MAX_BODY_BYTES = MAX_TEXT_CHARS
READ_TIMEOUT_SECONDS = 10.0


def configured(env: Mapping[str, str]) -> tuple[str, Source, float] | None:
    """(url, source, interval in seconds) from the environment; None when no URL is set.
    A value that cannot be used is a ValueError naming the variable."""
    url = env.get(URL_VARIABLE, "").strip()
    if not url:
        return None
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{URL_VARIABLE} must be an http(s) URL, got {url[:200]!r}")
    source = env.get(SOURCE_VARIABLE, "").strip().lower() or "hami"
    if source not in SOURCES:
        raise ValueError(f"{SOURCE_VARIABLE} must be one of {', '.join(SOURCES)}, got {source!r}")
    raw_interval = env.get(INTERVAL_VARIABLE, "").strip()
    try:
        interval = float(raw_interval) if raw_interval else DEFAULT_INTERVAL_SECONDS
    except ValueError:
        interval = math.nan
    if not MIN_INTERVAL_SECONDS <= interval <= MAX_INTERVAL_SECONDS:
        raise ValueError(
            f"{INTERVAL_VARIABLE} must be seconds from {MIN_INTERVAL_SECONDS:g} to "
            f"{MAX_INTERVAL_SECONDS:g}, got {raw_interval[:40]!r}"
        )
    return url, source, interval


class GpuSessions:
    """The sessions holding a card in this cluster, as their resources say; kept up to date
    from resource events, read by the utilization reader."""

    def __init__(self) -> None:
        self._card_of: dict[str, str] = {}
        self._whole_card: set[str] = set()
        self._mig: set[str] = set()

    def follow(self, session_id: str, spec: Mapping[str, Any] | None) -> None:
        """Note a session's current spec; None when its resource is gone. A paused session
        has no pod and so no series."""
        self._card_of.pop(session_id, None)
        self._whole_card.discard(session_id)
        self._mig.discard(session_id)
        gpu = spec.get("gpu") if spec is not None else None
        card = gpu.get("cardUUID") if isinstance(gpu, Mapping) else None
        paused = spec is not None and spec.get("desiredState") == "Paused"
        if not isinstance(gpu, Mapping) or not isinstance(card, str) or not card or paused:
            return
        self._card_of[session_id] = card
        cores = gpu.get("coresPercent")
        if gpu.get("migProfile") is not None:
            self._mig.add(session_id)
        elif not (type(cores) is int and 0 < cores < 100):
            # HAMi leaves unlimited cores unmetered: utilization reads 0 however busy the card.
            self._whole_card.add(session_id)

    def cards(self, *, with_mig: bool = True) -> dict[str, list[str]]:
        """Card UUID -> the sessions on it."""
        sessions: dict[str, list[str]] = {}
        for session_id, card in self._card_of.items():
            if with_mig or session_id not in self._mig:
                sessions.setdefault(card, []).append(session_id)
        return sessions

    def whole_card(self) -> frozenset[str]:
        return frozenset(self._whole_card)

    def reader(
        self,
        target: ReportTarget,
        url: str,
        source: Source,
        interval_seconds: float,
        *,
        namespace: str,
    ) -> UtilizationReader:
        """A reader of `source` for these sessions."""
        if source == "dcgm":
            return UtilizationReader(
                target,
                url,
                source,
                interval_seconds,
                self.cards,
                namespace=namespace,
                card_errors=CardErrorWatch(target),
            )
        # HAMi may not meter a MIG instance at all: its lack of series must not read as idle.
        return UtilizationReader(
            target,
            url,
            source,
            interval_seconds,
            functools.partial(self.cards, with_mig=False),
            self.whole_card,
            namespace=namespace,
        )


class SourceUnreadable(Exception):
    """The metrics source cannot be read or its text cannot be used; the message says why."""


class UtilizationReader:
    """Every `interval_seconds`, reads the metrics source and reports every GPU session's
    utilization, then, with `card_errors`, the cards' new trouble the same text shows. A
    utilization report the API does not take is not retried: the next one supersedes it."""

    def __init__(
        self,
        target: ReportTarget,
        url: str,
        source: Source,
        interval_seconds: float,
        cards_of: Callable[[], Mapping[str, Sequence[str]]],
        whole_card_of: Callable[[], Collection[str]] = frozenset,
        *,
        namespace: str = OperatorConfig().namespace,
        card_errors: CardErrorWatch | None = None,
    ) -> None:
        self.target = target
        self.url = url
        self.source = source
        self.interval_seconds = interval_seconds
        self.cards_of = cards_of
        self.whole_card_of = whole_card_of
        self.namespace = namespace  # only pods in it are sessions
        self.card_errors = card_errors

    async def _fetch(self) -> str:
        try:
            # httpx's timeout bounds each step; a source trickling bytes must not hold a round.
            async with (
                asyncio.timeout(READ_TIMEOUT_SECONDS),
                httpx.AsyncClient(timeout=READ_TIMEOUT_SECONDS) as client,
                client.stream(
                    "GET", self.url, headers={"Accept": "text/plain;version=0.0.4"}
                ) as response,
            ):
                if response.status_code != 200:
                    raise SourceUnreadable(f"the source answered HTTP {response.status_code}")
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > MAX_BODY_BYTES:
                        raise SourceUnreadable(
                            f"the source's answer is larger than {MAX_BODY_BYTES // 2**20} MiB"
                        )
        except TimeoutError as exc:
            raise SourceUnreadable(
                f"the source did not answer within {READ_TIMEOUT_SECONDS:g} s"
            ) from exc
        except (httpx.HTTPError, httpx.InvalidURL, OSError) as exc:
            raise SourceUnreadable(f"cannot read the source: {type(exc).__name__} {exc}") from exc
        try:
            return body.decode()
        except UnicodeDecodeError as exc:
            raise SourceUnreadable("the source's answer is not UTF-8 text") from exc

    def _parse(
        self, text: str, cards: Mapping[str, Sequence[str]], whole_card: Collection[str]
    ) -> list[Sample]:
        if self.source == "dcgm":
            return parse_dcgm(text, self.namespace, cards)
        return parse_hami(text, self.namespace, cards=cards, whole_card=whole_card)

    async def read(self) -> list[Sample]:
        """The samples the source has now, or SourceUnreadable."""
        samples, _ = await self._read()
        return samples

    async def _read(self) -> tuple[list[Sample], str]:
        text = await self._fetch()
        cards = {card: tuple(sessions) for card, sessions in self.cards_of().items()}
        whole_card = frozenset(self.whole_card_of())
        try:
            # Megabytes of text take a while to parse; off the loop the operator's handlers go on.
            return await asyncio.to_thread(self._parse, text, cards, whole_card), text
        except MetricsError as exc:
            raise SourceUnreadable(f"the source's text cannot be used: {exc}") from exc

    async def report_once(self) -> Outcome:
        """Report utilization (its outcome is returned), then any new card trouble."""
        text = None
        try:
            samples, text = await self._read()
            readable, error = True, ""
        except SourceUnreadable as exc:
            log.warning("GPU utilization from %s: %s", self.url, exc)
            samples, readable, error = [], False, str(exc)
        body = utilization_body(self.source, samples, readable, error, next_sequence())
        path = f"/internal/v1/clusters/{CLUSTER}/utilization"
        outcome = await _send(self.target, "utilization", "POST", path, body)
        if text is not None and self.card_errors is not None:
            await self.card_errors.check(text)
        return outcome

    async def run(self) -> None:
        clock = asyncio.get_running_loop().time
        while True:
            started = clock()
            await self.report_once()
            await asyncio.sleep(max(0.0, started + self.interval_seconds - clock()))
