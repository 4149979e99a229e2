"""The incident domain's public face: what other domains (paging, notification, noise
control, automations) may use of it. They reach incidents only through this module, so the
packages behind it (query, lifecycle, the event stream, the feed) can move freely.

- `events`: the incident event stream (`@events.subscriber`, `IncidentEvent`, event kinds);
- `feed`: the incident timeline (`feed.add`, item kinds);
- `references`: where a higher domain registers the check of its ids that incident
  requests carry (an assignment's escalation rule);
- `query` and `lifecycle`: the services reading and changing incidents, `(conn, actor, *,
  domain arguments)`, with the records they return re-exported below; `editing` (title,
  severity, assignment, merge, custom field values), `responders` and `similar` (earlier
  incidents alike) beside them, and `fields` (the custom field definitions), for the
  console's incident page;
- `ingest`: alert ingestion (`ingest`, `PushRequest`), for alerts raised inside the server
  (the monitors' rule evaluations);
- `analytics`: the incident figures the insights sum;
- `postmortem`: post-mortem reports; the AI-SRE domain handles its drafting job
  (`postmortem.DRAFT_JOB`) through `model_draft_ask` and `record_model_draft`;
- `changes`: change events (the on-call report's counts of them);
- `live`: knowing when any process changed an account's incidents (the console's live list:
  `live.for_database(db).watch(account_id)`, and the `LiveCursor` that query's
  `incident_changes` moves).
"""

from __future__ import annotations

from dutyline.incident import events, feed, live, references
from dutyline.incident.alert.schemas import AlertInfo
from dutyline.incident.analytics import service as analytics
from dutyline.incident.change import service as changes
from dutyline.incident.events import IncidentEvent
from dutyline.incident.field import service as fields
from dutyline.incident.ingest import service as ingest
from dutyline.incident.lifecycle import editing, responders
from dutyline.incident.lifecycle import service as lifecycle
from dutyline.incident.lifecycle.schemas import AssignedTo
from dutyline.incident.postmortem import service as postmortem
from dutyline.incident.query import service as query
from dutyline.incident.query import similar
from dutyline.incident.query.schemas import IncidentInfo, IncidentListResponse

__all__ = ["AlertInfo", "AssignedTo", "IncidentEvent", "IncidentInfo", "IncidentListResponse",
           "analytics", "changes", "editing", "events", "feed", "fields", "ingest",
           "lifecycle", "live", "postmortem", "query", "references", "responders",
           "similar"]
