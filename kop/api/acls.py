"""DescribeAcls, CreateAcls and DeleteAcls over Pulsar's permissions (kop.security.acls):
`kafka-acls --list/--add/--remove` against kop reads and changes the grants Pulsar
enforces for its own clients too. Without authorization kop answers as a Kafka
broker without an authorizer: SECURITY_DISABLED."""

from __future__ import annotations

from kio.schema.create_acls.v3.request import CreateAclsRequest
from kio.schema.create_acls.v3.response import AclCreationResult, CreateAclsResponse
from kio.schema.delete_acls.v3.request import DeleteAclsFilter, DeleteAclsRequest
from kio.schema.delete_acls.v3.response import (
    DeleteAclsFilterResult,
    DeleteAclsMatchingAcl,
    DeleteAclsResponse,
)
from kio.schema.describe_acls.v3.request import DescribeAclsRequest
from kio.schema.describe_acls.v3.response import (
    AclDescription,
    DescribeAclsResource,
    DescribeAclsResponse,
)
from kio.static.primitive import i8

from kop.api.context import RequestContext, Services, error_of, refuse_system
from kop.api.routes import Now, Route
from kop.protocol.errors import ErrorCode, KafkaError
from kop.protocol.messages import ApiKey
from kop.protocol.values import NO_THROTTLE
from kop.security.acl_admin import AclAdmin
from kop.security.acls import Binding, Filter, Resource, Unmappable
from kop.storage.naming import InvalidTopicName, Namespace, resolve
from kop.storage.types import AdminError

_PREFIX = "persistent://"


async def describe_acls(
    services: Services, ctx: RequestContext, request: DescribeAclsRequest
) -> Now[DescribeAclsResponse]:
    try:
        admin = await _admin(services, ctx, _namespace(ctx, request.resource_name_filter))
        wanted = _filter(request)
        ns = _namespace(ctx, wanted.name)
        found = await admin.describe(ns, _local(wanted))
    except Exception as exc:
        code, message = error_of(exc)
        return Now(
            DescribeAclsResponse(
                throttle_time=NO_THROTTLE, error_code=code, error_message=message, resources=()
            )
        )
    resources: dict[tuple[int, str, int], list[AclDescription]] = {}
    for b in found:
        key = (b.resource, _shown(ctx, ns, b), b.pattern)
        resources.setdefault(key, []).append(_acl(b))
    return Now(
        DescribeAclsResponse(
            throttle_time=NO_THROTTLE,
            error_code=ErrorCode.none,
            error_message=None,
            resources=tuple(
                DescribeAclsResource(
                    resource_type=i8(t), resource_name=n, pattern_type=i8(p), acls=tuple(acls)
                )
                for (t, n, p), acls in resources.items()
            ),
        )
    )


async def create_acls(
    services: Services, ctx: RequestContext, request: CreateAclsRequest
) -> Now[CreateAclsResponse]:
    results = []
    for c in request.creations:
        code, message = ErrorCode.none, None
        try:
            ns = _namespace(
                ctx, c.resource_name if c.resource_type == int(Resource.TOPIC) else None
            )
            admin = await _admin(services, ctx, ns)
            binding = Binding(c.resource_type, _name_in(ns, c.resource_type, c.resource_name),
                              c.resource_pattern_type, c.principal, c.host, c.operation,
                              c.permission_type)  # fmt: skip
            await admin.create(ns, binding)
        except Unmappable as exc:
            code, message = ErrorCode.invalid_request, str(exc)
        except AdminError as exc:
            code, message = error_of(exc)
            if exc.status == 404:
                message = f"Pulsar grants on existing topics only: create {c.resource_name} first"
        except Exception as exc:
            code, message = error_of(exc)
        results.append(AclCreationResult(error_code=code, error_message=message))
    return Now(CreateAclsResponse(throttle_time=NO_THROTTLE, results=tuple(results)))


async def delete_acls(
    services: Services, ctx: RequestContext, request: DeleteAclsRequest
) -> Now[DeleteAclsResponse]:
    out: list[DeleteAclsFilterResult] = []
    for f in request.filters:
        try:
            wanted = _filter(f)
            ns = _namespace(ctx, wanted.name)
            admin = await _admin(services, ctx, ns)
            removed = await admin.delete(ns, _local(wanted))
        except Exception as exc:
            code, message = error_of(exc)
            out.append(
                DeleteAclsFilterResult(error_code=code, error_message=message, matching_acls=())
            )
            continue
        matching = tuple(
            DeleteAclsMatchingAcl(
                error_code=ErrorCode.none if why is None else ErrorCode.invalid_request,
                error_message=why,
                resource_type=i8(b.resource),
                resource_name=_shown(ctx, ns, b),
                pattern_type=i8(b.pattern),
                principal=b.principal,
                host=b.host,
                operation=i8(b.operation),
                permission_type=i8(b.permission),
            )
            for b, why in removed
        )
        out.append(
            DeleteAclsFilterResult(
                error_code=ErrorCode.none, error_message=None, matching_acls=matching
            )
        )
    return Now(DeleteAclsResponse(throttle_time=NO_THROTTLE, filter_results=tuple(out)))


ROUTES = (
    Route(ApiKey.DESCRIBE_ACLS, DescribeAclsRequest, DescribeAclsResponse, describe_acls),
    Route(ApiKey.CREATE_ACLS, CreateAclsRequest, CreateAclsResponse, create_acls),
    Route(ApiKey.DELETE_ACLS, DeleteAclsRequest, DeleteAclsResponse, delete_acls),
)


async def _admin(services: Services, ctx: RequestContext, ns: Namespace) -> AclAdmin:
    if services.acls is None:
        raise KafkaError(ErrorCode.security_disabled, "authorization is off in this kop")
    role = ctx.principal.role if ctx.principal else ""
    if not await services.acls.may_manage(role, ns):
        raise KafkaError(
            ErrorCode.cluster_authorization_failed,
            f"only admins of tenant {ns.tenant} may read or change its ACLs",
        )
    return services.acls


def _acl(b: Binding) -> AclDescription:
    return AclDescription(
        principal=b.principal,
        host=b.host,
        operation=i8(b.operation),
        permission_type=i8(b.permission),
    )


def _filter(request: DescribeAclsRequest | DeleteAclsFilter) -> Filter:
    return Filter(request.resource_type_filter, request.resource_name_filter,
                  request.pattern_type_filter, request.principal_filter, request.host_filter,
                  request.operation, request.permission_type)  # fmt: skip


def _namespace(ctx: RequestContext, name: str | None) -> Namespace:
    """A full Pulsar name's namespace; otherwise the client's own."""
    if name is not None and name.startswith(_PREFIX):
        try:
            ns = resolve(name, ctx.namespace).namespace
        except InvalidTopicName as exc:
            raise KafkaError(ErrorCode.invalid_request, str(exc)) from None
        refuse_system(ctx, ns, name)
        return ns
    return ctx.namespace


def _name_in(ns: Namespace, resource: int, name: str) -> str:
    """A topic's name within its namespace (how Pulsar keys its grants)."""
    if resource == Resource.TOPIC and name.startswith(_PREFIX):
        return resolve(name, ns).local
    return name


def _local(wanted: Filter) -> Filter:
    if wanted.name is None or not wanted.name.startswith(_PREFIX):
        return wanted
    local = wanted.name.rsplit("/", 1)[1]
    return Filter(wanted.resource, local, wanted.pattern, wanted.principal, wanted.host,
                  wanted.operation, wanted.permission)  # fmt: skip


def _shown(ctx: RequestContext, ns: Namespace, b: Binding) -> str:
    """As the client names it: a topic of another namespace by its full name."""
    if b.resource != Resource.TOPIC or ns == ctx.namespace or b.name == "*":
        return b.name
    return f"{_PREFIX}{ns.path}/{b.name}"
