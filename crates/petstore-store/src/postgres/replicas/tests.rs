use std::time::{Duration, Instant};

use super::*;

fn at(timeline: u32, lsn: u64) -> Position {
    Position { timeline, lsn }
}

fn replicas() -> Replicas {
    Replicas {
        standbys: Vec::new(),
        wait: Duration::from_millis(50),
        samples: Mutex::default(),
        question: SharedQuestion::default(),
        system: OnceLock::new(),
        committed: Mutex::default(),
        primary_reads: AtomicU64::new(0),
        next: AtomicUsize::new(0),
    }
}

#[test]
fn a_standby_reaches_a_position_only_on_its_timeline() {
    assert!(reaches(at(2, 100), at(2, 100)));
    assert!(reaches(at(2, 101), at(2, 100)));
    assert!(!reaches(at(2, 99), at(2, 100)));
    // Past the position on an older timeline: a history the new primary may never have had.
    assert!(!reaches(at(1, 500), at(2, 100)));
    assert!(!reaches(at(3, 500), at(2, 100)));
}

#[test]
fn a_staleness_read_needs_the_first_position_asked_within_its_bound() {
    let replicas = replicas();
    let start = Instant::now();
    for (i, lsn) in [(0u64, 10u64), (1, 20), (2, 30), (3, 40)] {
        replicas.keep(start + Duration::from_secs(i), at(1, lsn));
    }
    let queued = start + Duration::from_secs(3);
    // Writes acknowledged before 1.5 s ago (1.5 s after the start) are at or before the
    // position asked at 2 s.
    assert_eq!(
        replicas.position_since(queued, Duration::from_millis(1500)),
        Some(at(1, 30))
    );
    assert_eq!(
        replicas.position_since(queued, Duration::from_secs(1)),
        Some(at(1, 30))
    );
    // A bound older than every position kept asks for the oldest: more than it needs.
    assert_eq!(
        replicas.position_since(queued, Duration::from_secs(3600)),
        Some(at(1, 10))
    );
    // No position asked since: the read needs the primary's position now.
    let later = queued + Duration::from_millis(500);
    assert_eq!(
        replicas.position_since(later, Duration::from_millis(400)),
        None
    );
}

#[test]
fn positions_are_kept_at_most_every_spacing_and_for_a_minute() {
    let replicas = replicas();
    let start = Instant::now();
    replicas.keep(start, at(1, 1));
    replicas.keep(start + SAMPLE_SPACING / 2, at(1, 2));
    assert_eq!(lock(&replicas.samples).len(), 1);
    replicas.keep(start + SAMPLES_KEPT + Duration::from_secs(1), at(1, 3));
    let kept: Vec<u64> = lock(&replicas.samples)
        .iter()
        .map(|sample| sample.position.lsn)
        .collect();
    assert_eq!(kept, [3]);
}

#[test]
fn no_token_is_given_while_a_commits_position_is_unknown() {
    let replicas = replicas();
    assert_eq!(replicas.committed(), None);
    lock(&replicas.committed).reached = Some(at(1, 50));
    assert_eq!(replicas.committed(), Some(at(1, 50)));
    replicas.commit_position_unknown();
    assert_eq!(replicas.committed(), None);
}

#[test]
fn a_read_of_the_latest_asks_the_primary_only_if_nothing_was_asked_since_it_was_queued() {
    let replicas = replicas();
    let read = ReadJob::once(None, |_| {});
    assert_eq!(replicas.known_requirement(&read), None, "nothing asked yet");
    // A position asked before the read was queued may miss a write acknowledged since.
    replicas.keep(read.queued - Duration::from_millis(5), at(1, 10));
    assert_eq!(replicas.known_requirement(&read), None);
    // One asked after it was queued (a commit's, say) is past every write acknowledged
    // before: the read needs it, and no question of its own.
    replicas.keep(read.queued + Duration::from_millis(1), at(1, 20));
    assert_eq!(replicas.known_requirement(&read), Some(at(1, 20)));
    // A token asks for its position, whatever was asked.
    let token = ReadJob::once(
        crate::job::ReadNames {
            row: None,
            freshness: Freshness::Since(at(1, 15)),
        },
        |_| {},
    );
    assert_eq!(replicas.known_requirement(&token), Some(at(1, 15)));
}

fn answer() -> probe::Answer {
    probe::Answer {
        role: "shop".into(),
        system: "7000".into(),
        recovering: true,
        receiver: true,
        timeline: Some(2),
        replayed: Some(500),
        conninfo: Some("host=primary fallback_application_name=standby-a".into()),
    }
}

#[test]
fn a_probe_says_why_a_standby_serves_no_reads() {
    use probe::{Verdict, judge};
    let down = |answer: &probe::Answer, primary: Option<&str>| match judge(answer, primary) {
        Verdict::Down(why) => why,
        other => panic!("{other:?}"),
    };
    assert_eq!(judge(&answer(), Some("7000")), Verdict::Up(at(2, 500)));
    assert_eq!(
        judge(&answer(), None),
        Verdict::Unjudged,
        "whose standby it is waits for the primary's identity"
    );
    assert!(down(&answer(), Some("8000")).contains("not a standby of this primary"));
    let primary = probe::Answer {
        recovering: false,
        ..answer()
    };
    assert!(down(&primary, None).contains("not in recovery"));
    let unfed = probe::Answer {
        receiver: false,
        timeline: None,
        ..answer()
    };
    assert!(down(&unfed, Some("7000")).contains("no WAL receiver"));
    // A role without pg_read_all_stats sees the receiver, not its timeline; said before the
    // primary's identity is known.
    let hidden = probe::Answer {
        timeline: None,
        ..answer()
    };
    let why = down(&hidden, None);
    assert!(
        why.contains("pg_read_all_stats") && why.contains("TO shop"),
        "{why}"
    );
    let fresh = probe::Answer {
        replayed: None,
        ..answer()
    };
    assert!(down(&fresh, Some("7000")).contains("replayed nothing"));
}

#[test]
fn the_log_hears_of_a_standby_only_when_its_state_or_its_reason_changes() {
    use probe::{Told, Verdict};
    let mut told = Told::default();
    let refused = Verdict::Down("cannot connect: refused".into());
    assert!(!told.news(&Verdict::Unjudged), "nothing to say yet");
    assert!(told.news(&refused), "at start");
    assert!(!told.news(&refused), "said once");
    assert!(!told.news(&Verdict::Unjudged));
    assert!(
        told.news(&Verdict::Down("no grant".into())),
        "another reason"
    );
    assert!(told.news(&Verdict::Up(at(1, 10))), "up");
    assert!(
        !told.news(&Verdict::Up(at(1, 20))),
        "still up, further along"
    );
    assert!(told.news(&refused), "down again");
    assert!(told.news(&Verdict::Up(at(1, 30))), "up again");
}
