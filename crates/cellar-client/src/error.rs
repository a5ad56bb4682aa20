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
    /// A status the channel made up for a failed or closed connection (UNKNOWN or
    /// CANCELLED with a transport error as its source; a server's statuses carry no
    /// source) becomes UNAVAILABLE, the code gRPC gives a server that cannot be reached.
    fn from(s: tonic::Status) -> Self {
        let source = std::error::Error::source(&s);
        if source.is_some_and(|e| e.is::<tonic::transport::Error>()) {
            if let Some(source) = source {
                let mut reason = source.to_string();
                let mut next = source.source();
                while let Some(e) = next {
                    reason.push_str(": ");
                    reason.push_str(&e.to_string());
                    next = e.source();
                }
                return ClientError::Status(Box::new(tonic::Status::unavailable(format!(
                    "the connection to the server failed: {reason}"
                ))));
            }
        }
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
