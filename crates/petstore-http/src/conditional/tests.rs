use super::*;

#[test]
fn tags_follow_the_representation() {
    let a = entity_tag(&serde_json::json!({"id": 1, "name": "Rex"}));
    assert_eq!(a.len(), 34);
    assert!(a.starts_with('"') && a.ends_with('"'));
    assert_eq!(a, entity_tag(&serde_json::json!({"id": 1, "name": "Rex"})));
    assert_ne!(a, entity_tag(&serde_json::json!({"id": 1, "name": "Max"})));
}

#[actix_web::test]
async fn a_read_written_directly_has_the_tag_a_precondition_computes() {
    // An inventory entry writes its own JSON; `If-Match` hashes serde's. One tag.
    let item = petstore_core::InventoryItem {
        pet_id: petstore_core::PetId::new(7).unwrap(),
        quantity: petstore_core::Stock::from_level(3),
        status: petstore_core::PetStatus::Available,
        held: petstore_core::Stock::from_level(1),
        committed: petstore_core::Stock::ZERO,
    };
    let response = read_response(&item, &IfNoneMatch::default());
    let tag = response.headers().get(header::ETAG).unwrap().clone();
    assert_eq!(tag.to_str().unwrap(), entity_tag(&item));
    assert!(IfMatch(Some(Condition::Tags(vec![entity_tag(&item)]))).allows(&item));
}

#[actix_web::test]
async fn a_read_sends_the_bytes_its_tag_was_made_of() {
    let value = serde_json::json!({"id": 7, "name": "Rex", "tags": ["a", "b"]});
    let response = read_response(&value, &IfNoneMatch::default());
    assert_eq!(response.status(), StatusCode::OK);
    let tag = response
        .headers()
        .get(header::ETAG)
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    let body = actix_web::body::to_bytes(response.into_body())
        .await
        .unwrap();
    assert_eq!(tag, tag_of(&body));
    assert_eq!(tag, entity_tag(&value));
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&body).unwrap(),
        value
    );
}

#[test]
fn conditions_parse_per_the_documented_grammar() {
    assert_eq!(parse_condition("*"), Some(Condition::Any));
    assert_eq!(
        parse_condition(r#""a", W/"b" ,"c""#),
        Some(Condition::Tags(vec![
            "\"a\"".into(),
            "W/\"b\"".into(),
            "\"c\"".into()
        ]))
    );
    assert_eq!(
        parse_condition(r#"W/"N,", "x""#),
        Some(Condition::Tags(vec!["W/\"N,\"".into(), "\"x\"".into()])),
        "a comma inside a tag belongs to it"
    );
    for bad in [
        "",
        "0",
        "a",
        "\"a",
        "\"a\"x",
        "\"a b\"",
        "w/\"a\"",
        "*, \"a\"",
        "\"a\",",
        "\"a\" \"b\"",
    ] {
        assert!(parse_condition(bad).is_none(), "{bad:?}");
    }
}

#[test]
fn if_match_compares_strongly_and_if_none_match_weakly() {
    let value = serde_json::json!({"id": 1});
    let tag = entity_tag(&value);
    let strong = IfMatch(Some(Condition::Tags(vec![tag.clone()])));
    let weak = IfMatch(Some(Condition::Tags(vec![format!("W/{tag}")])));
    assert!(strong.allows(&value));
    assert!(!weak.allows(&value));
    assert!(IfMatch::default().allows(&value));
    assert!(IfNoneMatch(Some(Condition::Tags(vec![format!("W/{tag}")]))).matches(&tag));
    assert!(!IfNoneMatch::default().matches(&tag));
    // Malformed: If-Match matches nothing, If-None-Match is ignored.
    assert!(!IfMatch(Some(Condition::Tags(Vec::new()))).allows(&value));
}
