"""The catalogue: importing this package registers every scenario."""

from conformance.scenarios import admin, bad_input, groups, positions, produce, tools  # noqa: F401
