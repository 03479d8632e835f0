//! OTLP/HTTP: export requests POSTed as protobuf (prost encoding of the
//! official types) with a blocking client (ureq), bounded by timeouts.

use super::Endpoint;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message;
use std::time::{Duration, Instant};

/// How long connecting to the collector may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// The first wait between two attempts; it doubles after each.
const FIRST_BACKOFF: Duration = Duration::from_millis(200);

/// Why a request was not taken.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// Worth trying again: no connection, a timeout, 429, 502, 503, 504.
    #[error("the collector at {url} did not take the spans: {why}")]
    Retryable {
        /// The URL.
        url: String,
        /// What happened.
        why: String,
    },
    /// The collector refused the request.
    #[error("the collector at {url} refused the spans: {why}")]
    Refused {
        /// The URL.
        url: String,
        /// What it answered.
        why: String,
    },
}

/// An OTLP/HTTP client.
pub struct Client {
    agent: ureq::Agent,
    endpoint: Endpoint,
}

impl Client {
    /// A client of `endpoint`.
    pub fn new(endpoint: Endpoint) -> Client {
        let agent = ureq::AgentBuilder::new().timeout_connect(CONNECT_TIMEOUT).build();
        Client { agent, endpoint }
    }

    /// The service name of the resource.
    pub fn service(&self) -> &str {
        &self.endpoint.service
    }

    /// One attempt to send `body` (an encoded request), taking at most
    /// `timeout`.
    fn attempt(&self, body: &[u8], timeout: Duration) -> Result<(), SendError> {
        let mut req =
            self.agent.post(&self.endpoint.url).timeout(timeout).set("Content-Type", "application/x-protobuf");
        for (k, v) in &self.endpoint.headers {
            req = req.set(k, v);
        }
        let url = self.endpoint.url.clone();
        match req.send_bytes(body) {
            Ok(_) => Ok(()),
            Err(ureq::Error::Status(code, resp)) => {
                let why = format!("HTTP {code} {}", resp.status_text());
                if matches!(code, 429 | 502 | 503 | 504) {
                    Err(SendError::Retryable { url, why })
                } else {
                    Err(SendError::Refused { url, why })
                }
            }
            Err(ureq::Error::Transport(t)) => Err(SendError::Retryable { url, why: t.to_string() }),
        }
    }

    /// Sends `request`: up to `attempts` tries, each taking at most
    /// `timeout`, waiting [`FIRST_BACKOFF`] (doubling) between them, none
    /// started after `deadline`.
    pub fn send(
        &self,
        request: &ExportTraceServiceRequest,
        attempts: u32,
        timeout: Duration,
        deadline: Option<Instant>,
    ) -> Result<(), SendError> {
        let body = request.encode_to_vec();
        let mut backoff = FIRST_BACKOFF;
        let mut tried = 0;
        loop {
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            let this_timeout = left.map_or(timeout, |l| l.min(timeout)).max(Duration::from_millis(1));
            let result = self.attempt(&body, this_timeout);
            tried += 1;
            match result {
                Ok(()) => return Ok(()),
                Err(e @ SendError::Refused { .. }) => return Err(e),
                Err(e) => {
                    let out_of_time = deadline.is_some_and(|d| Instant::now() + backoff >= d);
                    if tried >= attempts || out_of_time {
                        return Err(e);
                    }
                    std::thread::sleep(backoff);
                    backoff *= 2;
                }
            }
        }
    }
}
