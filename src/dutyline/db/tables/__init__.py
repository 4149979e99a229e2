"""Table definitions, one module per domain, all on one MetaData so Alembic sees them."""

from dutyline.db.tables.meta import metadata
from dutyline.db.tables import platform as platform  # noqa: F401  (registers tables)
from dutyline.db.tables import work as work  # noqa: F401

__all__ = ["metadata"]
