"""Parley's fake model server: an OpenAI-compatible chat-completions endpoint, scriptable per test.

It is production code: with nothing scripted it is the offline demo model (`parley-demo`) that
lets the local stack run end to end without an API key, over the same client code path.

    with FakeModelServer(models=["my-model"]) as fake:  # DeepSeek's names, the demo's, these
        client = OpenAIClient(base_url=fake.base_url, api_key=None)  # keyless: it is local
        fake.script(reply("Hi ", "there"), rate_limited(retry_after=2), error(500))
        fake.respond_with(lambda request: reply(f"{len(request.messages)} messages"))
        fake.requests[0].body["messages"]          # what the client sent
        fake.exchanges[0].usage                    # the usage it reported (DeepSeek's tokenizer,
                                                   # disk-cache hits as DeepSeek counts them)
        fake.reset()                               # between tests

Routes: `POST /v1/chat/completions` (and `/chat/completions`, DeepSeek-style), `GET /v1/models`.
Run it alone with `python -m local.deepseek --port 8081`.
"""

from local.deepseek.app import DEEPSEEK_MODELS, MODEL_NOT_EXIST, Exchange, FakeModel
from local.deepseek.demo import DEMO_MODEL, DEMO_MODELS, NOTICE, demo_reply
from local.deepseek.runner import FakeModelServer
from local.deepseek.script import (
    Cut,
    ErrorReply,
    RecordedRequest,
    Reply,
    ScriptedCall,
    ScriptedUsage,
    ScriptItem,
    error,
    rate_limited,
    raw_tool_call,
    reply,
    tool_call,
    usage,
)

__all__ = [
    "DEEPSEEK_MODELS",
    "DEMO_MODEL",
    "DEMO_MODELS",
    "MODEL_NOT_EXIST",
    "NOTICE",
    "Cut",
    "ErrorReply",
    "Exchange",
    "FakeModel",
    "FakeModelServer",
    "RecordedRequest",
    "Reply",
    "ScriptItem",
    "ScriptedCall",
    "ScriptedUsage",
    "demo_reply",
    "error",
    "rate_limited",
    "raw_tool_call",
    "reply",
    "tool_call",
    "usage",
]
