"""The stock ledger (docs/domain.md, "The stock ledger"): every pet's movements, read at the
end, must fit their kinds, never go negative, record the balances that are their sums
(available, held, committed), end at the pet's stock, its held units and the units of its
open orders' lines, and pass through every level (and held count) the feed's
`inventory.updated` events showed, in the same order; and each adjustment a client made is
one `adjusted` movement with its reason, units and pet. On a database the previous version
made (the upgrade unfinished, its nodes running beside), none may be written. Each order
line's own movements are checks_checkout's, each hold's checks_holds'."""

from collections import defaultdict

from sales import reason_of

# How each kind moves (available, held, committed) by `quantity` q; an opening's changes are
# the balances it starts from. A movement of a run saved before holds has no held change.
KINDS = {
    "set": None, "adjusted": None,
    "committed": (-1, 0, 1), "released": (1, 0, -1), "sold": (0, 0, -1),
    "written_off": (-1, 0, 0), "held": (-1, 1, 0), "hold_released": (1, -1, 0),
    "hold_expired": (1, -1, 0), "hold_committed": (0, -1, 1),
    "opening": "opening",
}


def changes(movement):
    return (movement["availableChange"], movement.get("heldChange", 0),
            movement["committedChange"])


def balances(movement):
    return (movement["availableAfter"], movement.get("heldAfter", 0),
            movement["committedAfter"])


def fits(movement):
    kind, q = movement["kind"], movement["quantity"]
    available, held, committed = changes(movement)
    shape = KINDS.get(kind, "unknown")
    if shape == "unknown":
        return False
    if shape is None:
        return committed == 0 and held == 0 and abs(available) == q
    if shape == "opening":
        return available == q and held == 0 and committed >= 0
    return (available, held, committed) == tuple(part * q for part in shape)


def same_levels(shown, moved):
    """The feed's (level, held or None) against the ledger's (available, held) balances: an
    event of a run saved before holds shows no held count."""
    return len(shown) == len(moved) and all(
        level == available and held in (None, on_hold)
        for (level, held), (available, on_hold) in zip(shown, moved))


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
    levels = defaultdict(list)  # pet -> the (quantity, held) its inventory.updated events showed
    for event in final.by_type["inventory.updated"]:
        levels[event["data"]["petId"]].append((event["data"]["quantity"],
                                               event["data"].get("held")))
    for pet, movements in sorted(final.movements.items()):
        summed = (0, 0, 0)
        previous = 0
        for m in movements:
            where = f"pet {pet}'s movement {m['id']} ({m['kind']})"
            if m["id"] <= previous:
                anomalies.add("ledger-order", f"{where} follows movement {previous}")
            previous = m["id"]
            if not fits(m):
                anomalies.add("ledger-kind", f"{where} moves {changes(m)} (available, held, "
                              f"committed) for {m['quantity']} units", movement=m)
            summed = tuple(a + b for a, b in zip(summed, changes(m)))
            if min(summed) < 0:
                anomalies.add("ledger-negative", f"{where} leaves {summed} (available, "
                              "held, committed)", movement=m)
            if summed != balances(m):
                anomalies.add("ledger-balance", f"{where} records {balances(m)} (available, "
                              f"held, committed), its ledger sums {summed}", movement=m)
        item = final.inventory.get(pet) or {}
        state = (item.get("quantity", 0), item.get("held", 0), units.get(pet, 0))
        if summed != state:
            anomalies.add("ledger-state", f"pet {pet}'s ledger sums {summed} (available, held, "
                          f"committed); it has {state[0]} in stock, {state[1]} held and "
                          f"{state[2]} in open orders")
        # Each change of the level or of the held units is one event and one movement, in
        # the same transaction: the feed's levels are the ledger's, in order (a write-off, a
        # deleted pet's last change, has no inventory.updated).
        moved = [balances(m)[:2] for m in movements
                 if (m["availableChange"] or m.get("heldChange", 0))
                 and m["kind"] != "written_off"]
        if not same_levels(levels.get(pet, []), moved):
            anomalies.add("ledger-feed", f"pet {pet}: the feed's inventory.updated levels "
                          f"(quantity, held) {levels.get(pet, [])[:20]} are not its ledger's "
                          f"{moved[:20]}")


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
