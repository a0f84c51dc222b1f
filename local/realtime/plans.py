"""Hosted Realtime's limits per plan, so the local server holds a project to the plan it is on.

From Supabase's "Realtime Limits" page (supabase.com/docs/guides/realtime/limits, "Limits by
plan"); Enterprise starts at Team's figures. A payload's limit is checked as hosted checks it
(`Realtime.Tenants.validate_payload_size`): `max_payload_size_in_kb * 1000` plus 500 bytes of
padding. The local server measures a payload as its JSON text (hosted: the Erlang term's external
size), so a payload near the limit may be judged a little differently.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

PlanName = Literal["free", "pro", "pro_no_spend_cap", "team", "enterprise"]

PAYLOAD_PADDING_BYTES = 500
"""`@payload_size_padding` in hosted's `tenants.ex`."""


@dataclass(frozen=True, slots=True)
class Plan:
    """One plan's limits, in `RealtimeConfig`'s terms; the setting `realtime_<field>` (e.g.
    `REALTIME_MAX_PAYLOAD_KB`) overrides a field (`RealtimeConfig.from_settings`)."""

    max_concurrent_users: int
    max_events_per_second: int
    max_joins_per_second: int
    max_channels_per_client: int
    max_presence_events_per_second: int
    max_payload_kb: int
    """Broadcast (and presence) payload size, in kB (hosted's `max_payload_size_in_kb`)."""

    @property
    def max_payload_bytes(self) -> int:
        return self.max_payload_kb * 1000 + PAYLOAD_PADDING_BYTES

    def config(self) -> dict[str, int]:
        """`RealtimeConfig` fields: `RealtimeConfig(..., **plan.config())`."""
        fields = asdict(self)
        fields["max_payload_bytes"] = self.max_payload_bytes
        del fields["max_payload_kb"]
        return fields


PLANS: dict[PlanName, Plan] = {
    "free": Plan(200, 100, 100, 100, 20, 256),
    "pro": Plan(500, 500, 500, 100, 50, 3000),
    "pro_no_spend_cap": Plan(10_000, 2_500, 2_500, 100, 1_000, 3000),
    "team": Plan(10_000, 2_500, 2_500, 100, 1_000, 3000),
    "enterprise": Plan(10_000, 2_500, 2_500, 100, 1_000, 3000),
}
"""Concurrent connections, messages/s, joins/s, channels per connection, presence messages/s,
payload kB. Every plan: 5 presence calls per client per 30 s, 1,024 kB a Postgres change."""
