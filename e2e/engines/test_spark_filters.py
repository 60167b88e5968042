"""Spark's filters as Sluice filter text (sluice.spark.filter_sql): what is
sent to the server, and what is left to Spark alone."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest
from pyspark.sql.datasource import (EqualNullSafe, EqualTo, GreaterThan, GreaterThanOrEqual, In, IsNotNull, IsNull,
                                    LessThan, LessThanOrEqual, Not, StringStartsWith)

from sluice.spark import filter_sql

TYPES = {"id": pa.int64(), "name": pa.string(), "amount": pa.float64(), "paid": pa.bool_(),
         "price": pa.decimal128(10, 2), "at": pa.timestamp("us", tz="UTC"), "day": pa.date32(),
         "in": pa.string(), "odd name": pa.string()}

UTC = dt.timezone.utc


@pytest.mark.parametrize("f, want", [
    (EqualTo(("id",), 5), "id = 5"),
    (GreaterThan(("amount",), 1.5), "amount > 1.5"),
    (GreaterThanOrEqual(("amount",), 2), "amount >= 2.0"),
    (LessThan(("name",), "O'Brien"), "name < 'O''Brien'"),
    (LessThanOrEqual(("price",), Decimal("9.99")), "price <= 9.99"),
    (EqualTo(("paid",), True), "paid = TRUE"),
    (In(("id",), (1, 2, None)), "id IN (1, 2)"),
    (IsNull(("name",)), "name IS NULL"),
    (IsNotNull(("name",)), "name IS NOT NULL"),
    (Not(EqualTo(("id",), 5)), "NOT (id = 5)"),
    (EqualTo(("at",), dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)), "at = TIMESTAMP '2026-01-02T03:04:05+00:00'"),
    (EqualTo(("day",), dt.date(2026, 1, 2)), "day = DATE '2026-01-02'"),
    (EqualTo(("in",), "x"), "\"in\" = 'x'"),
    (EqualTo(("odd name",), "x"), "\"odd name\" = 'x'"),
])
def test_sent(f, want):
    assert filter_sql(f, TYPES) == want


@pytest.mark.parametrize("f", [
    EqualTo(("_change_type",), "insert"),            # not a data column
    EqualTo(("a", "b"), 1),                          # a nested field
    EqualTo(("id",), 1.5),                           # a fraction for an integer column
    EqualTo(("id",), True),                          # a bool for a number
    EqualTo(("amount",), float("nan")),
    EqualTo(("price",), Decimal("1.234")),           # more digits than the scale
    EqualTo(("at",), dt.datetime(2026, 1, 2)),       # a time without its zone
    EqualTo(("name",), 5),
    EqualNullSafe(("id",), 5),
    StringStartsWith(("name",), "A"),
    Not(StringStartsWith(("name",), "A")),
    In(("id",), (1, "x")),
])
def test_left_to_spark(f):
    assert filter_sql(f, TYPES) is None
