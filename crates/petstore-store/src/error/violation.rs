//! Which constraint of the schema a failed statement broke, read from what the database
//! said: the store turns each into the domain's refusal it stands for.

use diesel::result::{DatabaseErrorKind, Error as DieselError};

/// A constraint of the schema that a statement broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Violation {
    Unique,
    ForeignKey,
    /// A `CHECK` on a column: a value the domain should have refused.
    Check,
    /// A trigger's `RAISE(ABORT, code)`: the rule it guards.
    Rule(Rule),
}

/// The domain rules the schema's triggers guard as well, named by the code they raise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rule {
    UnknownPet,
    PetHasOpenOrders,
    InvalidTransition,
    OrderNotCancellable,
}

impl Rule {
    const ALL: [Rule; 4] = [
        Rule::UnknownPet,
        Rule::PetHasOpenOrders,
        Rule::InvalidTransition,
        Rule::OrderNotCancellable,
    ];

    /// The code the trigger raises: the domain error code of the rule.
    const fn code(self) -> &'static str {
        match self {
            Rule::UnknownPet => "unknown_pet",
            Rule::PetHasOpenOrders => "pet_has_open_orders",
            Rule::InvalidTransition => "invalid_transition",
            Rule::OrderNotCancellable => "order_not_cancellable",
        }
    }
}

/// Which constraint `error` reports, if any.
pub(crate) fn violation(error: &DieselError) -> Option<Violation> {
    let DieselError::DatabaseError(kind, info) = error else {
        return None;
    };
    match kind {
        DatabaseErrorKind::UniqueViolation => Some(Violation::Unique),
        DatabaseErrorKind::ForeignKeyViolation => Some(Violation::ForeignKey),
        DatabaseErrorKind::CheckViolation => Some(Violation::Check),
        // SQLite runs ON DELETE RESTRICT as an internal trigger, so that refusal arrives with
        // the trigger's error code and only its message says what it is.
        _ if info.message() == "FOREIGN KEY constraint failed" => Some(Violation::ForeignKey),
        _ if info.message().starts_with("CHECK constraint failed") => Some(Violation::Check),
        _ => Rule::ALL
            .into_iter()
            .find(|rule| info.message() == rule.code())
            .map(Violation::Rule),
    }
}
