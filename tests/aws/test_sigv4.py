"""`shared.aws.sigv4` against AWS's own Signature Version 4 test suite.

The cases are AWS's "AWS Signature Version 4 Test Suite" (Copyright 2019 Amazon.com, Inc.,
Apache-2.0), as published in awslabs/aws-c-auth (`tests/aws-sig-v4-test-suite`, v0.3.15) and
run by botocore (`tests/unit/auth/aws4_testsuite/`, read at commit 0e6e2404). Each case is a
raw request (`<case>.req`) and the `Authorization` header it must be signed with
(`<case>.authz`), for the suite's fixed key, region (`us-east-1`), service (`service`) and time
(2015-08-30T12:36:00Z). The requests are written out below as this signer takes them; the
expected signatures are the suite's.

Every case without a query string applies (this signer refuses one: Parley's calls have none),
except the suite's `normalize-path` cases, which expect `.`/`..` segments and repeated slashes
resolved: this signer signs a path as given (its docstring says why that is safe for Parley);
one test below holds that behaviour. `post-sts-header-after` (a token added after signing) does
not apply either: the token is always signed, as botocore signs it (`post-sts-header-before`).
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from shared.aws.sigv4 import Credentials, sign

SUITE_KEY = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "us-east-1")
SUITE_TIME = datetime(2015, 8, 30, 12, 36, 0, tzinfo=UTC)
HOST = {"Host": "example.amazonaws.com"}
STS_TOKEN = (
    "AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPf"
    "IeoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7W"
    "Z0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FD"
    "rypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA=="
)  # post-sts-header-before.req
SESSION_TOKEN = "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267"
# get-vanilla-with-session-token.creq
FORM = {"Content-Type": "application/x-www-form-urlencoded"}

# case: (method, path, headers besides Host and X-Amz-Date, body, session token, signature)
CASES: dict[str, tuple[str, str, dict[str, str], bytes, str | None, str]] = {
    "get-vanilla": (
        "GET",
        "/",
        {},
        b"",
        None,
        "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
    ),
    "get-vanilla-query": (
        "GET",
        "/",
        {},
        b"",
        None,
        "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
    ),
    "post-vanilla": (
        "POST",
        "/",
        {},
        b"",
        None,
        "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b",
    ),
    "post-header-key-case": (
        "POST",
        "/",
        {},
        b"",
        None,  # "X-Amz-Date" in its case
        "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b",
    ),
    "post-header-key-sort": (
        "POST",
        "/",
        {"My-Header1": "value1"},
        b"",
        None,
        "c5410059b04c1ee005303aed430f6e6645f61f4dc9e1461ec8f8916fdf18852c",
    ),
    "post-header-value-case": (
        "POST",
        "/",
        {"My-Header1": "VALUE1"},
        b"",
        None,
        "cdbc9802e29d2942e5e10b5bccfdd67c5f22c7c4e8ae67b53629efa58b974b7d",
    ),
    "get-header-key-duplicate": (
        "GET",
        "/",
        {"My-Header1": "value2,value2,value1"},
        b"",
        None,
        "c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f858259531a5138ea",
    ),
    "get-header-value-order": (
        "GET",
        "/",
        {"My-Header1": "value4,value1,value3,value2"},
        b"",
        None,
        "08c7e5a9acfcfeb3ab6b2185e75ce8b1deb5e634ec47601a50643f830c755c01",
    ),
    "get-header-value-multiline": (
        "GET",
        "/",
        {"My-Header1": "value1\n  value2\n     value3"},
        b"",
        None,
        "cfd34249e4b1c8d6b91ef74165d41a32e5fab3306300901bb65a51a73575eefd",
    ),
    "get-header-value-trim": (
        "GET",
        "/",
        {"My-Header1": " value1", "My-Header2": ' "a   b   c"'},
        b"",
        None,
        "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736",
    ),
    "get-unreserved": (
        "GET",
        "/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
        {},
        b"",
        None,
        "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f",
    ),
    "get-utf8": (
        "GET",
        "/\u1234",
        {},
        b"",
        None,
        "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85",
    ),
    "get-space": (
        "GET",
        "/example space/",
        {},
        b"",
        None,
        "652487583200325589f1fba4c7e578f72c47cb61beeca81406b39ddec1366741",
    ),
    "get-special-character": (
        "GET",
        "/example/$delete",
        {},
        b"",
        None,
        "a853c9b21b528b19643d00910d35b83a10c366a10833ceefb45edd6c80e40f27",
    ),
    "post-x-www-form-urlencoded": (
        "POST",
        "/",
        FORM,
        b"Param1=value1",
        None,
        "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a",
    ),
    "post-x-www-form-urlencoded-parameters": (
        "POST",
        "/",
        {"Content-Type": "application/x-www-form-urlencoded; charset=utf8"},
        b"Param1=value1",
        None,
        "1a72ec8f64bd914b0e42e42607c7fbce7fb2c7465f63e3092b3b0d39fa77a6fe",
    ),
    "post-sts-header-before": (
        "POST",
        "/",
        {},
        b"",
        STS_TOKEN,
        "85d96828115b5dc0cfc3bd16ad9e210dd772bbebba041836c64533a82be05ead",
    ),
    "get-vanilla-with-session-token": (
        "GET",
        "/",
        {},
        b"",
        SESSION_TOKEN,
        "07ec1639c89043aa0e3e2de82b96708f198cceab042d4a97044c66dd9f74e7f8",
    ),
}


def signed(
    method: str, path: str, headers: dict[str, str], body: bytes, token: str | None = None
) -> str:
    keys = Credentials(SUITE_KEY.access_key, SUITE_KEY.secret_key, SUITE_KEY.region, token)
    return sign(
        keys,
        service="service",
        method=method,
        url=f"https://example.amazonaws.com{path}",
        headers={**HOST, **headers},
        body=body,
        now=SUITE_TIME,
    )["Authorization"]


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_applicable_case_of_the_suite_is_signed_as_aws_signs_it(case: str) -> None:
    method, path, headers, body, token, signature = CASES[case]
    names = sorted(
        {"host", "x-amz-date", *(n.lower() for n in headers)}
        | ({"x-amz-security-token"} if token else set())
    )
    assert signed(method, path, headers, body, token) == (
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
        f"SignedHeaders={';'.join(names)}, Signature={signature}"
    )


@pytest.mark.parametrize(
    ("case", "path"),
    [
        ("get-slash", "//"),
        ("get-slashes", "//example//"),
        ("get-relative", "/example/.."),
        ("get-slash-dot-slash", "/./"),
        ("get-slash-pointless-dot", "/./example"),
    ],
)
def test_paths_are_signed_as_given_not_normalised(case: str, path: str) -> None:
    """The suite's `normalize-path` cases resolve the path first (`//` and `/./` and
    `/example/..` become `/`); this signer does not, so the same request signs differently —
    and a request made for the resolved path signs as the suite says."""
    resolved = {"get-slashes": "/example/", "get-slash-pointless-dot": "/example"}.get(case, "/")
    assert signed("GET", path, {}, b"") != signed("GET", resolved, {}, b"")
    if resolved == "/":
        assert signed("GET", resolved, {}, b"").endswith(CASES["get-vanilla"][-1])


def test_a_query_string_is_refused_rather_than_signed_wrongly() -> None:
    with pytest.raises(ValueError, match="query string"):
        signed("GET", "/?Param1=value1", {}, b"")
