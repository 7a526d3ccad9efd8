use super::*;
use crate::config::Database;

#[test]
fn the_network_is_bounded_unless_the_url_says_otherwise() {
    let config = StoreConfig::for_database(Database::parse(
        "postgres://shop@db:5432/shop?sslmode=verify-full&connect_timeout=9",
    ));
    let url = postgres_url(&config).unwrap();
    assert!(url.starts_with("postgres://shop@db:5432/shop?sslmode=verify-full&connect_timeout=9&"));
    assert_eq!(
        url.matches("connect_timeout=").count(),
        1,
        "the URL's own wins: {url}"
    );
    for bound in [
        "keepalives_idle=10",
        "keepalives_count=3",
        "tcp_user_timeout=10000",
    ] {
        assert!(url.contains(bound), "{url}");
    }
    let bare = StoreConfig::for_database(Database::parse("postgres://shop@db/shop"));
    let url = postgres_url(&bare).unwrap();
    assert!(
        url.starts_with("postgres://shop@db/shop?connect_timeout="),
        "{url}"
    );
}
