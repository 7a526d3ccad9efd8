//! What every backend's repository statements share: page probes, row conversion, checks on
//! affected rows, and the mapping of schema constraints to domain refusals.

use petstore_core::{CategoryId, DomainError, Name, PageSize, RepoResult};

use crate::error::{StoreError, Violation, violation};

/// A page query reads one row more than the page holds, to tell whether another page follows.
pub(crate) fn probe(limit: PageSize) -> i64 {
    i64::from(limit.get()) + 1
}

pub(crate) fn convert<R, T: TryFrom<R, Error = StoreError>>(rows: Vec<R>) -> RepoResult<Vec<T>> {
    rows.into_iter()
        .map(|row| T::try_from(row).map_err(DomainError::from))
        .collect()
}

pub(crate) fn convert_one<R, T: TryFrom<R, Error = StoreError>>(
    row: Option<R>,
) -> RepoResult<Option<T>> {
    row.map(T::try_from).transpose().map_err(DomainError::from)
}

/// An UPDATE or DELETE by id touched no row: the use case checked the row exists in this
/// same transaction, so this is a store bug, not a client error.
pub(crate) fn exactly_one(affected: usize, what: &str, id: i64) -> RepoResult<()> {
    if affected == 1 {
        Ok(())
    } else {
        Err(DomainError::storage(format!(
            "{what} {id}: expected to change 1 row, changed {affected}"
        )))
    }
}

/// Maps a constraint the schema enforces to the domain refusal it stands for; any other
/// failure goes through the store's general mapping.
pub(crate) fn refuse(
    error: diesel::result::Error,
    refusal: impl FnOnce(Violation) -> Option<DomainError>,
) -> DomainError {
    violation(&error)
        .and_then(refusal)
        .unwrap_or_else(|| StoreError::from(error).into())
}

/// A LIKE pattern matching `needle` anywhere, with LIKE's wildcards in it taken literally.
pub(crate) fn contains_pattern(needle: &str) -> String {
    let mut pattern = String::with_capacity(needle.len() + 2);
    pattern.push('%');
    for c in needle.chars() {
        if matches!(c, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

pub(crate) fn name_taken(violation: Violation, name: &Name) -> Option<DomainError> {
    (violation == Violation::Unique).then(|| DomainError::CategoryExists {
        name: name.as_str().to_owned(),
    })
}

pub(crate) fn unknown_category(violation: Violation, id: CategoryId) -> Option<DomainError> {
    (violation == Violation::ForeignKey).then_some(DomainError::UnknownCategory { id })
}

#[cfg(test)]
mod tests {
    use super::contains_pattern;

    #[test]
    fn like_wildcards_in_a_search_are_taken_literally() {
        assert_eq!(contains_pattern("rex"), "%rex%");
        assert_eq!(contains_pattern("100%_\\"), "%100\\%\\_\\\\%");
    }
}
