"""Known-answer and pure-noise databases for the analysis-tool tests (real DuckDB tables).

Every function writes small, seeded tables into a fresh in-memory DuckDB connection:
``customers`` (one row per customer), ``orders`` (N:1 to customers, the base relation)
and ``tags`` (1:N attribute table of customers, declared by foreign key or left for
inference).
"""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd

REGIONS = ("north", "south", "east", "west")
TIERS = ("basic", "plus", "pro")
CHANNELS = ("web", "store", "phone")
TAGS = ("student", "senior", "veteran", "family")
START = pd.Timestamp("2021-01-01")
DAYS = 900


def _base(seed: int, customers: int, orders: int) -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    customer = pd.DataFrame({
        "customer_id": np.arange(1, customers + 1),
        "region": rng.choice(REGIONS, customers),
        "tier": rng.choice(TIERS, customers),
        "age": rng.integers(18, 90, customers),
    })
    has = rng.random((customers, len(TAGS))) < 0.25
    rows, cols = np.nonzero(has)
    tags = pd.DataFrame({"customer_id": customer["customer_id"].to_numpy()[rows],
                         "tag": np.array(TAGS)[cols]})
    day = rng.integers(0, DAYS, orders)
    order = pd.DataFrame({
        "order_id": np.arange(1, orders + 1),
        "customer_id": rng.integers(1, customers + 1, orders),
        "channel": rng.choice(CHANNELS, orders),
        "promo": rng.choice(["none", "coupon"], orders),
        "ordered_on": (START + pd.to_timedelta(day, unit="D")).to_numpy(),
        "returned": rng.random(orders) < 0.2,
        "amount": rng.normal(50.0, 10.0, orders),
    })
    return {"customers": customer, "orders": order, "tags": tags}


def _write(frames: dict[str, pd.DataFrame], declared: bool) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    references = " REFERENCES customers (customer_id)" if declared else ""
    key = " PRIMARY KEY" if declared else ""
    con.execute(f"CREATE TABLE customers (customer_id INTEGER{key}, region VARCHAR, "
                "tier VARCHAR, age INTEGER)")
    con.execute(f"CREATE TABLE orders (order_id INTEGER{key}, customer_id INTEGER"
                f"{references}, channel VARCHAR, promo VARCHAR, ordered_on DATE, "
                "returned BOOLEAN, amount DOUBLE)")
    con.execute(f"CREATE TABLE tags (customer_id INTEGER{references}, tag VARCHAR)")
    for name in ("customers", "orders", "tags"):
        con.register("_frame", frames[name])
        con.execute(f"INSERT INTO {name} SELECT * FROM _frame")
        con.unregister("_frame")
    return con


def noise(seed: int, *, customers: int = 1500, orders: int = 6000,
          declared: bool = True) -> duckdb.DuckDBPyConnection:
    """No effect anywhere: returns and amounts are independent of every column."""
    return _write(_base(seed, customers, orders), declared)


def planted(seed: int = 1, *, declared: bool = True) -> duckdb.DuckDBPyConnection:
    """Known answers, each in its own column so the tests can tell them apart.

    - segment: customers tagged ``veteran`` return twice as many orders as the others;
    - confounder with a reversal: ``promo = 'coupon'`` goes mostly to ``tier = 'pro'``
      customers, whose return rate is far lower; within each tier coupons *raise* the
      return rate by a quarter, overall they look like they lower it;
    - interaction: on the ``amount`` metric, coupons add 10 in the ``east`` region and
      nothing elsewhere;
    - trend: ``amount`` grows 0.01 a day, 0.05 a day after day 500, and is 8 higher in
      November and December.
    """
    rng = np.random.default_rng(seed)
    frames = _base(seed, 3000, 24000)
    customers, orders, tags = frames["customers"], frames["orders"], frames["tags"]
    veteran = set(tags.loc[tags["tag"] == "veteran", "customer_id"])
    joined = orders.merge(customers, on="customer_id")
    pro = (joined["tier"] == "pro").to_numpy()
    coupon = rng.random(len(joined)) < np.where(pro, 0.8, 0.1)
    east = (joined["region"] == "east").to_numpy()
    risk = np.where(pro, 0.06, 0.24) * np.where(coupon, 1.25, 1.0)
    risk = risk * np.where(joined["customer_id"].isin(veteran), 2.0, 1.0)
    returned = rng.random(len(joined)) < np.clip(risk, 0, 1)
    day = (pd.to_datetime(joined["ordered_on"]) - START).dt.days.to_numpy()
    month = pd.to_datetime(joined["ordered_on"]).dt.month.to_numpy()
    amount = (50 + 0.01 * day + 0.04 * np.clip(day - 500, 0, None) + 8 * np.isin(month, [11, 12])
              + 10 * (coupon & east) + rng.normal(0, 5, len(joined)))
    joined = joined.assign(promo=np.where(coupon, "coupon", "none"), returned=returned,
                           amount=amount)
    frames["orders"] = joined[list(orders.columns)].sort_values("order_id")
    return _write(frames, declared)


def one_category_claims() -> duckdb.DuckDBPyConnection:
    """400 claims, 84 of them by user ``u1``, all in ``travel`` (the others spread over
    travel, assets and meals, and two regions), ``u1``'s 50 higher: a dimension
    (``claims.category``) whose values hold both arms in one stratum only."""
    con = duckdb.connect()
    con.execute("""
        CREATE TABLE claims AS
        SELECT i, CASE WHEN i < 84 THEN 'u1' ELSE 'v' || (i % 7) END AS user_id,
               CASE WHEN i < 84 OR i % 3 = 0 THEN 'travel'
                    WHEN i % 3 = 1 THEN 'assets' ELSE 'meals' END AS category,
               CASE WHEN i % 2 = 0 THEN 'east' ELSE 'west' END AS region,
               100 + (i % 5) * 10 + CASE WHEN i < 84 THEN 50 ELSE 0 END AS amount
        FROM range(400) r(i)""")
    return con
