//! The framework's ceiling for the load benchmark: a bare actix-web handler returning a fixed
//! small JSON body, with no middleware, no store and no key. `bench/load` measures the service
//! against it in the same run.
//!
//! `cargo run --release -p petstore-http --example ceiling -- 127.0.0.1:8090`

use actix_web::{App, HttpResponse, HttpServer, web};

#[actix_web::main]
async fn main() -> std::io::Result<()> {
    let bind = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8090".to_owned());
    HttpServer::new(|| {
        App::new().route(
            "/",
            web::get().to(|| async {
                HttpResponse::Ok()
                    .json(serde_json::json!({"petId": 1, "quantity": 7, "status": "available"}))
            }),
        )
    })
    .bind(bind)?
    .run()
    .await
}
