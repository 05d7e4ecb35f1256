"""ApiVersions is answered from an answer made once per transaction version level and
converted once per client version: every connection asks it first, and a storm of new
connections should not cost kop 0.3 ms each. The answer a client gets still follows the
coordinator's level and the client's version."""

from __future__ import annotations

import types

import pytest
from kio.schema.api_versions.v4.request import ApiVersionsRequest

from kop.api import api_versions
from kop.protocol.messages import ADVERTISED_VERSIONS

ROUTE = api_versions.ROUTES[0]


async def _ask(level: int, version: int) -> object:
    services = types.SimpleNamespace(txns=types.SimpleNamespace(version=level))
    ctx = types.SimpleNamespace(api_version=version)
    request = ApiVersionsRequest(client_software_name="t", client_software_version="1")
    written = await ROUTE.run(services, ctx, request)  # type: ignore[arg-type]
    return written.answer  # type: ignore[union-attr]


@pytest.mark.parametrize("version", [0, 3, 4])
async def test_each_level_and_version_gets_its_own_answer(version: int) -> None:
    answers = {}
    for level in (2, 0, 2):
        answer = await _ask(level, version)
        assert len(answer.api_keys) == len(ADVERTISED_VERSIONS)  # type: ignore[attr-defined]
        if version >= 3:
            (finalized,) = answer.finalized_features  # type: ignore[attr-defined]
            assert finalized.max_version_level == level
        answers.setdefault(level, answer)
        assert answer is answers[level]  # made and converted once
        assert type(answer).__version__ == version  # type: ignore[attr-defined]
