"""Internal tokens: what verifies, what is refused, and key rotation with overlap."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import jwt
import pytest

from gshare.clusters.tokens import (
    AUDIENCE,
    TOKEN_TYPE,
    InvalidToken,
    KeySet,
    new_key,
)

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def keys() -> KeySet:
    return KeySet([new_key(NOW)])


def test_a_minted_token_names_its_cluster(keys: KeySet) -> None:
    token = keys.mint("c-1", NOW)
    assert keys.verify(token, NOW + timedelta(minutes=59)) == "c-1"
    header = jwt.get_unverified_header(token)
    assert (header["alg"], header["typ"], header["kid"]) == ("RS256", TOKEN_TYPE, keys.current.kid)
    claims = jwt.decode(token, options={"verify_signature": False})
    assert claims["aud"] == AUDIENCE
    assert claims["iss"] == claims["sub"] == "cluster:c-1"
    assert claims["exp"] - claims["iat"] <= 3600
    assert claims["jti"]


def test_expired_tokens_are_refused(keys: KeySet) -> None:
    token = keys.mint("c-1", NOW, timedelta(minutes=5))
    with pytest.raises(InvalidToken, match="xpired"):
        keys.verify(token, NOW + timedelta(minutes=10))


def test_another_key_is_refused(keys: KeySet) -> None:
    stranger = KeySet([new_key(NOW)])
    forged = stranger.mint("c-1", NOW)
    with pytest.raises(InvalidToken, match="unknown key"):
        keys.verify(forged, NOW)
    # Same kid, other key: the signature does not match.
    impostor = KeySet([new_key(NOW)])
    impostor.keys[0] = type(impostor.keys[0])(keys.current.kid, impostor.keys[0].private_pem, NOW)
    with pytest.raises(InvalidToken, match=r"[Ss]ignature"):
        keys.verify(impostor.mint("c-1", NOW), NOW)


def _signed(keys: KeySet, claims: dict, **header: str) -> str:
    key = keys.current
    return jwt.encode(
        claims,
        key.private(),
        algorithm="RS256",
        headers={"kid": key.kid, "typ": TOKEN_TYPE, **header},
    )


def _claims(**overrides: object) -> dict:
    base = {
        "iss": "cluster:c-1",
        "sub": "cluster:c-1",
        "aud": AUDIENCE,
        "iat": int(NOW.timestamp()),
        "exp": int((NOW + timedelta(minutes=30)).timestamp()),
        "jti": "j1",
    }
    return base | overrides


@pytest.mark.parametrize(
    ("claims", "header", "reason"),
    [
        (_claims(aud="someone-else"), {}, "udience"),
        (_claims(iss="cluster:c-2"), {}, "same cluster"),
        (_claims(sub="user:1", iss="user:1"), {}, "same cluster"),
        (_claims(exp=int((NOW + timedelta(hours=3)).timestamp())), {}, "longer than an hour"),
        ({k: v for k, v in _claims().items() if k != "jti"}, {}, "jti"),
        (_claims(), {"typ": "JWT"}, "type"),
    ],
)
def test_tokens_that_break_a_rule_are_refused(
    keys: KeySet, claims: dict, header: dict, reason: str
) -> None:
    with pytest.raises(InvalidToken, match=reason):
        keys.verify(_signed(keys, claims, **header), NOW)


def test_a_symmetric_algorithm_is_refused(keys: KeySet) -> None:
    public = keys.current.public_jwk()["n"]
    token = jwt.encode(
        _claims(), public, algorithm="HS256", headers={"kid": keys.current.kid, "typ": TOKEN_TYPE}
    )
    with pytest.raises(InvalidToken, match="not RS256"):
        keys.verify(token, NOW)


def test_rotation_keeps_old_tokens_valid_until_they_expire() -> None:
    keys = KeySet([new_key(NOW)])
    old_token = keys.mint("c-1", NOW)
    keys.rotate(NOW + timedelta(minutes=10))
    assert len(keys.jwks()["keys"]) == 2
    assert keys.verify(old_token, NOW + timedelta(minutes=50)) == "c-1"
    new_token = keys.mint("c-1", NOW + timedelta(minutes=10))
    assert jwt.get_unverified_header(new_token)["kid"] == keys.current.kid
    keys.drop_retired(NOW + timedelta(hours=2))
    assert len(keys.jwks()["keys"]) == 1
    with pytest.raises(InvalidToken):
        keys.verify(old_token, NOW + timedelta(minutes=50))
