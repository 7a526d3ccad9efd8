//! Keyset pagination on the wire: opaque cursors and the `Link: <…>; rel="next"` header.
//!
//! A cursor stands for "after this id". It is opaque to clients (they only pass back what a
//! `Link` header gave them) so its form can change; a cursor that does not decode is 400
//! `invalid_parameter`.

use actix_web::HttpResponseBuilder;
use actix_web::http::header;
use petstore_core::{MAX_ID, Page, PageSize, ValidationError};
use serde::Serialize;

use crate::error::ApiError;
use crate::extract::QueryParams;

const PREFIX: char = 'k';

/// The form of every cursor, for the OpenAPI document: any string of this form is a valid
/// position, so a client can never hold a cursor the service refuses.
pub const CURSOR_PATTERN: &str = "^k[0-9a-f]{1,15}$";

/// The cursor for "after `id`".
pub fn encode_cursor(id: i64) -> String {
    format!("{PREFIX}{id:x}")
}

/// The position a cursor stands for, as the id type of the list: `None` for "from the
/// start". Every cursor of [`CURSOR_PATTERN`]'s form decodes; a position past the largest
/// possible id means "nothing left".
pub fn decode_cursor<T: TryFrom<i64, Error = ValidationError>>(
    cursor: &str,
) -> Result<Option<T>, ApiError> {
    let invalid = || ApiError::invalid_parameter("cursor: not a cursor this service gave out");
    let digits = cursor.strip_prefix(PREFIX).ok_or_else(invalid)?;
    let well_formed = (1..=15).contains(&digits.len())
        && digits
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if !well_formed {
        return Err(invalid());
    }
    let position = i64::from_str_radix(digits, 16).map_err(|_| invalid())?;
    if position == 0 {
        return Ok(None);
    }
    T::try_from(position.min(MAX_ID))
        .map(Some)
        .map_err(|_| invalid())
}

/// The paging parameters every list takes, as the OpenAPI document describes them (the
/// handlers read them with [`Paging::take`]).
#[derive(Debug, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)] // read by the document only
pub struct PageParams {
    /// Page size, 20 if not given.
    #[param(minimum = 1, maximum = 100)]
    limit: Option<u32>,
    /// Where the page starts: pass the cursor of a `Link: rel="next"` header, unchanged.
    // utoipa takes only a literal here; tests/openapi.rs checks it equals CURSOR_PATTERN.
    #[param(pattern = r"^k[0-9a-f]{1,15}$")]
    cursor: Option<String>,
}

/// The paging parameters of a list request, taken from its query.
#[derive(Debug, Clone, Copy)]
pub struct Paging<T> {
    /// Items after this id.
    pub after: Option<T>,
    /// Page size.
    pub limit: PageSize,
}

impl<T: TryFrom<i64, Error = ValidationError>> Paging<T> {
    /// Takes `limit` and `cursor` from the query.
    pub fn take(query: &mut QueryParams) -> Result<Self, ApiError> {
        let limit = query.parse::<PageSize>("limit")?.unwrap_or_default();
        let after = match query.take("cursor")? {
            Some(cursor) => decode_cursor::<T>(&cursor)?,
            None => None,
        };
        Ok(Paging { after, limit })
    }
}

/// Answers a page: the plain array the contract defines, with a `Link` header to the next
/// page when there is one. `filters` are the list's own query parameters, repeated in the link.
pub fn page_response<T: Serialize>(
    path: &str,
    page: &Page<T>,
    limit: PageSize,
    filters: &[(&str, String)],
) -> actix_web::HttpResponse {
    let mut response = HttpResponseBuilder::new(actix_web::http::StatusCode::OK);
    if let Some(next) = page.next_after {
        let mut params: Vec<(&str, String)> = filters.to_vec();
        params.push(("limit", limit.get().to_string()));
        params.push(("cursor", encode_cursor(next)));
        let query = serde_urlencoded::to_string(&params).unwrap_or_default();
        response.insert_header((header::LINK, format!("<{path}?{query}>; rel=\"next\"")));
    }
    response.json(&page.items)
}

#[cfg(test)]
mod tests {
    use petstore_core::PetId;

    use super::*;

    #[test]
    fn cursors_round_trip_and_refuse_other_forms() {
        for id in [1, 255, 9_007_199_254_740_991] {
            let cursor = encode_cursor(id);
            assert_eq!(
                decode_cursor::<PetId>(&cursor).unwrap().map(PetId::get),
                Some(id)
            );
        }
        for bad in [
            "",
            "k",
            "x10",
            "k-1",
            "kzz",
            "kA",
            "k1234567890123456",
            " k1",
        ] {
            assert!(decode_cursor::<PetId>(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn every_cursor_of_the_documented_form_is_a_position() {
        assert_eq!(decode_cursor::<PetId>("k0").unwrap(), None);
        let far = decode_cursor::<PetId>("kfffffffffffffff").unwrap();
        assert_eq!(far.map(PetId::get), Some(MAX_ID));
    }
}
