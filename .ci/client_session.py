"""A scripted session through the Python client generated from the OpenAPI document.

Run by .ci/client-session with the service's base URL and a staff, a customer and a second
customer key. Every call goes through the generated code: if the document and the service
disagree (a path, a parameter, a shape, a status), this fails.
"""

import sys
import urllib.parse

from petstore_api_client import AuthenticatedClient
from petstore_api_client.api.categories import create_category
from petstore_api_client.api.events import list_events
from petstore_api_client.api.inventory import update_inventory
from petstore_api_client.api.meta import get_api_info
from petstore_api_client.api.pets import create_pet, list_pets, set_pet_price
from petstore_api_client.api.store import cancel_order, checkout, get_order, place_order
from petstore_api_client.models import (
    Category,
    Error,
    InventoryItem,
    InventoryUpdate,
    NewCategory,
    NewCheckout,
    NewLine,
    NewOrder,
    NewPet,
    NewPrice,
    Order,
    Pet,
    PetPrice,
)

base, staff_key, customer_key, other_key = sys.argv[1:5]


def client(key):
    return AuthenticatedClient(base_url=base + "/v1", token=key, raise_on_unexpected_status=True)


staff, customer, other = client(staff_key), client(customer_key), client(other_key)


def expect_error(response, status, code):
    assert response.status_code == status, (response.status_code, response.content)
    assert isinstance(response.parsed, Error), response.parsed
    assert response.parsed.code.value == code, response.parsed
    assert response.parsed.status == status


# The catalogue and the stock, as staff.
category = create_category.sync(client=staff, body=NewCategory(name="Generated client"))
assert isinstance(category, Category), category
pets = [
    create_pet.sync(client=staff, body=NewPet(name=f"Client pet {i}", category_id=category.id))
    for i in range(5)
]
assert all(isinstance(pet, Pet) for pet in pets), pets
stock = update_inventory.sync(pets[0].id, client=staff, body=InventoryUpdate(quantity=3))
assert isinstance(stock, InventoryItem) and stock.quantity == 3, stock
info = get_api_info.sync(client=staff)
assert (info.currency, info.currency_exponent) == ("EUR", 2), info
price = set_pet_price.sync(pets[0].id, client=staff, body=NewPrice(amount=1250))
assert isinstance(price, PetPrice) and (price.amount, price.currency) == (1250, "EUR"), price

# An order as a customer, and its replay with the same Idempotency-Key.
order = NewOrder(pet_id=pets[0].id, quantity=2)
first = place_order.sync_detailed(client=customer, body=order, idempotency_key="client-session-1")
assert first.status_code == 201 and isinstance(first.parsed, Order), first
replay = place_order.sync_detailed(client=customer, body=order, idempotency_key="client-session-1")
assert replay.status_code == 201 and replay.parsed.id == first.parsed.id, replay
placed = get_order.sync(first.parsed.id, client=customer)
assert isinstance(placed, Order) and placed.quantity == 2, placed
# The order keeps its pet's price: one line of 2 × 1250, in the shop's currency.
line = placed.lines[0]
assert (line.unit_amount, line.amount, placed.total_amount, placed.currency) == (
    1250, 2500, 2500, "EUR"), placed

# A checkout of two lines: one order, each line at its pet's price, with the total the basket
# showed; the same basket with a stale total is refused and places nothing.
update_inventory.sync(pets[1].id, client=staff, body=InventoryUpdate(quantity=4))
set_pet_price.sync(pets[1].id, client=staff, body=NewPrice(amount=300))
basket = [NewLine(pet_id=pets[0].id, quantity=1), NewLine(pet_id=pets[1].id, quantity=2)]
stale = checkout.sync_detailed(client=customer, body=NewCheckout(lines=basket, expected_total=1849))
expect_error(stale, 409, "total_mismatch")
bought = checkout.sync_detailed(
    client=customer, body=NewCheckout(lines=basket, expected_total=1850),
    idempotency_key="client-session-basket")
assert bought.status_code == 201 and isinstance(bought.parsed, Order), bought
lines = [(line.line_no, line.pet_id, line.quantity, line.unit_amount, line.amount)
         for line in bought.parsed.lines]
assert lines == [(1, pets[0].id, 1, 1250, 1250), (2, pets[1].id, 2, 300, 600)], lines
assert (bought.parsed.total_amount, bought.parsed.currency) == (1850, "EUR"), bought.parsed
assert cancel_order.sync_detailed(bought.parsed.id, client=customer).status_code == 204

# Every pet of the category, two per page, following the Link header.
seen, cursor = [], None
while True:
    kwargs = {"cursor": cursor} if cursor else {}
    page = list_pets.sync_detailed(client=staff, limit=2, category_id=category.id, **kwargs)
    assert page.status_code == 200 and len(page.parsed) <= 2, page
    seen += [pet.id for pet in page.parsed]
    link = page.headers.get("link")
    if not link:
        break
    target = link.split(";")[0].strip("<> ")
    cursor = urllib.parse.parse_qs(urllib.parse.urlsplit(target).query)["cursor"][0]
assert seen == [pet.id for pet in pets], seen

# Typed errors: 409, 403, 404.
expect_error(
    place_order.sync_detailed(client=customer, body=NewOrder(pet_id=pets[0].id, quantity=5)),
    409,
    "insufficient_stock",
)
expect_error(create_category.sync_detailed(client=customer, body=NewCategory(name="No")), 403, "forbidden")
expect_error(get_order.sync_detailed(first.parsed.id, client=other), 404, "not_found")

# Cancel it; then it is gone.
cancelled = cancel_order.sync_detailed(first.parsed.id, client=customer)
assert cancelled.status_code == 204, cancelled
expect_error(get_order.sync_detailed(first.parsed.id, client=customer), 404, "not_found")

# The feed decodes each event as the type its `type` names.
events = list_events.sync(client=staff, limit=100)
assert len(events) >= 9, events
for event in events:
    words = event.type_.value.replace(".", "_").split("_")
    expected = "".join(word.capitalize() for word in words) + "Event"
    assert type(event).__name__ == expected, (event.type_, type(event).__name__)
print(f"client session: ok ({len(events)} events, each decoded as its own type)")
