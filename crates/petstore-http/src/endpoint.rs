//! One declaration per resource serves both the router and the OpenAPI document.
//!
//! Each operation is a handler with a `#[utoipa::path]` annotation. [`Endpoint::op`] reads the
//! method and path from that annotation to register the route, so the document cannot claim a
//! route the service does not serve, or the reverse. Every operation of a path lives in one
//! actix `Resource`, which answers other methods with 405 and an `Allow` header (handlers
//! registered one by one with actix's method macros would answer 404 instead).

use actix_web::dev::{AppService, HttpServiceFactory};
use actix_web::http::Method;
use actix_web::{FromRequest, Handler, Resource, Responder, web};
use utoipa::openapi::path::{HttpMethod, Paths};
use utoipa::openapi::{RefOr, schema::Schema};
use utoipa_actix_web::OpenApiFactory;

use crate::error::ApiError;
use crate::middleware::RouteLabel;

/// Where the API's version 1 lives: every path of `routes::endpoints` is relative to it.
pub const BASE: &str = "/v1";

type Schemas = Vec<(String, RefOr<Schema>)>;

/// A resource path and its operations.
pub struct Endpoint {
    path: &'static str,
    resource: Resource,
    methods: Vec<Method>,
    paths: Paths,
    schemas: Schemas,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("path", &self.path)
            .field("methods", &self.methods)
            .finish_non_exhaustive()
    }
}

fn actix_method(method: &HttpMethod) -> Method {
    match method {
        HttpMethod::Get => Method::GET,
        HttpMethod::Post => Method::POST,
        HttpMethod::Put => Method::PUT,
        HttpMethod::Delete => Method::DELETE,
        HttpMethod::Options => Method::OPTIONS,
        HttpMethod::Head => Method::HEAD,
        HttpMethod::Patch => Method::PATCH,
        HttpMethod::Trace => Method::TRACE,
    }
}

impl Endpoint {
    /// The resource at `path` (relative to the API's base, `/v1`), with no operation yet.
    pub fn at(path: &'static str) -> Self {
        Self {
            path,
            resource: web::resource(path),
            methods: Vec::new(),
            paths: Paths::new(),
            schemas: Vec::new(),
        }
    }

    /// Its path, relative to the API's base.
    pub fn path(&self) -> &'static str {
        self.path
    }

    /// Adds the operation `doc` describes, served by `handler`.
    ///
    /// # Panics
    ///
    /// At start-up, if `doc` names another path: that is a programming error the first test
    /// that builds the app catches.
    pub fn op<D, F, Args>(mut self, doc: D, handler: F) -> Self
    where
        D: utoipa::Path + OpenApiFactory,
        F: Handler<Args>,
        Args: FromRequest + 'static,
        F::Output: Responder + 'static,
    {
        assert_eq!(
            D::path(),
            self.path,
            "an operation documented for another path"
        );
        for method in D::methods() {
            let method = actix_method(&method);
            self.resource = self
                .resource
                .route(web::route().method(method.clone()).to(handler.clone()));
            self.methods.push(method);
        }
        self.paths.merge(doc.paths());
        doc.schemas(&mut self.schemas);
        self
    }
}

/// The route a resource answers unserved methods with: 405 and `Allow: <allow>`.
pub(crate) fn method_not_allowed(allow: String) -> actix_web::Route {
    web::to(move || {
        let error = ApiError::method_not_allowed(&allow);
        async move { Err::<actix_web::HttpResponse, _>(error) }
    })
}

impl HttpServiceFactory for Endpoint {
    fn register(self, config: &mut AppService) {
        // A GET route answers HEAD too (the request middleware routes it as a GET).
        let mut allow = Vec::new();
        for method in &self.methods {
            allow.push(method.as_str());
            if *method == Method::GET {
                allow.push("HEAD");
            }
        }
        let allow = allow.join(", ");
        let label = RouteLabel::of_resource(format!("{BASE}{}", self.path));
        self.resource
            .app_data(label)
            .default_service(method_not_allowed(allow))
            .register(config);
    }
}

impl OpenApiFactory for Endpoint {
    fn paths(&self) -> Paths {
        self.paths.clone()
    }

    fn schemas(&self, schemas: &mut Schemas) {
        schemas.extend(self.schemas.iter().cloned());
    }
}
