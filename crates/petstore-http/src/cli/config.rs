//! `petstore serve --config FILE`: `serve`'s settings from a TOML file, each under its flag's
//! own name without the dashes (`db-wait-ms = 2000`). A flag wins over its environment
//! variable, which wins over the file, which wins over the default: the file's settings are
//! added to the command line only where neither a flag nor the environment gave one, and
//! clap parses the result as it parses any command line, so every rule a flag has (its type,
//! its bounds) holds for the file too. `--print-config` shows the settings in effect.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use clap::parser::ValueSource;
use clap::{Arg, ArgAction, ArgMatches, CommandFactory, FromArgMatches};
use toml::de::{DeTable, DeValue};

use super::{Cli, Command};

/// What the command line asks for.
#[derive(Debug)]
pub enum Invocation {
    /// Run the command.
    Run(Cli),
    /// `serve --print-config`: print this (the settings in effect, as TOML) and exit.
    PrintConfig(String),
}

/// Why the command line cannot run.
#[derive(Debug)]
pub enum CommandLineError {
    /// A flag or an environment variable clap refused; also `--help` and `--version`.
    Clap(clap::Error),
    /// The config file: missing, not TOML, an unknown setting, a wrong type or value.
    Config(String),
}

impl CommandLineError {
    /// Prints the error (or the help asked for) and exits as clap does: 2 for a mistake.
    pub fn exit(self) -> ! {
        match self {
            CommandLineError::Clap(error) => error.exit(),
            CommandLineError::Config(message) => {
                eprintln!("error: {message}");
                std::process::exit(2)
            }
        }
    }
}

impl From<clap::Error> for CommandLineError {
    fn from(error: clap::Error) -> Self {
        CommandLineError::Clap(error)
    }
}

/// The flags a config file cannot set: the file's own, and those that print and exit.
const NOT_IN_A_FILE: [&str; 4] = ["config", "print-config", "help", "version"];

/// Parses `args` (the program's name first), with `serve --config`'s file under them.
pub fn parse_command_line(
    args: impl IntoIterator<Item = OsString>,
) -> Result<Invocation, CommandLineError> {
    let mut args: Vec<OsString> = args.into_iter().collect();
    let matches = Cli::command()
        .try_get_matches_from(&args)
        .map_err(|error| naming_the_variable(error, &args))?;
    let Some(("serve", serve)) = matches.subcommand() else {
        return Ok(Invocation::Run(Cli::from_arg_matches(&matches)?));
    };
    let mut from_file = Vec::new();
    if let Some(path) = serve.get_one::<PathBuf>("config") {
        let (added, names) = file_arguments(path, serve)?;
        args.extend(added);
        from_file = names;
    }
    let matches = Cli::command()
        .try_get_matches_from(&args)
        .map_err(|error| naming_the_variable(error, &args))?;
    let cli = Cli::from_arg_matches(&matches)?;
    if let Command::Serve(_) = &cli.command {
        check_bootstrap_key()?;
    }
    // Checked here rather than by clap's `requires`, which would refuse a flag whose partner
    // the file gives before the file is read.
    if let Command::Serve(serve) = &cli.command
        && serve.tls_cert.is_some() != serve.tls_key.is_some()
    {
        return Err(CommandLineError::Clap(Cli::command().error(
            clap::error::ErrorKind::MissingRequiredArgument,
            "--tls-cert and --tls-key go together: give both, or neither",
        )));
    }
    // Each file alone is checked as its flag is read; whether the key is the certificate's
    // only shows once both are read: a bad setting all the same (exit 2), found before the
    // database is opened.
    if let Command::Serve(serve) = &cli.command
        && let (Some(cert), Some(key)) = (&serve.tls_cert, &serve.tls_key)
    {
        crate::tls::ServerCertificate::load(cert, key)
            .map_err(|error| CommandLineError::Config(error.to_string()))?;
    }
    match matches.subcommand() {
        Some(("serve", serve)) if serve.get_flag("print_config") => Ok(Invocation::PrintConfig(
            settings_in_effect(serve, &from_file),
        )),
        _ => Ok(Invocation::Run(cli)),
    }
}

/// The environment variable that gave the value clap refused, named in the error: clap's
/// own message names only the flag, which the operator never typed. A value from a flag
/// keeps clap's error; one from the config file never reaches here (its trial names the file
/// and line).
fn naming_the_variable(error: clap::Error, args: &[OsString]) -> CommandLineError {
    use clap::error::{ContextKind, ContextValue};
    let Some(ContextValue::String(shown)) = error.get(ContextKind::InvalidArg) else {
        return error.into();
    };
    let long = shown
        .trim_start_matches("--")
        .split([' ', '='])
        .next()
        .unwrap_or_default();
    let typed = args.iter().any(|arg| {
        let arg = arg.to_string_lossy();
        arg == format!("--{long}") || arg.starts_with(&format!("--{long}="))
    });
    let mut command = Cli::command();
    command.build();
    let variable = std::iter::once(&command)
        .chain(command.get_subcommands())
        .flat_map(|command| command.get_arguments())
        .find(|arg| arg.get_long() == Some(long))
        .and_then(|arg| arg.get_env())
        .filter(|variable| !typed && std::env::var_os(variable).is_some());
    let Some(variable) = variable else {
        return error.into();
    };
    let reason = error.to_string();
    let reason = reason.lines().next().unwrap_or_default();
    let reason = reason.trim_start_matches("error: ");
    CommandLineError::Config(format!(
        "the environment variable {}: {reason}",
        variable.to_string_lossy()
    ))
}

/// `PETSTORE_BOOTSTRAP_ADMIN_KEY`, which only the environment gives (a secret on a command
/// line is seen by every user of the machine), checked with the other settings: before the
/// database is opened.
fn check_bootstrap_key() -> Result<(), CommandLineError> {
    let Some(text) = std::env::var_os("PETSTORE_BOOTSTRAP_ADMIN_KEY") else {
        return Ok(());
    };
    let reason = match text.to_str().map(petstore_core::KeySecret::parse) {
        Some(Ok(_)) => return Ok(()),
        Some(Err(error)) => error.reason,
        None => "is not UTF-8".into(),
    };
    Err(CommandLineError::Config(format!(
        "the environment variable PETSTORE_BOOTSTRAP_ADMIN_KEY: the key {reason}"
    )))
}

/// `serve`'s settings, as the command line names them (globals included).
fn serve_settings() -> Vec<Arg> {
    let mut command = Cli::command();
    command.build();
    command
        .find_subcommand("serve")
        .map(|serve| {
            serve
                .get_arguments()
                .filter(|arg| {
                    arg.get_long()
                        .is_some_and(|long| !NOT_IN_A_FILE.contains(&long))
                })
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// What a setting's value is in TOML.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Boolean,
    Integer,
    Text,
    ListOfText,
}

impl Kind {
    fn of(arg: &Arg) -> Kind {
        use std::any::TypeId;
        let type_id = arg.get_value_parser().type_id();
        let integers = [
            TypeId::of::<u16>(),
            TypeId::of::<u32>(),
            TypeId::of::<u64>(),
            TypeId::of::<usize>(),
            TypeId::of::<std::num::NonZeroU32>(),
        ];
        match arg.get_action() {
            ArgAction::SetTrue => Kind::Boolean,
            ArgAction::Append => Kind::ListOfText,
            _ if integers.iter().any(|integer| type_id == *integer) => Kind::Integer,
            _ => Kind::Text,
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Kind::Boolean => "true or false",
            Kind::Integer => "a whole number",
            Kind::Text => "a string",
            Kind::ListOfText => "a list of strings",
        }
    }
}

/// The command-line arguments the file adds (for the settings no flag and no environment
/// variable gave), and the names of the settings it gave.
fn file_arguments(
    path: &Path,
    serve: &ArgMatches,
) -> Result<(Vec<OsString>, Vec<String>), CommandLineError> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).map_err(|error| {
        CommandLineError::Config(format!("cannot read the config file {shown}: {error}"))
    })?;
    let table = DeTable::parse(&text)
        .map_err(|error| CommandLineError::Config(format!("{shown}: {error}")))?;
    let settings = serve_settings();
    let (mut added, mut names) = (Vec::new(), Vec::new());
    for (key, value) in table.get_ref() {
        let name = key.get_ref().as_ref();
        let at = format!("{shown}:{}", line_of(&text, key.span().start));
        let Some(arg) = settings.iter().find(|arg| arg.get_long() == Some(name)) else {
            return Err(CommandLineError::Config(format!(
                "{at}: unknown setting `{name}`: the settings are `petstore serve`'s flags \
                 without their dashes"
            )));
        };
        let kind = Kind::of(arg);
        let flags = as_flags(name, kind, value.get_ref()).ok_or_else(|| {
            CommandLineError::Config(format!("{at}: `{name}` must be {}", kind.describe()))
        })?;
        // The value is checked as its flag's would be, whatever gives the setting in the end.
        let trial = ["petstore".into(), "serve".into()]
            .into_iter()
            .chain(flags.clone());
        if let Err(error) = Cli::command().try_get_matches_from(trial) {
            let reason = error.to_string();
            let reason = reason.lines().next().unwrap_or_default();
            let reason = reason.trim_start_matches("error: ");
            return Err(CommandLineError::Config(format!(
                "{at}: `{name}`: {reason}"
            )));
        }
        let given = matches!(
            serve.value_source(arg.get_id().as_str()),
            Some(ValueSource::CommandLine | ValueSource::EnvVariable)
        );
        if !given {
            added.extend(flags);
            names.push(name.to_owned());
        }
    }
    Ok((added, names))
}

/// The 1-based line of the byte at `offset`.
fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset)
        .map_or(0, |before| before.matches('\n').count())
        + 1
}

/// The flags that say what `value` says, or `None` when it is not of the setting's kind.
fn as_flags(name: &str, kind: Kind, value: &DeValue<'_>) -> Option<Vec<OsString>> {
    let flag = |text: &str| OsString::from(format!("--{name}={text}"));
    match (kind, value) {
        (Kind::Boolean, DeValue::Boolean(true)) => Some(vec![OsString::from(format!("--{name}"))]),
        (Kind::Boolean, DeValue::Boolean(false)) => Some(Vec::new()),
        (Kind::Integer, DeValue::Integer(integer)) => {
            let number = i128::from_str_radix(integer.as_str(), integer.radix()).ok()?;
            Some(vec![flag(&number.to_string())])
        }
        (Kind::Text, DeValue::String(text)) => Some(vec![flag(text)]),
        (Kind::ListOfText, DeValue::Array(items)) => items
            .iter()
            .map(|item| match item.get_ref() {
                DeValue::String(text) => Some(flag(text)),
                _ => None,
            })
            .collect(),
        _ => None,
    }
}

/// `--print-config`: every setting of `serve` as a line of TOML, with where it came from; a
/// password in a URL masked.
fn settings_in_effect(serve: &ArgMatches, from_file: &[String]) -> String {
    let mut text = String::from("# The settings `petstore serve` would run with.\n");
    for arg in serve_settings() {
        let Some(name) = arg.get_long() else { continue };
        let id = arg.get_id().as_str();
        let source = match serve.value_source(id) {
            Some(_) if from_file.iter().any(|given| given == name) => "the config file",
            Some(ValueSource::CommandLine) => "a flag",
            Some(ValueSource::EnvVariable) => "the environment",
            Some(ValueSource::DefaultValue) => "the default",
            Some(_) | None => {
                let _ = writeln!(text, "# {name} is not set");
                continue;
            }
        };
        let raw: Vec<String> = serve
            .get_raw(id)
            .map(|values| {
                values
                    .map(|value| masked(&value.to_string_lossy()))
                    .collect()
            })
            .unwrap_or_default();
        let value = match Kind::of(&arg) {
            Kind::Boolean => serve.get_flag(id).to_string(),
            Kind::Integer => raw.join(""),
            Kind::Text => quoted(&raw.join("")),
            Kind::ListOfText => {
                format!(
                    "[{}]",
                    raw.iter()
                        .map(|item| quoted(item))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
        };
        let _ = writeln!(text, "{name} = {value}  # {source}");
    }
    text
}

/// A TOML basic string: JSON's string escapes are TOML's.
fn quoted(text: &str) -> String {
    serde_json::Value::from(text).to_string()
}

/// A URL with its password masked (the store's own redaction, as its log lines show it);
/// any other value as it is.
fn masked(value: &str) -> String {
    if value.contains("://") {
        petstore_store::redact_password(value)
    } else {
        value.to_owned()
    }
}

#[cfg(test)]
mod tests;
