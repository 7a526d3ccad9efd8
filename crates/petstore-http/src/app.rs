//! The actix application: routes, shared state and the middleware every request crosses.

use std::num::NonZeroU32;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::middleware::from_fn;
use actix_web::{App, HttpRequest, HttpResponse, Resource, web};
use serde_json::json;
use utoipa_swagger_ui::SwaggerUi;

use crate::auth::{RateLimits, authenticate};
use crate::console::{self, ConsoleSettings};
use crate::cors::{CorsOrigins, cross_origin};
use crate::endpoint::method_not_allowed;
use crate::error::{ApiError, ErrorCode};
use crate::extract::{BodyDeadline, BodyLimit};
use crate::metrics::Format;
use crate::middleware::around_every_request;
use crate::openapi;
use crate::routes::{self, meta};
use crate::state::AppState;

/// Limits the HTTP layer enforces, and which browser pages may call it.
#[derive(Debug, Clone)]
pub struct HttpLimits {
    /// The largest request body, in bytes.
    pub max_body_bytes: usize,
    /// How long a request's body may take to arrive.
    pub body_timeout: std::time::Duration,
    /// Requests per key (or client address, without a valid key), shared by all workers.
    pub rate: RateLimits,
    /// The origins whose pages may call the API (CORS); none by default.
    pub cors: CorsOrigins,
    /// The staff console's sessions.
    pub console: ConsoleSettings,
}

impl Default for HttpLimits {
    fn default() -> Self {
        Self {
            max_body_bytes: 16 * 1024,
            body_timeout: std::time::Duration::from_secs(10),
            rate: RateLimits::new(DEFAULT_RATE, DEFAULT_RATE),
            cors: CorsOrigins::default(),
            console: ConsoleSettings::default(),
        }
    }
}

/// The default rate limit: 100 requests a second per key, in bursts of up to 100.
pub const DEFAULT_RATE: NonZeroU32 = NonZeroU32::MIN.saturating_add(99);

/// The application, as the server runs it and as the tests call it.
pub fn app(
    state: AppState,
    limits: HttpLimits,
) -> App<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    // The resources are tried in order: the API's own root, rarely asked for, goes last.
    let v1 = routes::endpoints()
        .into_iter()
        .fold(
            web::scope(routes::BASE)
                .wrap(from_fn(authenticate))
                .default_service(web::to(unknown_route)),
            |scope, endpoint| scope.service(endpoint),
        )
        .route("", web::get().to(meta::api_info));
    App::new()
        .app_data(web::Data::new(state))
        .app_data(limits.rate.clone())
        .app_data(BodyLimit(limits.max_body_bytes))
        .app_data(BodyDeadline(limits.body_timeout))
        .app_data(web::PayloadConfig::new(limits.max_body_bytes))
        .app_data(web::Data::new(limits.cors))
        .app_data(web::Data::new(limits.console))
        .service(v1)
        .service(console::scope())
        .service(get_only("/healthz", healthz))
        .service(get_only("/readyz", readyz))
        .service(get_only("/metrics", metrics))
        .service(get_only("/docs", docs_redirect))
        .service(SwaggerUi::new("/docs/{_:.*}").url("/openapi.json", openapi::document().clone()))
        .default_service(web::to(unknown_route))
        // Inside the request's id and log, outside routing and authentication: a preflight
        // is answered before either.
        .wrap(from_fn(cross_origin))
        .wrap(from_fn(around_every_request))
}

fn get_only<F, Args>(path: &str, handler: F) -> Resource
where
    F: actix_web::Handler<Args>,
    Args: actix_web::FromRequest + 'static,
    F::Output: actix_web::Responder + 'static,
{
    web::resource(path)
        .get(handler)
        .default_service(method_not_allowed("GET, HEAD".to_owned()))
}

/// `/docs` is the documentation's folder: its page's relative links need the slash.
async fn docs_redirect() -> HttpResponse {
    HttpResponse::PermanentRedirect()
        .insert_header((actix_web::http::header::LOCATION, "/docs/"))
        .finish()
}

/// No route matched: under a version other than `/v1` that is `unsupported_version`.
async fn unknown_route(req: HttpRequest) -> ApiError {
    let first = req
        .path()
        .trim_start_matches('/')
        .split('/')
        .next()
        .unwrap_or_default();
    let is_version =
        first.len() > 1 && first.starts_with('v') && first[1..].bytes().all(|b| b.is_ascii_digit());
    if is_version && first != "v1" {
        ApiError::new(
            actix_web::http::StatusCode::NOT_FOUND,
            ErrorCode::UnsupportedVersion,
            format!("API version {first} does not exist; this service serves v1"),
        )
    } else {
        ApiError::not_found(format!("no route for {}", req.path()))
    }
}

/// The process is up.
async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(json!({"status": "ok"}))
}

/// Prometheus metrics: OpenMetrics when the scraper asks for it, the classic text otherwise.
async fn metrics(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let accept = req
        .headers()
        .get(actix_web::http::header::ACCEPT)
        .and_then(|value| value.to_str().ok());
    let format = Format::negotiate(accept);
    // The holds as the database has them now, whichever node sweeps: a read of its own,
    // bounded by the store's deadline; when it fails, the gauges keep their last reading.
    if let Ok(totals) = state.read_primary(|shop| shop.holds().totals()).await {
        state.metrics().holds(&totals, state.clock().now());
    }
    let store = state.store();
    let text = state.metrics().render(
        format,
        store.pool_state(),
        store.writer_stats(),
        store.disk_free_bytes(),
        &store.server_reads(),
    );
    HttpResponse::Ok()
        .content_type(format.content_type())
        .insert_header((actix_web::http::header::VARY, "Accept"))
        .body(text)
}

/// How long `/readyz` may take before it answers "not ready": load balancers commonly give a
/// health check one second, and one that times out reads as a failure it cannot explain.
const READY_WITHIN: std::time::Duration = std::time::Duration::from_millis(800);

/// Not stopping, and the database answers and is migrated, within [`READY_WITHIN`]: a check still waiting then
/// (for a pooled connection, the writer, a server that went silent) answers 503 at once and
/// finishes in the background, bounded by the store's own waits.
async fn readyz(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    // A stopping node says so at once, so that balancers stop sending to it while it drains.
    if !state.is_stopping() && check_ready(&state).await {
        Ok(HttpResponse::Ok().json(json!({"status": "ready"})))
    } else {
        Err(ApiError::unavailable())
    }
}

/// Whether the store is ready now (logging why not), kept in `petstore_ready`.
async fn check_ready(state: &AppState) -> bool {
    let store = state.store().clone();
    let checked =
        actix_web::rt::time::timeout(READY_WITHIN, web::block(move || store.check_ready()));
    let ready = match checked.await {
        Ok(Ok(Ok(()))) => true,
        Ok(Ok(Err(error))) => {
            tracing::warn!(%error, "not ready");
            false
        }
        Ok(Err(_)) => false,
        Err(_) => {
            tracing::warn!(within = ?READY_WITHIN, "not ready: the readiness check did not finish in time");
            false
        }
    };
    state.metrics().readiness(ready);
    ready
}

/// How often the service checks its own readiness for `petstore_ready`, whoever else asks.
const READY_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// Keeps `petstore_ready` current until the service stops: checked at once, then every
/// [`READY_EVERY`], so that the gauge says the truth on a node no balancer probes (nginx's
/// checks are passive) and an alert on it fires only for a node really not ready.
pub async fn keep_readiness_current(state: AppState) {
    while !state.is_stopping() {
        check_ready(&state).await;
        actix_web::rt::time::sleep(READY_EVERY).await;
    }
}

impl actix_web::Responder for ApiError {
    type Body = actix_web::body::BoxBody;

    fn respond_to(self, _: &HttpRequest) -> HttpResponse {
        actix_web::ResponseError::error_response(&self)
    }
}
