"""Table definitions, one module per domain, all on one MetaData so Alembic sees them."""

from dutyline.db.tables import aisre as aisre
from dutyline.db.tables import channel as channel
from dutyline.db.tables import incident as incident
from dutyline.db.tables import platform as platform
from dutyline.db.tables import status_page as status_page
from dutyline.db.tables import work as work
from dutyline.db.tables.meta import metadata

__all__ = ["metadata"]
