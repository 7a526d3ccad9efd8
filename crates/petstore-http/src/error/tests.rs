use petstore_core::{CategoryId, PetId, PetStatus};

use super::*;

#[test]
fn each_domain_refusal_gets_its_status() {
    let pet = PetId::new(1).unwrap();
    let cases = [
        (
            DomainError::PetNotAvailable {
                id: pet,
                status: PetStatus::Sold,
            },
            409,
        ),
        (
            DomainError::InsufficientStock {
                pet_id: pet,
                requested: 2,
                available: 1,
            },
            409,
        ),
        (
            DomainError::UnknownCategory {
                id: CategoryId::new(1).unwrap(),
            },
            422,
        ),
        (DomainError::UnknownPet { id: pet }, 422),
        (DomainError::IdempotencyKeyReused, 422),
        (
            DomainError::PreconditionFailed(petstore_core::Resource::Pet),
            412,
        ),
        (
            DomainError::Forbidden {
                role: "customer",
                needs: petstore_core::Permission::ManageStore,
            },
            403,
        ),
        (DomainError::Unavailable("locked".into()), 503),
        (DomainError::Storage("disk on fire".into()), 500),
        (DomainError::OutcomeUnknown("fsync failed".into()), 503),
    ];
    for (error, status) in cases {
        let code = error.code();
        let api = ApiError::from(error);
        assert_eq!(api.status_code().as_u16(), status, "{code}");
        assert_eq!(api.code().as_str(), code);
    }
}

#[test]
fn infrastructure_details_never_reach_the_client() {
    let api = ApiError::from(DomainError::Storage("SELECT * FROM secrets".into()));
    assert!(!api.message.contains("SELECT"));
    for failure in [DomainError::Unavailable, DomainError::OutcomeUnknown] {
        let api = ApiError::from(failure("/var/db is locked".into()));
        assert!(!api.message.contains("/var"));
        assert!(
            api.headers
                .iter()
                .any(|(name, _)| name == header::RETRY_AFTER)
        );
    }
}
