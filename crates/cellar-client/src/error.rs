//! The client's one error type.

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The server answered with an error status; [`ClientError::code`] tells which.
    #[error("{}: {}", .0.code(), .0.message())]
    Status(Box<tonic::Status>),
    /// The connection could not be set up (address, TLS).
    #[error("cannot connect to {endpoint}: {source}")]
    Transport {
        endpoint: String,
        #[source]
        source: tonic::transport::Error,
    },
    /// The call was refused before it was sent (a bad argument of this client).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// Reading local input (a file to load) or starting the blocking client's runtime.
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

impl From<tonic::Status> for ClientError {
    fn from(s: tonic::Status) -> Self {
        ClientError::Status(Box::new(s))
    }
}

impl ClientError {
    /// The gRPC status code, when the server (or the channel) answered with one.
    pub fn code(&self) -> Option<tonic::Code> {
        match self {
            ClientError::Status(s) => Some(s.code()),
            _ => None,
        }
    }

    /// Whether retrying the same idempotent call may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self.code(), Some(tonic::Code::Unavailable))
    }
}

pub type Result<T, E = ClientError> = std::result::Result<T, E>;
