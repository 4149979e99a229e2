"""/route/preview: where stored alerts would go under a proposed route, or under their
integration's current one, without storing anything. The alerts are the incident domain's;
the routing is the channel's (channel/route), so the operation lives here and asks it. An
alert is tried with what filters read of it when it was pushed (title, severity, labels...);
a recovery goes where its alert fires at ingest, which a preview does not model."""

from __future__ import annotations

from typing import Annotated

import msgspec
from sqlalchemy import Connection

from dutyline.api import errors
from dutyline.api.access import reads_sync
from dutyline.api.actor import Actor
from dutyline.api.permissions import INTEGRATION_MANAGE, INTEGRATION_VIEW
from dutyline.channel.route import service as routes
from dutyline.incident import visibility
from dutyline.incident.alert import repository as repo
from dutyline.incident.alert.schemas import AlertIds
from dutyline.incident.ingest.noise import row_subject


class ProposedRoute(msgspec.Struct, kw_only=True):
    """The route to try; with neither cases nor a default, each alert's integration's
    current route."""

    cases: Annotated[list[routes.RouteCase],
                     msgspec.Meta(max_length=routes.MAX_CASES)] | None = None
    default: routes.RouteDefault | None = None


class RoutePreviewRequest(msgspec.Struct, kw_only=True):
    alert_ids: AlertIds
    route: ProposedRoute = msgspec.field(default_factory=ProposedRoute)


class RoutePreviewItem(msgspec.Struct, kw_only=True):
    alert_id: str
    alert_title: str
    start_time: int
    integration_id: int
    # The positions (from 0, as strings) of the cases the alert matched; "default" when the
    # default's channels take it.
    matched_cases: list[str]
    channel_ids: list[int]  # where it would land


class RoutePreviewResponse(msgspec.Struct, kw_only=True):
    items: list[RoutePreviewItem]


@reads_sync(INTEGRATION_VIEW, INTEGRATION_MANAGE)
def preview_sync(conn: Connection, actor: Actor, *, alert_ids: list[str],
                 cases: list[routes.RouteCase] | None,
                 default: routes.RouteDefault | None) -> list[RoutePreviewItem]:
    """One item per alert, in the order asked. Every id must be an alert the actor sees, or
    the call fails naming the missing ones."""
    proposal = routes.propose(cases=cases, default=default)
    ids = list(dict.fromkeys(i.lower() for i in alert_ids))
    found = repo.find_many_sync(conn, visibility.scope_sync(conn, actor), ids)
    if missing := [i for i in ids if i not in found]:
        raise errors.ResourceNotFound("{field}: alerts not found: {ids}", field="alert_ids",
                                      ids=", ".join(missing))
    items = []
    for alert_id in ids:
        row = found[alert_id]
        routing = routes.routing_sync(conn, actor, integration_id=row.integration_id,
                                      subject=row_subject(row), proposal=proposal)
        items.append(RoutePreviewItem(
            alert_id=alert_id, alert_title=row.title, start_time=row.start_time,
            integration_id=row.integration_id, matched_cases=routing.matched_cases,
            channel_ids=routing.channel_ids))
    return items
