"""A multi-table development case with planted causes: an online retailer whose average
net revenue per order fell from the first to the second quarter of 2024.

Issue 20 asks for a case of our own where refinement cascades show: several tables,
several planted causes, and a *flat-percentage* effect (a 20 % discount on every Home
product) whose absolute size differs between cheap and dear products, which invites
splitting it by price band and supplier although the cause is one and the same. The
case is written as an InsightBench task (``retail-1.json`` with one CSV per table,
listed under the project's ``tables`` key, see :mod:`benchmark.insightbench.tasks`), so
``python -m benchmark insightbench`` runs and scores it like the development tasks.

Planted (each a ground-truth insight, its figures computed from the generated rows):

1. the drop itself (average net revenue per order, Q1 → Q2);
2. a flat 20 % discount on every Home product from 1 April: the same percentage at every
   price level and supplier;
3. a regional mix shift: new customers signing up in Q2 come mostly from the South,
   whose orders are smaller, so the South's share of orders rises; within a region
   nothing changes;
4. a channel shift: app orders (smaller baskets) rise from about 30 % to 45 %;
5. a quality problem: one Apparel supplier's return rate jumps in Q2 (returned orders
   carry no net revenue);
6. test orders: an internal staff account places 140 orders at $0.01 in May;
7. a red herring: weekend orders are smaller, but their share does not change.

Business customers order more than consumers in both quarters (a stable difference, not
a cause). :func:`self_check` proves every planted fact from the written CSVs.

``python -m benchmark retail-case --out DIR [--seed N]`` writes the task.
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from benchmark.insightbench.tasks import print_written_task

TASK_ID = "retail-1"
CATEGORIES = ("Home", "Electronics", "Apparel", "Toys")
CATEGORY_WEIGHTS = (0.30, 0.20, 0.30, 0.20)
CATEGORY_PRICE = {"Home": (3.7, 0.8), "Electronics": (4.9, 0.6), "Apparel": (3.5, 0.5),
                  "Toys": (3.1, 0.5)}
"""Log-normal (mean, sigma) of list prices: Home spans $10–$400, so a flat 20 % is $2
on a cheap product and $60 on a dear one."""
SUPPLIERS_OF = {"Home": (1, 2, 3), "Electronics": (4, 5), "Apparel": (6, 7, 8), "Toys": (9, 10)}
FAULTY_SUPPLIER = 7
REGION_BASKET = {"North": 1.2, "East": 1.1, "West": 1.0, "South": 0.55}
OLD_REGION_MIX = {"North": 0.28, "East": 0.26, "West": 0.26, "South": 0.20}
NEW_REGION_MIX = {"North": 0.10, "East": 0.10, "West": 0.10, "South": 0.70}
APP_SHARE = {1: 0.30, 2: 0.45}
HOME_DISCOUNT = 0.20
DISCOUNT_START = date(2024, 4, 1)
TEST_ORDERS = 140
TEST_ACCOUNT = 1
ORDERS_PER_QUARTER = 9_000


@dataclass(frozen=True)
class RetailCase:
    """The generated tables, ready to write."""

    orders: pd.DataFrame
    products: pd.DataFrame
    suppliers: pd.DataFrame
    customers: pd.DataFrame


def generate(seed: int = 7) -> RetailCase:
    """The retailer's tables; the same ``seed`` gives the same rows."""
    rng = np.random.default_rng(seed)
    suppliers = pd.DataFrame({
        "supplier_id": range(1, 11),
        "supplier_name": [f"Supplier {i:02d}" for i in range(1, 11)],
        "country": rng.choice(["DE", "PL", "CN", "VN", "TR"], 10)})
    products = _products(rng)
    customers = _customers(rng)
    orders = _orders(rng, products, customers)
    return RetailCase(orders, products, suppliers, customers)


def _products(rng: np.random.Generator) -> pd.DataFrame:
    rows = []
    for pid in range(1, 161):
        category = CATEGORIES[(pid - 1) % 4]
        mean, sigma = CATEGORY_PRICE[category]
        price = float(np.clip(rng.lognormal(mean, sigma), 5, 900))
        rows.append({"product_id": pid, "category": category,
                     "supplier_id": int(rng.choice(SUPPLIERS_OF[category])),
                     "list_price": round(price, 2)})
    return pd.DataFrame(rows)


def _customers(rng: np.random.Generator) -> pd.DataFrame:
    rows = [{"customer_id": TEST_ACCOUNT, "region": "West", "segment": "staff",
             "signup_date": date(2022, 5, 3)}]
    for cid in range(2, 5_002):
        new = cid > 3_800  # the Q2 sign-ups, mostly from the South
        mix = NEW_REGION_MIX if new else OLD_REGION_MIX
        region = str(rng.choice(list(mix), p=list(mix.values())))
        signup = (date(2024, 4, 1) + timedelta(days=int(rng.integers(0, 91))) if new
                  else date(2021, 1, 1) + timedelta(days=int(rng.integers(0, 1095))))
        segment = "business" if rng.random() < 0.2 else "consumer"
        rows.append({"customer_id": cid, "region": region, "segment": segment,
                     "signup_date": signup})
    return pd.DataFrame(rows)


def _orders(rng: np.random.Generator, products: pd.DataFrame,
            customers: pd.DataFrame) -> pd.DataFrame:
    by_category = {c: list(products[products.category == c].itertuples()) for c in CATEGORIES}
    regular = list(customers[customers.segment != "staff"].itertuples())
    old = [c for c in regular if c.customer_id <= 3_800]
    new = [c for c in regular if c.customer_id > 3_800]
    rows = []
    for quarter, start in ((1, date(2024, 1, 1)), (2, date(2024, 4, 1))):
        for _ in range(ORDERS_PER_QUARTER):
            day = start + timedelta(days=int(rng.integers(0, 91)))
            pool = old if quarter == 1 else _quarter_two_pool(rng, old, new, day)
            customer = pool[int(rng.integers(0, len(pool)))]
            category = str(rng.choice(CATEGORIES, p=CATEGORY_WEIGHTS))
            product = by_category[category][int(rng.integers(0, 40))]
            channel = "app" if rng.random() < APP_SHARE[quarter] else "web"
            basket = (REGION_BASKET[customer.region] * (0.55 if channel == "app" else 1.0)
                      * (0.8 if day.weekday() >= 5 else 1.0)
                      * (1.4 if customer.segment == "business" else 1.0))
            quantity = 1 + int(rng.poisson(basket))
            discount = (HOME_DISCOUNT if category == "Home" and day >= DISCOUNT_START
                        else 0.10 if rng.random() < 0.06 else 0.0)
            return_rate = (0.25 if quarter == 2 and product.supplier_id == FAULTY_SUPPLIER
                           else 0.04)
            rows.append(_order(day, int(customer.customer_id), int(product.product_id),
                               channel, quantity, float(product.list_price), discount,
                               rng.random() < return_rate))
    for _ in range(TEST_ORDERS):
        day = date(2024, 5, 1) + timedelta(days=int(rng.integers(0, 31)))
        rows.append(_order(day, TEST_ACCOUNT, int(rng.integers(1, 161)), "web", 1, 0.01, 0.0,
                           False))
    orders = pd.DataFrame(rows).sort_values(["order_date", "customer_id"], kind="stable")
    orders.insert(0, "order_id", range(100_001, 100_001 + len(orders)))
    return orders.reset_index(drop=True)


def _quarter_two_pool(rng: np.random.Generator, old: list[Any], new: list[Any],
                      day: date) -> list[Any]:
    """Q2's buyers: a third of the orders come from customers signed up by ``day``."""
    if rng.random() >= 1 / 3:
        return old
    joined = [c for c in new if c.signup_date <= day]
    return joined if joined else old


def _order(day: date, customer_id: int, product_id: int, channel: str, quantity: int,
           unit_price: float, discount: float, returned: bool) -> dict[str, object]:
    revenue = round(quantity * unit_price * (1 - discount), 2)
    return {"order_date": day, "customer_id": customer_id, "product_id": product_id,
            "channel": channel, "quantity": quantity, "unit_price": unit_price,
            "discount_pct": discount, "revenue": revenue, "returned": returned,
            "net_revenue": 0.0 if returned else revenue}


# --- the task --------------------------------------------------------------------------

GOAL = ("Average net revenue per order fell between the first and the second quarter of "
        "2024. Find out what caused the drop and how much each cause contributed.")
ROLE = "E-commerce Analyst"
DESCRIPTION = (
    "An online retailer's orders from January to June 2024 with its products, suppliers "
    "and customers. `orders` has one row per order (date, customer, product, channel web "
    "or app, quantity, unit price, discount as a fraction, revenue after discount, whether "
    "it was returned, and net revenue: the revenue of an order not returned, else 0). "
    "`products` gives each product's category, supplier and list price; `suppliers` their "
    "name and country; `customers` their region, segment and sign-up date.")


def write_task(out: str | os.PathLike[str], seed: int = 7) -> Path:
    """Write ``retail-1.json`` and its four CSVs into ``out``; returns the JSON's path.

    Raises:
        RuntimeError: the generated rows do not hold the planted story
            (:func:`self_check`); nothing is scored against a broken case.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    case = generate(seed)
    tables = {"orders": case.orders, "products": case.products, "suppliers": case.suppliers,
              "customers": case.customers}
    files = {}
    for name, frame in tables.items():
        files[name] = f"{TASK_ID}-{name}.csv"
        frame.to_csv(out / files[name], index=False)
    facts = planted_facts(out / files["orders"], out / files["products"],
                          out / files["customers"])
    broken = self_check(facts)
    if broken:
        raise RuntimeError(f"the retail case of seed {seed} does not hold: "
                           f"{'; '.join(broken)}; try another seed")
    task = {"dataset_csv_path": files["orders"], "tables": files,
            "metadata": {"goal": GOAL, "role": ROLE, "dataset_description": DESCRIPTION,
                         "header": "Falling revenue per order at an online retailer",
                         "category": "Sales", "seed": seed},
            "insight_list": _insights(facts), "summary": ""}
    path = out / f"{TASK_ID}.json"
    path.write_text(json.dumps(task, indent=1, default=str), encoding="utf-8")
    return path


def _insights(f: dict[str, float]) -> list[dict[str, object]]:
    def item(text: str, question: str, values: dict[str, object]) -> dict[str, object]:
        return {"insight": text, "question": question, "insight_value": values}

    return [
        item(f"Average net revenue per order fell from ${f['aov_q1']:.2f} in Q1 2024 to "
             f"${f['aov_q2']:.2f} in Q2 ({f['aov_change']:+.1%}).",
             "How much did average net revenue per order change?",
             {"Q1": round(f["aov_q1"], 2), "Q2": round(f["aov_q2"], 2)}),
        item("From 1 April 2024 every Home product sells at a flat 20% discount; it cuts "
             "Home revenue by the same 20% at every price level and supplier (only its "
             f"dollar size grows with the price); it costs about ${f['home_loss']:.2f} per Q2 "
             f"order, about {f['home_loss'] / (f['aov_q1'] - f['aov_q2']):.0%} of the drop.",
             "What changed in pricing or discounts?",
             {"discount": "20%", "category": "Home"}),
        item(f"The South's share of orders rose from {f['south_q1']:.0%} to "
             f"{f['south_q2']:.0%}: customers who signed up in Q2 are mostly from the South, "
             "whose orders are smaller (fewer units), a mix shift with no change within "
             "regions.",
             "Did the customer mix change?",
             {"South Q1": round(f["south_q1"], 2), "South Q2": round(f["south_q2"], 2)}),
        item(f"App orders, which have smaller baskets than web orders, rose from "
             f"{f['app_q1']:.0%} to {f['app_q2']:.0%} of orders.",
             "Did the sales channel mix change?",
             {"app Q1": round(f["app_q1"], 2), "app Q2": round(f["app_q2"], 2)}),
        item(f"Returns of Supplier {FAULTY_SUPPLIER:02d}'s (Apparel) products jumped from "
             f"{f['ret7_q1']:.0%} in Q1 to {f['ret7_q2']:.0%} in Q2 while other suppliers "
             f"stayed near {f['ret_other']:.0%}; returned orders carry no net revenue.",
             "Did returns change?",
             {"supplier": f"Supplier {FAULTY_SUPPLIER:02d}",
              "Q1": round(f["ret7_q1"], 2), "Q2": round(f["ret7_q2"], 2)}),
        item(f"{TEST_ORDERS} orders in May 2024 from the internal staff account (customer "
             f"{TEST_ACCOUNT}) at a unit price of $0.01 are test orders, not sales; they "
             "pull the Q2 average down and should be excluded.",
             "Is there a data-quality problem in the orders?",
             {"orders": TEST_ORDERS, "customer_id": TEST_ACCOUNT}),
        item(f"Weekend orders are smaller than weekday orders, but the weekend share of "
             f"orders barely changed ({f['weekend_q1']:.0%} vs {f['weekend_q2']:.0%}), so "
             "weekends do not explain the drop.",
             "Does the day of the week explain the drop?",
             {"weekend Q1": round(f["weekend_q1"], 2),
              "weekend Q2": round(f["weekend_q2"], 2)}),
    ]


def planted_facts(orders_csv: Path, products_csv: Path, customers_csv: Path
                  ) -> dict[str, float]:
    """The planted figures, measured on the written CSVs with DuckDB."""
    con = duckdb.connect()
    try:
        for name, csv, extra in (("orders", orders_csv, ", quarter(order_date) AS q"),
                                 ("products", products_csv, ""),
                                 ("customers", customers_csv, "")):
            con.execute(f"CREATE TABLE {name} AS SELECT *{extra} FROM read_csv(?, "
                        "header = true)", [str(csv)])

        def one(sql: str) -> float:
            return float(con.execute(sql).fetchone()[0])

        def by_quarter(expression: str, join: str = "", where: str = "TRUE"
                       ) -> tuple[float, float]:
            return tuple(one(f"SELECT avg({expression}) FROM orders o {join} "
                             f"WHERE {where} AND o.q = {q}") for q in (1, 2))

        customer = "JOIN customers c USING (customer_id)"
        real = "c.segment <> 'staff'"
        product = "JOIN products p USING (product_id)"
        facts: dict[str, float] = {}
        facts["aov_q1"], facts["aov_q2"] = by_quarter("net_revenue")
        facts["aov_change"] = facts["aov_q2"] / facts["aov_q1"] - 1
        facts["south_q1"], facts["south_q2"] = by_quarter(
            "CASE WHEN c.region = 'South' THEN 1.0 ELSE 0 END", customer, real)
        facts["app_q1"], facts["app_q2"] = by_quarter(
            "CASE WHEN channel = 'app' THEN 1.0 ELSE 0 END", customer, real)
        returned = "CASE WHEN returned THEN 1.0 ELSE 0 END"
        facts["ret7_q1"], facts["ret7_q2"] = by_quarter(
            returned, product, f"p.supplier_id = {FAULTY_SUPPLIER}")
        facts["ret_other"] = one(f"SELECT avg({returned}) FROM orders o {product} "
                                 f"WHERE p.supplier_id <> {FAULTY_SUPPLIER}")
        facts["weekend_q1"], facts["weekend_q2"] = by_quarter(
            "CASE WHEN dayofweek(order_date) IN (0, 6) THEN 1.0 ELSE 0 END", customer, real)
        facts["home_q2_ratio_spread"] = one(
            "SELECT max(r) - min(r) FROM (SELECT band, avg(revenue / (quantity * list_price)) "
            "AS r FROM (SELECT *, ntile(4) OVER (ORDER BY list_price) AS band FROM orders o "
            f"{product} WHERE p.category = 'Home' AND o.q = 2 "
            f"AND o.customer_id <> {TEST_ACCOUNT}) GROUP BY band)")
        facts["home_loss"] = one(
            f"SELECT sum(CASE WHEN p.category = 'Home' AND o.customer_id <> {TEST_ACCOUNT} "
            f"AND NOT o.returned "  # a returned order's net revenue is 0 with or without it
            f"THEN revenue / (1 - {HOME_DISCOUNT}) * {HOME_DISCOUNT} ELSE 0 END) / count(*) "
            f"FROM orders o {product} WHERE o.q = 2")
        facts["test_orders"] = one(f"SELECT count(*) FROM orders WHERE customer_id = "
                                   f"{TEST_ACCOUNT} AND unit_price = 0.01")
        return facts
    finally:
        con.close()


def self_check(facts: dict[str, float]) -> list[str]:
    """What in ``facts`` contradicts the planted story (empty: the case holds)."""
    checks = {
        "the average fell by at least 8%": facts["aov_change"] <= -0.08,
        "the South's share rose by at least 10 points":
            facts["south_q2"] - facts["south_q1"] >= 0.10,
        "the app's share rose by at least 10 points": facts["app_q2"] - facts["app_q1"] >= 0.10,
        "the faulty supplier's returns jumped": facts["ret7_q2"] - facts["ret7_q1"] >= 0.12,
        "the weekend share stayed within 2 points":
            abs(facts["weekend_q2"] - facts["weekend_q1"]) < 0.02,
        "the Home discount is flat across price quartiles": facts["home_q2_ratio_spread"] < 0.01,
        "every test order is there": facts["test_orders"] == TEST_ORDERS,
    }
    return [name for name, ok in checks.items() if not ok]


def add_args(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``python -m benchmark retail-case``."""
    parser.add_argument("--out", required=True, type=Path,
                        help="folder for retail-1.json and its CSVs")
    parser.add_argument("--seed", type=int, default=7, help="random seed (default 7)")


def run(args: argparse.Namespace) -> int:
    """Write the task and print its planted insights."""
    print_written_task(write_task(args.out, args.seed), args.out)
    return 0
