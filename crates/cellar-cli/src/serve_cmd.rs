//! `cellar serve`: checks the flags, sets up logging and runs the server until a signal.

use crate::error::{CliError, Outcome};

pub fn run(args: cellar_server::ServeArgs) -> Result<Outcome, CliError> {
    init_logging();
    let config = args
        .into_config()
        .map_err(|e| CliError::Usage(e.to_string()))?;
    cellar_server::serve(config).map_err(|e| match e {
        cellar_server::ServeError::Bind { .. } | cellar_server::ServeError::Tls(_) => {
            CliError::Usage(e.to_string())
        }
        e => CliError::Server(e.to_string()),
    })?;
    Ok(Outcome::Clean)
}

/// One line per event on stderr; `RUST_LOG` overrides the level (info by default).
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}
