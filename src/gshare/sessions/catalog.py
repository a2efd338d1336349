"""The image catalog and volumes: what users start sessions from and keep their work on."""

from __future__ import annotations

import uuid

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from gshare.capacity import service as capacity
from gshare.identity import service as identity
from gshare.identity.authz import Context, audit, require
from gshare.identity.permissions import Action, is_allowed
from gshare.kit.errors import Conflict, NotFound
from gshare.kit.ids import new_id
from gshare.sessions import repository
from gshare.sessions.models import CatalogImage, Volume
from gshare.sessions.schemas import ImageCreate, ImageUpdate, SharedVolumeCreate

# ---- catalog -------------------------------------------------------------------------------


async def list_images(ctx: Context, *, all_images: bool) -> list[CatalogImage]:
    """The enabled images; admins of the catalog may see the disabled ones too."""
    require(
        ctx, Action.CATALOG_MANAGE if all_images else Action.CATALOG_READ, target_type="catalog"
    )
    return await repository.catalog(ctx.db, enabled_only=not all_images)


def _image_exists() -> Conflict:
    return Conflict("An image of this type has that name already.", code="image_exists")


async def _flush_unique(db: AsyncSession, refusal: Conflict) -> None:
    """Write what is pending; a unique name taken meanwhile is `refusal`."""
    try:
        async with db.begin_nested():
            await db.flush()
    except IntegrityError:
        raise refusal from None


async def add_image(ctx: Context, body: ImageCreate) -> CatalogImage:
    require(ctx, Action.CATALOG_MANAGE, target_type="catalog")
    db = ctx.db
    if await repository.image_named(db, body.session_type, body.name) is not None:
        raise _image_exists()
    row = CatalogImage(
        id=new_id(),
        session_type=body.session_type,
        name=body.name,
        reference=body.reference,
        description=body.description,
        enabled=body.enabled,
        created_at=ctx.now,
    )
    db.add(row)
    await _flush_unique(db, _image_exists())
    await audit(ctx, "catalog.add", target_type="image", target_id=row.id)
    return row


async def update_image(ctx: Context, image_id: uuid.UUID, body: ImageUpdate) -> CatalogImage:
    require(ctx, Action.CATALOG_MANAGE, target_type="image", target_id=image_id)
    db = ctx.db
    row = await repository.image(db, image_id, lock=True)
    if row is None:
        raise NotFound("No such image.", code="image_not_found")
    if body.name is not None and body.name != row.name:
        if await repository.image_named(db, row.session_type, body.name) is not None:
            raise _image_exists()
        row.name = body.name
    if body.reference is not None:
        row.reference = body.reference
    if body.description is not None:
        row.description = body.description
    if body.enabled is not None:
        row.enabled = body.enabled
    await _flush_unique(db, _image_exists())
    await audit(ctx, "catalog.update", target_type="image", target_id=row.id)
    return row


# ---- volumes -------------------------------------------------------------------------------


async def my_volumes(ctx: Context) -> tuple[list[Volume], int]:
    """The caller's home volumes and the shared volumes of their groups; their homes' total."""
    require(ctx, Action.VOLUME_READ_OWN, target_type="volume")
    groups = list(ctx.actor.member_of) + list(ctx.actor.guest_of)
    found = await repository.volumes_of(ctx.db, owner_id=ctx.actor.user_id, group_ids=groups)
    return found, await repository.home_total_gib(ctx.db, ctx.actor.user_id)


async def delete_my_volume(ctx: Context, volume_id: uuid.UUID) -> None:
    """Delete one of one's home volumes that no session still uses."""
    require(ctx, Action.VOLUME_DELETE_OWN, target_type="volume", target_id=volume_id)
    row = await repository.volume(ctx.db, volume_id, lock=True)
    if row is None or row.kind != "home" or row.owner_id != ctx.actor.user_id or row.deleted_at:
        raise NotFound("No such volume.", code="volume_not_found")
    await _refuse_in_use(ctx, row)
    row.deleted_at = ctx.now
    await audit(ctx, "volume.delete", target_type="volume", target_id=row.id)


async def _refuse_in_use(ctx: Context, row: Volume) -> None:
    users = await repository.users_of_volumes(ctx.db, [row.id])
    if users:
        raise Conflict(
            f"The volume is used by {len(users)} session(s); stop them first.",
            code="volume_in_use",
        )


async def group_volumes(ctx: Context, group_id: uuid.UUID) -> tuple[list[Volume], bool]:
    """The group's shared volumes, and whether the caller administers the group (and so may
    see whose sessions use them)."""
    scope = await identity.scope_of_group(ctx.db, group_id)
    require(ctx, Action.VOLUME_READ_GROUP, scope, target_type="group", target_id=group_id)
    found = await repository.volumes_of(ctx.db, group_ids=[group_id])
    return found, is_allowed(ctx.actor, Action.VOLUME_MANAGE_GROUP, scope)


async def create_shared_volume(
    ctx: Context, group_id: uuid.UUID, body: SharedVolumeCreate
) -> Volume:
    scope = await identity.scope_of_group(ctx.db, group_id)
    require(ctx, Action.VOLUME_MANAGE_GROUP, scope, target_type="group", target_id=group_id)
    db = ctx.db
    row = Volume(
        id=new_id(),
        kind="shared",
        group_id=group_id,
        name=body.name,
        size_gib=body.size_gib,
        access_mode=body.access_mode,
        created_by=ctx.actor.user_id,
        created_at=ctx.now,
    )
    db.add(row)
    await _flush_unique(db, Conflict("The group has a volume of that name.", code="volume_exists"))
    await audit(ctx, "volume.create", target_type="volume", target_id=row.id, group_id=group_id)
    return row


async def delete_shared_volume(ctx: Context, group_id: uuid.UUID, volume_id: uuid.UUID) -> None:
    scope = await identity.scope_of_group(ctx.db, group_id)
    require(ctx, Action.VOLUME_MANAGE_GROUP, scope, target_type="volume", target_id=volume_id)
    row = await repository.volume(ctx.db, volume_id, lock=True)
    if row is None or row.kind != "shared" or row.group_id != group_id or row.deleted_at:
        raise NotFound("No such volume.", code="volume_not_found")
    await _refuse_in_use(ctx, row)
    row.deleted_at = ctx.now
    await audit(ctx, "volume.delete", target_type="volume", target_id=row.id, group_id=group_id)


async def storage_limit(ctx: Context) -> int | None:
    """The smallest `storage_gb` among the caller's groups' effective policies, if any sets it."""
    asks = [(ctx.actor.user_id, g) for g in list(ctx.actor.member_of) + list(ctx.actor.guest_of)]
    policies = await capacity.effective_for_many(ctx.db, asks)
    limits = [p["storage_gb"].value for p in policies.values()]
    numbers = [v for v in limits if isinstance(v, int) and not isinstance(v, bool)]
    return min(numbers) if numbers else None
