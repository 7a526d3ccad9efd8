//! How fresh a read must be ([`Freshness`]), and the position in the primary's history a
//! commit reached ([`Position`]), which a client carries from a write to a later read as its
//! consistency token. Names no backend: on SQLite, and on PostgreSQL without read standbys,
//! every read is served by the one database, which is never behind.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// A point in a PostgreSQL primary's write-ahead log: its timeline, and the byte position
/// (LSN) in it. A standby on the same timeline that has replayed up to `lsn` shows every
/// transaction that committed at or before it.
///
/// Written `<timeline>/<lsn in hex>` (`1/3000A28`), the form of the `Consistency-Token`
/// header. Ordered by timeline first: a promotion starts a newer timeline, whose positions
/// follow every position of the one it left.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Position {
    /// The timeline of the server that wrote it.
    pub timeline: u32,
    /// The byte position in the write-ahead log.
    pub lsn: u64,
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{:X}", self.timeline, self.lsn)
    }
}

/// A text that is not `<timeline>/<hex LSN>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a consistency token is `<timeline>/<position in hex>`, as a write's answer gave it")]
pub struct NotAPosition;

impl FromStr for Position {
    type Err = NotAPosition;

    fn from_str(text: &str) -> Result<Self, NotAPosition> {
        let (timeline, lsn) = text.split_once('/').ok_or(NotAPosition)?;
        let digits = |text: &str, radix: u32| {
            !text.is_empty() && text.len() <= 16 && text.chars().all(|c| c.is_digit(radix))
        };
        if !digits(timeline, 10) || !digits(lsn, 16) {
            return Err(NotAPosition);
        }
        Ok(Self {
            timeline: timeline.parse().map_err(|_| NotAPosition)?,
            lsn: u64::from_str_radix(lsn, 16).map_err(|_| NotAPosition)?,
        })
    }
}

/// What a read must show, and so which servers may answer it. Every kind shows a state that
/// was the database's at one moment; they differ in how recent that moment must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Freshness {
    /// Every write acknowledged before the read was queued, by any node: the default. A read
    /// standby serves it once it has replayed past the primary's position, asked once for
    /// the whole burst of reads after they were queued.
    #[default]
    Latest,
    /// Every write up to this position (a client's consistency token): a standby that has
    /// replayed past it serves it without asking the primary anything.
    Since(Position),
    /// Every write acknowledged at least this long before the read was queued: a standby
    /// serves it when it has replayed past where the primary was then.
    Within(Duration),
    /// The primary itself: reads of what only it has (the feed, which its reads stamp).
    Primary,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_position_reads_back_what_it_writes() {
        let position = Position {
            timeline: 3,
            lsn: 0x1_6B37_48D8,
        };
        assert_eq!(position.to_string(), "3/16B3748D8");
        assert_eq!("3/16B3748D8".parse(), Ok(position));
        assert_eq!("3/16b3748d8".parse(), Ok(position));
    }

    #[test]
    fn anything_else_is_not_a_position() {
        for text in [
            "", "3", "/1", "3/", "x/1", "3/g", "-1/1", "1/+1", "1/ 1", "1/1/1",
        ] {
            assert_eq!(text.parse::<Position>(), Err(NotAPosition), "{text}");
        }
        assert!("99999999999/1".parse::<Position>().is_err());
        assert!("1/11111111111111111".parse::<Position>().is_err());
    }

    #[test]
    fn a_newer_timeline_follows_every_position_of_an_older_one() {
        let old = Position {
            timeline: 1,
            lsn: u64::MAX,
        };
        let new = Position {
            timeline: 2,
            lsn: 0,
        };
        assert!(new > old);
    }
}
