"""Internal identity: the API's RS256 key set, its public JWKS, and short-lived operator tokens.

Pure apart from the cryptography: no files and no network. Where the key set is kept is
keyfile.py's business. Keys rotate with overlap: a new key signs from the moment it is added,
older keys keep verifying until every token they signed has expired, then they are dropped.
"""

from __future__ import annotations

import base64
import itertools
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cached_property
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

AUDIENCE = "gshare-internal"
ISSUER = "gshare-api"
TOKEN_TYPE = "gshare-operator+jwt"
MAX_LIFETIME = timedelta(hours=1)
LEEWAY = timedelta(seconds=30)


class InvalidToken(Exception):
    """Why a presented token is refused. `reason` is one word from a fixed set, safe to record;
    the message may quote what the caller sent and is for logs only, never the audit log."""

    def __init__(self, message: str, reason: str = "invalid_token") -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class SigningKey:
    kid: str
    private_pem: bytes
    created_at: datetime

    def private(self) -> rsa.RSAPrivateKey:
        return self._keys[0]

    def public(self) -> rsa.RSAPublicKey:
        return self._keys[1]

    @cached_property
    def _keys(self) -> tuple[rsa.RSAPrivateKey, rsa.RSAPublicKey]:
        # Parsed once: every request to a session's page verifies a token.
        key = serialization.load_pem_private_key(self.private_pem, password=None)
        assert isinstance(key, rsa.RSAPrivateKey)
        return key, key.public_key()

    def public_jwk(self) -> dict[str, str]:
        numbers = self.public().public_numbers()
        return {
            "kty": "RSA",
            "use": "sig",
            "alg": "RS256",
            "kid": self.kid,
            "n": _b64(numbers.n),
            "e": _b64(numbers.e),
        }


def _b64(number: int) -> str:
    raw = number.to_bytes((number.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def new_key(now: datetime) -> SigningKey:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return SigningKey(kid=secrets.token_hex(8), private_pem=pem, created_at=now)


@dataclass
class KeySet:
    keys: list[SigningKey]

    @property
    def current(self) -> SigningKey:
        return max(self.keys, key=lambda k: k.created_at)

    def jwks(self) -> dict[str, Any]:
        return {"keys": [k.public_jwk() for k in sorted(self.keys, key=lambda k: k.created_at)]}

    def rotate(self, now: datetime) -> SigningKey:
        """Sign with a new key from now on; older keys keep verifying (see drop_retired)."""
        fresh = new_key(now)
        self.keys.append(fresh)
        self.drop_retired(now)
        return fresh

    def drop_retired(self, now: datetime) -> None:
        """Forget keys that stopped signing more than one token lifetime ago."""
        newest = self.current
        ordered = sorted(self.keys, key=lambda k: k.created_at)
        keep = [newest]
        for key, successor in itertools.pairwise(ordered):
            if now - successor.created_at < MAX_LIFETIME + LEEWAY:
                keep.append(key)
        self.keys = list(dict.fromkeys(keep))

    def sign(self, claims: dict[str, Any], typ: str) -> str:
        """Sign `claims` with the current key, naming the key and the token's type."""
        key = self.current
        return jwt.encode(
            claims, key.private(), algorithm="RS256", headers={"kid": key.kid, "typ": typ}
        )

    def decode(self, token: str, *, typ: str, audience: str, now: datetime) -> dict[str, Any]:
        """The claims of a token of type `typ` for `audience`, signed by one of our keys with
        RS256, alive at `now` and at most an hour long; raises InvalidToken for anything else."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise InvalidToken(f"malformed token: {exc}", "malformed_token") from exc
        if header.get("alg") != "RS256":
            raise InvalidToken(f"algorithm {header.get('alg')!r} is not RS256", "wrong_algorithm")
        if header.get("typ") != typ:
            raise InvalidToken(f"type {header.get('typ')!r} is not {typ}", "wrong_type")
        key = next((k for k in self.keys if k.kid == header.get("kid")), None)
        if key is None:
            raise InvalidToken(f"unknown key id {header.get('kid')!r}", "unknown_key")
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key.public(),
                algorithms=["RS256"],
                audience=audience,
                # Times are checked below against the injected clock, not the wall clock.
                options={
                    "require": ["exp", "iat", "iss", "sub", "jti", "aud"],
                    "verify_exp": False,
                    "verify_nbf": False,
                    "verify_iat": False,
                },
                leeway=LEEWAY,
            )
        except jwt.PyJWTError as exc:
            raise InvalidToken(str(exc), "invalid_claims") from exc
        try:
            iat, exp = int(claims["iat"]), int(claims["exp"])
        except (TypeError, ValueError, OverflowError) as exc:
            raise InvalidToken("times are not numbers", "invalid_claims") from exc
        if iat > now.timestamp() + LEEWAY.total_seconds():
            raise InvalidToken("issued in the future", "issued_in_future")
        if exp < now.timestamp() - LEEWAY.total_seconds():
            raise InvalidToken("expired", "expired")
        if exp - iat > MAX_LIFETIME.total_seconds():
            raise InvalidToken("lives longer than an hour", "too_long_lived")
        return claims

    def mint(self, cluster_id: str, now: datetime, lifetime: timedelta = MAX_LIFETIME) -> str:
        """A token an operator presents for `cluster_id`."""
        subject = f"cluster:{cluster_id}"
        claims = timed_claims(subject, AUDIENCE, now, min(lifetime, MAX_LIFETIME))
        return self.sign({**claims, "iss": subject}, TOKEN_TYPE)

    def verify(self, token: str, now: datetime) -> str:
        """The cluster id an operator token speaks for; raises InvalidToken for anything else."""
        claims = self.decode(token, typ=TOKEN_TYPE, audience=AUDIENCE, now=now)
        subject = str(claims["sub"])
        if claims["iss"] != subject or not subject.startswith("cluster:"):
            raise InvalidToken("issuer and subject must name the same cluster", "wrong_issuer")
        return subject.removeprefix("cluster:")


def timed_claims(subject: str, audience: str, now: datetime, lifetime: timedelta) -> dict[str, Any]:
    """The claims every internal token carries: who, for whom, when, and a unique id."""
    return {
        "iss": ISSUER,
        "sub": subject,
        "aud": audience,
        "iat": int(now.timestamp()),
        "nbf": int(now.timestamp()),
        "exp": int((now + lifetime).timestamp()),
        "jti": secrets.token_urlsafe(16),
    }
