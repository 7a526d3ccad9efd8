//! The console's script and style, compiled into the binary and served under names that
//! carry a hash of their content: a browser keeps them for a year, and a new binary's
//! different content has a different name, so no page ever runs a stale copy.
//!
//! htmx is vendored as its authors publish it (`assets/htmx-LICENSE`, 0BSD); nothing is
//! fetched at build time, and no Node or npm is needed.

use std::sync::LazyLock;

use actix_web::HttpResponse;
use actix_web::http::header;
use sha2::{Digest, Sha256};

use crate::error::ApiError;

/// One asset: its name as served, its type and its bytes.
#[derive(Debug)]
pub struct Asset {
    /// The name pages link to: the stem, 12 hex digits of the content's SHA-256, the extension.
    pub name: String,
    content_type: &'static str,
    bytes: &'static [u8],
}

impl Asset {
    fn new(stem: &str, extension: &str, content_type: &'static str, bytes: &'static [u8]) -> Self {
        let digest = Sha256::digest(bytes);
        let hash: String = digest[..6].iter().map(|b| format!("{b:02x}")).collect();
        Self {
            name: format!("{stem}-{hash}.{extension}"),
            content_type,
            bytes,
        }
    }

    /// Where a page links to it.
    pub fn url(&self) -> String {
        format!("{}/assets/{}", super::BASE, self.name)
    }

    /// Its size, uncompressed.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether it is empty (never: for clippy's pairing with `len`).
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Its bytes.
    pub fn bytes(&self) -> &'static [u8] {
        self.bytes
    }
}

/// htmx, as published.
pub static HTMX: LazyLock<Asset> = LazyLock::new(|| {
    Asset::new(
        "htmx",
        "js",
        "text/javascript; charset=utf-8",
        include_bytes!("assets/htmx-2.0.11.min.js"),
    )
});

/// The console's style sheet.
pub static STYLE: LazyLock<Asset> = LazyLock::new(|| {
    Asset::new(
        "console",
        "css",
        "text/css; charset=utf-8",
        include_bytes!("assets/console.css"),
    )
});

/// The console's icon: a paw, in the style's ink.
pub static FAVICON: LazyLock<Asset> = LazyLock::new(|| {
    Asset::new(
        "favicon",
        "svg",
        "image/svg+xml",
        include_bytes!("assets/favicon.svg"),
    )
});

/// Every asset.
pub fn all() -> [&'static Asset; 3] {
    [&HTMX, &STYLE, &FAVICON]
}

/// An asset by its hashed name, cached for a year.
pub(super) fn serve(name: &str) -> Result<HttpResponse, ApiError> {
    let asset = all()
        .into_iter()
        .find(|asset| asset.name == *name)
        .ok_or_else(|| ApiError::not_found(format!("the console has no asset {name}")))?;
    Ok(HttpResponse::Ok()
        .content_type(asset.content_type)
        .insert_header((header::CACHE_CONTROL, "public, max-age=31536000, immutable"))
        .body(asset.bytes))
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;

    /// What a browser downloads for the console, compressed as the service sends it (gzip,
    /// the encoding every browser accepts), stays within the budget `docs/console.md` gives:
    /// a page must not cost a slow link more than 60 KB before it works.
    #[test]
    fn the_assets_fit_in_60_kb_compressed() {
        let mut total = 0;
        for asset in all() {
            let mut gzip =
                flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            gzip.write_all(asset.bytes()).unwrap();
            let compressed = gzip.finish().unwrap().len();
            assert!(compressed > 0 && compressed < asset.len(), "{}", asset.name);
            total += compressed;
        }
        assert!(
            total <= 60 * 1024,
            "the console's assets take {total} bytes compressed"
        );
    }

    #[test]
    fn names_change_with_the_content_and_only_with_it() {
        let one = Asset::new("a", "js", "text/javascript", b"console.log(1)");
        let again = Asset::new("a", "js", "text/javascript", b"console.log(1)");
        let other = Asset::new("a", "js", "text/javascript", b"console.log(2)");
        assert_eq!(one.name, again.name);
        assert_ne!(one.name, other.name);
        assert!(one.name.starts_with("a-") && one.name.ends_with(".js"));
        assert_eq!(one.name.len(), "a-".len() + 12 + ".js".len());
        assert_eq!(one.url(), format!("/console/assets/{}", one.name));
    }
}
