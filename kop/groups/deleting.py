"""DeleteGroups of one group, of any kind (a share group: kop/groups/share/service.py):
persisted first, then forgotten, so a failed write leaves the group as it was
(DescribeGroups and ListGroups go on agreeing).
Only an empty group goes (NON_EMPTY_GROUP otherwise); a standalone group known only by
its offsets goes too."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kop.protocol.errors import ErrorCode
from kop.storage.types import StorageError

if TYPE_CHECKING:
    from kop.groups.service import GroupService

log = logging.getLogger("kop.groups.service")  # where these lines always went


async def delete_group(groups: GroupService, group_id: str) -> ErrorCode:
    if groups.share.get(group_id) is not None:
        return await groups.share.delete(group_id)
    if groups.consumer.get(group_id) is not None:
        return await groups.consumer.delete(group_id, groups.offsets.forget_group)
    classic = groups.coordinator
    code = classic.deletable(group_id)
    if code is ErrorCode.group_id_not_found and groups.offsets.of(group_id):
        code = ErrorCode.none  # a standalone group known only by its offsets
    if code is ErrorCode.none:
        try:
            await groups.offsets.forget_group(group_id)
        except StorageError as exc:
            log.warning("deleting group %s not persisted: %s", group_id, exc)
            return groups.failed(group_id, exc)
        if classic.deletable(group_id) is ErrorCode.none:
            classic.forget(group_id)
    return code
