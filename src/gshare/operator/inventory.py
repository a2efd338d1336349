"""GPU inventory from HAMi's node registration annotation. Pure.

HAMi's device plugin writes `hami.io/node-nvidia-register` on each node: one entry per card,
`{uuid},{split count},{memory MiB},{cores},{type},{numa},{healthy}`, entries joined by `:`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

REGISTER_ANNOTATION = "hami.io/node-nvidia-register"
# What the API accepts for one card and one node (the gpu_cards columns and the report's bounds);
# an entry outside them is skipped here rather than making the API refuse the whole report.
MAX_UUID = 128
MAX_MODEL = 120
MAX_NODE_NAME = 253
MAX_CARDS_PER_NODE = 64
INT_MAX = 2**31 - 1


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
    # The node's isolation traits (isolation.NodeTraits), reported beside its cards.
    user_namespaces: bool = False
    runtime_classes: tuple[str, ...] = field(default=())
    dedicated_label: str | None = None
    dedicated_tainted: bool = False


def parse_register(node: str, value: str | None) -> NodeInventory:
    """The cards a node announces; malformed entries are skipped and named in `problems`."""
    cards: list[Card] = []
    problems: list[str] = []
    for raw in (value if isinstance(value, str) else "").split(":"):
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
        numbers = (card.split_count, card.memory_mib, card.cores, card.numa)
        if not all(0 <= n <= INT_MAX for n in numbers):
            problems.append(f"a number out of range in: {entry[:80]}")
            continue
        if len(card.uuid) > MAX_UUID or len(card.model) > MAX_MODEL:
            problems.append(f"a name too long in: {entry[:80]}")
            continue
        if any(c.uuid == card.uuid for c in cards):
            problems.append(f"card {card.uuid} announced twice")
            continue
        if len(cards) == MAX_CARDS_PER_NODE:
            problems.append(f"more than {MAX_CARDS_PER_NODE} cards; the rest are not reported")
            break
        cards.append(card)
    if len(node) > MAX_NODE_NAME:
        return NodeInventory(node=node[:MAX_NODE_NAME], cards=(), problems=("node name too long",))
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
