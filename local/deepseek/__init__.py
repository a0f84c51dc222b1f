"""DeepSeek's local twin: an OpenAI-compatible chat-completions endpoint held to DeepSeek's
request contract (`contract`, tabled in docs/deepseek.md), scriptable per test.

With nothing scripted it is the offline demo model (`parley-demo`) that lets the local stack run
end to end without an API key, over the same client code path. Every request, scripted or not,
is first checked as DeepSeek checks it: what DeepSeek refuses gets DeepSeek's status and body.

    with FakeModelServer(models=["my-model"]) as fake:  # DeepSeek's names, the demo's, these
        client = OpenAIClient(base_url=fake.base_url, api_key=None)  # keyless: it is local
        fake.script(reply("Hi ", "there"), rate_limited(retry_after=2), insufficient_balance())
        fake.respond_with(lambda request: reply(f"{len(request.messages)} messages"))
        fake.requests[0].body["messages"]          # what the client sent
        fake.exchanges[0].usage                    # the usage it reported (DeepSeek's tokenizer,
                                                   # disk-cache hits as DeepSeek counts them)
        fake.exchanges[0].refused                  # DeepSeek's refusal, if the request broke a rule
        fake.reset()                               # between tests
    FakeModelServer(pace=Pace(DEEPSEEK_TOKENS_PER_SECOND))  # streams at DeepSeek's speed

Routes: `POST /v1/chat/completions` (and `/chat/completions`, DeepSeek-style), `GET /v1/models`.
Run it alone with `python -m local.deepseek --port 8081`.
"""

from local.deepseek.app import DEEPSEEK_MODELS, Exchange, FakeModel
from local.deepseek.contract import DEEPSEEK, PLAIN, RULES, ModelProfile
from local.deepseek.demo import DEMO_MODEL, DEMO_MODELS, NOTICE, demo_reply
from local.deepseek.pace import AT_ONCE, DEEPSEEK_TOKENS_PER_SECOND, Pace
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
    insufficient_balance,
    invalid_key,
    rate_limited,
    raw_tool_call,
    reply,
    tool_call,
    usage,
)

__all__ = [
    "AT_ONCE",
    "DEEPSEEK",
    "DEEPSEEK_MODELS",
    "DEEPSEEK_TOKENS_PER_SECOND",
    "DEMO_MODEL",
    "DEMO_MODELS",
    "NOTICE",
    "PLAIN",
    "RULES",
    "Cut",
    "ErrorReply",
    "Exchange",
    "FakeModel",
    "FakeModelServer",
    "ModelProfile",
    "Pace",
    "RecordedRequest",
    "Reply",
    "ScriptItem",
    "ScriptedCall",
    "ScriptedUsage",
    "demo_reply",
    "error",
    "insufficient_balance",
    "invalid_key",
    "rate_limited",
    "raw_tool_call",
    "reply",
    "tool_call",
    "usage",
]
