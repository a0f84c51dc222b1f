"""Settings from a Secrets Manager secret, read once per process at init, without boto3.

A deployed function's environment names its secret (`SETTINGS_SECRET_ID`, e.g. `parley/prod`)
and holds no secret value: the secret's JSON object — keys named like the settings
(`DATABASE_URL`, `SUPABASE_SERVICE_ROLE_KEY`, `LLM_API_KEY`, ...) — is read when the settings
are (`SecretsManagerSource`, a pydantic-settings source below the environment's), at Lambda's
init, and kept for the life of the process: with SnapStart, in the snapshot, which Lambda
encrypts. So nothing secret is readable in the function's configuration
(`lambda:GetFunctionConfiguration`) nor in the CloudFormation template.

The request is Secrets Manager's `GetSecretValue` (JSON 1.1 protocol: `POST /`,
`X-Amz-Target: secretsmanager.GetSecretValue`, body `{"SecretId": ...}`), SigV4-signed for
`secretsmanager` with the function's own credentials (`shared.aws.credentials`), to
`https://secretsmanager.<region>.amazonaws.com` or `AWS_ENDPOINT_URL_SECRETS_MANAGER` /
`AWS_ENDPOINT_URL` when set, as boto3 would. It is tried up to 3 times when Secrets Manager
cannot be reached, answers 5xx or throttles. Without credentials the environment leads to (a
developer's profile, SSO), boto3 reads it instead. Why not boto3 always: importing it and
building a client costs a cold start ~0.15 s, this ~10 ms (`bench.cold_start`). pydantic-settings'
own `AWSSecretsManagerSettingsSource` is the same idea over boto3; this one keeps its shape.

Failures raise `ConfigurationError` naming the secret and AWS's error code — never a value
of the secret, nor the credentials.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from functools import lru_cache
from http.client import HTTPException
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from pydantic_settings import EnvSettingsSource
from pydantic_settings.sources.utils import parse_env_vars

from shared.kernel.errors import ConfigurationError

if TYPE_CHECKING:
    from pydantic_settings import BaseSettings

    from shared.aws.sigv4 import Credentials

SECRET_ID = "SETTINGS_SECRET_ID"
TARGET = "secretsmanager.GetSecretValue"
CONTENT_TYPE = "application/x-amz-json-1.1"
TIMEOUT_SECONDS = 5.0
ATTEMPTS = 3
RETRIED = frozenset({"ThrottlingException", "InternalServiceError", "RequestTimeout"})


class SecretsManagerSource(EnvSettingsSource):
    """The settings held by the secret `SETTINGS_SECRET_ID` names (none when it is unset),
    read as environment variables are: names case-insensitive, JSON for structured values
    (`MCP_SERVERS`), `DEEPSEEK_API_KEY` as well as `LLM_API_KEY`."""

    def __init__(self, settings_cls: type[BaseSettings]) -> None:
        super().__init__(settings_cls, case_sensitive=False)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        secret_id = os.environ.get(SECRET_ID)
        if not secret_id:
            return {}
        return parse_env_vars(secret_settings(secret_id), False, False, None)


@lru_cache(maxsize=4)
def secret_settings(secret_id: str) -> dict[str, str]:
    """The secret's JSON object, its values as strings; read once per process."""
    text = read_secret(secret_id, os.environ)
    try:
        found = json.loads(text)
    except ValueError:
        found = None
    if not isinstance(found, dict):
        raise ConfigurationError(
            f"{SECRET_ID}={secret_id}: the secret must be a JSON object of settings, "
            '{"DATABASE_URL": "...", ...}'
        )
    return {
        str(name): value if isinstance(value, str) else json.dumps(value)
        for name, value in found.items()
    }


def read_secret(
    secret_id: str, environ: Mapping[str, str], *, sleep: Callable[[float], None] = time.sleep
) -> str:
    """The `SecretString` of `secret_id` (`ConfigurationError` when it cannot be read)."""
    from shared.aws.credentials import CredentialsUnavailable, from_environment  # with a secret

    source = from_environment(environ)
    if source is None:
        return _read_with_boto3(secret_id)
    try:
        credentials = source.current()
    except CredentialsUnavailable as exc:
        raise ConfigurationError(f"{SECRET_ID}={secret_id}: {exc}") from exc
    endpoint = (
        environ.get("AWS_ENDPOINT_URL_SECRETS_MANAGER")
        or environ.get("AWS_ENDPOINT_URL")
        or f"https://secretsmanager.{credentials.region}.amazonaws.com"
    )
    body = json.dumps({"SecretId": secret_id}).encode()
    failure = ""
    for attempt in range(1, ATTEMPTS + 1):
        try:
            status, answer = _post(endpoint, body, credentials)
        except (OSError, HTTPException) as exc:
            failure, retry = f"{type(exc).__name__}: Secrets Manager could not be reached", True
        else:
            found = _json(answer)
            if status == 200 and isinstance(found.get("SecretString"), str):
                secret: str = found["SecretString"]
                return secret
            code = str(found.get("__type", f"HTTP{status}")).rsplit("#", 1)[-1]
            message = str(found.get("message") or found.get("Message") or "")
            failure = credentials.redact(f"{code}: {message}" if message else code)[:300]
            retry = status >= 500 or code in RETRIED
        if not retry or attempt == ATTEMPTS:
            break
        sleep(0.1 * 2 ** (attempt - 1))
    raise ConfigurationError(f"{SECRET_ID}={secret_id} could not be read ({failure})")


def _post(endpoint: str, body: bytes, credentials: Credentials) -> tuple[int, bytes]:
    """One request on a connection of its own: nothing is kept open (nor survives a snapshot)."""
    from shared.aws.sigv4 import host_of, sign  # with a secret
    from shared.aws.stdlib_http import exchange  # with a secret

    parts = urlsplit(endpoint)
    url = f"{parts.scheme}://{parts.netloc}/"
    headers = {"Host": host_of(url), "Content-Type": CONTENT_TYPE, "X-Amz-Target": TARGET}
    headers |= sign(
        credentials,
        service="secretsmanager",
        method="POST",
        url=url,
        headers=headers,
        body=body,
        now=datetime.now(UTC),
    )
    return exchange("POST", url, headers, body, TIMEOUT_SECONDS)


def _json(answer: bytes) -> dict[str, Any]:
    try:
        found = json.loads(answer)
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def _read_with_boto3(secret_id: str) -> str:
    try:
        import boto3  # only off Lambda: ~0.2 s
        from botocore.exceptions import BotoCoreError, ClientError  # with boto3
    except ImportError as exc:
        raise ConfigurationError(
            f"{SECRET_ID} needs AWS credentials (the AWS_* variables Lambda sets) or boto3 "
            "(`parley[aws]`) to find them"
        ) from exc
    try:
        answer = boto3.client("secretsmanager").get_secret_value(SecretId=secret_id)
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "ClientError")
        raise ConfigurationError(f"{SECRET_ID}={secret_id} could not be read ({code})") from exc
    except BotoCoreError as exc:
        raise ConfigurationError(
            f"{SECRET_ID}={secret_id} could not be read ({type(exc).__name__})"
        ) from exc
    secret: str = answer["SecretString"]
    return secret
