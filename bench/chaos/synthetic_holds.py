"""A synthetic shop that holds (test_holds.py): synthetic.Shop with holds placed, released,
checked out and swept the way a correct service does them (docs/domain.md, "Holds"), each
with its op and call lines, events, ledger rows, and the hold as the final state reads it.
Tests then break one of them, as the plants do."""

import copy
import datetime

from clients import ship_date_marker
from synthetic import Shop


def stamp(moment):
    """A moment as the service writes it (RFC 3339, UTC)."""
    return datetime.datetime.fromtimestamp(moment, datetime.timezone.utc) \
        .isoformat().replace("+00:00", "Z")


class HoldingShop(Shop):
    def __init__(self):
        super().__init__()
        self.holds = {}  # hold id -> the hold as the service keeps it

    def pet(self, stock):
        pet = super().pet(stock)
        self.price(pet, 1000 + pet)  # the popular pets are priced (a hold's checkout)
        return pet

    def inventory(self, pet, by):
        """The inventory.updated of a change of `pet`'s available or held units."""
        return self.event("inventory.updated", {"petId": pet, "quantity": self.stock[pet],
                                                "held": self.held.get(pet, 0)}, by=by)

    def hold(self, lines, ttl=4, answers=((201, None),), commit=True, client="w0",
             fate="abandon"):
        """A hold of `lines` ((pet, quantity) each) placed at the next call's time."""
        asked = [{"petId": pet, "quantity": q} for pet, q in lines]
        op = self.op("place_hold", client=client, lines=asked, ttlSeconds=ttl,
                     idempotencyKey=f"h{self.next_op + 1}", fate=fate)
        hold = None
        if commit:
            created = self.clock + 0.105  # within the first attempt's time
            hold = {"id": len(self.holds) + 1, "createdAt": stamp(created),
                    "expiresAt": stamp(created + ttl),
                    "lines": [{"lineNo": n, "petId": pet, "quantity": q}
                              for n, (pet, q) in enumerate(lines, 1)]}
            self.holds[hold["id"]] = hold
            by = self.key("place_hold", client)
            self.event("hold.placed", copy.deepcopy(hold), by=by)
            for line in hold["lines"]:
                self.stock[line["petId"]] -= line["quantity"]
                self.move(line["petId"], "held", line["quantity"], -line["quantity"], 0,
                          held=line["quantity"], hold=hold["id"])
                self.inventory(line["petId"], by)
        for status, code in answers:
            self.call(op, "place_hold", status,
                      copy.deepcopy(hold) if status == 201 else {"code": code}, code=code,
                      client=client)
        return hold

    def expires(self, hold):
        return datetime.datetime.fromisoformat(
            hold["expiresAt"].replace("Z", "+00:00")).timestamp()

    def end(self, hold, how, kind, by, order=None):
        """Ends `hold` now (the clock): its ending event, rows and inventory events."""
        self.holds[hold["id"]]["ended"] = {"how": how, "at": stamp(self.clock + 0.001)}
        if order is not None:
            self.holds[hold["id"]]["ended"]["orderId"] = order
        event = self.event(f"hold.{how}", copy.deepcopy(self.holds[hold["id"]]), by=by)
        for line in hold["lines"]:
            pet, units = line["petId"], line["quantity"]
            if kind == "hold_committed":
                self.move(pet, kind, units, 0, units, order, line["lineNo"], held=-units,
                          hold=hold["id"])
            else:
                self.stock[pet] += units
                self.move(pet, kind, units, units, 0, held=-units, hold=hold["id"])
            self.inventory(pet, by)
        return event

    def release(self, hold, answers=((204, None),), commit=True, at=None):
        """A release (`at`: when its first attempt is sent, by default the clock's next)."""
        op = self.op("release_hold", holdId=hold["id"], expiresAt=hold["expiresAt"],
                     fate="release")
        self.clock = at - 0.1 if at is not None else self.clock
        if commit:
            self.end(hold, "released", "hold_released", self.key("release_hold"))
        for status, code in answers:
            self.call(op, "release_hold", status, None if status == 204 else {"code": code},
                      code=code, method="DELETE")

    def check_out(self, hold, answers=((201, None),), commit=True, at=None, again=False,
                  fate="checkout"):
        """A checkout of `hold`: its order (the hold's lines at today's prices) when
        `commit`; `at`: when its first attempt is sent."""
        lines = [{"petId": l["petId"], "quantity": l["quantity"]} for l in hold["lines"]]
        op = self.op("hold_checkout", holdId=hold["id"], lines=lines,
                     shipDate=ship_date_marker(self.next_op + 1), expiresAt=hold["expiresAt"],
                     idempotencyKey=f"hc{self.next_op + 1}", fate=fate, again=again)
        self.clock = at - 0.1 if at is not None else self.clock
        order = None
        if commit:
            order = self.order([(l["petId"], l["quantity"]) for l in hold["lines"]], op)
            by = self.key("hold_checkout")
            self.orders[order["id"]] = order
            self.event("order.placed", copy.deepcopy(order), by=by)
            self.end(hold, "consumed", "hold_committed", by, order=order["id"])
        for status, code in answers:
            self.call(op, "hold_checkout", status,
                      copy.deepcopy(order) if status == 201 else {"code": code}, code=code)
        return order

    def sweep(self, hold, late=0.5):
        """The sweeper ends `hold`, `late` s after its expiry: its events name the chore."""
        self.clock = self.expires(hold) + late
        first = len(self.events)
        self.end(hold, "expired", "hold_expired", None)
        for event in self.events[first:]:
            event.update(actorkind="service", actorname="holds")

    def final(self):
        final = super().final()
        final["holds"] = copy.deepcopy(list(self.holds.values()))
        final["dumped_at"] = self.clock + 10
        return final


def holding_shop():
    """A clean shop that holds: a hold released, one checked out (and once more under
    another key, refused), one abandoned and swept, one checked out after its expiry
    (refused), one refused for want of stock, one whose placing's first answer was lost (its retry
replays it), abandoned."""
    shop = HoldingShop()
    first, second = shop.pet(stock=10), shop.pet(stock=8)
    released = shop.hold([(first, 2), (second, 1)], fate="release")
    shop.release(released)
    bought = shop.hold([(second, 2)], fate="checkout")
    shop.check_out(bought)
    shop.check_out(bought, answers=((409, "hold_ended"),), commit=False, again=True)
    left = shop.hold([(first, 1)], ttl=2)
    late = shop.hold([(first, 1), (second, 1)], ttl=2, fate="late_checkout")
    shop.sweep(left, late=0.4)
    shop.check_out(late, answers=((409, "hold_expired"),), commit=False,
                   at=shop.expires(late) + 0.2, fate="late_checkout")
    shop.sweep(late, late=0.9)
    shop.hold([(first, 99)], answers=((409, "insufficient_stock"),), commit=False)
    lost = shop.hold([(second, 1)], ttl=2, answers=((None, None), (201, None)))
    shop.sweep(lost, late=0.3)
    shop.place(first, 1)
    return shop
