//! Everything one write transaction knows of idempotency records, in one place
//! ([`KeyRecords`]): what a burst looked up for the keys its jobs named
//! (`postgres/fetch.rs`), which keys were found with a stored record, and the records the
//! transaction made and holds back until its commit (`postgres/held_back.rs`).
//!
//! A key found with a stored record (expired, or the create replayed it) is recorded again
//! over that record; a key found with none is inserted, which the record's primary key
//! refuses if another transaction recorded the key meanwhile. Both backends ask
//! [`replaces`](KeyRecords::replaces) which of the two a new record is.

use petstore_core::{IdempotencyRecord, OwnerId};

/// The idempotency keys one write transaction has met, each with what is known of it.
#[derive(Debug, Default)]
pub(crate) struct KeyRecords {
    /// Few per transaction (one per create at most), so a list, searched in order.
    keys: Vec<(i64, String, Known)>,
}

/// What a transaction knows of one key.
#[derive(Debug)]
enum Known {
    /// Looked up with the burst's rows and not yet served: its stored record, or none.
    LookedUp(Option<IdempotencyRecord>),
    /// Served to a create: whether a record was stored.
    Stored { found: bool },
    /// Recorded by this transaction and not yet sent, over a record found or as the key's
    /// first.
    Held {
        record: IdempotencyRecord,
        replacing: bool,
    },
}

/// A record the transaction made, as it is sent: over a record found (`replacing`), or as
/// the key's first.
#[derive(Debug)]
pub(crate) struct HeldRecord {
    pub(crate) owner: i64,
    pub(crate) key: String,
    pub(crate) record: IdempotencyRecord,
    pub(crate) replacing: bool,
}

impl KeyRecords {
    /// What one lookup found of the keys `asked` (owner, key): each record in `found`, the
    /// other keys known to have none.
    pub(crate) fn looked_up(
        asked: Vec<(i64, String)>,
        found: Vec<(i64, String, IdempotencyRecord)>,
    ) -> Self {
        let mut keys: Vec<_> = asked
            .into_iter()
            .map(|(owner, key)| (owner, key, Known::LookedUp(None)))
            .collect();
        for (owner, key, record) in found {
            if let Some(slot) = slot(&mut keys, owner, &key) {
                *slot = Known::LookedUp(Some(record));
            }
        }
        Self { keys }
    }

    /// What is known of `owner`'s key `key` without a statement: the record this
    /// transaction holds back for it (a later create with that key replays it), or what the
    /// lookup found, served once. `None`: the table must be read
    /// ([`note_stored`](Self::note_stored) then).
    pub(crate) fn known(&mut self, owner: OwnerId, key: &str) -> Option<Option<IdempotencyRecord>> {
        let known = slot(&mut self.keys, owner.get(), key)?;
        match known {
            Known::Held { record, .. } => Some(Some(record.clone())),
            Known::LookedUp(found) => {
                let found = found.take();
                *known = Known::Stored {
                    found: found.is_some(),
                };
                Some(found)
            }
            Known::Stored { .. } => None,
        }
    }

    /// Notes what a read of the table found of `owner`'s key `key`, and gives it back.
    pub(crate) fn note_stored(
        &mut self,
        owner: OwnerId,
        key: &str,
        found: Option<IdempotencyRecord>,
    ) -> Option<IdempotencyRecord> {
        let stored = found.is_some();
        match slot(&mut self.keys, owner.get(), key) {
            Some(Known::Stored { found }) => *found |= stored,
            Some(Known::Held { .. }) => {}
            Some(known @ Known::LookedUp(_)) => *known = Known::Stored { found: stored },
            None => self
                .keys
                .push((owner.get(), key.to_owned(), Known::Stored { found: stored })),
        }
        found
    }

    /// Whether a new record of `owner`'s key `key` is written over a stored one the
    /// transaction found, rather than inserted as the key's first.
    pub(crate) fn replaces(&self, owner: OwnerId, key: &str) -> bool {
        self.keys.iter().any(|(o, k, known)| {
            *o == owner.get()
                && k == key
                && matches!(
                    known,
                    Known::Stored { found: true }
                        | Known::Held {
                            replacing: true,
                            ..
                        }
                )
        })
    }

    /// Holds back `record` of `owner`'s key `key` until the transaction sends its writes.
    pub(crate) fn hold(&mut self, owner: OwnerId, key: &str, record: IdempotencyRecord) {
        let replacing = self.replaces(owner, key);
        let held = Known::Held { record, replacing };
        match slot(&mut self.keys, owner.get(), key) {
            Some(known) => *known = held,
            None => self.keys.push((owner.get(), key.to_owned(), held)),
        }
    }

    /// The records held back, in the order first met, for sending: once sent, each key's
    /// record is stored.
    pub(crate) fn take_held(&mut self) -> Vec<HeldRecord> {
        let mut held = Vec::new();
        for (owner, key, known) in &mut self.keys {
            if matches!(known, Known::Held { .. }) {
                let Known::Held { record, replacing } =
                    std::mem::replace(known, Known::Stored { found: true })
                else {
                    continue;
                };
                held.push(HeldRecord {
                    owner: *owner,
                    key: key.clone(),
                    record,
                    replacing,
                });
            }
        }
        held
    }
}

fn slot<'k>(keys: &'k mut [(i64, String, Known)], owner: i64, key: &str) -> Option<&'k mut Known> {
    keys.iter_mut()
        .find(|(o, k, _)| *o == owner && k == key)
        .map(|(_, _, known)| known)
}

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Utc};

    use super::*;

    fn record(byte: u8) -> IdempotencyRecord {
        IdempotencyRecord {
            fingerprint: [byte; 32],
            response: vec![byte],
            recorded_at: Utc.timestamp_opt(1_700_000_000, 0).single().unwrap(),
        }
    }

    fn owner(id: i64) -> OwnerId {
        OwnerId::new(id).unwrap()
    }

    #[test]
    fn a_looked_up_record_is_served_once_then_the_table_is_read() {
        let mut keys = KeyRecords::looked_up(
            vec![(1, "a".into()), (1, "b".into())],
            vec![(1, "a".into(), record(7))],
        );
        assert_eq!(keys.known(owner(1), "a"), Some(Some(record(7))));
        assert_eq!(keys.known(owner(1), "a"), None);
        assert_eq!(keys.known(owner(1), "b"), Some(None));
        assert!(keys.replaces(owner(1), "a"));
        assert!(!keys.replaces(owner(1), "b"));
        assert_eq!(keys.known(owner(2), "a"), None, "another owner's key");
    }

    #[test]
    fn a_record_found_in_the_table_is_replaced_and_a_new_key_inserted() {
        let mut keys = KeyRecords::default();
        assert_eq!(
            keys.note_stored(owner(1), "old", Some(record(1))),
            Some(record(1))
        );
        assert_eq!(keys.note_stored(owner(1), "new", None), None);
        keys.hold(owner(1), "old", record(2));
        keys.hold(owner(1), "new", record(3));
        assert_eq!(
            keys.known(owner(1), "new"),
            Some(Some(record(3))),
            "replayed"
        );
        let held = keys.take_held();
        let sent: Vec<_> = held.iter().map(|h| (h.key.as_str(), h.replacing)).collect();
        assert_eq!(sent, [("old", true), ("new", false)]);
        assert!(keys.take_held().is_empty(), "sent once");
        assert_eq!(
            keys.known(owner(1), "new"),
            None,
            "stored now: the table answers"
        );
    }
}
