//! `petstore keys`: API keys made, listed and revoked from the command line.

use clap::Subcommand;

use anyhow::anyhow;
use petstore_core::{Always, Caller, KeyId, KeyQuery, Name, NewApiKey, PageSize, Role, Service};
use petstore_store::AnyStore;

use super::DatabaseArgs;
use crate::auth::{generate_secret, log_key_created, log_key_revoked};

/// `petstore keys …`.
#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Create a key and print it, and nothing else, on standard output.
    Create {
        /// What the key may do.
        #[arg(long, value_parser = role_parser())]
        role: Role,
        /// What the key is for.
        #[arg(long)]
        name: String,
    },
    /// List keys (never their secrets).
    List,
    /// Revoke a key by id.
    Revoke {
        /// The key's id.
        id: i64,
    },
}

/// The roles by name, so that `--help` and a wrong value list them.
fn role_parser() -> impl clap::builder::TypedValueParser<Value = Role> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(Role::ALL.map(Role::as_str))
        .try_map(|text| text.parse::<Role>().map_err(|e| e.reason.into_owned()))
}

/// `petstore keys …`.
pub fn keys(action: KeysCommand, database: &DatabaseArgs) -> anyhow::Result<()> {
    // Keys are managed in an existing database: a mistyped path is an error, not a new file.
    // Listing only reads: the database is opened read-only and never migrated.
    let mut config = database.store_config();
    config.create = false;
    config.read_only = matches!(action, KeysCommand::List);
    let store = AnyStore::open(&config)?;
    let shop = Service::new(store);
    // The command line is the operator at the machine: it needs no key and may do everything.
    let operator = Caller::Operator;
    match action {
        KeysCommand::Create { role, name } => {
            let name = Name::parse(&name).map_err(|e| anyhow!("--name {}", e.reason))?;
            let secret = generate_secret()?;
            let key = shop
                .keys()
                .create(operator, NewApiKey { name, role }, &secret)?;
            log_key_created(&key, operator);
            println!("{}", secret.reveal());
        }
        KeysCommand::List => {
            let mut after = None;
            let mut table = comfy_table::Table::new();
            table
                .load_preset(comfy_table::presets::NOTHING)
                .set_header(["id", "role", "prefix", "created", "state", "name"]);
            if let Some(ids) = table.column_mut(0) {
                ids.set_cell_alignment(comfy_table::CellAlignment::Right);
            }
            loop {
                let query = KeyQuery {
                    after,
                    limit: PageSize::MAX_PAGE,
                };
                let page = shop.keys().list(operator, &query)?;
                for key in &page.items {
                    let state = if key.revoked_at.is_some() {
                        "revoked"
                    } else {
                        "active"
                    };
                    table.add_row([
                        key.id.to_string(),
                        key.role.to_string(),
                        key.prefix.to_string(),
                        key.created_at.format("%Y-%m-%d %H:%M:%S").to_string(),
                        state.to_owned(),
                        key.name.to_string(),
                    ]);
                }
                match page.next_after.map(KeyId::new) {
                    Some(Ok(next)) => after = Some(next),
                    _ => break,
                }
            }
            println!("{table}");
        }
        KeysCommand::Revoke { id } => {
            let id = KeyId::new(id).map_err(|e| anyhow!("key id {}", e.reason))?;
            shop.keys().revoke(operator, id, Always)?;
            log_key_revoked(id, operator);
        }
    }
    Ok(())
}
