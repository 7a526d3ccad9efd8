//! Who may do what: every use case checks its caller's role.

use super::{Fixture, OPERATOR, name, new_key, secret};
use crate::testkit::{Made, Must};
use crate::{
    Always, ApiKey, Caller, Category, CategoryQuery, DomainError, EventTypes, InventoryItem,
    InventoryQuery, KeyQuery, NewCategory, NewPet, NewWebhook, Order, OrderPatch, OrderQuery,
    PageSize, Permission, Pet, PetQuery, PetStatus, Role, Stock, Store, Webhook, WebhookQuery,
    WebhookSecret, WebhookUrl,
};

/// Everything the store holds, read as the operator.
#[derive(Debug, PartialEq)]
struct World {
    categories: Vec<Category>,
    pets: Vec<Pet>,
    inventory: Vec<InventoryItem>,
    orders: Vec<Order>,
    keys: Vec<ApiKey>,
    webhooks: Vec<Webhook>,
    events: usize,
}

impl World {
    fn read<S: Store>(f: &Fixture<S>) -> Self {
        let limit = PageSize::MAX_PAGE;
        let shop = &f.shop;
        Self {
            categories: shop
                .categories()
                .list(&CategoryQuery { limit, after: None })
                .must("list categories")
                .items,
            pets: shop
                .pets()
                .list(&PetQuery {
                    limit,
                    ..PetQuery::default()
                })
                .must("list pets")
                .items,
            inventory: shop
                .inventory()
                .list(&InventoryQuery {
                    limit,
                    ..InventoryQuery::default()
                })
                .must("list the inventory")
                .items,
            orders: shop
                .orders()
                .list(
                    OPERATOR,
                    &OrderQuery {
                        limit,
                        ..OrderQuery::default()
                    },
                )
                .must("list orders")
                .items,
            keys: shop
                .keys()
                .list(OPERATOR, &KeyQuery { limit, after: None })
                .must("list keys")
                .items,
            webhooks: shop
                .webhooks()
                .list(OPERATOR, &WebhookQuery { limit, after: None })
                .must("list webhooks")
                .items,
            events: f.event_count(),
        }
    }
}

fn new_webhook() -> NewWebhook {
    NewWebhook {
        url: WebhookUrl::parse("https://hooks.example.com/petstore").must("a valid URL"),
        events: EventTypes::new(vec![crate::EventType::OrderPlaced]).must("valid event types"),
    }
}

/// Asserts that each of `refusals` (what was tried, what it returned, the permission it needs)
/// was refused as `forbidden` for `role`.
fn assert_forbidden(role: Role, refusals: Vec<(&str, Result<(), DomainError>, Permission)>) {
    for (what, result, needs) in refusals {
        assert_eq!(
            result,
            Err(DomainError::Forbidden {
                role: role.as_str(),
                needs
            }),
            "a {role} key may not {what}"
        );
    }
}

/// A customer may shop, but is refused (`forbidden`) changing the catalogue or stock,
/// updating an order (even its own), managing keys and webhooks and reading events; staff may
/// change the catalogue, stock and orders and read events, but not manage keys or webhooks.
/// A refused call changes nothing and records no event.
pub fn callers_may_do_only_what_their_role_grants<S: Store>(store: S) {
    use Permission::{Administer, ManageStore};
    let f = Fixture::new(store);
    let (categories, pets, inventory) = (f.shop.categories(), f.shop.pets(), f.shop.inventory());
    let (orders, keys, webhooks, events) = (
        f.shop.orders(),
        f.shop.keys(),
        f.shop.webhooks(),
        f.shop.events(),
    );
    // The callers as the service knows them: from the keys they present.
    let caller_with = |role: Role, seed: u8| -> (ApiKey, Caller) {
        let key = keys
            .create(OPERATOR, new_key(role.as_str(), role), &secret(seed))
            .must("create a key");
        let caller = keys
            .authenticate(&secret(seed))
            .must("authenticate")
            .must("a valid key");
        assert_eq!(caller, Caller::key_holder(key.id, role));
        (key, caller)
    };
    let (admin_key, admin) = caller_with(Role::Admin, 1);
    let (clerk_key, clerk) = caller_with(Role::Staff, 2);
    let (shopper_key, shopper) = caller_with(Role::Customer, 3);
    let rex = f.pet_with_stock("Rex", 5);
    let order = f.order_as(shopper, rex.id, 1).must("a customer shops");
    let hook = webhooks
        .create(admin, new_webhook(), &WebhookSecret::from_random([9; 32]))
        .must("an admin subscribes");
    let complete = OrderPatch {
        complete: Some(true),
        ..OrderPatch::default()
    };
    let sold = || NewPet::new(name("Rex"), f.dogs).with_status(PetStatus::Sold);
    let whsec = WebhookSecret::from_random([8; 32]);

    let before = World::read(&f);
    assert_forbidden(
        Role::Customer,
        vec![
            (
                "create a category",
                categories
                    .create(shopper, NewCategory::new(name("Cats")), None)
                    .map(drop),
                ManageStore,
            ),
            (
                "replace a category",
                categories
                    .replace(shopper, f.dogs, NewCategory::new(name("Hounds")), Always)
                    .map(drop),
                ManageStore,
            ),
            (
                "delete a category",
                categories.delete(shopper, f.dogs, Always),
                ManageStore,
            ),
            (
                "create a pet",
                pets.create(shopper, NewPet::new(name("Fido"), f.dogs), None)
                    .map(drop),
                ManageStore,
            ),
            (
                "replace a pet",
                pets.replace(shopper, rex.id, sold(), Always).map(drop),
                ManageStore,
            ),
            (
                "delete a pet",
                pets.delete(shopper, rex.id, Always),
                ManageStore,
            ),
            (
                "set stock",
                inventory
                    .set_stock(shopper, rex.id, Stock::ZERO, Always)
                    .map(drop),
                ManageStore,
            ),
            (
                "update its own order",
                orders
                    .update(shopper, order.id, complete.clone(), Always)
                    .map(drop),
                ManageStore,
            ),
            (
                "create a key",
                keys.create(shopper, new_key("Mine", Role::Admin), &secret(4))
                    .map(drop),
                Administer,
            ),
            (
                "read its own key",
                keys.get(shopper, shopper_key.id).map(drop),
                Administer,
            ),
            (
                "list keys",
                keys.list(shopper, &KeyQuery::default()).map(drop),
                Administer,
            ),
            (
                "revoke a key",
                keys.revoke(shopper, admin_key.id, Always),
                Administer,
            ),
            (
                "revoke its own key",
                keys.revoke(shopper, shopper_key.id, Always),
                Administer,
            ),
            (
                "subscribe a webhook",
                webhooks.create(shopper, new_webhook(), &whsec).map(drop),
                Administer,
            ),
            (
                "read a webhook",
                webhooks.get(shopper, hook.id).map(drop),
                Administer,
            ),
            (
                "list webhooks",
                webhooks.list(shopper, &WebhookQuery::default()).map(drop),
                Administer,
            ),
            (
                "list deliveries",
                webhooks
                    .deliveries(shopper, hook.id, &crate::DeliveryQuery::default())
                    .map(drop),
                Administer,
            ),
            (
                "delete a webhook",
                webhooks.delete(shopper, hook.id, Always),
                Administer,
            ),
            (
                "read the latest event id",
                events.last_id(shopper).map(drop),
                ManageStore,
            ),
            (
                "read events",
                events.after(shopper, None, PageSize::DEFAULT).map(drop),
                ManageStore,
            ),
        ],
    );
    let after = World::read(&f);
    assert_eq!(after.events, before.events, "a refusal records no event");
    assert_eq!(after, before, "a refusal changes nothing");
    assert_eq!(
        orders
            .get(shopper, order.id)
            .must("a customer reads its order"),
        order,
        "but it may shop"
    );

    let before = World::read(&f);
    assert_forbidden(
        Role::Staff,
        vec![
            (
                "create a key",
                keys.create(clerk, new_key("Mine", Role::Admin), &secret(5))
                    .map(drop),
                Administer,
            ),
            (
                "read a key",
                keys.get(clerk, shopper_key.id).map(drop),
                Administer,
            ),
            (
                "list keys",
                keys.list(clerk, &KeyQuery::default()).map(drop),
                Administer,
            ),
            (
                "revoke a key",
                keys.revoke(clerk, shopper_key.id, Always),
                Administer,
            ),
            (
                "subscribe a webhook",
                webhooks.create(clerk, new_webhook(), &whsec).map(drop),
                Administer,
            ),
            (
                "list webhooks",
                webhooks.list(clerk, &WebhookQuery::default()).map(drop),
                Administer,
            ),
        ],
    );
    let after = World::read(&f);
    assert_eq!(after.events, before.events, "a refusal records no event");
    assert_eq!(after, before, "a refusal changes nothing");

    // Staff run the store.
    let cats = categories
        .create(clerk, NewCategory::new(name("Cats")), None)
        .made("staff create a category");
    categories
        .replace(clerk, cats.id, NewCategory::new(name("Big cats")), Always)
        .must("staff rename a category");
    categories
        .delete(clerk, cats.id, Always)
        .must("staff delete a category");
    let fido = pets
        .create(clerk, NewPet::new(name("Fido"), f.dogs), None)
        .made("staff create a pet");
    inventory
        .set_stock(clerk, fido.id, Stock::from_level(2), Always)
        .must("staff set stock");
    pets.replace(clerk, rex.id, sold(), Always)
        .must("staff set a status");
    let done = orders
        .update(clerk, order.id, complete, Always)
        .must("staff complete an order");
    assert!(done.complete);
    let feed = events
        .after(clerk, None, PageSize::MAX_PAGE)
        .must("staff read events");
    assert_eq!(feed.len(), f.event_count());
    assert_eq!(
        events.last_id(clerk).must("staff read the latest id"),
        feed.last().map(|e| e.id)
    );
    assert_eq!(
        keys.get(admin, clerk_key.id).must("an admin reads keys"),
        clerk_key,
        "admins manage keys"
    );
}
