"""Settings refuse unsafe or malformed values at start-up."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from consentry.cli import main
from consentry.principal import Principal
from consentry.settings import Settings
from consentry_graphs.models import RetryPolicy


def test_api_keys_map_bearer_tokens_to_tenant_and_user() -> None:
    settings = Settings(api_keys="ka=acme:alice, kb=acme:bob")
    assert settings.api_keys == {
        "ka": Principal("acme", "alice"),
        "kb": Principal("acme", "bob"),
    }


@pytest.mark.parametrize("raw", ["ka", "ka=acme", "=acme:alice", "ka=:alice", "ka=acme:"])
def test_malformed_api_keys_are_refused(raw: str) -> None:
    with pytest.raises(ValidationError, match="token=tenant:user"):
        Settings(api_keys=raw)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.10", "::", "example.org"])
def test_keyless_mode_refuses_a_non_loopback_address(host: str) -> None:
    with pytest.raises(ValidationError, match="without CONSENTRY_API_KEYS"):
        Settings(host=host)


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "localhost"])
def test_keyless_mode_binds_to_loopback(host: str) -> None:
    assert Settings(host=host).host == host


def test_with_api_keys_any_address_is_allowed() -> None:
    assert Settings(host="0.0.0.0", api_keys="ka=acme:alice").host == "0.0.0.0"


def test_serve_exits_with_a_clear_message_instead_of_binding_openly(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CONSENTRY_API_KEYS", raising=False)
    assert main(["serve", "--host", "0.0.0.0", "--port", "0"]) == 2
    assert "refusing to bind to 0.0.0.0 without CONSENTRY_API_KEYS" in capsys.readouterr().err


def test_openai_api_key_is_read_as_the_model_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CONSENTRY_LLM_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    settings = Settings()
    assert settings.llm_api_key is not None
    assert settings.llm_api_key.get_secret_value() == "sk-from-env"
    assert not settings.uses_offline_model


def test_the_replaced_max_retries_setting_refuses_to_start_and_names_its_successor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CONSENTRY_LLM_MAX_RETRIES", "2")
    with pytest.raises(ValidationError, match="set CONSENTRY_LLM_MAX_ATTEMPTS=3 instead"):
        Settings()


def test_the_retry_settings_make_the_model_retry_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONSENTRY_LLM_MAX_ATTEMPTS", "2")
    monkeypatch.setenv("CONSENTRY_LLM_RETRY_BASE_SECONDS", "0.25")
    monkeypatch.setenv("CONSENTRY_LLM_RETRY_MAX_SECONDS", "4")
    monkeypatch.setenv("CONSENTRY_LLM_RETRY_AFTER_CAP_SECONDS", "10")
    assert Settings().llm_retry_policy == RetryPolicy(
        max_attempts=2,
        base_delay_seconds=0.25,
        max_delay_seconds=4.0,
        retry_after_cap_seconds=10.0,
    )


@pytest.mark.parametrize("attempts", ["0", "11"])
def test_attempts_per_model_call_are_bounded(
    monkeypatch: pytest.MonkeyPatch, attempts: str
) -> None:
    monkeypatch.setenv("CONSENTRY_LLM_MAX_ATTEMPTS", attempts)
    with pytest.raises(ValidationError, match="llm_max_attempts"):
        Settings()


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("CONSENTRY_MAX_HEADER_BYTES", "1024"),  # below what browsers send
        ("CONSENTRY_MAX_HEADER_BYTES", "67108864"),  # the 64 MB header of issue 17
        ("CONSENTRY_MAX_HEADER_COUNT", "0"),
        ("CONSENTRY_HTTP_HEADER_TIMEOUT_SECONDS", "0"),
        ("CONSENTRY_HTTP_HEADER_TIMEOUT_SECONDS", "3600"),
        ("CONSENTRY_HTTP_KEEPALIVE_TIMEOUT_SECONDS", "0"),
        ("CONSENTRY_MAX_REQUESTS_PER_CONNECTION", "0"),
    ],
)
def test_unsafe_http_limits_refuse_to_start(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ValidationError, match=name.removeprefix("CONSENTRY_").lower()):
        Settings()


def test_a_body_idle_timeout_longer_than_the_body_timeout_refuses_to_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CONSENTRY_HTTP_BODY_IDLE_TIMEOUT_SECONDS", "60")
    monkeypatch.setenv("CONSENTRY_HTTP_BODY_TIMEOUT_SECONDS", "30")
    with pytest.raises(ValidationError, match="must not exceed CONSENTRY_HTTP_BODY_TIMEOUT"):
        Settings()


def test_any_origin_without_api_keys_refuses_to_start() -> None:
    with pytest.raises(ValueError, match="CONSENTRY_CORS_ORIGINS=\\* without CONSENTRY_API_KEYS"):
        Settings(cors_origins="*")


@pytest.mark.parametrize(
    "raw", ["localhost:5173", "http://localhost:5173/", "http://localhost:5173/app", "*,http://a"]
)
def test_an_origin_list_that_is_not_origins_refuses_to_start(raw: str) -> None:
    with pytest.raises(ValueError, match="CONSENTRY_CORS_ORIGINS"):
        Settings(cors_origins=raw, api_keys="k1=t:u")


def test_origins_are_read_from_the_environment_comma_separated(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CONSENTRY_CORS_ORIGINS", "http://localhost:5173, https://app.example.org")

    assert Settings().cors_origins == ["http://localhost:5173", "https://app.example.org"]


@pytest.mark.parametrize("secret", ["", "short", "fifteen chars.."])
def test_a_webhook_secret_shorter_than_16_characters_refuses_to_start(
    monkeypatch: pytest.MonkeyPatch, secret: str
) -> None:
    monkeypatch.setenv("CONSENTRY_WEBHOOK_SECRET", secret)
    with pytest.raises(ValidationError, match="CONSENTRY_WEBHOOK_SECRET must be 16 characters"):
        Settings()


def test_a_webhook_secret_of_16_characters_or_more_is_taken(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CONSENTRY_WEBHOOK_SECRET", "sixteen chars..!")
    secret = Settings().webhook_secret
    assert secret is not None
    assert secret.get_secret_value() == "sixteen chars..!"
    monkeypatch.delenv("CONSENTRY_WEBHOOK_SECRET")
    assert Settings().webhook_secret is None
