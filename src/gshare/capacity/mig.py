"""MIG geometry per GPU model and the validity of MIG layouts. Pure: no I/O.

A MIG-capable card has 8 memory slices and 7 compute slices. Each profile takes a fixed run of
memory slices that may start only at the positions NVIDIA's MIG user guide lists for it, and a
number of compute slices. Invariants of an accepted layout:
- every instance starts at one of its profile's allowed starts;
- no two instances share a memory slice;
- the instances' compute slices add up to at most the card's;
- no profile appears more often than the card allows (the `+me` profiles: once).
Any set of instances that can be placed this way is a valid combination: the guide builds its
combinations from non-overlapping placements alone (4g with 3g included, on current drivers).
Profile names are the driver's; two spellings of one geometry (`7g.79gb`, `7g.80gb`) are one
profile, and every result speaks the canonical name.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache

MEMORY_SLICES = 8
COMPUTE_SLICES = 7
_GIB = 1024


@dataclass(frozen=True)
class MigProfile:
    name: str
    compute_slices: int
    memory_slices: int
    memory_mib: int
    starts: tuple[int, ...]
    max_instances: int
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class MigGeometry:
    model: str
    profiles: tuple[MigProfile, ...]

    def profile(self, name: str) -> MigProfile | None:
        wanted = normalize_profile_name(name)
        for profile in self.profiles:
            if wanted == profile.name or wanted in profile.aliases:
                return profile
        return None


@dataclass(frozen=True)
class Placement:
    profile: str
    start: int


@dataclass(frozen=True)
class LayoutAccepted:
    placements: tuple[Placement, ...]


@dataclass(frozen=True)
class LayoutRefused:
    reason: str


LayoutDecision = LayoutAccepted | LayoutRefused
LayoutItem = str | Placement | tuple[str, int]


def _profile(
    name: str,
    compute: int,
    memory: int,
    gib: float,
    starts: Iterable[int],
    max_instances: int | None = None,
    aliases: tuple[str, ...] = (),
) -> MigProfile:
    start_list = tuple(starts)
    return MigProfile(
        name=name,
        compute_slices=compute,
        memory_slices=memory,
        memory_mib=int(gib * _GIB),
        starts=start_list,
        max_instances=len(start_list) if max_instances is None else max_instances,
        aliases=aliases,
    )


# Every A100 / H100 / H200 shares one placement scheme; only the memory per slice differs.
# Slices and instance counts: MIG user guide, "Supported MIG Profiles" (the A100, H100 and H200
# profile tables). Starts: the guide's "Getting Started > List GPU Instance Profiles", whose
# `nvidia-smi mig -lgipp` listing gives each profile's start indexes and run length.
# The double-memory 1g profile (1g.10gb on A100-40GB) takes two memory slices: its -lgipp run
# length is 2, it fits four times, the H100/H200 tables give its siblings a quarter of memory,
# and its name says 10 GB of a 40 GB card; the A100 table's "1/8" for it is a slip in the guide.
def _family(
    model: str,
    names: tuple[str, str, str, str, str, str, str],
    gib: tuple[float, float, float, float, float],
    full_aliases: tuple[str, ...] = (),
) -> MigGeometry:
    one, one_me, one_double, two, three, four, seven = names
    gib_one, gib_two, gib_three, gib_seven = gib[0], gib[1], gib[2], gib[4]
    return MigGeometry(
        model=model,
        profiles=(
            _profile(one, 1, 1, gib_one, range(7)),
            _profile(one_me, 1, 1, gib_one, range(7), max_instances=1),
            _profile(one_double, 1, 2, gib_two, (0, 2, 4, 6)),
            _profile(two, 2, 2, gib_two, (0, 2, 4)),
            _profile(three, 3, 4, gib_three, (0, 4)),
            _profile(four, 4, 4, gib[3], (0,)),
            _profile(seven, 7, 8, gib_seven, (0,), aliases=full_aliases),
        ),
    )


# GiB per profile as the driver reports it (`nvidia-smi mig -lgip`); the guide gives fractions only.
GEOMETRIES: dict[str, MigGeometry] = {
    geometry.model: geometry
    for geometry in (
        _family(
            "A100-40GB",
            ("1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"),
            (4.75, 9.75, 19.62, 19.62, 39.25),
        ),
        _family(
            "A100-80GB",
            ("1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
            (9.5, 19.5, 39.25, 39.25, 79.0),
            full_aliases=("7g.79gb",),
        ),
        _family(
            "H100-80GB",
            ("1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
            (9.75, 19.62, 39.5, 39.5, 79.25),
            full_aliases=("7g.79gb",),
        ),
        _family(
            "H200-141GB",
            ("1g.18gb", "1g.18gb+me", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"),
            (16.0, 32.25, 69.5, 69.5, 139.75),
        ),
    )
}


def normalize_profile_name(name: str) -> str:
    """'MIG 1g.10gb' and ' 1G.10GB ' are both '1g.10gb'."""
    cleaned = name.strip().lower()
    if cleaned.startswith("mig "):
        cleaned = cleaned[4:].strip()
    return cleaned


# HAMi reports the driver's product name ("NVIDIA-A100-SXM4-80GB", "NVIDIA H100 80GB HBM3"):
# the family and the memory size name the geometry; the form factor does not change it.
_PRODUCT_NAMES = (
    (("A100", "80GB"), "A100-80GB"),
    (("A100",), "A100-40GB"),
    (("H100", "80GB"), "H100-80GB"),
    (("H200",), "H200-141GB"),
)


def geometry_for(model: str) -> MigGeometry | None:
    """The MIG geometry of a model named as GShare's tables or the driver name it."""
    for name, geometry in GEOMETRIES.items():
        if name.lower() == model.strip().lower():
            return geometry
    words = {w for w in model.upper().replace("_", "-").replace(" ", "-").split("-") if w}
    for needed, name in _PRODUCT_NAMES:
        if set(needed) <= words:
            return GEOMETRIES[name]
    return None


def _slice_mask(profile: MigProfile, start: int) -> int:
    return ((1 << profile.memory_slices) - 1) << start


def _largest_first(profile: MigProfile) -> tuple[int, int, str]:
    return (-profile.memory_slices, -profile.compute_slices, profile.name)


def _search(
    pending: Sequence[MigProfile], used: int, chosen: list[Placement]
) -> list[Placement] | None:
    if not pending:
        return chosen
    profile, rest = pending[0], pending[1:]
    for start in profile.starts:
        mask = _slice_mask(profile, start)
        if used & mask:
            continue
        found = _search(rest, used | mask, [*chosen, Placement(profile.name, start)])
        if found is not None:
            return found
    return None


def _item(item: LayoutItem) -> tuple[str, int | None]:
    if isinstance(item, str):
        return item, None
    if isinstance(item, Placement):
        return item.profile, item.start
    return item[0], item[1]


def check_layout(model: str, layout: Sequence[LayoutItem]) -> LayoutDecision:
    """Accept `layout` with every instance placed, or refuse it with the first reason found.

    Items are profile names (placed by an exact search over the allowed starts, first fit in
    start order, largest instances first) or (profile, start) pairs that are kept as given.
    The result is in start order, not creation order: the guide ("Creating GPU Instances")
    warns that the driver may refuse a 3g instance asked for after smaller ones, so whoever
    applies a layout creates the largest instances first.
    """
    geometry = geometry_for(model)
    if geometry is None:
        return LayoutRefused(f"{model} has no MIG geometry GShare knows.")
    if not layout:
        return LayoutRefused("A MIG layout needs at least one instance.")
    fixed: list[tuple[MigProfile, int]] = []
    free: list[MigProfile] = []
    for item in layout:
        name, start = _item(item)
        profile = geometry.profile(name)
        if profile is None:
            known = ", ".join(p.name for p in geometry.profiles)
            return LayoutRefused(f"{model} has no MIG profile {name!r}; it has {known}.")
        if start is None:
            free.append(profile)
        else:
            fixed.append((profile, start))
    profiles = [p for p, _ in fixed] + free
    counts: dict[str, int] = {}
    for profile in profiles:
        counts[profile.name] = counts.get(profile.name, 0) + 1
        if counts[profile.name] > profile.max_instances:
            return LayoutRefused(f"{model} holds at most {profile.max_instances} x {profile.name}.")
    compute = sum(p.compute_slices for p in profiles)
    if compute > COMPUTE_SLICES:
        return LayoutRefused(
            f"The layout needs {compute} compute slices; {model} has {COMPUTE_SLICES}."
        )
    memory = sum(p.memory_slices for p in profiles)
    if memory > MEMORY_SLICES:
        return LayoutRefused(
            f"The layout needs {memory} memory slices; {model} has {MEMORY_SLICES}."
        )
    used = 0
    placed: list[Placement] = []
    for profile, start in fixed:
        if start not in profile.starts:
            allowed = ", ".join(str(s) for s in profile.starts)
            return LayoutRefused(f"{profile.name} starts only at {allowed}, not at {start}.")
        mask = _slice_mask(profile, start)
        if used & mask:
            return LayoutRefused(
                f"{profile.name} at {start} overlaps the memory slices of another instance."
            )
        used |= mask
        placed.append(Placement(profile.name, start))
    # Largest first: the big instances have the fewest starts, so the search fails early.
    ordered = sorted(free, key=_largest_first)
    found = _search(ordered, used, [])
    if found is None:
        return LayoutRefused(
            "The instances add up but cannot be placed without overlapping memory slices."
        )
    return LayoutAccepted(tuple(sorted(placed + found, key=lambda p: p.start)))


@cache
def valid_layouts(model: str, *, maximal_only: bool = False) -> tuple[tuple[str, ...], ...]:
    """Every accepted layout of `model` as a sorted tuple of profile names, largest first.

    `maximal_only` keeps those to which no further instance can be added (the console's
    whole-card choices).
    """
    geometry = geometry_for(model)
    if geometry is None:
        return ()
    profiles = sorted(
        geometry.profiles, key=lambda p: (-p.memory_slices, -p.compute_slices, p.name)
    )
    found: list[tuple[str, ...]] = []

    def extend(layout: tuple[str, ...], first: int) -> None:
        for index in range(first, len(profiles)):
            candidate = (*layout, profiles[index].name)
            if isinstance(check_layout(geometry.model, candidate), LayoutAccepted):
                found.append(candidate)
                extend(candidate, index)

    extend((), 0)
    if not maximal_only:
        return tuple(found)
    return tuple(
        layout
        for layout in found
        if not any(
            isinstance(check_layout(geometry.model, (*layout, p.name)), LayoutAccepted)
            for p in profiles
        )
    )
