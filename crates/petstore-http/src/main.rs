//! `petstore`: the pet store service. `petstore --help` explains it all.

use std::process::ExitCode;

use petstore_http::cli::{self, Command, Invocation};
use petstore_http::logging;

#[actix_web::main]
async fn main() -> ExitCode {
    // Before anything else runs, parsing included: a SIGHUP from a reload during a start
    // must not end it. (A command line naming `serve` anywhere is taken for one: the other
    // commands are short, and a stray word only makes one of them ignore SIGHUP.)
    let signals = std::env::args_os()
        .any(|arg| arg == "serve")
        .then(cli::Signals::listen);
    let cli = match cli::parse_command_line(std::env::args_os()) {
        Ok(Invocation::Run(cli)) => cli,
        Ok(Invocation::PrintConfig(settings)) => {
            print!("{settings}");
            return ExitCode::SUCCESS;
        }
        Err(error) => error.exit(),
    };
    logging::init_logging(cli.log_format);
    let outcome = match cli.command {
        Command::Serve(args) => {
            let signals = signals.unwrap_or_else(cli::Signals::listen);
            cli::serve(*args, signals).await
        }
        Command::Migrate(args) => cli::migrate(&args),
        Command::Keys { action, database } => cli::keys(action, &database),
        Command::Openapi => cli::print_openapi(),
        Command::Backup(args) => cli::backup(&args),
        Command::Copy(args) => cli::copy(&args),
        Command::Check(args) => match cli::check(&args) {
            // Violations are the answer, already printed: not a failure of the command.
            Ok(false) => return ExitCode::FAILURE,
            other => other.map(drop),
        },
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // `:#` shows the whole chain: "cannot listen on …: address in use".
            let error = format!("{error:#}");
            tracing::error!(%error, "petstore failed");
            ExitCode::FAILURE
        }
    }
}
