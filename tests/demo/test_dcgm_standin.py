"""The demo's DCGM stand-in raises an XID for the cards a person writes to its file, as the
operator reads the real exporter: a new XID is new trouble, taking the card out clears it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import httpx

from gshare import devcluster
from gshare.demo.stack import _simulated_dcgm, raised_xids
from gshare.operator.metrics import CardSeen, new_card_trouble, parse_card_errors, parse_dcgm

CARD = "GPU-gpu0-01-a100"
NAMESPACE = "gshare-sessions"


class _NoPods:
    """A simulated cluster running no session pod."""

    @contextmanager
    def client(self) -> Iterator[_NoPods]:
        yield self

    def get(self, path: str) -> _NoPods:
        return self

    def json(self) -> dict[str, Any]:
        return {"items": []}


def test_the_lines_a_person_writes_are_read_and_the_rest_ignored() -> None:
    text = f'{CARD}\nGPU-gpu1-02-a100 48\n\nhello\nGPU-"x 79\nGPU-gpu1-03-a100 -1\n{CARD} 79 1\n'
    assert raised_xids(text) == {CARD: 79, "GPU-gpu1-02-a100": 48}


def test_a_card_written_to_the_file_raises_its_xid_once(tmp_path: Path) -> None:
    xid_file = tmp_path / "xid"
    url = _simulated_dcgm(cast(devcluster.Cluster, _NoPods()), NAMESPACE, xid_file)

    def served() -> str:
        answer = httpx.get(url)
        assert answer.status_code == 200
        parse_dcgm(answer.text, NAMESPACE, {})  # what the operator reads utilization from
        return answer.text

    seen: dict[str, CardSeen] = {}
    assert parse_card_errors(served()) == {}
    xid_file.write_text(f"{CARD}\n")
    trouble, seen = new_card_trouble(parse_card_errors(served()), seen)
    assert [(t.card_uuid, t.kind, t.xid) for t in trouble] == [(CARD, "xid", 79)]
    assert new_card_trouble(parse_card_errors(served()), seen)[0] == []
    xid_file.write_text("")
    cards = parse_card_errors(served())
    assert cards[CARD].xid == 0
    trouble, seen = new_card_trouble(cards, seen)
    assert trouble == []
    xid_file.write_text(f"{CARD} 79\n")
    assert [t.xid for t in new_card_trouble(parse_card_errors(served()), seen)[0]] == [79]
