//! What a follower of events receives: each event type's `data`, and the OpenAPI 3.1
//! `webhooks` section, one entry per event type, describing the signed POST a subscription gets.

use petstore_core::{EventType, Hold};
use utoipa::openapi::extensions::ExtensionsBuilder;
use utoipa::openapi::path::{
    HttpMethod, OperationBuilder, ParameterBuilder, ParameterIn, PathItem, PathsBuilder,
};
use utoipa::openapi::request_body::RequestBodyBuilder;
use utoipa::openapi::response::ResponseBuilder;
use utoipa::openapi::schema::{
    AdditionalProperties, Discriminator, KnownFormat, ObjectBuilder, OneOfBuilder, Schema,
    SchemaFormat, Type,
};
use utoipa::openapi::security::SecurityRequirement;
use utoipa::openapi::{ContentBuilder, OpenApi, Ref, RefOr, Required};
use utoipa::{PartialSchema, ToSchema};

/// The schema of an event type's `data`: the resource after the change, the id of a deleted
/// one, or the two statuses of a status change. Exhaustive, so a new event type cannot go
/// undocumented.
fn data_schema(event_type: EventType) -> &'static str {
    match event_type {
        EventType::PetCreated | EventType::PetUpdated => "Pet",
        EventType::PetDeleted | EventType::CategoryDeleted => "DeletedResource",
        EventType::PetStatusChanged => "PetStatusChange",
        EventType::CategoryCreated | EventType::CategoryUpdated => "Category",
        EventType::InventoryUpdated => "InventoryItem",
        EventType::OrderPlaced
        | EventType::OrderUpdated
        | EventType::OrderCompleted
        | EventType::OrderCancelled => "Order",
        EventType::HoldPlaced
        | EventType::HoldReleased
        | EventType::HoldExpired
        | EventType::HoldConsumed => "Hold",
    }
}

/// Adds the data schemas, types `CloudEvent.data` with them, and writes the `webhooks` section.
pub(super) fn describe_events(doc: &mut OpenApi) {
    let components = doc.components.get_or_insert_with(Default::default);
    // The data of the holds' events, whether or not an operation names it too.
    let mut hold = vec![(Hold::name().into_owned(), Hold::schema())];
    Hold::schemas(&mut hold);
    components.schemas.extend(hold);
    components.schemas.insert(
        "DeletedResource".into(),
        ObjectBuilder::new()
            .description(Some(
                "The data of a `*.deleted` event: the deleted resource's id.",
            ))
            .property(
                "id",
                ObjectBuilder::new()
                    .schema_type(Type::Integer)
                    .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
                    .minimum(Some(1)),
            )
            .required("id")
            .into(),
    );
    components.schemas.insert(
        "PetStatusChange".into(),
        ObjectBuilder::new()
            .description(Some("The data of `pet.status_changed`."))
            .property("petId", Ref::from_schema_name("PetId"))
            .property("from", Ref::from_schema_name("PetStatus"))
            .property("to", Ref::from_schema_name("PetStatus"))
            .required("petId")
            .required("from")
            .required("to")
            .into(),
    );
    // One envelope per event type, its `type` a single value and its `data` that type's shape;
    // `CloudEvent` is their `oneOf`, told apart by `type`. Generated clients then decode each
    // event as its own type (an `anyOf` of shapes let them guess, and guess wrong).
    if let Some(RefOr::T(Schema::Object(template))) = components.schemas.get("CloudEvent").cloned()
    {
        let mut envelopes = OneOfBuilder::new().description(Some(
            "A change, as a CloudEvents 1.0 event in the structured JSON format: one schema per \
             event type, told apart by `type`.",
        ));
        let mut mapping = Vec::new();
        for event_type in EventType::ALL {
            let name = envelope_schema(event_type);
            let mut envelope = template.clone();
            envelope.description = Some(format!(
                "A `{}` event: `data` is a `{}`.",
                event_type.as_str(),
                data_schema(event_type)
            ));
            envelope.properties.insert(
                "type".into(),
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .enum_values(Some([event_type.as_str()]))
                    .description(Some("What happened."))
                    .into(),
            );
            envelope.properties.insert(
                "data".into(),
                Ref::from_schema_name(data_schema(event_type)).into(),
            );
            envelope.additional_properties = Some(Box::new(AdditionalProperties::FreeForm(false)));
            components
                .schemas
                .insert(name.clone(), RefOr::T(Schema::Object(envelope)));
            envelopes = envelopes.item(Ref::from_schema_name(&name));
            mapping.push((
                event_type.as_str().to_owned(),
                format!("#/components/schemas/{name}"),
            ));
        }
        let envelopes = envelopes.discriminator(Some(Discriminator::with_mapping("type", mapping)));
        components.schemas.insert(
            "CloudEvent".into(),
            RefOr::T(Schema::OneOf(envelopes.build())),
        );
    }
    // Each shape of `data` is closed: a client can rely on exactly these fields.
    for event_type in EventType::ALL {
        if let Some(RefOr::T(Schema::Object(data))) =
            components.schemas.get_mut(data_schema(event_type))
        {
            data.additional_properties = Some(Box::new(AdditionalProperties::FreeForm(false)));
        }
    }

    let mut webhooks = PathsBuilder::new();
    for event_type in EventType::ALL {
        webhooks = webhooks.path(
            event_type.as_str(),
            PathItem::new(HttpMethod::Post, delivery_operation(event_type)),
        );
    }
    doc.webhooks = Some(webhooks.build());
    describe_stream(doc);
}

/// `GET /events/stream` as a client reads it: each event of the stream is a frame whose fields
/// are `id`, `event` and `data` (comments carry no event). OpenAPI 3.2 calls this schema a
/// sequential media type's `itemSchema`; tools reading 3.1 (schemathesis among them) take a
/// `text/event-stream` response's `schema` for the schema of each event.
fn describe_stream(doc: &mut OpenApi) {
    let components = doc.components.get_or_insert_with(Default::default);
    components.schemas.insert(
        "StreamedEvent".into(),
        ObjectBuilder::new()
            .description(Some(
                "One event of the event stream, as the fields of its Server-Sent Events frame: \
                 `id` the event's id (what `Last-Event-ID` resumes after), `event` its type, \
                 `data` the CloudEvent as JSON text. A `: heartbeat` comment after 15 s of \
                 silence is no event.",
            ))
            .property(
                "id",
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .pattern(Some("^[1-9][0-9]{0,15}$")),
            )
            .property("event", Ref::from_schema_name("EventType"))
            .property(
                "data",
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .content_media_type("application/json")
                    .content_schema(Some(Ref::from_schema_name("CloudEvent"))),
            )
            .required("id")
            .required("event")
            .required("data")
            .additional_properties(Some(AdditionalProperties::FreeForm(false)))
            .into(),
    );
    let stream = doc
        .paths
        .paths
        .get_mut("/events/stream")
        .and_then(|item| item.get.as_mut());
    let Some(RefOr::T(answer)) = stream.and_then(|op| op.responses.responses.get_mut("200")) else {
        return;
    };
    if let Some(RefOr::T(frames)) = answer.content.get_mut("text/event-stream") {
        frames.schema = Some(Ref::from_schema_name("StreamedEvent").into());
    }
}

/// The POST a subscription receives for one event type.
fn delivery_operation(event_type: EventType) -> utoipa::openapi::path::Operation {
    let name = event_type.as_str();
    let body = Ref::from_schema_name(envelope_schema(event_type));
    let header_sent = |required: Required, header: &str, description: &str| {
        ParameterBuilder::new()
            .name(header)
            .parameter_in(ParameterIn::Header)
            .required(required)
            .description(Some(description))
            .schema(Some(ObjectBuilder::new().schema_type(Type::String)))
            .build()
    };
    let header = |header: &str, description: &str| header_sent(Required::True, header, description);
    OperationBuilder::new()
        .operation_id(Some(operation_id(event_type)))
        .tag("webhooks")
        .summary(Some(format!("`{name}`, POSTed to each subscription that names it")))
        .description(Some(
            "Sent in order (one event at a time per subscription) and at least once: retried \
             with exponential backoff until a 2xx answer. Verify `webhook-signature` before \
             trusting the body, and drop a repeated `webhook-id`.",
        ))
        .parameters(Some([
            header(
                "webhook-id",
                "The event's id: the same on every attempt, so a receiver can drop repeats.",
            ),
            header(
                "webhook-timestamp",
                "When this attempt was made, in Unix seconds; reject ones too far from now.",
            ),
            header(
                "webhook-signature",
                "`v1,` and the base64 HMAC-SHA256, keyed with the subscription's secret (the bytes after `whsec_`, base64-decoded), of `{webhook-id}.{webhook-timestamp}.{body}`.",
            ),
            header_sent(
                Required::False,
                "traceparent",
                "The W3C Trace Context of the request that caused the event, as that request sent it, when it sent a valid one: the receiver's work joins the caller's trace. Not signed.",
            ),
        ]))
        .request_body(Some(
            RequestBodyBuilder::new()
                .required(Some(Required::True))
                .content(
                    "application/json",
                    ContentBuilder::new().schema(Some(body)).build(),
                )
                .build(),
        ))
        .response(
            "2XX",
            ResponseBuilder::new()
                .description("Delivered. Any other answer (redirects included), or none within the time-out, is a failed attempt.")
                .build(),
        )
        // The receiver authenticates the sender by this signature: the one "security" a
        // delivery has.
        .security(SecurityRequirement::new("webhookSignature", Vec::<String>::new()))
        .extensions(Some(
            ExtensionsBuilder::new()
                .add("x-stability", "beta")
                .add("x-stability-level", "beta")
                .build(),
        ))
        .build()
}

/// `pet.status_changed` → `PetStatusChangedEvent`: the envelope schema of one event type.
fn envelope_schema(event_type: EventType) -> String {
    format!("{}Event", pascal_case(event_type))
}

/// `pet.status_changed` → `onPetStatusChanged`.
fn operation_id(event_type: EventType) -> String {
    format!("on{}", pascal_case(event_type))
}

/// `pet.status_changed` → `PetStatusChanged`.
fn pascal_case(event_type: EventType) -> String {
    let mut id = String::new();
    for word in event_type.as_str().split(['.', '_']) {
        let mut chars = word.chars();
        if let Some(first) = chars.next() {
            id.extend(first.to_uppercase());
            id.push_str(chars.as_str());
        }
    }
    id
}
