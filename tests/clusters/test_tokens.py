"""Internal tokens: what verifies, what is refused, and key rotation with overlap."""

from __future__ import annotations

import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

import jwt
import pytest

from gshare.clusters.keyfile import load_or_create
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


def test_the_key_file_is_private_and_reloads(tmp_path: Path) -> None:
    path = tmp_path / "internal-keys.json"
    first = load_or_create(path, NOW)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    again = load_or_create(path, NOW)
    assert again.jwks() == first.jwks()
    assert "d" not in again.jwks()["keys"][0]  # never the private part


def test_processes_creating_the_key_set_together_agree(tmp_path: Path) -> None:
    """The API and the worker start at once on a fresh data dir: one key set, not two."""
    import subprocess
    import sys

    path = tmp_path / "keys" / "internal-keys.json"
    script = (
        "import sys, datetime, pathlib\n"
        "from gshare.clusters.keyfile import load_or_create\n"
        "keys = load_or_create(pathlib.Path(sys.argv[1]), datetime.datetime.now(datetime.UTC))\n"
        "print(keys.current.kid)\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(path)], stdout=subprocess.PIPE)
        for _ in range(6)
    ]
    kids = {p.communicate(timeout=60)[0].decode().strip() for p in procs}
    assert len(kids) == 1
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert [p.name for p in path.parent.iterdir() if p.suffix == ".tmp"] == []


def test_rotation_is_picked_up_by_every_process(tmp_path: Path) -> None:
    from datetime import UTC, datetime, timedelta

    from gshare.clusters.keyfile import KeyFile, rotate_if_due

    path = tmp_path / "internal-keys.json"
    start = datetime(2026, 1, 1, tzinfo=UTC)
    api = KeyFile(path)
    first = api.get(start)
    token = first.mint("c1", start + timedelta(days=30))
    assert rotate_if_due(path, start + timedelta(days=10)) is False
    assert rotate_if_due(path, start + timedelta(days=30)) is True
    rotated = api.get(start + timedelta(days=30))  # the API sees the worker's rotation
    assert rotated.current.kid != first.current.kid
    assert rotated.verify(token, start + timedelta(days=30)) == "c1"  # the old key still verifies
    new_token = rotated.mint("c1", start + timedelta(days=30))
    assert rotated.verify(new_token, start + timedelta(days=30)) == "c1"
    # Once every token of the old key has expired, a later pass drops it.
    rotate_if_due(path, start + timedelta(days=31))
    assert [k.kid for k in api.get(start + timedelta(days=31)).keys] == [rotated.current.kid]
