"""Events: the streamed shape (`models`), where they go (`publisher`), how they go (`emitter`)."""

from shared.events.emitter import EventEmitter
from shared.events.models import EVENT_TYPES, Event, EventType
from shared.events.publisher import FanoutPublisher, Publisher

__all__ = [
    "EVENT_TYPES",
    "Event",
    "EventEmitter",
    "EventType",
    "FanoutPublisher",
    "Publisher",
]
