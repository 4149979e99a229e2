"""Table definitions, one module per domain, all on one MetaData so Alembic sees them."""

from dutyline.db.tables import aisre as aisre
from dutyline.db.tables import automation as automation
from dutyline.db.tables import channel as channel
from dutyline.db.tables import channel_noise as channel_noise
from dutyline.db.tables import dispatch as dispatch
from dutyline.db.tables import enrichment as enrichment
from dutyline.db.tables import incident as incident
from dutyline.db.tables import incident_change as incident_change
from dutyline.db.tables import incident_insight as incident_insight
from dutyline.db.tables import incident_noise as incident_noise
from dutyline.db.tables import incident_postmortem as incident_postmortem
from dutyline.db.tables import monit as monit
from dutyline.db.tables import notify as notify
from dutyline.db.tables import notify_war_room as notify_war_room
from dutyline.db.tables import platform as platform
from dutyline.db.tables import platform_calendar as platform_calendar
from dutyline.db.tables import runner as runner
from dutyline.db.tables import schedule as schedule
from dutyline.db.tables import scheduler as scheduler
from dutyline.db.tables import signals as signals
from dutyline.db.tables import status_page as status_page
from dutyline.db.tables import web as web
from dutyline.db.tables import work as work
from dutyline.db.tables.meta import metadata

__all__ = ["metadata"]
