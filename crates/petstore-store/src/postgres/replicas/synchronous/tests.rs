use super::*;

fn at(timeline: u32, lsn: u64) -> Position {
    Position { timeline, lsn }
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|name| (*name).to_owned()).collect()
}

#[test]
fn the_receiver_is_named_by_its_application_name_else_its_cluster_name() {
    let shown = "user=postgres passfile=/root/.pgpass channel_binding=prefer dbname=replication \
                 host=127.0.0.1 port=55501 fallback_application_name=standby-a sslmode=prefer";
    assert_eq!(receiver_name(shown), "standby-a");
    let both = "host=db application_name='node b\\'s standby' fallback_application_name=x";
    assert_eq!(receiver_name(both), "node b's standby");
    assert_eq!(receiver_name("host=db port=5432"), "walreceiver");
    assert_eq!(
        receiver_name("application_name='' fallback_application_name=c"),
        "c"
    );
}

#[test]
fn only_the_one_sync_sender_of_a_name_under_a_waiting_setting_is_waited_for() {
    let view = SyncView::new("remote_apply", names(&["a"]), names(&["b"]));
    assert!(view.waits_for("a"));
    assert!(!view.waits_for("b"), "a potential or async standby");
    assert!(
        !view.waits_for("c"),
        "a standby the primary does not stream to"
    );
    assert!(SyncView::new("on", names(&["a"]), vec![]).waits_for("a"));
    for setting in ["remote_write", "local", "off"] {
        assert!(
            !SyncView::new(setting, names(&["a"]), vec![]).waits_for("a"),
            "{setting}"
        );
    }
    assert!(
        !SyncView::new("on", names(&["a", "a"]), vec![]).waits_for("a"),
        "two senders of one name"
    );
    assert!(
        !SyncView::new("on", names(&["a"]), names(&["a"])).waits_for("a"),
        "a sender seen in both lists"
    );
}

#[test]
fn a_standby_counts_from_the_position_it_was_first_seen_synchronous() {
    let state = SyncState::default();
    let sync = SyncView::new("remote_apply", names(&["a"]), vec![]);
    state.saw(&sync, at(1, 100), Instant::now());
    assert_eq!(state.floor(), None, "no name read from the standby yet");

    state.named(Some("a".into()));
    state.saw(&sync, at(1, 200), Instant::now());
    assert_eq!(state.floor(), Some(at(1, 200)));
    state.saw(&sync, at(1, 300), Instant::now());
    assert_eq!(
        state.floor(),
        Some(at(1, 200)),
        "still synchronous: since stays"
    );

    state.saw(
        &SyncView::new("local", names(&["a"]), vec![]),
        at(1, 400),
        Instant::now(),
    );
    assert_eq!(state.floor(), None, "the setting changed");
    state.saw(&sync, at(1, 500), Instant::now());
    assert_eq!(
        state.floor(),
        Some(at(1, 500)),
        "synchronous again, from then"
    );

    state.saw(&sync, at(2, 10), Instant::now());
    assert_eq!(
        state.floor(),
        Some(at(2, 10)),
        "a new timeline starts again"
    );

    state.forget();
    assert!(!state.is_synchronous());
}

#[test]
fn a_standby_not_seen_synchronous_lately_does_not_count() {
    let state = SyncState::default();
    state.named(Some("a".into()));
    let sync = SyncView::new("on", names(&["a"]), vec![]);
    let long_ago = Instant::now()
        .checked_sub(SYNC_TRUSTED_FOR * 2)
        .unwrap_or_else(Instant::now);
    state.saw(&sync, at(1, 100), long_ago);
    assert_eq!(state.floor(), None);
    state.saw(&sync, at(1, 100), Instant::now());
    assert!(state.is_synchronous());
}
