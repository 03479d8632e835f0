//! API errors as JSON bodies with the right status.

use crate::store::StoreError;
use acp_tee_shared::api::ApiError;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

/// An error a handler returns; becomes `{"error": "..."}`.
#[derive(Debug)]
pub enum AppError {
    /// 400: the request was wrong.
    BadRequest(String),
    /// 404: no such thing.
    NotFound(String),
    /// 401: the token is missing or wrong.
    Unauthorized,
    /// 403: this server, or this client, may not change traces.
    Forbidden(String),
    /// 409: the trace cannot be changed so now (recorded now, pinned).
    Conflict(String),
    /// 413: the request's body is larger than the route takes.
    TooLarge(String),
    /// 415: the request's body is not JSON.
    NotJson(String),
    /// 503: the server will not do it now (too many exports, a query out of time).
    Unavailable(String),
    /// 500: the store failed.
    Internal(String),
}

impl From<StoreError> for AppError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NoSuchTrace(_) | StoreError::NoTraces => AppError::NotFound(e.to_string()),
            StoreError::Search(_) => AppError::BadRequest(e.to_string()),
            _ if e.is_interrupted() => AppError::Unavailable(
                "the query took too long and was stopped; search for rarer words or add a filter".to_owned(),
            ),
            other => {
                tracing::error!("serve: {other}");
                AppError::Internal(other.to_string())
            }
        }
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let (status, error) = match self {
            AppError::BadRequest(m) => (StatusCode::BAD_REQUEST, m),
            AppError::NotFound(m) => (StatusCode::NOT_FOUND, m),
            AppError::Unauthorized => {
                (StatusCode::UNAUTHORIZED, "a token is required: open the URL acp-tee serve printed".to_owned())
            }
            AppError::Forbidden(m) => (StatusCode::FORBIDDEN, m),
            AppError::Conflict(m) => (StatusCode::CONFLICT, m),
            AppError::TooLarge(m) => (StatusCode::PAYLOAD_TOO_LARGE, m),
            AppError::NotJson(m) => (StatusCode::UNSUPPORTED_MEDIA_TYPE, m),
            AppError::Unavailable(m) => (StatusCode::SERVICE_UNAVAILABLE, m),
            AppError::Internal(m) => (StatusCode::INTERNAL_SERVER_ERROR, m),
        };
        (status, Json(ApiError { error })).into_response()
    }
}
