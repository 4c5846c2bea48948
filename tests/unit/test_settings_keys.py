"""``CONSENTRY_API_KEYS`` parsing: `token=tenant:user` entries (or `token=tenant:user:Display
Name`), separated by commas, where a token may itself contain ``=`` (base64 padding) and each
token names exactly one owner."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from consentry.principal import Principal
from consentry.settings import Settings

PADDED = "c2VjcmV0LXRva2Vu=="  # base64 of "secret-token", padding included


def test_a_token_with_base64_padding_keeps_its_padding_and_maps_to_its_owner() -> None:
    settings = Settings(api_keys=f"{PADDED}=acme:alice")

    assert settings.api_keys == {PADDED: Principal("acme", "alice")}


def test_padded_tokens_read_from_the_environment_map_to_their_owners(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CONSENTRY_API_KEYS", f"{PADDED}=acme:alice, dG9rZW4y=globex:bob")

    assert Settings().api_keys == {
        PADDED: Principal("acme", "alice"),
        "dG9rZW4y": Principal("globex", "bob"),
    }


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param("ka=acme:alice,ka=acme:bob", id="same-token-two-owners"),
        pytest.param("ka=acme:alice, ka =acme:alice", id="same-token-same-owner-spaced"),
        pytest.param(f"{PADDED}=acme:alice,{PADDED}=globex:bob", id="same-padded-token"),
    ],
)
def test_a_token_named_twice_is_refused(raw: str) -> None:
    with pytest.raises(ValidationError, match="names the same token twice"):
        Settings(api_keys=raw)


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param("ka=ac me:alice", id="space-in-tenant"),
        pytest.param("ka=acme:al ice", id="space-in-user"),
        pytest.param("ka=:alice", id="empty-tenant"),
        pytest.param("ka=acme:", id="empty-user"),
        pytest.param("ka= :alice", id="blank-tenant"),
        pytest.param("ka=acme: ", id="blank-user"),
        pytest.param(f"{PADDED}=acme:", id="padded-token-empty-user"),
    ],
)
def test_a_tenant_or_user_that_is_empty_or_has_spaces_is_refused(raw: str) -> None:
    with pytest.raises(ValidationError, match="token=tenant:user"):
        Settings(api_keys=raw)


def test_an_owner_may_carry_a_display_name_that_is_not_part_of_its_identity() -> None:
    settings = Settings(api_keys="ka=acme:ada:Ada Lovelace, kb=acme:ada, kc=acme:bob: Bob B. ")

    ada, same_ada, bob = (settings.api_keys[k] for k in ("ka", "kb", "kc"))
    assert (ada.tenant, ada.user, ada.name) == ("acme", "ada", "Ada Lovelace")
    assert same_ada.name is None
    assert ada == same_ada
    assert hash(ada) == hash(same_ada)
    assert ada.display == "acme/ada"
    assert bob.name == "Bob B."


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param("ka=acme:ada:", id="empty-name"),
        pytest.param("ka=acme:ada:  ", id="blank-name"),
        pytest.param("ka=acme:ada:Ada\tL", id="control-character"),
        pytest.param("ka=acme:ada:" + "A" * 129, id="too-long"),
    ],
)
def test_a_display_name_that_is_empty_or_unprintable_is_refused(raw: str) -> None:
    with pytest.raises(ValidationError, match="display name of acme:ada"):
        Settings(api_keys=raw)
