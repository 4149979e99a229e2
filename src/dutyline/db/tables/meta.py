from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import BigInteger, Integer, MetaData

if TYPE_CHECKING:
    from alembic.runtime.environment import NameFilterParentNames, NameFilterType

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = MetaData(naming_convention=NAMING)

# An auto-incrementing 64-bit key: SQLite only autoincrements INTEGER PRIMARY KEY.
AutoBigInt = BigInteger().with_variant(Integer(), "sqlite")

# Schema objects the migrations build by hand because a Table cannot describe them, by name:
# SQLite FTS5 tables (with the shadow tables FTS5 makes for each, named <table>_<suffix>) and
# PostgreSQL expression indexes with an operator class. Autogenerate (migrations/env.py) and
# the test that compares the migrations with the table modules leave exactly these out; the
# tests of the feature that reads them check them.
HAND_MADE_TABLES = ("incident_title_fts",)  # migration 0005: /incident/list title search
HAND_MADE_INDEXES = ("ix_incident_title_trgm",)  # migration 0005, PostgreSQL
_FTS5_SHADOW_SUFFIXES = ("", "_data", "_idx", "_content", "_docsize", "_config")


def include_name(name: str | None, type_: NameFilterType,
                 parent_names: NameFilterParentNames) -> bool:
    """Alembic's include_name hook: False for the hand-made objects above."""
    if type_ == "table":
        return not any(name == f"{table}{suffix}" for table in HAND_MADE_TABLES
                       for suffix in _FTS5_SHADOW_SUFFIXES)
    if type_ == "index":
        return name not in HAND_MADE_INDEXES
    return True
