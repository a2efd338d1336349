"""Request and response shapes of the identity API."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, StringConstraints

from gshare.kit.schemas import Printable, RequestModel, ResponseModel, UtcDatetime


def _email(value: str) -> str:
    value = value.strip().lower()
    local, at, domain = value.partition("@")
    if not at or not local or "." not in domain or " " in value or domain.startswith("."):
        raise ValueError("must be an email address")
    if len(value) > 320:  # lowercasing can lengthen some characters
        raise ValueError("must be at most 320 characters")
    return value


Email = Annotated[str, StringConstraints(max_length=320), AfterValidator(_email)]
Name = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=120), Printable
]
PersonName = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200), Printable
]
Password = Annotated[str, StringConstraints(min_length=1, max_length=1024)]
MemberRole = Literal["member", "guest"]


class UserOut(ResponseModel):
    id: uuid.UUID
    email: str
    name: str
    active: bool
    must_change_password: bool
    is_super_admin: bool
    created_at: datetime


class RoleGrantOut(ResponseModel):
    role: Literal["super_admin", "org_admin", "group_admin"]
    org_id: uuid.UUID | None = None
    group_id: uuid.UUID | None = None
    org_name: str | None = None
    group_name: str | None = None


class MembershipOut(ResponseModel):
    user_id: uuid.UUID
    user_email: str
    user_name: str
    group_id: uuid.UUID
    group_name: str
    org_id: uuid.UUID
    org_name: str
    role: MemberRole
    expires_at: datetime | None
    active: bool
    created_at: datetime


class OrgCapabilitiesOut(ResponseModel):
    org_id: uuid.UUID
    actions: list[str]


class GroupCapabilitiesOut(ResponseModel):
    group_id: uuid.UUID
    org_id: uuid.UUID
    actions: list[str]


class CapabilitiesOut(ResponseModel):
    """What the caller may do (see identity/capabilities.py): `actions` anywhere, `orgs` for an
    organization and every group in it, `groups` in one group."""

    actions: list[str]
    orgs: list[OrgCapabilitiesOut]
    groups: list[GroupCapabilitiesOut]


class MeOut(ResponseModel):
    user: UserOut
    roles: list[RoleGrantOut]
    memberships: list[MembershipOut]
    capabilities: CapabilitiesOut
    csrf_token: str
    must_change_password: bool


class LoginRequest(RequestModel):
    email: Annotated[str, StringConstraints(max_length=320)]
    password: Password


class LoginResponse(ResponseModel):
    user: UserOut
    csrf_token: str
    must_change_password: bool


class PasswordChangeRequest(RequestModel):
    current_password: Password
    new_password: Password


class PasswordCheckRequest(RequestModel):
    password: Password
    email: Annotated[str, StringConstraints(max_length=320)] | None = None
    name: Annotated[str, StringConstraints(max_length=200)] | None = None


class PasswordCheckOut(ResponseModel):
    acceptable: bool
    score: int = Field(ge=0, le=4)
    warning: str
    suggestions: list[str]
    min_length: int


class OrgOut(ResponseModel):
    id: uuid.UUID
    name: str
    created_at: datetime


class OrgCreate(RequestModel):
    name: Name


class OrgUpdate(RequestModel):
    name: Name | None = None


class GroupOut(ResponseModel):
    id: uuid.UUID
    org_id: uuid.UUID
    name: str
    created_at: datetime


class GroupCreate(RequestModel):
    name: Name


class GroupUpdate(RequestModel):
    name: Name | None = None


class UserCreate(RequestModel):
    email: Email
    name: PersonName
    initial_password: Password
    group_id: uuid.UUID | None = None
    role: MemberRole | None = None


class UserUpdate(RequestModel):
    name: PersonName | None = None
    active: bool | None = None


class PasswordResetRequest(RequestModel):
    initial_password: Password


class MembershipPut(RequestModel):
    role: MemberRole
    expires_at: UtcDatetime | None = None


class AdminGrantOut(ResponseModel):
    user_id: uuid.UUID
    user_email: str
    user_name: str
    role: Literal["org_admin", "group_admin"]
    org_id: uuid.UUID | None
    group_id: uuid.UUID | None
    created_at: datetime


class UserPage(ResponseModel):
    items: list[UserOut]
    next_cursor: str | None


class OrgPage(ResponseModel):
    items: list[OrgOut]
    next_cursor: str | None


class GroupPage(ResponseModel):
    items: list[GroupOut]
    next_cursor: str | None


class MembershipPage(ResponseModel):
    items: list[MembershipOut]
    next_cursor: str | None


class AdminGrantPage(ResponseModel):
    items: list[AdminGrantOut]
    next_cursor: str | None
