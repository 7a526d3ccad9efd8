//! Refusals of several lines at once (a checkout's, a delivery's): each line named with its
//! own refusal, and the code the whole is answered with.

use super::DomainError;

/// Why one line of a checkout or a delivery was refused: the line's number and the refusal
/// (for a checkout, the same a one-line order would meet: `unknown_pet`, `price_missing`,
/// `insufficient_stock`, `pet_not_available`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineRefusal {
    /// The line, from 1.
    pub line_no: u16,
    /// Why.
    pub error: DomainError,
}

impl LineRefusal {
    /// The body field the refusal is about: the line's units when it is short of stock, its
    /// pet otherwise.
    pub fn field(&self) -> String {
        let what = match self.error {
            DomainError::InsufficientStock { .. } => "quantity",
            _ => "petId",
        };
        format!("lines/{}/{what}", self.line_no - 1)
    }
}

/// The code of a checkout whose `lines` were refused: the most telling of theirs.
pub(super) fn refused_code(lines: &[LineRefusal]) -> &'static str {
    const TELLING: [&str; 4] = [
        "unknown_pet",
        "price_missing",
        "insufficient_stock",
        "pet_not_available",
    ];
    TELLING
        .into_iter()
        .find(|code| lines.iter().any(|line| line.error.code() == *code))
        .or_else(|| lines.first().map(|line| line.error.code()))
        .unwrap_or("validation_failed")
}

/// The code of a delivery whose `lines` were refused: a stale line's, or the first line's.
pub(super) fn delivery_code(lines: &[LineRefusal]) -> &'static str {
    lines
        .iter()
        .find(|line| matches!(line.error, DomainError::PreconditionFailed(_)))
        .or_else(|| lines.first())
        .map_or("validation_failed", |line| line.error.code())
}

/// The message of a checkout or a delivery whose `lines` were refused: each line, with why.
pub(super) fn lines_refused(lines: &[LineRefusal]) -> String {
    let each: Vec<String> = lines
        .iter()
        .map(|line| format!("line {}: {}", line.line_no, line.error))
        .collect();
    each.join("; ")
}
