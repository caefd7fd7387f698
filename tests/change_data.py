"""Generated DuckDB databases where a rate changes between two years for known reasons.

Counts are exact (which rows churn is random, how many is not), so every share of the
change has a known value.
"""

from __future__ import annotations

import datetime as dt

import duckdb
import numpy as np
import pandas as pd

REGIONS = ("north", "east", "west", "south")
"""Customer regions, equally many customers each."""
CHURNED = {("north", 2024): 0.10, ("north", 2025): 0.30, ("east", 2024): 0.10,
           ("east", 2025): 0.13, ("west", 2024): 0.10, ("west", 2025): 0.10,
           ("south", 2024): 0.10, ("south", 2025): 0.10}
"""Churn rate per (region, year): a main cause (north), a real secondary factor (east)."""
QUESTION = "Which customers explain the rise in churn from 2024 to 2025?"
"""Asks about a change; "customers" names the table whose first text column is region."""


def rising_churn(per_region: int = 10_000, seed: int = 3) -> duckdb.DuckDBPyConnection:
    """``customers(customer_id, region, plan)`` and ``accounts(account_id, customer_id,
    opened_on, churned)``: one account per customer and year, churn rates as
    :data:`CHURNED` exactly (north explains 0.05 / 0.0575 ≈ 87% of the rise, east
    0.0075 / 0.0575 ≈ 13%, the others nothing); ``plan`` is unrelated to churn."""
    rng = np.random.default_rng(seed)
    regions = np.repeat(REGIONS, per_region)
    ids = np.arange(1, len(regions) + 1)
    customers = pd.DataFrame({"customer_id": ids, "region": regions,
                              "plan": np.where(rng.random(len(ids)) < 0.5, "basic", "pro")})
    accounts = []
    for year in (2024, 2025):
        churned = np.zeros(len(ids), dtype=bool)
        for number, region in enumerate(REGIONS):
            rows = np.arange(number * per_region, (number + 1) * per_region)
            chosen = rng.choice(rows, round(CHURNED[(region, year)] * per_region),
                                replace=False)
            churned[chosen] = True
        days = rng.integers(0, 365, len(ids))
        accounts.append(pd.DataFrame({
            "customer_id": ids,
            "opened_on": [dt.date(year, 1, 1) + dt.timedelta(days=int(d)) for d in days],
            "churned": churned}))
    frame = pd.concat(accounts, ignore_index=True)
    frame.insert(0, "account_id", np.arange(1, len(frame) + 1))
    con = duckdb.connect()
    con.execute("CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, region VARCHAR, "
                "plan VARCHAR)")
    con.register("customers_frame", customers)
    con.execute("INSERT INTO customers SELECT * FROM customers_frame")
    con.execute("CREATE TABLE accounts (account_id INTEGER PRIMARY KEY, customer_id INTEGER "
                "REFERENCES customers (customer_id), opened_on DATE, churned BOOLEAN)")
    con.register("accounts_frame", frame)
    con.execute("INSERT INTO accounts SELECT * FROM accounts_frame")
    con.unregister("customers_frame")
    con.unregister("accounts_frame")
    return con


def shifting_mix(seed: int = 4) -> duckdb.DuckDBPyConnection:
    """``visits(visit_id, year, channel, converted)``: each channel converts at the same
    rate in both years (web 0.25, store 0.05); web's share of the rows grows from 50% to
    70%, so the whole rise (0.15 -> 0.19) is mix."""
    rng = np.random.default_rng(seed)
    parts = []
    for year, web in ((2024, 5000), (2025, 7000)):
        for channel, n, rate in (("web", web, 0.25), ("store", 10_000 - web, 0.05)):
            converted = np.zeros(n, dtype=bool)
            converted[rng.choice(n, round(rate * n), replace=False)] = True
            parts.append(pd.DataFrame({"year": year, "channel": channel,
                                       "converted": converted}))
    frame = pd.concat(parts, ignore_index=True)
    frame.insert(0, "visit_id", np.arange(1, len(frame) + 1))
    con = duckdb.connect()
    con.register("visits_frame", frame)
    con.execute("CREATE TABLE visits AS SELECT visit_id::INTEGER AS visit_id, "
                "year::INTEGER AS year, channel::VARCHAR AS channel, converted FROM visits_frame")
    con.unregister("visits_frame")
    return con
