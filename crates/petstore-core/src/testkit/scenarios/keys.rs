//! API keys: authentication, revocation and the bootstrap admin keys.

use super::{Fixture, OPERATOR, code, new_key, secret, start_time};
use crate::testkit::Must;
use crate::{Always, Bootstrap, Bootstrapped, Caller, KeyId, KeyQuery, KeySecret, Role, Store};

/// A key authenticates as its role until revoked; a wrong secret with the same prefix, and a
/// revoked key, authenticate nothing; secrets are stored only as hashes; a key cannot revoke
/// itself.
pub fn keys_authenticate_until_revoked<S: Store>(store: S) {
    let f = Fixture::new(store);
    let keys = f.shop.keys();
    let alice_secret = secret(1);
    let alice = keys
        .create(OPERATOR, new_key("Alice", Role::Customer), &alice_secret)
        .must("create a key");
    assert_eq!(
        (alice.role, alice.prefix.as_str(), alice.revoked_at),
        (Role::Customer, alice_secret.prefix(), None)
    );
    assert_eq!(alice.created_at, start_time());
    assert_eq!(
        keys.authenticate(&alice_secret).must("authenticate"),
        Some(Caller::key_holder(alice.id, Role::Customer))
    );
    // Same prefix, different secret: not Alice.
    let mut forged = alice_secret.reveal().to_owned();
    forged.pop();
    forged.push('x');
    let forged = KeySecret::parse(&forged).must("a well-formed secret");
    assert_eq!(keys.authenticate(&forged).must("authenticate"), None);
    assert_eq!(keys.authenticate(&secret(9)).must("authenticate"), None);

    let stored = f
        .shop
        .store()
        .read(|s| s.keys_with_prefix(alice_secret.prefix()))
        .must("read keys");
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].hash, alice_secret.hash(), "only the hash is kept");

    // Even with the admin's role, the key is refused its own revocation.
    assert_eq!(
        code(keys.revoke(Caller::key_holder(alice.id, Role::Admin), alice.id, Always)),
        "invalid_transition",
        "a key cannot revoke itself"
    );
    assert!(
        keys.authenticate(&alice_secret)
            .must("authenticate")
            .is_some()
    );
    keys.revoke(OPERATOR, alice.id, Always).must("revoke");
    keys.revoke(OPERATOR, alice.id, Always)
        .must("revoking again changes nothing");
    assert_eq!(keys.authenticate(&alice_secret).must("authenticate"), None);
    let listed = keys.list(OPERATOR, &KeyQuery::default()).must("list keys");
    assert_eq!(listed.items.len(), 1);
    assert_eq!(
        listed.items[0].revoked_at,
        Some(start_time()),
        "a revoked key stays listed"
    );
    assert_eq!(
        code(keys.revoke(OPERATOR, KeyId::new(99).must("id"), Always)),
        "not_found"
    );
}

/// The bootstrap admin key is created only while no admin key is active, and the first
/// admin key only while there is no key at all; a secret that is a key already, revoked
/// or not, is never made again.
pub fn admin_keys_are_bootstrapped_once<S: Store>(store: S) {
    use Bootstrap::{OnFirstStart, WhileNoAdminIsActive};
    let made = |outcome: Bootstrapped| match outcome {
        Bootstrapped::Made(key) => key,
        other => panic!("no key made: {other:?}"),
    };
    let f = Fixture::new(store);
    let keys = f.shop.keys();
    let first = made(keys.bootstrap(&secret(1), OnFirstStart).must("first start"));
    assert_eq!(first.role, Role::Admin);
    assert_eq!(
        keys.bootstrap(&secret(2), OnFirstStart)
            .must("second start"),
        Bootstrapped::NotNeeded
    );
    assert_eq!(
        keys.bootstrap(&secret(3), WhileNoAdminIsActive)
            .must("bootstrap"),
        Bootstrapped::NotNeeded,
        "an admin is active"
    );

    keys.revoke(OPERATOR, first.id, Always)
        .must("revoke the only admin");
    let staff = keys
        .create(OPERATOR, new_key("Clerk", Role::Staff), &secret(4))
        .must("create staff");
    assert_eq!(
        keys.bootstrap(&secret(5), OnFirstStart).must("a start"),
        Bootstrapped::NotNeeded,
        "keys exist"
    );
    // No admin is active; the revoked admin's secret and the clerk's stay what they are.
    let revoked = keys
        .bootstrap(&secret(1), WhileNoAdminIsActive)
        .must("a stale bootstrap secret");
    assert!(
        matches!(&revoked, Bootstrapped::AlreadyAKey(key) if key.id == first.id && key.revoked_at.is_some()),
        "{revoked:?}"
    );
    assert_eq!(keys.authenticate(&secret(1)).must("authenticate"), None);
    assert!(matches!(
        keys.bootstrap(&secret(4), WhileNoAdminIsActive).must("the clerk's secret"),
        Bootstrapped::AlreadyAKey(key) if key.id == staff.id
    ));
    let bootstrap = made(
        keys.bootstrap(&secret(6), WhileNoAdminIsActive)
            .must("bootstrap"),
    );
    assert_eq!(bootstrap.role, Role::Admin);
    assert!(bootstrap.id > staff.id);
    assert_eq!(
        keys.authenticate(&secret(6))
            .must("authenticate")
            .map(Caller::role),
        Some(Role::Admin)
    );
}

/// Revocations are counted, and the count only grows: revoking a revoked key counts nothing.
pub fn revocations_are_counted<S: Store>(store: S) {
    let f = Fixture::new(store);
    let keys = f.shop.keys();
    assert_eq!(keys.revocations().must("count"), 0);
    let alice = keys
        .create(OPERATOR, new_key("Alice", Role::Staff), &secret(1))
        .must("create");
    let bob = keys
        .create(OPERATOR, new_key("Bob", Role::Customer), &secret(2))
        .must("create");
    keys.revoke(OPERATOR, alice.id, Always).must("revoke");
    assert_eq!(keys.revocations().must("count"), 1);
    keys.revoke(OPERATOR, alice.id, Always).must("revoke again");
    assert_eq!(keys.revocations().must("count"), 1, "already revoked");
    keys.revoke(OPERATOR, bob.id, Always).must("revoke");
    assert_eq!(keys.revocations().must("count"), 2);
}
