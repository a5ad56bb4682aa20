//! The CLI's error type and how each kind maps to an exit code.

use std::fmt;
use std::io;

/// Exit codes, documented in every command's `--help`.
pub const EXIT_OK: u8 = 0;
pub const EXIT_DAMAGED: u8 = 1;
pub const EXIT_USAGE: u8 = 2;

/// Text appended to every `--help`.
pub const EXIT_CODES_HELP: &str = "\
Exit codes:
  0  success (for `check`: every file verified, warnings allowed)
  1  damage found: a corrupt or missing file, or a file that could not be read
     (for `serve`: the server stopped with an error)
  2  usage error: bad arguments, or the path given is not a file or database";

/// How a command ended when it did not fail outright.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Everything read and verified.
    Clean,
    /// The command printed its report, but it found damage (exit code 1).
    Damaged,
}

#[derive(Debug)]
pub enum CliError {
    /// Bad arguments or a path that is not what the command needs (exit code 2).
    Usage(String),
    /// An engine error: corruption (naming file and offset), I/O, unsupported version.
    Engine(cellar_engine::Error),
    /// Writing the report to stdout failed.
    Output(io::Error),
    /// The server stopped with an error (the database could not be opened, a listener
    /// failed).
    Server(String),
}

impl CliError {
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) => EXIT_USAGE,
            CliError::Engine(_) | CliError::Output(_) | CliError::Server(_) => EXIT_DAMAGED,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Usage(m) => write!(f, "usage error: {m}"),
            CliError::Engine(e) => write!(f, "{e}"),
            CliError::Output(e) => write!(f, "cannot write output: {e}"),
            CliError::Server(m) => write!(f, "server: {m}"),
        }
    }
}

impl std::error::Error for CliError {}

impl From<cellar_engine::Error> for CliError {
    fn from(e: cellar_engine::Error) -> Self {
        CliError::Engine(e)
    }
}

/// `writeln!` to the report writer fails only when stdout does.
impl From<io::Error> for CliError {
    fn from(e: io::Error) -> Self {
        CliError::Output(e)
    }
}

pub type CliResult<T> = Result<T, CliError>;
