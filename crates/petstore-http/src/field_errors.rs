//! Every bad field of a request body, not just the first.
//!
//! serde stops at the first field it cannot read. Once a body has failed, it is read again as
//! a JSON tree, and each time a field fails it is recorded and taken out, until the body reads
//! or nothing more can be learned. Only bodies that already failed pay for this.
//!
//! What it cannot see: a required field that is absent is reported by serde only after every
//! present field has read, and only the first such. So a body with bad fields lists those, and
//! its absent fields show once the bad ones are fixed.

use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_path_to_error::Segment;

use crate::error::{FieldError, FieldErrorCode, MAX_FIELD_ERRORS};

/// The bad fields of `body`, read as `T`, in the order serde meets them (members of an object
/// by name).
pub(crate) fn field_errors<T: DeserializeOwned>(body: &[u8]) -> Vec<FieldError> {
    let Ok(mut tree) = serde_json::from_slice::<Value>(body) else {
        return Vec::new();
    };
    let mut found: Vec<FieldError> = Vec::new();
    // What was taken out: serde then calls a required one missing, which says nothing new.
    let mut taken: Vec<String> = Vec::new();
    while found.len() < MAX_FIELD_ERRORS {
        let Err(error) = serde_path_to_error::deserialize::<_, T>(&tree) else {
            break;
        };
        let mut path: Vec<Segment> = error.path().iter().cloned().collect();
        let message = error.into_inner().to_string();
        let code = if let Some(name) = quoted_after(&message, "missing field `") {
            path.push(Segment::Map { key: name });
            FieldErrorCode::Missing
        } else if let Some(name) = quoted_after(&message, "unknown field `") {
            if !matches!(path.last(), Some(Segment::Map { key }) if *key == name) {
                path.push(Segment::Map { key: name });
            }
            FieldErrorCode::Unknown
        } else if message.starts_with("invalid type") {
            FieldErrorCode::InvalidType
        } else {
            FieldErrorCode::InvalidValue
        };
        if code == FieldErrorCode::Missing && taken.contains(&pointer(&path)) {
            // Take out what held it instead (the rest of an array from there on), and read on.
            path.pop();
            if path.is_empty() || !take_out(&mut tree, &path) {
                break;
            }
            taken.push(pointer(&path));
            continue;
        }
        let field = pointer(&path);
        found.push(FieldError {
            field: field.clone(),
            code,
            message,
        });
        // A genuine absence is reported once every present field has read: nothing follows.
        if code == FieldErrorCode::Missing || !take_out(&mut tree, &path) {
            break;
        }
        taken.push(field);
    }
    found
}

/// The name in backquotes after `prefix`, as serde words "missing field `name`".
fn quoted_after(message: &str, prefix: &str) -> Option<String> {
    let rest = message.strip_prefix(prefix)?;
    rest.split_once('`').map(|(name, _)| name.to_owned())
}

/// The JSON pointer (RFC 6901) of a serde path.
fn pointer(path: &[Segment]) -> String {
    let mut pointer = String::new();
    for segment in path {
        pointer.push('/');
        match segment {
            Segment::Seq { index } => pointer.push_str(&index.to_string()),
            Segment::Map { key } => pointer.push_str(&key.replace('~', "~0").replace('/', "~1")),
            Segment::Enum { variant } => pointer.push_str(variant),
            Segment::Unknown => pointer.push('?'),
        }
    }
    pointer
}

/// Removes what `path` names from `tree`: an object's member, or an array's element with the
/// ones after it (removing it alone would shift their indices, and so their pointers).
fn take_out(tree: &mut Value, path: &[Segment]) -> bool {
    let Some((last, parent)) = path.split_last() else {
        return false;
    };
    let mut node = tree;
    for segment in parent {
        node = match (segment, node) {
            (Segment::Map { key }, Value::Object(members)) => match members.get_mut(key) {
                Some(child) => child,
                None => return false,
            },
            (Segment::Seq { index }, Value::Array(items)) => match items.get_mut(*index) {
                Some(child) => child,
                None => return false,
            },
            _ => return false,
        };
    }
    match (last, node) {
        (Segment::Map { key }, Value::Object(members)) => members.remove(key).is_some(),
        (Segment::Seq { index }, Value::Array(items)) if *index < items.len() => {
            items.truncate(*index);
            true
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        reason = "a test stops at the first thing that is not as expected"
    )]

    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    #[allow(dead_code, reason = "read by serde only")]
    struct Order {
        pet_id: u32,
        quantity: u8,
        lines: Vec<Line>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code, reason = "read by serde only")]
    struct Line {
        note: String,
    }

    fn fields(body: &str) -> Vec<(String, FieldErrorCode)> {
        field_errors::<Order>(body.as_bytes())
            .into_iter()
            .map(|e| (e.field, e.code))
            .collect()
    }

    #[test]
    fn every_bad_field_is_listed_with_its_pointer() {
        use FieldErrorCode as C;
        assert_eq!(
            fields(r#"{"petId": "x", "quantity": 300, "a/b": 1, "lines": [{"note": 5}]}"#),
            [
                ("/a~1b".to_owned(), C::Unknown),
                ("/lines/0/note".to_owned(), C::InvalidType),
                ("/petId".to_owned(), C::InvalidType),
                ("/quantity".to_owned(), C::InvalidValue),
            ]
        );
    }

    #[test]
    fn an_absent_field_is_listed_when_the_present_ones_read() {
        assert_eq!(
            fields(r#"{"petId": 1, "lines": []}"#),
            [("/quantity".to_owned(), FieldErrorCode::Missing)]
        );
    }

    #[test]
    fn a_body_that_reads_or_is_not_json_lists_nothing() {
        assert!(fields(r#"{"petId": 1, "quantity": 2, "lines": []}"#).is_empty());
        assert!(fields("{").is_empty());
    }

    #[test]
    fn the_list_stops_at_its_bound() {
        let mut body = String::from("{");
        for i in 0..100 {
            body.push_str(&format!(r#""extra{i}": 0, "#));
        }
        body.push_str(r#""petId": 1}"#);
        assert_eq!(fields(&body).len(), MAX_FIELD_ERRORS);
    }
}
