//! OpenTelemetry: the mapping from frames to spans (`mapping/`,
//! [docs/otlp.md](../../../docs/otlp.md)), the OTLP/HTTP client (`send.rs`)
//! and the recorder's live export (`live.rs`). Spans are the official
//! `opentelemetry-proto` types: serde gives the OTLP/JSON mapping, prost the
//! protobuf encoding.

pub mod family;
mod ids;
pub mod live;
pub mod mapping;
mod send;

pub use live::{Batch, LiveExport, EXPORT_TIMEOUT, RETRIES};
pub use mapping::{FrameIn, MapOptions, Mapper, TraceScope};
pub use send::{Client, SendError};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::InstrumentationScope;
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span};

/// The service name when `OTEL_SERVICE_NAME` is not set.
pub const DEFAULT_SERVICE_NAME: &str = "acp-tee";

/// Why OTLP settings cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum OtlpError {
    /// No endpoint given and none in the environment.
    #[error("no OTLP endpoint: pass --otlp-endpoint=URL or set OTEL_EXPORTER_OTLP_ENDPOINT")]
    NoEndpoint,
    /// The endpoint is not an http:// URL.
    #[error("the OTLP endpoint `{0}` is not an http:// URL; give one such as http://localhost:4318 (for https, run an OpenTelemetry Collector nearby)")]
    BadEndpoint(String),
    /// A header of `OTEL_EXPORTER_OTLP_HEADERS` is not `key=value`.
    #[error("OTEL_EXPORTER_OTLP_HEADERS holds `{0}`, which is not key=value; write key1=value1,key2=value2")]
    BadHeader(String),
}

/// Where and how spans are sent: the traces URL, headers and service name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The URL spans are POSTed to (`.../v1/traces`).
    pub url: String,
    /// Headers sent with every request.
    pub headers: Vec<(String, String)>,
    /// `service.name` of the resource.
    pub service: String,
}

impl Endpoint {
    /// The endpoint of `--otlp-endpoint` (`flag`: empty when given without
    /// a value), completed from the standard environment variables
    /// (`env`: e.g. `|k| std::env::var(k).ok()`): `OTEL_EXPORTER_OTLP_ENDPOINT`
    /// (a base URL, `/v1/traces` appended) or
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as is) when the flag has no
    /// value, `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_TRACES_HEADERS`
    /// and `OTEL_SERVICE_NAME`.
    pub fn resolve(flag: &str, env: impl Fn(&str) -> Option<String>) -> Result<Endpoint, OtlpError> {
        let non_empty = |k: &str| env(k).filter(|v| !v.trim().is_empty());
        let url = if !flag.is_empty() {
            traces_url(flag)
        } else if let Some(url) = non_empty("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            url.trim().to_owned()
        } else if let Some(base) = non_empty("OTEL_EXPORTER_OTLP_ENDPOINT") {
            traces_url(&base)
        } else {
            return Err(OtlpError::NoEndpoint);
        };
        if !url.starts_with("http://") {
            return Err(OtlpError::BadEndpoint(url));
        }
        let mut headers = Vec::new();
        for var in ["OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"] {
            for pair in non_empty(var).unwrap_or_default().split(',').filter(|p| !p.trim().is_empty()) {
                let (k, v) = pair.split_once('=').ok_or_else(|| OtlpError::BadHeader(pair.to_owned()))?;
                let v = percent_encoding::percent_decode_str(v.trim()).decode_utf8_lossy().into_owned();
                headers.retain(|(name, _): &(String, String)| !name.eq_ignore_ascii_case(k.trim()));
                headers.push((k.trim().to_owned(), v));
            }
        }
        let service = service_name(&env);
        Ok(Endpoint { url, headers, service })
    }
}

/// A recording's live export: where to, and the mapping's options.
#[derive(Debug, Clone)]
pub struct LiveOptions {
    /// Where spans go.
    pub endpoint: Endpoint,
    /// The mapping's options.
    pub map: MapOptions,
}

impl LiveOptions {
    /// The recorder's arguments that carry these options (the headers and
    /// the service name reach it through the environment it inherits).
    pub fn recorder_args(&self) -> Vec<String> {
        let mut args = vec![format!("--otlp-url={}", self.endpoint.url)];
        if self.map.content {
            args.push("--otlp-content".into());
        }
        args.extend(["--otlp-trace-per".to_owned(), self.map.scope.as_str().to_owned()]);
        args
    }
}

/// `service.name` of the resource: `OTEL_SERVICE_NAME` (read through `env`)
/// unless unset or blank, else [`DEFAULT_SERVICE_NAME`].
pub fn service_name(env: impl Fn(&str) -> Option<String>) -> String {
    env("OTEL_SERVICE_NAME").filter(|v| !v.trim().is_empty()).unwrap_or_else(|| DEFAULT_SERVICE_NAME.to_owned())
}

/// `base` with `/v1/traces` appended, unless it ends so already.
fn traces_url(base: &str) -> String {
    let base = base.trim();
    if base.trim_end_matches('/').ends_with("/v1/traces") {
        base.to_owned()
    } else {
        format!("{}/v1/traces", base.trim_end_matches('/'))
    }
}

/// `spans` as one export request of service `service`.
pub fn request(spans: Vec<Span>, service: &str) -> ExportTraceServiceRequest {
    let resource = Resource {
        attributes: vec![
            mapping::kv("service.name", service),
            mapping::kv("service.version", env!("CARGO_PKG_VERSION")),
            mapping::kv("telemetry.sdk.name", "acp-tee"),
        ],
        ..Default::default()
    };
    let scope = InstrumentationScope {
        name: "acp-tee".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        ..Default::default()
    };
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(resource),
            scope_spans: vec![ScopeSpans { scope: Some(scope), spans, ..Default::default() }],
            ..Default::default()
        }],
    }
}
