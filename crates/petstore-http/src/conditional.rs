//! HTTP's conditional requests and retries: `ETag`, `If-Match`, `If-None-Match` and
//! `Idempotency-Key`.
//!
//! An entity tag is a hash of a resource's JSON representation, so it changes exactly when what
//! a client sees changes. `If-Match` becomes a [`Precondition`](petstore_core::Precondition)
//! that the domain checks inside the write transaction, so two clients editing from the same
//! state cannot both win.

use std::future::{Ready, ready};
use std::sync::{Arc, Mutex, PoisonError};

use actix_web::dev::Payload;
use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderName, HeaderValue};
use actix_web::{FromRequest, HttpRequest, HttpResponse};
use petstore_core::{IdempotencyKey, Outcome};
use serde::{Deserialize, Serialize};
use siphasher::sip128::{Hasher128, SipHasher13};
use std::hash::Hasher;

use crate::error::ApiError;
use crate::json::WriteJson;

/// The grammar of an `Idempotency-Key`: 1 to 255 visible ASCII characters.
pub const IDEMPOTENCY_KEY_PATTERN: &str = "^[!-~]{1,255}$";

/// The strong entity tag of a representation: SipHash-1-3 (128 bits, fixed keys) of its JSON.
///
/// A tag only has to change when the representation does; it is not a secret and proves
/// nothing, so a fast hash does (SHA-256 cost more than the rest of a point read). The keys
/// are fixed so that every node, and every version, gives one representation one tag.
pub fn entity_tag(value: &impl Serialize) -> String {
    tag_of(json_text(value).as_bytes())
}

/// The entity tag of a representation's JSON bytes (see [`entity_tag`]).
fn tag_of(json: &[u8]) -> String {
    let mut tag = String::with_capacity(34);
    tag.push('"');
    push_digest(json, &mut tag);
    tag.push('"');
    tag
}

/// Appends the hex digits of the hash of `json` (an entity tag without its quotes) to `out`.
fn push_digest(json: &[u8], out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut hasher = SipHasher13::new();
    hasher.write(json);
    for byte in hasher.finish128().as_bytes() {
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
}

/// Appends the hex digits of `value`'s entity tag to `out`: the version a console form
/// carries of what it showed. A page of 100 rows has 100 of them, so the JSON they hash is
/// written into a buffer each thread keeps, and nothing else is allocated.
#[expect(
    clippy::expect_used,
    reason = "the service's own types serialise to JSON infallibly"
)]
pub fn push_version(value: &impl WriteJson, out: &mut String) {
    thread_local! {
        static JSON: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    JSON.with_borrow_mut(|json| {
        json.clear();
        value
            .write_json(json)
            .expect("the service's own types serialise to JSON");
        push_digest(json, out);
    });
}

/// A representation as it is sent: its JSON, serialised once, and the tag of those bytes.
struct Representation {
    json: Vec<u8>,
    tag: String,
}

impl Representation {
    fn of(value: &impl WriteJson) -> Self {
        let json = json_bytes(value);
        let tag = tag_of(&json);
        Self { json, tag }
    }

    fn send(self, mut response: actix_web::HttpResponseBuilder) -> HttpResponse {
        response
            .insert_header((header::ETAG, self.tag))
            .content_type(header::ContentType::json())
            .body(self.json)
    }
}

/// What a condition header (`If-Match`, `If-None-Match`) holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Condition {
    /// `*`: any current representation.
    Any,
    /// These entity tags, as sent (`"abc"` or `W/"abc"`).
    Tags(Vec<String>),
}

/// Reads a condition header: `*`, or a comma-separated list of entity tags (weak ones
/// allowed); `None` when the value is of neither form.
pub fn parse_condition(text: &str) -> Option<Condition> {
    let trimmed = text.trim_matches([' ', '\t']);
    if trimmed == "*" {
        return Some(Condition::Any);
    }
    let mut tags = Vec::new();
    let mut rest = trimmed;
    loop {
        let (weak, quoted) = match rest.strip_prefix("W/") {
            Some(after) => (true, after),
            None => (false, rest),
        };
        let body = quoted.strip_prefix('"')?;
        // A tag ends at the next quote: commas inside it are part of it.
        let end = body.find('"')?;
        let inner = &body[..end];
        if !inner
            .bytes()
            .all(|b| b == b'!' || (b'#'..=b'~').contains(&b))
        {
            return None;
        }
        tags.push(if weak {
            format!("W/\"{inner}\"")
        } else {
            format!("\"{inner}\"")
        });
        rest = body[end + 1..].trim_start_matches([' ', '\t']);
        if rest.is_empty() {
            return Some(Condition::Tags(tags));
        }
        rest = rest.strip_prefix(',')?.trim_start_matches([' ', '\t']);
    }
}

/// The header `name`, if sent, and what it holds (`None` inside when malformed).
fn condition_header(req: &HttpRequest, name: HeaderName) -> Option<Option<Condition>> {
    let value = req.headers().get(&name)?;
    Some(value.to_str().ok().and_then(parse_condition))
}

/// `If-Match` on a change: the change applies only if the resource still has one of these
/// tags (strong comparison: weak tags never match), or exists at all for `*`. A value that is
/// not a list of entity tags matches nothing: the change is refused (412), never applied blind.
#[derive(Debug, Clone, Default)]
pub struct IfMatch(Option<Condition>);

impl IfMatch {
    /// Whether the change may go ahead on `current`.
    pub fn allows(&self, current: &impl Serialize) -> bool {
        match &self.0 {
            None | Some(Condition::Any) => true,
            Some(Condition::Tags(tags)) => {
                let tag = entity_tag(current);
                tags.contains(&tag)
            }
        }
    }

    /// Whether the change may go ahead on a resource that may not exist yet (`None`), such as
    /// a pet's price: without `If-Match` always; with one only on a resource that exists and
    /// matches (`*` means "exists").
    pub fn allows_if_any(&self, current: Option<&impl Serialize>) -> bool {
        match current {
            Some(current) => self.allows(current),
            None => self.0.is_none(),
        }
    }
}

impl FromRequest for IfMatch {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let condition = condition_header(req, header::IF_MATCH)
            .map(|parsed| parsed.unwrap_or(Condition::Tags(Vec::new())));
        ready(Ok(IfMatch(condition)))
    }
}

/// `If-None-Match` on a read: answer 304 when the client already has this representation
/// (weak comparison). A value that is not a list of entity tags is ignored: a plain read.
#[derive(Debug, Clone, Default)]
pub struct IfNoneMatch(Option<Condition>);

impl IfNoneMatch {
    fn matches(&self, tag: &str) -> bool {
        match &self.0 {
            None => false,
            Some(Condition::Any) => true,
            Some(Condition::Tags(tags)) => tags.iter().any(|t| t.trim_start_matches("W/") == tag),
        }
    }
}

impl FromRequest for IfNoneMatch {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(Ok(IfNoneMatch(
            condition_header(req, header::IF_NONE_MATCH).flatten(),
        )))
    }
}

/// A single resource read: 200 with its `ETag`, or 304 when the client's copy is current.
pub fn read_response(value: &impl WriteJson, if_none_match: &IfNoneMatch) -> HttpResponse {
    let representation = Representation::of(value);
    if if_none_match.matches(&representation.tag) {
        return HttpResponse::NotModified()
            .insert_header((header::ETAG, representation.tag))
            .finish();
    }
    representation.send(HttpResponse::Ok())
}

/// The answer to a change: 200 with the new representation and its `ETag`.
pub fn changed_response(value: &impl WriteJson) -> HttpResponse {
    Representation::of(value).send(HttpResponse::Ok())
}

/// The `Idempotency-Key` header of a create, if sent.
#[derive(Debug, Clone, Default)]
pub struct IdempotencyHeader(Option<String>);

impl FromRequest for IdempotencyHeader {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let value = req.headers().get("idempotency-key").map(|value| {
            value
                .to_str()
                .map(str::to_owned)
                .map_err(|_| ApiError::invalid_parameter("Idempotency-Key: must be visible ASCII"))
        });
        ready(value.transpose().map(IdempotencyHeader))
    }
}

impl IdempotencyHeader {
    /// Whether the client sent one.
    pub fn is_present(&self) -> bool {
        self.0.is_some()
    }

    /// The domain's idempotency key for this request, if the client sent one.
    pub fn key(
        &self,
        path: &str,
        body: &impl Serialize,
    ) -> Result<Option<IdempotencyKey>, ApiError> {
        let Some(text) = &self.0 else {
            return Ok(None);
        };
        let canonical = json_text(body);
        IdempotencyKey::new(text, "POST", path, canonical.as_bytes())
            .map(Some)
            .map_err(|e| ApiError::invalid_parameter(format!("Idempotency-Key: {}", e.reason)))
    }
}

/// A create's answer as it is kept for replays: the domain stores these bytes without reading
/// them (migration 000005 converted older records to this form).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct RecordedAnswer {
    status: u16,
    headers: Vec<(String, String)>,
    /// The JSON body, as text.
    body: String,
}

impl RecordedAnswer {
    /// `201 Created` with `Location`, `ETag` and the resource.
    fn created(location: String, value: &impl Serialize) -> Self {
        let body = json_text(value);
        Self {
            status: 201,
            headers: vec![
                ("Location".to_owned(), location),
                ("ETag".to_owned(), tag_of(body.as_bytes())),
            ],
            body,
        }
    }

    fn into_response(self) -> HttpResponse {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::OK);
        let mut response = HttpResponse::build(status);
        response.content_type("application/json");
        for (name, value) in self.headers {
            if let (Ok(name), Ok(value)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(&value),
            ) {
                response.insert_header((name, value));
            }
        }
        response.body(self.body)
    }
}

/// A value the service built, as JSON text. Serialising the service's own types cannot fail
/// (plain structs, strings, numbers and string-keyed maps), so this is the one place that says
/// so, instead of a silent default at every call.
#[expect(
    clippy::expect_used,
    reason = "the service's own types serialise to JSON infallibly"
)]
pub fn json_text(value: &impl Serialize) -> String {
    serde_json::to_string(value).expect("the service's own types serialise to JSON")
}

/// A resource's JSON, written as [`WriteJson`] writes it: the same bytes as [`json_text`].
#[expect(
    clippy::expect_used,
    reason = "the service's own types serialise to JSON infallibly"
)]
fn json_bytes(value: &impl WriteJson) -> Vec<u8> {
    let mut json = Vec::with_capacity(128);
    value
        .write_json(&mut json)
        .expect("the service's own types serialise to JSON");
    json
}

/// Keeps the answer a create recorded, so that its `201` is sent as recorded rather than
/// made again (the body serialised and its `ETag` hashed twice). The work may run more than
/// once before it is answered: the last run's answer is kept, and it is the one recorded.
#[derive(Debug, Clone, Default)]
pub struct KeptAnswer(Arc<Mutex<Option<RecordedAnswer>>>);

impl KeptAnswer {
    /// Records the answer to a create of `value` at `location`, keeping it too.
    pub fn record(&self, location: String, value: &impl Serialize) -> Vec<u8> {
        let answer = RecordedAnswer::created(location, value);
        let bytes = json_text(&answer).into_bytes();
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(answer);
        bytes
    }

    fn take(&self) -> Option<RecordedAnswer> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

/// What a create did, with the answer it recorded for its idempotency key if it recorded one.
#[derive(Debug)]
pub struct Created<T> {
    /// What was made now, or the answer recorded for an earlier request with the same key.
    pub outcome: Outcome<T>,
    kept: KeptAnswer,
}

impl<T> Created<T> {
    /// `outcome`, the create having recorded its answer in `kept` if it had a key.
    pub fn new(outcome: Outcome<T>, kept: KeptAnswer) -> Self {
        Self { outcome, kept }
    }
}

/// The answer to a create: `201 Created` with `Location`, `ETag` and the resource when it was
/// made now (as the create recorded it, where it had a key), or the recorded answer, byte for
/// byte, when it is a replay.
pub fn created_response<T: Serialize>(
    created: Created<T>,
    location: impl Fn(&T) -> String,
) -> Result<HttpResponse, ApiError> {
    let Created { outcome, kept } = created;
    match outcome {
        Outcome::Done(value) => Ok(kept
            .take()
            .unwrap_or_else(|| RecordedAnswer::created(location(&value), &value))
            .into_response()),
        Outcome::Replayed(bytes) => match serde_json::from_slice::<RecordedAnswer>(&bytes) {
            Ok(answer) => Ok(answer.into_response()),
            Err(error) => {
                tracing::error!(%error, "a recorded idempotent answer is unreadable");
                Err(ApiError::internal())
            }
        },
    }
}

#[cfg(test)]
mod tests;
