"""DescribeConfigs for topics (from Pulsar topic properties) and the broker."""

from __future__ import annotations

from typing import Any

from kop.api.context import RequestContext, Response, Services, error_of, existing_topic
from kop.protocol.errors import ErrorCode, KafkaError

TOPIC = 2
BROKER = 4
SOURCE_DYNAMIC_TOPIC = 1
SOURCE_STATIC_BROKER = 4
SOURCE_DEFAULT = 5
TYPE_STRING = 2
TYPE_INT = 3
TYPE_LONG = 5
TYPE_LIST = 7


async def handle(services: Services, ctx: RequestContext, request: Any) -> Response:
    results = []
    for res in request.resources:
        result: dict[str, Any] = {
            "error_code": ErrorCode.none,
            "error_message": None,
            "resource_type": res.resource_type,
            "resource_name": res.resource_name,
            "configs": (),
        }
        try:
            if res.resource_type == TOPIC:
                view = await existing_topic(services, ctx, res.resource_name)
                values = view.configs
                defaults = services.catalog.defaults.configs()
                sources = {
                    k: SOURCE_DEFAULT if defaults.get(k) == v else SOURCE_DYNAMIC_TOPIC
                    for k, v in values.items()
                }
            elif res.resource_type == BROKER:
                values = {
                    "broker.id": str(services.broker.node_id),
                    "auto.create.topics.enable": str(services.auto_create_topics).lower(),
                    **{
                        f"log.{k}" if k.startswith("retention") else k: v
                        for k, v in services.catalog.defaults.configs().items()
                    },
                }
                sources = dict.fromkeys(values, SOURCE_STATIC_BROKER)
            else:
                raise KafkaError(
                    ErrorCode.invalid_request, f"resource type {res.resource_type} is not supported"
                )
            keys = res.configuration_keys
            result["configs"] = [
                _entry(k, v, sources[k])
                for k, v in sorted(values.items())
                if keys is None or k in keys
            ]
        except Exception as exc:
            result["error_code"], result["error_message"] = error_of(exc)
        results.append(result)
    return {"throttle_time": 0, "results": results}


def _entry(name: str, value: str, source: int) -> dict[str, Any]:
    kind = TYPE_LONG if name.endswith((".ms", ".bytes")) else TYPE_STRING
    return {
        "name": name,
        "value": value,
        "read_only": source != SOURCE_DYNAMIC_TOPIC and source != SOURCE_DEFAULT,
        "config_source": source,
        "is_sensitive": False,
        "synonyms": (),
        "config_type": kind,
        "documentation": None,
    }
