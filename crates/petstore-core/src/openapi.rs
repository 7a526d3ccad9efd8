//! OpenAPI schemas (utoipa) for the validated values, with the same bounds the types enforce.
//! Enabled by the `openapi` feature; the resource types derive theirs from these.

use std::borrow::Cow;

use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{
    ArrayBuilder, KnownFormat, ObjectBuilder, Schema, SchemaFormat, Type,
};
use utoipa::{PartialSchema, ToSchema};

use crate::events::EventType;
use crate::ids::{
    CategoryId, DeliveryId, EventId, HoldId, KeyId, MAX_ID, MovementId, OrderId, PetId, WebhookId,
};
use crate::money::{Amount, Currency, Total};
use crate::values::{Description, Name, Quantity, Stock};
use crate::webhooks::{EventTypes, WEBHOOK_URL_PATTERN, WebhookUrl};

/// White space that `str::trim` removes (Unicode `White_Space`), as a regex class body.
const TRIMMED: &str = r"\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000";
/// Control characters (`char::is_control`, Unicode `Cc`), as a regex class body.
const CONTROL: &str = r"\x00-\x1F\x7F-\x9F";

/// The regex a name matches: surrounding white space, then at least one character, with no
/// control character inside. Written for both ECMA-262 and Python so clients and test tools
/// generate what the server accepts.
pub fn name_pattern() -> String {
    format!("^[{TRIMMED}]*[^{TRIMMED}{CONTROL}]([^{CONTROL}]*[^{TRIMMED}{CONTROL}])?[{TRIMMED}]*$")
}

macro_rules! id_schema {
    ($($id:ident: $what:literal),* $(,)?) => {$(
        impl PartialSchema for $id {
            fn schema() -> RefOr<Schema> {
                ObjectBuilder::new()
                    .schema_type(Type::Integer)
                    .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
                    .minimum(Some(1))
                    .maximum(Some(MAX_ID))
                    .description(Some(concat!("The id of ", $what, ".")))
                    .examples([1])
                    .into()
            }
        }

        impl ToSchema for $id {
            fn name() -> Cow<'static, str> {
                Cow::Borrowed(stringify!($id))
            }
        }
    )*};
}

id_schema!(
    PetId: "a pet",
    CategoryId: "a category",
    OrderId: "an order",
    EventId: "an event",
    KeyId: "an API key",
    WebhookId: "a webhook subscription",
    DeliveryId: "a delivery attempt",
    MovementId: "a stock movement",
    HoldId: "a hold",
);

impl PartialSchema for Name {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .min_length(Some(1))
            .max_length(Some(Name::MAX_CHARS))
            .pattern(Some(name_pattern()))
            .description(Some(
                "1 to 100 characters, no control characters; surrounding white space is removed.",
            ))
            .examples(["Rex"])
            .into()
    }
}

impl ToSchema for Name {}

/// The schema of a stock adjustment's reason: as a name's, up to 200 characters.
pub(crate) fn reason_schema() -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .min_length(Some(1))
        .max_length(Some(crate::Reason::MAX_CHARS))
        .pattern(Some(name_pattern()))
        .description(Some(
            "Why: 1 to 200 characters, no control characters; surrounding white space is removed.",
        ))
        .examples(["delivery 4411"])
        .into()
}

impl PartialSchema for WebhookUrl {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(SchemaFormat::Custom("uri".into())))
            .max_length(Some(WebhookUrl::MAX_CHARS))
            .pattern(Some(WEBHOOK_URL_PATTERN))
            .description(Some(
                "An absolute http:// or https:// URL with a host, an optional port and path; no \
                 user information, no fragment. Private and loopback addresses are refused \
                 unless the service allows them.",
            ))
            .examples(["https://hooks.example.com/petstore"])
            .into()
    }
}

impl ToSchema for WebhookUrl {}

impl PartialSchema for EventTypes {
    fn schema() -> RefOr<Schema> {
        ArrayBuilder::new()
            .items(utoipa::openapi::Ref::from_schema_name(EventType::name()))
            .min_items(Some(1))
            .max_items(Some(EventType::ALL.len()))
            .unique_items(true)
            .description(Some("The event types to receive: at least one, each once."))
            .into()
    }
}

impl ToSchema for EventTypes {}

impl PartialSchema for Description {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .max_length(Some(Description::MAX_CHARS))
            .pattern(Some(r"^[^\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x9F]*$"))
            .description(Some(
                "At most 1000 characters; line breaks and tabs allowed, other control characters not.",
            ))
            .into()
    }
}

impl ToSchema for Description {}

impl PartialSchema for Quantity {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int32)))
            .minimum(Some(Quantity::MIN))
            .maximum(Some(Quantity::MAX))
            .default(Some(1.into()))
            .description(Some("Units ordered: 1 to 1000."))
            .into()
    }
}

impl ToSchema for Quantity {}

impl PartialSchema for Stock {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
            .minimum(Some(0))
            .description(Some(
                "Units in stock. Set to at most 1000000; cancelled orders may put units back above it.",
            ))
            .into()
    }
}

impl ToSchema for Stock {}

impl PartialSchema for Currency {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .pattern(Some("^[A-Z]{3}$"))
            .description(Some(
                "An ISO 4217 currency code: the shop's, chosen when it was set up.",
            ))
            .into()
    }
}

impl ToSchema for Currency {}

impl PartialSchema for Amount {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
            .minimum(Some(0))
            .maximum(Some(Amount::MAX))
            .description(Some(
                "A unit price in minor units of the shop's currency (cents for EUR, yen for JPY): an integer, never rounded.",
            ))
            .into()
    }
}

impl ToSchema for Amount {}

impl PartialSchema for Total {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
            .minimum(Some(0))
            .maximum(Some(Total::MAX))
            .description(Some(
                "An amount in minor units of the shop's currency: unit prices times quantities, summed; exact, never rounded.",
            ))
            .into()
    }
}

impl ToSchema for Total {}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn interesting_char() -> impl Strategy<Value = char> {
        prop_oneof![
            Just(' '),
            Just('\t'),
            Just('\n'),
            Just('\u{1c}'),
            Just('\u{85}'),
            Just('\u{a0}'),
            Just('\u{2028}'),
            Just('\u{3000}'),
            Just('\u{feff}'),
            Just('\u{7f}'),
            Just('\0'),
            Just('a'),
            Just('é'),
            Just('🐕'),
            any::<char>(),
        ]
    }

    proptest! {
        /// The schema and the type accept exactly the same names, so a client (or a test tool)
        /// generating from the schema never sends a name the server refuses, or the reverse.
        #[test]
        fn the_schema_and_the_type_agree_on_names(chars in prop::collection::vec(interesting_char(), 0..104)) {
            let text: String = chars.into_iter().collect();
            let regex = regex::Regex::new(&name_pattern()).unwrap();
            let by_schema = regex.is_match(&text) && text.chars().count() <= Name::MAX_CHARS;
            prop_assert_eq!(by_schema, Name::parse(&text).is_ok(), "{:?}", text);
        }
    }
}
