use super::*;

#[test]
fn validation_error_names_the_field() {
    let error = ValidationError::new("id", "must be positive").for_field("categoryId");
    assert_eq!(error.to_string(), "categoryId: must be positive");
    assert_eq!(DomainError::from(error).code(), "validation_failed");
}

#[test]
fn only_infrastructure_errors_are_marked_as_such() {
    assert!(DomainError::Unavailable("locked".into()).is_infrastructure());
    assert!(DomainError::Storage("disk".into()).is_infrastructure());
    let unknown = DomainError::OutcomeUnknown("fsync failed during COMMIT".into());
    assert!(unknown.is_infrastructure());
    assert_eq!(unknown.code(), "outcome_unknown");
    assert!(!DomainError::InvalidTransition("no".into()).is_infrastructure());
    assert_eq!(DomainError::Storage("x".into()).code(), "internal");
}
