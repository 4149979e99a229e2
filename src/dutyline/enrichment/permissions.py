"""Who may read and write enrichment: schemas, their rows and integrations' settings alike.

Reading takes any one of integration view/management or mapping data view/management (the
contract's list for the download); writing, integration or mapping data management. The
endpoints ask these before any work and the services again, for every other caller."""

from __future__ import annotations

from dutyline.api.permissions import (
    INTEGRATION_MANAGE,
    INTEGRATION_VIEW,
    MAPPING_DATA_MANAGE,
    MAPPING_DATA_VIEW,
)

READ = (INTEGRATION_VIEW, INTEGRATION_MANAGE, MAPPING_DATA_VIEW, MAPPING_DATA_MANAGE)
WRITE = (INTEGRATION_MANAGE, MAPPING_DATA_MANAGE)
