//! Who may do what: API keys, roles, and the one table of what each role is granted.
//!
//! Key secrets are generated outside this crate (it does no I/O, and randomness comes from the
//! OS); this module formats them, hashes them for storage and compares them in constant time.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::error::DomainError;
use crate::ids::{KeyId, OwnerId};
use crate::permission::Permission;
use crate::query::OrderScope;
use crate::validation::ValidationError;
use crate::values::Name;

/// What a key may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Everything, and managing keys.
    Admin,
    /// The catalogue, the inventory and every order.
    Staff,
    /// Reads the catalogue and inventory; places, lists, reads and cancels its own orders.
    Customer,
}

impl Role {
    /// Every role.
    pub const ALL: [Role; 3] = [Role::Admin, Role::Staff, Role::Customer];

    /// The role as the API spells it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Staff => "staff",
            Role::Customer => "customer",
        }
    }

    /// Whether this role is granted `permission`: the service's whole authorization policy.
    pub const fn grants(self, permission: Permission) -> bool {
        match permission {
            Permission::Shop => true,
            Permission::ManageStore => matches!(self, Role::Admin | Role::Staff),
            Permission::Administer => matches!(self, Role::Admin),
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Role {
    type Err = ValidationError;

    fn from_str(text: &str) -> Result<Self, ValidationError> {
        Role::ALL
            .into_iter()
            .find(|role| role.as_str() == text)
            .ok_or_else(|| ValidationError::new("role", "must be one of admin, staff, customer"))
    }
}

/// Who asks for a use case. Every use case whose answer depends on the caller takes one, and
/// the rules of who may do what are checked there, so an embedder gets them too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    /// A client that presented a valid API key.
    Key {
        /// The key.
        id: KeyId,
        /// Its role.
        role: Role,
    },
    /// The program acting on its own authority: the `petstore` command line, or a service
    /// that embeds this crate. It may do everything and owns no orders.
    Operator,
}

impl Caller {
    /// A client holding key `id` with `role`.
    pub const fn key_holder(id: KeyId, role: Role) -> Self {
        Caller::Key { id, role }
    }

    /// The caller's role (the operator has the admin's).
    pub const fn role(self) -> Role {
        match self {
            Caller::Key { role, .. } => role,
            Caller::Operator => Role::Admin,
        }
    }

    /// The key the caller presented, if any.
    pub const fn key(self) -> Option<KeyId> {
        match self {
            Caller::Key { id, .. } => Some(id),
            Caller::Operator => None,
        }
    }

    /// Whether the caller's role grants `permission`.
    pub fn may(self, permission: Permission) -> bool {
        self.role().grants(permission)
    }

    /// `Ok` if the caller's role grants `permission`, else [`DomainError::Forbidden`].
    pub fn require(self, permission: Permission) -> Result<(), DomainError> {
        if self.may(permission) {
            Ok(())
        } else {
            Err(DomainError::Forbidden {
                role: self.role().as_str(),
                needs: permission,
            })
        }
    }

    /// The owner recorded on the orders this caller places: its key, or nobody for the
    /// operator.
    pub fn owner(self) -> Option<OwnerId> {
        self.key().map(OwnerId::from)
    }

    /// The orders this caller may see: its own for a customer, all for staff, admin and the
    /// operator.
    pub fn order_scope(self) -> OrderScope {
        match (self.may(Permission::ManageStore), self.owner()) {
            (false, Some(owner)) => OrderScope::OwnedBy(owner),
            _ => OrderScope::All,
        }
    }
}

/// A key to create.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewApiKey {
    /// What the key is for ("warehouse sync", "Alice").
    pub name: Name,
    /// What it may do.
    pub role: Role,
}

/// A key as stored and listed: never its secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ApiKey {
    /// Its id.
    pub id: KeyId,
    /// What it is for.
    pub name: Name,
    /// What it may do.
    pub role: Role,
    /// The secret's first characters, to recognise it in a list.
    pub prefix: String,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it was revoked; a revoked key authenticates nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<DateTime<Utc>>,
}

/// A key's secret, as presented by a client or just generated. Only its hash is stored.
///
/// Generated secrets are `pst_` followed by 64 hex digits (256 random bits). Any text of 32 to
/// 256 visible ASCII characters is accepted as a secret, so an operator may choose the bootstrap
/// admin key.
#[derive(Clone, PartialEq, Eq)]
pub struct KeySecret(String);

impl fmt::Debug for KeySecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A secret never reaches a log through `{:?}`.
        write!(f, "KeySecret({}…)", self.prefix())
    }
}

impl KeySecret {
    /// Characters of the secret kept in clear, for lookup and for recognising a key.
    pub const PREFIX_CHARS: usize = 12;

    /// A new secret from 32 random bytes (from the OS's generator).
    pub fn from_random(bytes: [u8; 32]) -> Self {
        let mut text = String::with_capacity(68);
        text.push_str("pst_");
        for byte in bytes {
            text.push_str(&format!("{byte:02x}"));
        }
        Self(text)
    }

    /// Checks a presented secret's form: 32 to 256 visible ASCII characters.
    pub fn parse(text: &str) -> Result<Self, ValidationError> {
        let ok = (32..=256).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_graphic());
        if ok {
            Ok(Self(text.to_owned()))
        } else {
            Err(ValidationError::new(
                "key",
                "must be 32 to 256 visible ASCII characters",
            ))
        }
    }

    /// The secret, to show once to whoever created it.
    pub fn reveal(&self) -> &str {
        &self.0
    }

    /// The first characters, stored in clear to find the key again.
    pub fn prefix(&self) -> &str {
        &self.0[..Self::PREFIX_CHARS]
    }

    /// The SHA-256 hash that is stored instead of the secret.
    pub fn hash(&self) -> [u8; 32] {
        Sha256::digest(self.0.as_bytes()).into()
    }

    /// Whether this secret hashes to `stored`, compared in constant time.
    pub fn matches(&self, stored: &[u8; 32]) -> bool {
        hashes_match(&self.hash(), stored)
    }
}

/// Whether two secret hashes are equal, compared in constant time.
pub fn hashes_match(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.ct_eq(b).into()
}

/// A stored key with the hash of its secret, as a store hands it to authentication.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredKey {
    /// The key.
    pub key: ApiKey,
    /// The SHA-256 hash of its secret.
    pub hash: [u8; 32],
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_table() {
        use Permission::*;
        use Role::*;
        let expected = [
            (Admin, [true, true, true]),
            (Staff, [true, true, false]),
            (Customer, [true, false, false]),
        ];
        for (role, grants) in expected {
            assert_eq!(
                [
                    role.grants(Shop),
                    role.grants(ManageStore),
                    role.grants(Administer)
                ],
                grants,
                "{role}"
            );
        }
    }

    #[test]
    fn customers_see_their_own_orders_staff_see_all() {
        let key = KeyId::new(7).unwrap();
        let customer = Caller::key_holder(key, Role::Customer);
        assert_eq!(
            customer.order_scope(),
            OrderScope::OwnedBy(OwnerId::new(7).unwrap())
        );
        assert_eq!(
            Caller::key_holder(key, Role::Staff).order_scope(),
            OrderScope::All
        );
        assert_eq!(
            Caller::key_holder(key, Role::Admin).order_scope(),
            OrderScope::All
        );
        assert_eq!(Caller::Operator.order_scope(), OrderScope::All);
        assert_eq!(Caller::Operator.owner(), None);
    }

    #[test]
    fn a_role_without_the_permission_is_forbidden() {
        let customer = Caller::key_holder(KeyId::new(3).unwrap(), Role::Customer);
        assert_eq!(customer.require(Permission::Shop), Ok(()));
        let refused = customer.require(Permission::ManageStore).unwrap_err();
        assert_eq!(refused.code(), "forbidden");
        assert_eq!(refused.to_string(), "a customer key may not do this");
        assert_eq!(Caller::Operator.require(Permission::Administer), Ok(()));
    }

    #[test]
    fn secrets_are_hashed_and_compared_whole() {
        let secret = KeySecret::from_random([7; 32]);
        assert!(secret.reveal().starts_with("pst_0707"));
        assert_eq!(secret.reveal().len(), 68);
        assert_eq!(secret.prefix(), "pst_07070707");
        let stored = secret.hash();
        assert!(secret.matches(&stored));
        let other = KeySecret::from_random([8; 32]);
        assert!(!other.matches(&stored));
        assert!(
            !format!("{secret:?}").contains(&secret.reveal()[12..]),
            "Debug hides the secret"
        );
    }

    #[test]
    fn presented_secrets_must_look_like_secrets() {
        assert!(KeySecret::parse(&"a".repeat(32)).is_ok());
        assert!(KeySecret::parse(&"a".repeat(31)).is_err());
        assert!(KeySecret::parse(&"a".repeat(257)).is_err());
        assert!(KeySecret::parse(&format!("{} b", "a".repeat(40))).is_err());
        assert!(KeySecret::parse(&format!("{}é", "a".repeat(40))).is_err());
    }
}
