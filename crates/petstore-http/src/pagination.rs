//! Lists on the wire: typed query strings, opaque cursors and the `Link: <…>; rel="next"`
//! header.
//!
//! Each list declares its parameters once, as a struct that derives `Deserialize` (to parse
//! the request, through [`ListQuery`]), `Serialize` (to write the next page's `Link`) and
//! `IntoParams` (to document them). Values are parsed from text with the domain types'
//! `FromStr`, the rules a path parameter follows too; a parameter that is malformed, unknown
//! or given twice is 400 `invalid_parameter`, naming it.
//!
//! A cursor stands for "after this id". It is opaque to clients (they only pass back what a
//! `Link` header gave them) so its form can change; a cursor that does not decode is 400
//! `invalid_parameter`.

use std::fmt;
use std::future::{Ready, ready};
use std::marker::PhantomData;
use std::str::FromStr;

use actix_web::dev::Payload;
use actix_web::http::header;
use actix_web::{FromRequest, HttpRequest, HttpResponse, HttpResponseBuilder, ResponseError};
use petstore_core::{MAX_ID, Page, PageSize, ValidationError};
use serde::de::{self, DeserializeOwned, Deserializer, SeqAccess, Visitor};
use serde::{Serialize, Serializer};

use crate::error::ApiError;
use crate::json::{WriteJson, page_json};

const PREFIX: char = 'k';

/// The form of every cursor, for the OpenAPI document: any string of this form is a valid
/// position, so a client can never hold a cursor the service refuses.
pub const CURSOR_PATTERN: &str = "^k[0-9a-f]{1,15}$";

/// A position in a list, as a `cursor` parameter carries it: "after this id", 0 for the start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor(i64);

impl Cursor {
    /// The cursor for "after `id`".
    pub fn after_id(id: i64) -> Self {
        Self(id)
    }

    /// The position as the id type of the list: `None` for "from the start". A position past
    /// the largest possible id means "nothing left".
    pub fn position<T: TryFrom<i64, Error = ValidationError>>(self) -> Result<Option<T>, ApiError> {
        if self.0 == 0 {
            return Ok(None);
        }
        T::try_from(self.0.min(MAX_ID))
            .map(Some)
            .map_err(|_| invalid_cursor())
    }
}

fn invalid_cursor() -> ApiError {
    ApiError::invalid_parameter("cursor: not a cursor this service gave out")
}

/// Every cursor of [`CURSOR_PATTERN`]'s form decodes, and nothing else does.
impl FromStr for Cursor {
    type Err = ValidationError;

    fn from_str(text: &str) -> Result<Self, ValidationError> {
        let invalid = || ValidationError::new("cursor", "not a cursor this service gave out");
        let digits = text.strip_prefix(PREFIX).ok_or_else(invalid)?;
        let well_formed = (1..=15).contains(&digits.len())
            && digits
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        if !well_formed {
            return Err(invalid());
        }
        i64::from_str_radix(digits, 16)
            .map(Cursor)
            .map_err(|_| invalid())
    }
}

impl fmt::Display for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{PREFIX}{:x}", self.0)
    }
}

impl Serialize for Cursor {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// The cursor for "after `id`".
pub fn encode_cursor(id: i64) -> String {
    Cursor(id).to_string()
}

/// The position a cursor stands for, as the id type of the list (see [`Cursor::position`]).
pub fn decode_cursor<T: TryFrom<i64, Error = ValidationError>>(
    cursor: &str,
) -> Result<Option<T>, ApiError> {
    cursor
        .parse::<Cursor>()
        .map_err(|_| invalid_cursor())?
        .position()
}

/// A list's query parameters `T`, parsed from the query string.
#[derive(Debug)]
pub struct ListQuery<T>(pub T);

impl<T: DeserializeOwned> FromRequest for ListQuery<T> {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let query = serde_html_form::Deserializer::from_bytes(req.query_string().as_bytes());
        ready(
            serde_path_to_error::deserialize(query)
                .map(ListQuery)
                .map_err(|error| {
                    let path = error.path().to_string();
                    let problem = error.into_inner();
                    if path.is_empty() || path == "." {
                        ApiError::invalid_parameter(problem.to_string())
                    } else {
                        ApiError::invalid_parameter(format!("{path}: {problem}"))
                    }
                }),
        )
    }
}

/// The parameters a list's `Link` repeats, with the page position moved on.
pub trait Paged: Serialize {
    /// Sets the position and size of the page the `Link` points to.
    fn move_to(&mut self, limit: PageSize, cursor: Cursor);
}

/// Declares a list's query parameters: the struct, with the paging parameters every list
/// takes (`limit`, `cursor`) first and the list's own filters after, parsed by [`ListQuery`],
/// documented by `IntoParams` and repeated in the next page's `Link`.
macro_rules! list_params {
    (
        $(#[$doc:meta])*
        pub struct $name:ident {
            $(
                $(#[$field_meta:meta])*
                pub $field:ident: $type:ty,
            )*
        }
    ) => {
        $(#[$doc])*
        #[derive(Debug, Default, serde::Deserialize, serde::Serialize, utoipa::IntoParams)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        #[into_params(parameter_in = Query)]
        pub struct $name {
            /// Page size, 20 if not given.
            #[serde(
                default,
                deserialize_with = "crate::pagination::text::one",
                skip_serializing_if = "Option::is_none"
            )]
            #[param(value_type = Option<u32>, minimum = 1, maximum = 100)]
            pub limit: Option<petstore_core::PageSize>,
            /// Where the page starts: pass the cursor of a `Link: rel="next"` header, unchanged.
            // utoipa takes only a literal here; tests/http/openapi.rs checks it equals CURSOR_PATTERN.
            #[serde(
                default,
                deserialize_with = "crate::pagination::text::one",
                skip_serializing_if = "Option::is_none"
            )]
            #[param(value_type = Option<String>, pattern = r"^k[0-9a-f]{1,15}$")]
            pub cursor: Option<crate::pagination::Cursor>,
            $(
                $(#[$field_meta])*
                pub $field: $type,
            )*
        }

        impl $crate::pagination::Paged for $name {
            fn move_to(&mut self, limit: petstore_core::PageSize, cursor: $crate::pagination::Cursor) {
                self.limit = Some(limit);
                self.cursor = Some(cursor);
            }
        }

        impl $name {
            /// The page size asked for, or the default.
            pub fn page_size(&self) -> petstore_core::PageSize {
                self.limit.unwrap_or_default()
            }

            /// Where the page starts, as the list's id type.
            pub fn after<T: TryFrom<i64, Error = petstore_core::ValidationError>>(
                &self,
            ) -> Result<Option<T>, $crate::error::ApiError> {
                self.cursor.map_or(Ok(None), $crate::pagination::Cursor::position)
            }
        }
    };
}
pub(crate) use list_params;

list_params! {
    /// The paging parameters of a list that takes no filters.
    pub struct PageOnly {}
}

/// Answers a page: the plain array the contract defines, with a `Link` header to the next
/// page when there is one, repeating the request's own parameters.
pub fn page_response<T: WriteJson>(
    path: &str,
    page: &Page<T>,
    limit: PageSize,
    mut params: impl Paged,
) -> HttpResponse {
    let mut response = HttpResponseBuilder::new(actix_web::http::StatusCode::OK);
    if let Some(next) = page.next_after {
        params.move_to(limit, Cursor::after_id(next));
        match serde_html_form::to_string(&params) {
            Ok(query) => {
                response.insert_header((header::LINK, format!("<{path}?{query}>; rel=\"next\"")));
            }
            // The parameters are ids, names and numbers: they always encode. Were one not to,
            // the page is still right, only without its link.
            Err(error) => tracing::error!(%error, "a next-page link could not be written"),
        }
    }
    match page_json(&page.items) {
        Ok(json) => response
            .content_type(header::ContentType::json())
            .body(json),
        // The service's own types always serialise; were one not to, the client gets the
        // contract's 500, not a truncated page.
        Err(error) => {
            tracing::error!(%error, "a page could not be written as JSON");
            ApiError::internal().error_response()
        }
    }
}

/// Query values, parsed from text with their type's `FromStr` (for `deserialize_with`).
pub mod text {
    use super::*;

    /// One value, if given: a name given twice is refused.
    pub fn one<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
    where
        D: Deserializer<'de>,
        T: FromStr<Err = ValidationError>,
    {
        deserializer.deserialize_any(One(PhantomData))
    }

    /// Every value given under the name, in order (`?id=1&id=2`).
    pub fn all<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
    where
        D: Deserializer<'de>,
        T: FromStr<Err = ValidationError>,
    {
        deserializer.deserialize_any(All(PhantomData))
    }

    /// `true` or `false`, if given.
    pub fn flag<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<bool>, D::Error> {
        let parsed: Option<Flag> = one(deserializer)?;
        Ok(parsed.map(|Flag(value)| value))
    }

    struct Flag(bool);

    impl FromStr for Flag {
        type Err = ValidationError;

        fn from_str(text: &str) -> Result<Self, ValidationError> {
            match text {
                "true" => Ok(Flag(true)),
                "false" => Ok(Flag(false)),
                _ => Err(ValidationError::new("flag", "must be true or false")),
            }
        }
    }

    fn parse<T: FromStr<Err = ValidationError>, E: de::Error>(text: &str) -> Result<T, E> {
        text.parse()
            .map_err(|e: ValidationError| E::custom(e.reason))
    }

    struct One<T>(PhantomData<T>);

    impl<'de, T: FromStr<Err = ValidationError>> Visitor<'de> for One<T> {
        type Value = Option<T>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("one value")
        }

        fn visit_str<E: de::Error>(self, text: &str) -> Result<Option<T>, E> {
            parse(text).map(Some)
        }

        fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<Option<T>, A::Error> {
            Err(de::Error::custom("given more than once"))
        }
    }

    struct All<T>(PhantomData<T>);

    impl<'de, T: FromStr<Err = ValidationError>> Visitor<'de> for All<T> {
        type Value = Vec<T>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("values")
        }

        fn visit_str<E: de::Error>(self, text: &str) -> Result<Vec<T>, E> {
            parse(text).map(|value| vec![value])
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut values: A) -> Result<Vec<T>, A::Error> {
            let mut parsed = Vec::new();
            while let Some(text) = values.next_element::<String>()? {
                parsed.push(parse(&text)?);
            }
            Ok(parsed)
        }
    }
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
