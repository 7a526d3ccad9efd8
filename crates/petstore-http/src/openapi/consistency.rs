//! Read consistency in the document: the `Consistency-Token` a write's answer carries, and the
//! `Consistency-Token` and `Max-Staleness` a read may send (`crate::consistency`). Kept apart
//! from the document's assembly (`mod.rs`), which calls it per operation.

use utoipa::openapi::RefOr;
use utoipa::openapi::path::{HttpMethod, Operation};

use super::string_header;
use crate::consistency::{MAX_STALENESS_SECONDS, TOKEN_PATTERN};

/// The reads no standby serves: the feed's (it keeps its order and has no gap on the
/// primary), and the API's root, which reads nothing.
const ON_THE_PRIMARY: [&str; 3] = ["listEvents", "streamEvents", "getApiInfo"];

const TOKEN_ON_A_WRITE: &str = "Where the node reads from standbys: the position this write's commit reached. Send it back as `Consistency-Token` on a read, on any node, to see this write (and every one before it) without the node asking the primary. Opaque; absent on a node with one database, whose reads are never behind.";

const TOKEN_ON_A_READ: &str = "A `Consistency-Token` a write's answer gave: the read sees that write and every earlier one, and a standby that has them may serve it without asking the primary. Without this header and `Max-Staleness`, a read sees every write acknowledged before it was sent. Sent together with `Max-Staleness`, the read sees the latest state.";

const STALENESS: &str = "Seconds the read accepts to be behind: it sees every write acknowledged at least that long before it was sent, and a standby may serve it without asking the primary.";

/// `Consistency-Token` on every write's successful answers; `Consistency-Token` and
/// `Max-Staleness` described on the reads a standby may serve.
pub(super) fn add_consistency(method: &HttpMethod, operation: &mut Operation) {
    let id = operation.operation_id.clone().unwrap_or_default();
    match method {
        HttpMethod::Get if !ON_THE_PRIMARY.contains(&id.as_str()) => {
            // In the operation's text, not as header parameters: a contract tester takes
            // declared optional headers for a closed set and expects any other header
            // refused, which no HTTP API can do (browsers and proxies add their own).
            let description = operation.description.get_or_insert_with(String::new);
            if !description.is_empty() {
                description.push_str("\n\n");
            }
            description.push_str(&format!(
                "**Read consistency.** `Consistency-Token` (`{TOKEN_PATTERN}`): {TOKEN_ON_A_READ} \
                 `Max-Staleness` (0 to {MAX_STALENESS_SECONDS}): {STALENESS} A malformed value \
                 is 400 `invalid_parameter`."
            ));
        }
        HttpMethod::Post | HttpMethod::Put | HttpMethod::Patch | HttpMethod::Delete => {
            for (status, response) in operation.responses.responses.iter_mut() {
                if let (true, RefOr::T(response)) = (status.starts_with('2'), response) {
                    response
                        .headers
                        .insert("Consistency-Token".into(), string_header(TOKEN_ON_A_WRITE));
                }
            }
        }
        _ => {}
    }
}
