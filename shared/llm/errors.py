"""What can go wrong talking to a model. Every error chains the provider's error as `__cause__`.

AppError
└── LLMError                      base; `model`, `status_code`, `attempts`, `retryable`
    ├── LLMNotConfigured          also a ConfigurationError: the message says what to set
    ├── LLMAuthenticationFailed   401/403, also a ConfigurationError: the key is wrong or revoked
    ├── LLMOutOfBalance           402: the model account has no balance; never retried
    ├── LLMRateLimited            429 after every retry; `retry_after` as the server asked
    ├── LLMTimeout                the server did not answer (or went silent) within the timeout
    ├── LLMBadRequest             the provider refused the request (400/404/422); never retried
    │   └── InvalidHistory        refused before sending: the messages would earn a 400
    └── LLMProviderError          5xx, connection failures, malformed or truncated streams
        └── UnexpectedReply       the model answered, but not as required (e.g. no tool call)
"""

from __future__ import annotations

from collections.abc import Sequence

from shared.kernel.errors import AppError, ConfigurationError


class LLMError(AppError):
    """A model call failed."""

    title = "Model call failed"
    kind = "model-failed"
    retryable = False
    """Whether trying again (after a pause) may succeed."""

    def __init__(
        self,
        message: str,
        *,
        model: str | None = None,
        status_code: int | None = None,
        attempts: int = 1,
    ) -> None:
        super().__init__(message)
        self.model = model
        self.status_code = status_code
        self.attempts = attempts


class LLMNotConfigured(LLMError, ConfigurationError):
    """The LLM settings are missing or invalid; the message names the settings to fix."""

    title = "Model not configured"


class LLMAuthenticationFailed(LLMError, ConfigurationError):
    """The provider rejected the API key (401/403): the operator must fix the setting."""

    title = "Model authentication failed"


class LLMOutOfBalance(LLMError):
    """The model account has no balance left (DeepSeek's 402 "Insufficient Balance"): nothing
    works until it is topped up, so it is not retried."""

    title = "Model account has no balance"


class LLMRateLimited(LLMError):
    """The provider kept answering 429 Too Many Requests."""

    title = "Model rate limited"
    kind = "model-rate-limited"
    retryable = True

    def __init__(
        self,
        message: str,
        *,
        retry_after: float | None = None,
        model: str | None = None,
        status_code: int | None = 429,
        attempts: int = 1,
    ) -> None:
        super().__init__(message, model=model, status_code=status_code, attempts=attempts)
        self.retry_after = retry_after
        """Seconds the server asked us to wait (Retry-After), if it said."""


class LLMTimeout(LLMError):
    """No answer, or no further streamed data, within the per-call timeout."""

    title = "Model timed out"
    kind = "model-timeout"
    retryable = True


class LLMBadRequest(LLMError):
    """The provider refused the request as invalid; sending it again cannot help."""

    title = "Model request rejected"


class InvalidHistory(LLMBadRequest):
    """The message history breaks a rule the provider enforces; nothing was sent."""

    title = "Invalid message history"

    def __init__(self, problems: Sequence[str], *, model: str | None = None) -> None:
        super().__init__(
            "Message history rejected before sending: " + "; ".join(problems), model=model
        )
        self.problems = tuple(problems)


class LLMProviderError(LLMError):
    """The provider failed: server error, lost connection, or a broken stream."""

    title = "Model provider error"
    retryable = True


class UnexpectedReply(LLMProviderError):
    """The model answered, but not in the required shape (e.g. it skipped a forced tool)."""

    title = "Unexpected model reply"
    retryable = False
