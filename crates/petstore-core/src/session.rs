//! Staff sessions: a browser's sign-in with an API key, exchanged for a session that every
//! node can check (the staff console, `docs/console.md`).
//!
//! A session stands for the key it was opened with, so it may do exactly what that key may,
//! and it ends when the key is revoked. Its token is generated outside this crate, like a
//! key's secret, and only the token's hash is stored: a copy of the database opens no
//! session. The token's form token ([`SessionToken::form_token`]) is what every form of the
//! session must carry, so a page of another site, which cannot read it, cannot post as the
//! session.

use std::fmt;

use chrono::{DateTime, TimeDelta, Utc};
use sha2::{Digest, Sha256};

use crate::access::hashes_match;
use crate::ids::KeyId;
use crate::validation::ValidationError;

/// A session's token, as a browser holds it (in a cookie) or as just generated. Only its hash
/// is stored.
#[derive(Clone, PartialEq, Eq)]
pub struct SessionToken(String);

impl fmt::Debug for SessionToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A token never reaches a log through `{:?}`.
        f.write_str("SessionToken(…)")
    }
}

impl SessionToken {
    /// A new token from 32 random bytes (from the OS's generator): `pss_` and 64 hex digits.
    pub fn from_random(bytes: [u8; 32]) -> Self {
        Self(format!("pss_{}", hex(&bytes)))
    }

    /// Checks a presented token's form: exactly what [`Self::from_random`] makes.
    pub fn parse(text: &str) -> Result<Self, ValidationError> {
        let digits = text.strip_prefix("pss_").unwrap_or_default();
        if digits.len() == 64
            && digits
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        {
            Ok(Self(text.to_owned()))
        } else {
            Err(ValidationError::new(
                "session",
                "must be pss_ and 64 lower-case hex digits",
            ))
        }
    }

    /// The token, to hand to the browser once.
    pub fn reveal(&self) -> &str {
        &self.0
    }

    /// The SHA-256 hash that is stored instead of the token.
    pub fn hash(&self) -> [u8; 32] {
        Sha256::digest(self.0.as_bytes()).into()
    }

    /// The token every form of this session carries: derived from the session's token (so
    /// nothing more is stored) and not the token itself (so a page that shows it gives no
    /// way into the session).
    pub fn form_token(&self) -> String {
        let mut hasher = Sha256::new();
        hasher.update(b"petstore form token\0");
        hasher.update(self.0.as_bytes());
        hex(&hasher.finalize())
    }

    /// Whether `presented` is this session's form token, compared in constant time.
    pub fn accepts_form_token(&self, presented: &str) -> bool {
        let expected = self.form_token();
        expected.len() == presented.len() && {
            let a: [u8; 32] = Sha256::digest(expected.as_bytes()).into();
            let b: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
            hashes_match(&a, &b)
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::with_capacity(64), |mut text, b| {
        let _ = write!(text, "{b:02x}");
        text
    })
}

/// A session as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StaffSession {
    /// The key it was opened with: what it may do, and what ends it when revoked.
    pub key: KeyId,
    /// When it was opened.
    pub started_at: DateTime<Utc>,
    /// When it was last used, to within [`SessionLifetime::touch_after`].
    pub seen_at: DateTime<Utc>,
}

/// How long a session lasts: the operator's choice (`--console-idle-secs`,
/// `--console-max-age-secs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLifetime {
    /// A session not used for this long has ended.
    pub idle: TimeDelta,
    /// A session this old has ended, used or not.
    pub absolute: TimeDelta,
}

impl Default for SessionLifetime {
    /// 30 minutes idle, 12 hours in all: a working day's shift signs in about once.
    fn default() -> Self {
        Self {
            idle: TimeDelta::minutes(30),
            absolute: TimeDelta::hours(12),
        }
    }
}

impl SessionLifetime {
    /// How stale [`StaffSession::seen_at`] may grow before a use records a new one: a
    /// twentieth of the idle time, at most a minute. Recording every use would make every
    /// page a write; this makes a session end up to that much early, never late.
    pub fn touch_after(&self) -> TimeDelta {
        (self.idle / 20).min(TimeDelta::minutes(1))
    }

    /// Whether `session` is still open at `now`.
    pub fn is_open(&self, session: &StaffSession, now: DateTime<Utc>) -> bool {
        now < session.seen_at + self.idle && now < session.started_at + self.absolute
    }
}

#[cfg(test)]
mod tests {
    use chrono::DateTime;
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn only_generated_tokens_parse_and_form_tokens_are_checked() {
        let token = SessionToken::from_random([7; 32]);
        assert_eq!(SessionToken::parse(token.reveal()).unwrap(), token);
        for bad in [
            "pss_",
            "pst_0707070707070707070707070707070707070707070707070707070707070707",
            "pss_070707070707070707070707070707070707070707070707070707070707070",
            "pss_0707070707070707070707070707070707070707070707070707070707070707 ",
            "pss_070707070707070707070707070707070707070707070707070707070707070G",
            "pss_0707070707070707070707070707070707070707070707070707070707070A07",
        ] {
            assert!(SessionToken::parse(bad).is_err(), "{bad}");
        }
        let form = token.form_token();
        assert_eq!(form.len(), 64);
        assert_ne!(
            form,
            token.reveal()[4..],
            "the form token is not the session's"
        );
        assert!(token.accepts_form_token(&form));
        let other = SessionToken::from_random([8; 32]);
        assert!(!other.accepts_form_token(&form));
        assert!(!token.accepts_form_token(&form[..63]));
        assert!(!token.accepts_form_token(""));
        assert_eq!(format!("{token:?}"), "SessionToken(…)");
    }

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + seconds, 0).unwrap()
    }

    proptest! {
        /// A session is open exactly while both of its bounds are ahead, and a use is
        /// recorded often enough that a session in steady use never ends by idling.
        #[test]
        fn open_exactly_within_both_bounds(
            idle in 1i64..100_000,
            absolute in 1i64..1_000_000,
            started in 0i64..1_000_000,
            seen_after in 0i64..1_000_000,
            now_after in 0i64..2_000_000,
        ) {
            let lifetime = SessionLifetime {
                idle: TimeDelta::seconds(idle),
                absolute: TimeDelta::seconds(absolute),
            };
            let session = StaffSession {
                key: KeyId::new(1).unwrap(),
                started_at: at(started),
                seen_at: at(started + seen_after),
            };
            let now = at(started + seen_after + now_after);
            prop_assert_eq!(
                lifetime.is_open(&session, now),
                now_after < idle && seen_after + now_after < absolute
            );
            prop_assert!(lifetime.touch_after() < lifetime.idle);
            prop_assert!(lifetime.touch_after() <= TimeDelta::minutes(1));
        }
    }
}
