"""The standard alert push body (reference fields) and its answer."""

from __future__ import annotations

from typing import Annotated

import msgspec

from dutyline.api.types import Id
from dutyline.kit.vocabulary import CRITICAL
from dutyline.kit.vocabulary import Status as EventStatus

MAX_LABELS = 50
LabelKey = Annotated[str, msgspec.Meta(min_length=1, max_length=128)]
LabelValue = Annotated[str, msgspec.Meta(max_length=2048)]
Labels = Annotated[dict[LabelKey, LabelValue], msgspec.Meta(max_length=MAX_LABELS)]
Url = Annotated[str, msgspec.Meta(max_length=2048)]


class AlertImage(msgspec.Struct, kw_only=True, omit_defaults=True):
    src: Annotated[str, msgspec.Meta(min_length=1, max_length=2048)]
    href: Url = ""
    alt: Annotated[str, msgspec.Meta(max_length=512)] = ""


class PushRequest(msgspec.Struct, kw_only=True):
    title_rule: Annotated[str, msgspec.Meta(min_length=1, max_length=512)]
    event_status: EventStatus
    alert_key: Annotated[str, msgspec.Meta(max_length=255)] = ""
    description: Annotated[str, msgspec.Meta(max_length=16_384)] = ""
    labels: Labels = msgspec.field(default_factory=dict)
    images: Annotated[list[AlertImage], msgspec.Meta(max_length=20)] = msgspec.field(
        default_factory=list
    )


class PushResponse(msgspec.Struct, kw_only=True):
    alert_key: str


class PushManyResponse(msgspec.Struct, kw_only=True):
    """The answer of the pushes that carry several alerts (Alertmanager, Grafana, webhook)."""

    alert_keys: list[str]


class TestAlertRequest(msgspec.Struct, kw_only=True):
    integration_id: Id
    event_status: EventStatus = CRITICAL


class TestAlertResponse(msgspec.Struct, kw_only=True):
    alert_key: Annotated[str, msgspec.Meta(
        description="The test alert's own key (`dutyline-test-...`), new for each test.")]
    # What became of it (incident/ingest/outcomes.py): opened, grouped, held, dropped...
    outcome: str
    incident_id: str = ""
    reason: str = ""


class IntakeOutcome(msgspec.Struct, kw_only=True):
    """One event an integration received and what became of it."""

    received_at: int
    source: str
    outcome: str
    title: str
    alert_key: str
    incident_id: str
    reason: str
