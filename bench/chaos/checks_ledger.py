"""The stock ledger (docs/domain.md, "The stock ledger"): every pet's movements, read at the
end, must fit their kinds, never go negative, record the balances that are their sums, end at
the pet's stock and the units of its open orders' lines, and pass through every level the
feed's `inventory.updated` events showed, in the same order; and each adjustment a client
made is one `adjusted` movement with its reason, units and pet. On a database the previous
version made (the upgrade unfinished, its nodes running beside), none may be written. Each
order line's own movements are checks_checkout's."""

from collections import defaultdict

from sales import reason_of

# How each kind moves (available, committed) by `quantity` q; an opening's changes are the
# balances it starts from.
KINDS = {
    "set": None, "adjusted": None,
    "committed": (-1, 1), "released": (1, -1), "sold": (0, -1), "written_off": (-1, 0),
    "opening": "opening",
}


def fits(movement):
    kind, q = movement["kind"], movement["quantity"]
    available, committed = movement["availableChange"], movement["committedChange"]
    shape = KINDS.get(kind, "unknown")
    if shape == "unknown":
        return False
    if shape is None:
        return committed == 0 and abs(available) == q
    if shape == "opening":
        return available == q and committed >= 0
    return (available, committed) == (shape[0] * q, shape[1] * q)


def open_units(final):
    units = defaultdict(int)
    for order in final.orders.values():
        if order.get("complete"):
            continue
        for line in order.get("lines") or [{"petId": order["petId"], "quantity": order["quantity"]}]:
            units[line["petId"]] += line["quantity"]
    return units


def check_ledger(final, anomalies):
    """Each pet's ledger against itself, the final state and the feed."""
    if final.movements is None:
        return
    if not final.ledger_begun:
        # An unfinished upgrade: the previous version's nodes change stock without the
        # ledger, so none may be written (docs/deployment.md).
        written = sum(len(movements) for movements in final.movements.values())
        if written:
            anomalies.add("ledger-gate", f"{written} stock movements were written before the "
                          "upgrade was finished")
        return
    units = open_units(final)
    levels = defaultdict(list)  # pet -> the quantities its inventory.updated events showed
    for event in final.by_type["inventory.updated"]:
        levels[event["data"]["petId"]].append(event["data"]["quantity"])
    for pet, movements in sorted(final.movements.items()):
        available = committed = 0
        previous = 0
        for m in movements:
            where = f"pet {pet}'s movement {m['id']} ({m['kind']})"
            if m["id"] <= previous:
                anomalies.add("ledger-order", f"{where} follows movement {previous}")
            previous = m["id"]
            if not fits(m):
                anomalies.add("ledger-kind", f"{where} moves {m['availableChange']} available "
                              f"and {m['committedChange']} committed for {m['quantity']} units",
                              movement=m)
            available += m["availableChange"]
            committed += m["committedChange"]
            if available < 0 or committed < 0:
                anomalies.add("ledger-negative", f"{where} leaves {available} available and "
                              f"{committed} committed", movement=m)
            if (available, committed) != (m["availableAfter"], m["committedAfter"]):
                anomalies.add("ledger-balance", f"{where} records {m['availableAfter']} "
                              f"available and {m['committedAfter']} committed, its ledger "
                              f"sums {available} and {committed}", movement=m)
        item = final.inventory.get(pet)
        stock = item["quantity"] if item else 0
        if (available, committed) != (stock, units.get(pet, 0)):
            anomalies.add("ledger-state", f"pet {pet}'s ledger sums {available} available and "
                          f"{committed} committed; it has {stock} in stock and "
                          f"{units.get(pet, 0)} in open orders")
        # Each change of the level is one event and one movement, in the same transaction:
        # the feed's levels are the ledger's, in order (a write-off, a deleted pet's last
        # change, has no inventory.updated).
        moved = [m["availableAfter"] for m in movements
                 if m["availableChange"] != 0 and m["kind"] != "written_off"]
        if moved != levels.get(pet, []):
            anomalies.add("ledger-feed", f"pet {pet}: the feed's inventory.updated levels "
                          f"{levels.get(pet, [])[:20]} are not its ledger's {moved[:20]}")


def check_adjustments(history, final, anomalies):
    """Every adjustment's movement, found by the reason that names its op (sales.py): one
    for an acknowledged adjustment, none for a refused one, at most one otherwise; and no
    `adjusted` movement that no adjustment asked for (ledger-adjustment)."""
    if final.movements is None or not final.ledger_begun:
        return
    adjusted = defaultdict(list)  # reason -> its movements
    for movements in final.movements.values():
        for m in movements:
            if m["kind"] == "adjusted":
                adjusted[m.get("reason")].append(m)
    for op in history.ops_of("adjust"):
        meta, reason = op["meta"], reason_of(op["op"])
        found = [(m["petId"], m["availableChange"]) for m in adjusted.pop(reason, [])]
        result, _ = history.outcome(op)
        allowed = {"ok": [[(meta["petId"], meta["change"])]], "failed": [[]],
                   "unknown": [[], [(meta["petId"], meta["change"])]]}[result]
        if found not in allowed:
            anomalies.add("ledger-adjustment", f"adjustment op {op['op']} ({result}: pet "
                          f"{meta['petId']}, {meta['change']:+d}) has adjusted movements "
                          f"{found or 'none'}", op=op["op"])
    for reason, movements in adjusted.items():
        anomalies.add("ledger-adjustment", f"adjusted movements {[m['id'] for m in movements]} "
                      f"({reason!r}) are no adjustment's a client made",
                      movements=[m["id"] for m in movements])
