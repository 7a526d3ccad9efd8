//! The real actix app on a fresh SQLite file, with a clock the test controls.

#![allow(dead_code, reason = "each test file uses its own part of this module")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test stops at the first thing that is not as expected"
)]

use std::sync::Arc;

use actix_http::Request;
use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use actix_web::http::{Method, StatusCode, header::HeaderMap};
use actix_web::test::{self, TestRequest};
use chrono::{DateTime, Utc};
use std::num::NonZeroU32;

use petstore_core::{Caller, KeySecret, ManualClock, Name, NewApiKey, Role};
use petstore_http::app::{HttpLimits, app};
use petstore_http::auth::RateLimits;
use petstore_http::state::AppState;
use petstore_store::AnyStore;
use petstore_store::testing::TestDatabase;
use serde_json::Value;

/// A running app and what it stands on.
pub(crate) struct TestApp<S> {
    pub service: S,
    pub clock: Arc<ManualClock>,
    pub state: AppState,
    /// An admin key's secret; requests go with it unless a test says otherwise.
    pub admin: String,
    database: TestDatabase,
}

/// What came back.
#[derive(Debug)]
pub(crate) struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
    pub content_type: String,
}

impl Reply {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The target of the `Link: <…>; rel="next"` header, if there is one.
    pub(crate) fn next_link(&self) -> Option<String> {
        let link = self.header("link")?;
        link.ends_with("rel=\"next\"").then(|| {
            link.trim_start_matches('<')
                .split('>')
                .next()
                .unwrap_or_default()
                .to_owned()
        })
    }

    /// Asserts an error reply: the status, the code, and the contract's JSON shape.
    #[track_caller]
    pub(crate) fn assert_error(&self, status: u16, code: &str) {
        assert_eq!(self.status.as_u16(), status, "{self:?}");
        assert_eq!(self.content_type, "application/json", "{self:?}");
        assert_eq!(self.body["code"], code, "{self:?}");
        assert_eq!(self.body["status"], status, "{self:?}");
        assert!(
            self.body["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{self:?}"
        );
    }
}

/// Today, for the clock: before getPet's sunset.
pub(crate) fn now() -> DateTime<Utc> {
    "2026-11-22T10:00:00Z".parse().unwrap()
}

/// A fresh database (on the backend `PETSTORE_TEST_BACKEND` chooses), its state for the app,
/// and the clock the app reads.
pub(crate) fn fresh_state() -> (AppState, Arc<ManualClock>, TestDatabase) {
    let database = TestDatabase::new("api");
    let store = AnyStore::open(&database.config()).unwrap();
    let clock = Arc::new(ManualClock::new(now()));
    let state = AppState::new(store, clock.clone()).unwrap();
    (state, clock, database)
}

/// Creates a key directly through the use cases, as the CLI does; returns its secret.
pub(crate) async fn create_key(state: &AppState, role: Role, seed: u8) -> String {
    let secret = KeySecret::from_random([seed; 32]);
    let shown = secret.reveal().to_owned();
    let new = NewApiKey {
        name: Name::parse(&format!("{role} {seed}")).unwrap(),
        role,
    };
    state
        .write(move |shop| shop.keys().create(Caller::Operator, new.clone(), &secret))
        .await
        .unwrap();
    shown
}

/// Limits that no test trips unless it means to.
pub(crate) fn generous_limits() -> HttpLimits {
    let rate = NonZeroU32::new(100_000).unwrap();
    HttpLimits {
        rate: RateLimits::new(rate, rate),
        ..HttpLimits::default()
    }
}

pub(crate) async fn start() -> TestApp<
    impl Service<Request, Response = ServiceResponse<impl MessageBody>, Error = actix_web::Error>,
> {
    start_with(generous_limits()).await
}

pub(crate) async fn start_with(
    limits: HttpLimits,
) -> TestApp<
    impl Service<Request, Response = ServiceResponse<impl MessageBody>, Error = actix_web::Error>,
> {
    let (state, clock, database) = fresh_state();
    let admin = create_key(&state, Role::Admin, 200).await;
    let service = test::init_service(app(state.clone(), limits)).await;
    TestApp {
        service,
        clock,
        state,
        admin,
        database,
    }
}

/// Sends a request and reads the whole reply.
pub(crate) async fn send<S, B>(service: &S, request: TestRequest) -> Reply
where
    S: Service<Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody + 'static,
{
    // A service-level error is rendered the way actix's HTTP dispatcher renders it: with
    // the error's own `error_response`.
    let response = match test::try_call_service(service, request.to_request()).await {
        Ok(response) => response.map_into_boxed_body().into_parts().1,
        Err(error) => error.error_response(),
    };
    let status = response.status();
    let headers = response.headers().clone();
    let content_type = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let bytes = actix_web::body::to_bytes(response.into_body())
        .await
        .unwrap();
    let body = if bytes.is_empty() {
        Value::Null
    } else if content_type.starts_with("application/json") {
        serde_json::from_slice(&bytes).unwrap()
    } else {
        Value::String(String::from_utf8_lossy(&bytes).into_owned())
    };
    Reply {
        status,
        headers,
        body,
        content_type,
    }
}

impl<S, B> TestApp<S>
where
    S: Service<Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody + 'static,
{
    /// Sends `request` as it is and returns the reply's status, headers and body bytes, unread
    /// (for bodies that are not plain JSON: compressed ones).
    pub(crate) async fn raw(
        &self,
        request: TestRequest,
    ) -> (StatusCode, HeaderMap, actix_web::web::Bytes) {
        let response = test::call_service(&self.service, request.to_request()).await;
        let (status, headers) = (response.status(), response.headers().clone());
        let Ok(bytes) = actix_web::body::to_bytes(response.into_body()).await else {
            panic!("the body could not be read");
        };
        (status, headers, bytes)
    }

    /// Sends `request` as the admin key.
    pub(crate) async fn send(&self, request: TestRequest) -> Reply {
        self.send_as(Some(&self.admin), request).await
    }

    /// Sends `request` with `key` as its bearer token, or with no `Authorization` at all.
    pub(crate) async fn send_as(&self, key: Option<&str>, request: TestRequest) -> Reply {
        let request = match key {
            Some(key) => request.insert_header(("authorization", format!("Bearer {key}"))),
            None => request,
        };
        send(&self.service, request).await
    }

    /// The database the app serves from.
    pub(crate) fn database(&self) -> &TestDatabase {
        &self.database
    }

    /// A new key with `role`; returns its secret.
    pub(crate) async fn key(&self, role: Role, seed: u8) -> String {
        create_key(&self.state, role, seed).await
    }

    pub(crate) async fn get(&self, uri: &str) -> Reply {
        self.send(TestRequest::get().uri(uri)).await
    }

    pub(crate) async fn delete(&self, uri: &str) -> Reply {
        self.send(TestRequest::delete().uri(uri)).await
    }

    /// A request with a JSON body.
    pub(crate) async fn json(&self, method: Method, uri: &str, body: Value) -> Reply {
        self.send(
            TestRequest::default()
                .method(method)
                .uri(uri)
                .set_json(body),
        )
        .await
    }

    pub(crate) async fn post(&self, uri: &str, body: Value) -> Reply {
        self.json(Method::POST, uri, body).await
    }

    /// Sets pet `pet`'s price to `amount` minor units, which must be taken (200).
    pub(crate) async fn set_price(&self, pet: i64, amount: i64) -> Reply {
        let reply = self
            .json(
                Method::PUT,
                &format!("/v1/pets/{pet}/price"),
                serde_json::json!({"amount": amount}),
            )
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{reply:?}");
        reply
    }

    /// How many orders the admin's first page of orders lists.
    pub(crate) async fn order_count(&self) -> usize {
        let orders = self.get("/v1/store/orders").await;
        orders
            .body
            .as_array()
            .map(Vec::len)
            .unwrap_or_else(|| panic!("{orders:?}"))
    }

    /// Creates what most tests need: a category and a pet with `stock` units. Returns the
    /// pet's id.
    pub(crate) async fn pet_with_stock(&self, name: &str, stock: u32) -> i64 {
        let category = self
            .post(
                "/v1/categories",
                serde_json::json!({"name": format!("{name} kind")}),
            )
            .await;
        assert_eq!(category.status, StatusCode::CREATED, "{category:?}");
        let pet = self
            .post(
                "/v1/pets",
                serde_json::json!({"name": name, "categoryId": category.body["id"]}),
            )
            .await;
        assert_eq!(pet.status, StatusCode::CREATED, "{pet:?}");
        let id = pet.body["id"].as_i64().unwrap();
        let stocked = self
            .json(
                Method::PATCH,
                &format!("/v1/inventory/{id}"),
                serde_json::json!({"quantity": stock}),
            )
            .await;
        assert_eq!(stocked.status, StatusCode::OK, "{stocked:?}");
        id
    }
}

/// Everything the process logs, as JSON lines, from the first call on. A process-wide
/// subscriber: tracing caches which call sites are enabled globally, so a thread-scoped one
/// misses events while other tests run in parallel.
pub(crate) fn captured_logs() -> &'static LogBuffer {
    static LOGS: std::sync::OnceLock<LogBuffer> = std::sync::OnceLock::new();
    LOGS.get_or_init(|| {
        let logs = LogBuffer::default();
        let writer = logs.clone();
        let subscriber = tracing_subscriber::fmt()
            .json()
            .with_max_level(tracing::Level::TRACE)
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::set_global_default(subscriber).unwrap();
        logs
    })
}

/// Log output collected in memory.
#[derive(Clone, Default)]
pub(crate) struct LogBuffer(Arc<std::sync::Mutex<Vec<u8>>>);

impl LogBuffer {
    /// What was logged so far.
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl std::io::Write for LogBuffer {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(data);
        Ok(data.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
