//! REST errors: a status code and `{"error": "..."}`.

use std::time::Duration;

use axum::extract::rejection::BytesRejection;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use cellar_table::TableError;

use crate::filter::FilterError;
use crate::state::BlockingTaskFailed;

/// What a REST request can fail with; each maps to one HTTP status.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    Unauthorized(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error("the request body is larger than --max-request-bytes ({0} bytes)")]
    TooLarge(usize),
    #[error("the request took longer than --request-timeout ({}s)", .0.as_secs())]
    Timeout(Duration),
    #[error("{0}")]
    Internal(String),
    #[error("the server is shutting down")]
    ShuttingDown,
}

impl ApiError {
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::Timeout(_) => StatusCode::GATEWAY_TIMEOUT,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
            ApiError::ShuttingDown => StatusCode::SERVICE_UNAVAILABLE,
        }
    }
}

/// Seconds a client told the server is unavailable should wait before it retries.
pub(super) const RETRY_AFTER_SECS: &str = "1";

/// Every error's body: `{"error": "..."}`.
pub(super) fn json_body(message: &str) -> String {
    serde_json::json!({ "error": message }).to_string()
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json_body(&self.to_string());
        let mut response = (
            self.status(),
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response();
        match self {
            ApiError::Unauthorized(_) => {
                response.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    header::HeaderValue::from_static("Bearer"),
                );
            }
            ApiError::ShuttingDown => {
                response.headers_mut().insert(
                    header::RETRY_AFTER,
                    header::HeaderValue::from_static(RETRY_AFTER_SECS),
                );
            }
            _ => {}
        }
        response
    }
}

impl From<TableError> for ApiError {
    fn from(e: TableError) -> Self {
        match e {
            TableError::TableNotFound(_) | TableError::FamilyNotFound { .. } => {
                ApiError::NotFound(e.to_string())
            }
            TableError::TableExists(_)
            | TableError::FamilyExists { .. }
            | TableError::StaleHandle(_) => ApiError::Conflict(e.to_string()),
            TableError::InvalidArgument(_) => ApiError::BadRequest(e.to_string()),
            TableError::Engine(_) | TableError::Corruption { .. } => {
                ApiError::Internal(e.to_string())
            }
        }
    }
}

impl From<FilterError> for ApiError {
    fn from(e: FilterError) -> Self {
        ApiError::BadRequest(e.to_string())
    }
}

impl From<BlockingTaskFailed> for ApiError {
    fn from(e: BlockingTaskFailed) -> Self {
        ApiError::Internal(e.to_string())
    }
}

/// A body that could not be read: too large (`413`) or broken (`400`).
pub fn body_error(e: BytesRejection, limit: usize) -> ApiError {
    if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::TooLarge(limit)
    } else {
        ApiError::BadRequest(format!("cannot read the request body: {e}"))
    }
}
