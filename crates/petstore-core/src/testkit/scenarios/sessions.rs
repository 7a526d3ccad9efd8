//! Staff sessions: who may open one, and everything that ends one.

use chrono::TimeDelta;

use super::{Fixture, OPERATOR, code, new_key, secret};
use crate::testkit::Must;
use crate::{Always, Caller, Role, SessionLifetime, SessionToken, Store};

fn token(seed: u8) -> SessionToken {
    SessionToken::from_random([seed; 32])
}

fn lifetime() -> SessionLifetime {
    SessionLifetime {
        idle: TimeDelta::minutes(20),
        absolute: TimeDelta::hours(1),
    }
}

/// Staff and admin keys open sessions that act as their key; a customer key, an unknown key
/// and a revoked key open none; signing out ends a session and no other.
pub fn staff_and_admins_open_sessions_customers_do_not<S: Store>(store: S) {
    let f = Fixture::new(store);
    let (keys, sessions, life) = (f.shop.keys(), f.shop.sessions(), lifetime());
    let staff = keys
        .create(OPERATOR, new_key("Sam", Role::Staff), &secret(1))
        .must("create a staff key");
    let admin = keys
        .create(OPERATOR, new_key("Ada", Role::Admin), &secret(2))
        .must("create an admin key");
    let customer = keys
        .create(OPERATOR, new_key("Cy", Role::Customer), &secret(3))
        .must("create a customer key");

    assert_eq!(
        sessions.open(&secret(1), &token(1), &life).must("open"),
        Some(Caller::key_holder(staff.id, Role::Staff))
    );
    assert_eq!(
        sessions.open(&secret(2), &token(2), &life).must("open"),
        Some(Caller::key_holder(admin.id, Role::Admin))
    );
    assert_eq!(
        code(sessions.open(&secret(3), &token(3), &life)),
        "forbidden",
        "a customer key cannot sign in"
    );
    assert_eq!(sessions.resume(&token(3), &life).must("resume"), None);
    assert_eq!(
        sessions.open(&secret(9), &token(9), &life).must("open"),
        None,
        "an unknown key opens nothing"
    );
    keys.revoke(OPERATOR, customer.id, Always).must("revoke");

    let resumed = sessions
        .resume(&token(1), &life)
        .must("resume")
        .must("open");
    assert_eq!(resumed.caller, Caller::key_holder(staff.id, Role::Staff));
    assert!(!resumed.touch_due, "just opened");
    let stored = f
        .shop
        .store()
        .read(|s| s.staff_session(&token(1).hash()))
        .must("read")
        .must("stored");
    assert_eq!(stored.key, staff.id, "stored under the token's hash");

    sessions.close(&token(1)).must("sign out");
    sessions
        .close(&token(1))
        .must("signing out again changes nothing");
    assert_eq!(sessions.resume(&token(1), &life).must("resume"), None);
    assert!(
        sessions.resume(&token(2), &life).must("resume").is_some(),
        "another session goes on"
    );

    keys.revoke(OPERATOR, staff.id, Always).must("revoke");
    assert_eq!(
        sessions.open(&secret(1), &token(4), &life).must("open"),
        None,
        "a revoked key opens nothing"
    );
}

/// A session ends after its idle time without use and after its absolute lifetime whatever
/// its use; a use is recorded only once it is due; revoking the key ends its sessions.
pub fn sessions_end_when_idle_when_old_and_when_their_key_is_revoked<S: Store>(store: S) {
    let f = Fixture::new(store);
    let (keys, sessions, life) = (f.shop.keys(), f.shop.sessions(), lifetime());
    let staff = keys
        .create(OPERATOR, new_key("Sam", Role::Staff), &secret(1))
        .must("create a staff key");
    sessions
        .open(&secret(1), &token(1), &life)
        .must("open")
        .must("opened");
    sessions
        .open(&secret(1), &token(2), &life)
        .must("open")
        .must("opened");

    // Used every 15 minutes (under the idle 20), it lasts until the absolute hour.
    for _ in 0..3 {
        f.clock.advance(TimeDelta::minutes(15));
        let resumed = sessions
            .resume(&token(1), &life)
            .must("resume")
            .must("open");
        assert!(resumed.touch_due, "a use 15 minutes later is recorded");
        sessions.touch(&token(1)).must("touch");
        assert!(
            !sessions
                .resume(&token(1), &life)
                .must("resume")
                .must("open")
                .touch_due,
            "and then not again at once"
        );
    }
    assert_eq!(
        sessions.resume(&token(2), &life).must("resume"),
        None,
        "left idle for 45 minutes, the other ended"
    );
    f.clock.advance(TimeDelta::minutes(15));
    assert_eq!(
        sessions.resume(&token(1), &life).must("resume"),
        None,
        "an hour old, it ended however used"
    );

    // An ended session is forgotten when the next one opens.
    sessions
        .open(&secret(1), &token(3), &life)
        .must("open")
        .must("opened");
    let forgotten = f
        .shop
        .store()
        .read(|s| s.staff_session(&token(1).hash()))
        .must("read");
    assert_eq!(forgotten, None);

    keys.revoke(OPERATOR, staff.id, Always).must("revoke");
    assert_eq!(sessions.resume(&token(3), &life).must("resume"), None);
    let forgotten = f
        .shop
        .store()
        .read(|s| s.staff_session(&token(3).hash()))
        .must("read");
    assert_eq!(forgotten, None, "revoking the key forgot its sessions");
}
