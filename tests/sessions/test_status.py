"""Which status reports count: generation first, then sequence."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gshare.sessions.status import is_newer

counts = st.integers(min_value=0, max_value=10**12)


def test_examples() -> None:
    assert is_newer(stored_generation=1, stored_sequence=5, generation=1, sequence=6)
    assert not is_newer(stored_generation=1, stored_sequence=5, generation=1, sequence=5)
    assert is_newer(stored_generation=1, stored_sequence=5, generation=2, sequence=1)
    assert not is_newer(stored_generation=2, stored_sequence=1, generation=1, sequence=9)


@given(counts, counts, counts, counts)
def test_reports_are_ordered_strictly(g1: int, s1: int, g2: int, s2: int) -> None:
    """Of two different reports exactly one is newer, so replaying them in any order ends with
    the same one stored; a report is never newer than itself."""
    forward = is_newer(stored_generation=g1, stored_sequence=s1, generation=g2, sequence=s2)
    backward = is_newer(stored_generation=g2, stored_sequence=s2, generation=g1, sequence=s1)
    if (g1, s1) == (g2, s2):
        assert not forward
        assert not backward
    else:
        assert forward != backward
