"""GPU inventory from HAMi's node registration annotation. Pure.

HAMi's device plugin writes `hami.io/node-nvidia-register` on each node: one entry per card,
`{uuid},{split count},{memory MiB},{cores},{type},{numa},{healthy}`, entries joined by `:`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

REGISTER_ANNOTATION = "hami.io/node-nvidia-register"


@dataclass(frozen=True)
class Card:
    uuid: str
    split_count: int
    memory_mib: int
    cores: int
    model: str
    numa: int
    healthy: bool


@dataclass(frozen=True)
class NodeInventory:
    node: str
    cards: tuple[Card, ...]
    problems: tuple[str, ...] = field(default=())


def parse_register(node: str, value: str | None) -> NodeInventory:
    """The cards a node announces; malformed entries are skipped and named in `problems`."""
    cards: list[Card] = []
    problems: list[str] = []
    for raw in (value or "").split(":"):
        entry = raw.strip()
        if not entry:
            continue
        parts = entry.split(",")
        if len(parts) != 7:
            problems.append(f"expected 7 fields, got {len(parts)}: {entry[:80]}")
            continue
        uuid, split, memory, cores, model, numa, healthy = (p.strip() for p in parts)
        try:
            card = Card(
                uuid=uuid,
                split_count=int(split),
                memory_mib=int(memory),
                cores=int(cores),
                model=model,
                numa=int(numa),
                healthy=healthy.lower() == "true",
            )
        except ValueError:
            problems.append(f"not a number in: {entry[:80]}")
            continue
        if not card.uuid or card.memory_mib <= 0 or card.split_count <= 0:
            problems.append(f"incomplete entry: {entry[:80]}")
            continue
        cards.append(card)
    return NodeInventory(node=node, cards=tuple(cards), problems=tuple(problems))


def format_register(cards: list[Card]) -> str:
    """The annotation value for `cards`, as HAMi writes it (used for simulated nodes)."""
    return (
        ":".join(
            f"{c.uuid},{c.split_count},{c.memory_mib},{c.cores},{c.model},{c.numa},"
            f"{'true' if c.healthy else 'false'}"
            for c in cards
        )
        + ":"
    )
