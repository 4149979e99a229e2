from __future__ import annotations

from sqlalchemy import BigInteger, Integer, MetaData

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
