"""The registry's refusals, as Confluent's Schema Registry answers them: an HTTP status
and an `error_code` its clients switch on (confluent-kafka raises SchemaRegistryError
with both; a serializer treats 40403 as "not registered"), with Confluent's messages."""

from __future__ import annotations


class RegistryError(Exception):
    def __init__(self, http: int, code: int, message: str) -> None:
        super().__init__(message)
        self.http = http
        self.code = code
        self.message = message

    def body(self) -> dict[str, object]:
        return {"error_code": self.code, "message": self.message}


def unauthorized(why: str) -> RegistryError:
    return RegistryError(401, 40101, why)


def forbidden(what: str) -> RegistryError:
    return RegistryError(403, 40301, f"User is denied operation on {what}")


def subject_not_found(subject: str) -> RegistryError:
    return RegistryError(404, 40401, f"Subject '{subject}' not found.")


def version_not_found(version: int | str) -> RegistryError:
    return RegistryError(404, 40402, f"Version {version} not found.")


def schema_not_found(schema_id: int | None = None) -> RegistryError:
    what = "Schema not found" if schema_id is None else f"Schema {schema_id} not found"
    return RegistryError(404, 40403, what)


def subject_soft_deleted(subject: str) -> RegistryError:
    return RegistryError(
        404,
        40404,
        f"Subject '{subject}' was soft deleted.Set permanent=true to delete permanently",
    )


def subject_not_soft_deleted(subject: str) -> RegistryError:
    return RegistryError(
        404, 40405, f"Subject '{subject}' was not deleted first before being permanently deleted"
    )


def version_soft_deleted(subject: str, version: int) -> RegistryError:
    return RegistryError(
        404,
        40406,
        f"Subject '{subject}' Version {version} was soft deleted.Set permanent=true to delete "
        "permanently",
    )


def version_not_soft_deleted(subject: str, version: int) -> RegistryError:
    return RegistryError(
        404,
        40407,
        f"Subject '{subject}' Version {version} was not deleted first before being "
        "permanently deleted",
    )


def no_subject_config(subject: str) -> RegistryError:
    return RegistryError(
        404, 40408, f"Subject '{subject}' does not have subject-level compatibility configured"
    )


def incompatible(subject: str, why: str) -> RegistryError:
    return RegistryError(
        409,
        409,
        f"Schema being registered is incompatible with an earlier schema for subject "
        f'"{subject}", details: [{why}]',
    )


def reference_exists(subject: str, version: int, by: list[int]) -> RegistryError:
    return RegistryError(
        422,
        42206,
        f"One or more references exist to the schema {{subject={subject}, version={version}}}: "
        f"ids {by}",
    )


def invalid_schema(why: str) -> RegistryError:
    return RegistryError(422, 42201, f"Invalid schema: {why}")


def invalid_version(version: str) -> RegistryError:
    return RegistryError(
        422,
        42202,
        f"The specified version '{version}' is not a valid version id. Allowed values are "
        'between [1, 2^31-1] and the string "latest"',
    )


def invalid_level(level: object) -> RegistryError:
    return RegistryError(
        422,
        42203,
        "Invalid compatibility level. Valid values are none, backward, forward, full, "
        "backward_transitive, forward_transitive, and full_transitive",
    )


def invalid_mode() -> RegistryError:
    return RegistryError(
        422, 42204, "Invalid mode. Valid values are READWRITE, READONLY, IMPORT and FORWARD."
    )


def not_permitted(why: str) -> RegistryError:
    return RegistryError(422, 42205, why)


def invalid_subject(subject: str) -> RegistryError:
    return RegistryError(422, 42208, f"Invalid subject {subject}")


def too_large(limit: int) -> RegistryError:
    return RegistryError(422, 42209, f"Schema too large: at most {limit} bytes")


def store_error(why: str) -> RegistryError:
    return RegistryError(500, 50001, f"Error in the backend datastore: {why}")
