"""Who may see an event, decided when it is delivered, with the viewer's roles as they are then."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Protocol

from gshare.events.outbox import Audience


class Viewer(Protocol):
    """What the decision needs of a signed-in caller (identity's Actor is one)."""

    @property
    def user_id(self) -> uuid.UUID: ...
    @property
    def is_super_admin(self) -> bool: ...
    @property
    def org_admin_of(self) -> frozenset[uuid.UUID]: ...
    def administers_group(self, group_id: uuid.UUID, org_id: uuid.UUID) -> bool: ...


def may_see(
    viewer: Viewer,
    audience: Audience,
    *,
    user_groups: Mapping[uuid.UUID, uuid.UUID],
    group_org: uuid.UUID | None,
) -> bool:
    """`user_groups` are the groups (group -> organization) the event's user is in now;
    `group_org` is the organization of the event's group. Mirrors the read rules: a personal
    wallet is read by its owner and the admins of the owner's groups and organizations, a
    group's by the admins of the group and its organization, an organization's by its admins;
    a user's request in a group by the user and that group's admins."""
    if audience.everyone:
        return True
    if audience.user_id is not None and audience.user_id == viewer.user_id:
        return True
    if audience.private:
        return False
    if viewer.is_super_admin:
        return True
    # The narrowest scope named decides: a user's request in one group is that group's
    # business, not that of the admins of the user's other groups.
    org_id = audience.org_id or group_org
    if audience.group_id is not None:
        return org_id is not None and viewer.administers_group(audience.group_id, org_id)
    if audience.org_id is not None:
        return audience.org_id in viewer.org_admin_of
    return audience.user_id is not None and any(
        viewer.administers_group(group, org) for group, org in user_groups.items()
    )
