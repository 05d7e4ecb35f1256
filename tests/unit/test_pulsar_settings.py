"""The settings that point kop at a production Pulsar (issue 19): a mistake is one
line at start, never an unauthenticated kop or a 60-second wait, and a secret is
never printed."""

from __future__ import annotations

from pathlib import Path

import pytest

from kop.config.settings import ConfigError, load_config
from kop.wiring.backend import connect_options
from kop.wiring.errors import StartupError


def test_a_mistyped_kop_variable_is_refused_naming_the_setting_it_resembles() -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(environ={"KOP_PULSAR_AUTH_PARAM": "token:x", "HOME": "/root"})
    assert "KOP_PULSAR_AUTH_PARAM" in str(caught.value)
    assert "did you mean KOP_PULSAR_AUTH_PARAMS?" in str(caught.value)
    assert "token:x" not in str(caught.value)


def test_the_tools_own_variables_are_not_settings_and_not_refused() -> None:
    environ = {
        "KOP_PULSAR_PORT": "6670",
        "KOP_PULSAR_DATA": "/tmp/p",
        "KOP_CACHE_DIR": "/tmp/c",
        "KOP_KAFKA_PORT": "19092",
        "KOP_PULSAR_CLUSTER_DATA": "/tmp/cl",
    }
    assert load_config(environ=environ).pulsar_auth_plugin == "none"


def test_a_service_url_of_several_hosts_is_taken_and_a_bad_one_is_one_line() -> None:
    ok = load_config(environ={}, pulsar_service_url="pulsar://b1:6650,b2:6650")
    assert ok.pulsar_service_url == "pulsar://b1:6650,b2:6650"
    with pytest.raises(ConfigError, match="bad port 'x'"):
        load_config(environ={}, pulsar_service_url="pulsar://b1:6650,b2:x")
    with pytest.raises(ConfigError, match=r"want pulsar://"):
        load_config(environ={}, pulsar_service_url="http://b1:8080")


def test_the_auth_params_never_appear_in_the_configs_text() -> None:
    config = load_config(
        environ={}, pulsar_auth_plugin="token", pulsar_auth_params="token:very-secret-jwt"
    )
    assert "very-secret-jwt" not in repr(config)
    assert "very-secret-jwt" not in config.model_dump_json()
    assert config.pulsar_auth_params.get_secret_value() == "token:very-secret-jwt"


def test_each_plugin_says_what_it_is_missing() -> None:
    with pytest.raises(ConfigError, match="needs pulsar_auth_params"):
        load_config(environ={}, pulsar_auth_plugin="token")
    with pytest.raises(ConfigError, match="needs pulsar_tls_cert_file"):
        load_config(environ={}, pulsar_auth_plugin="tls")
    with pytest.raises(ConfigError, match="not a readable file"):
        load_config(environ={}, pulsar_tls_trust_certs_file="/nonexistent/ca.pem")


def test_an_unreadable_token_file_stops_the_start_with_one_line(tmp_path: Path) -> None:
    config = load_config(
        environ={},
        pulsar_auth_plugin="token",
        pulsar_auth_params=f"file://{tmp_path / 'missing-token'}",
    )
    with pytest.raises(StartupError, match="token file"):
        connect_options(config)


def test_oauth2_params_are_checked_at_start(tmp_path: Path) -> None:
    config = load_config(environ={}, pulsar_auth_plugin="oauth2", pulsar_auth_params="{}")
    with pytest.raises(StartupError, match="issuerUrl and privateKey"):
        connect_options(config)
    creds = tmp_path / "creds.json"
    creds.write_text('{"client_id": "kop"}')
    config = load_config(
        environ={},
        pulsar_auth_plugin="oauth2",
        pulsar_auth_params=f'{{"issuerUrl": "https://issuer", "privateKey": "file://{creds}"}}',
    )
    with pytest.raises(StartupError, match="client_secret"):
        connect_options(config)
