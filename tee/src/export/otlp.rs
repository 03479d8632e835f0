//! OTLP: the spans of [`crate::otlp::Mapper`] as OTLP/JSON lines (one
//! `ExportTraceServiceRequest` per line, one [`Batch`] of spans each,
//! the protobuf JSON mapping of the official types, as the OpenTelemetry
//! Collector's `otlpjsonfile` receiver reads them), or sent to a collector
//! over OTLP/HTTP.
//!
//! Memory is bounded by the mapper's bounds and one batch.

use super::{each_frame, ExportError, ExportOptions, ExportSummary};
use crate::otlp::family::ToolSpans;
use crate::otlp::{request, Batch, Client, FrameIn, Mapper, EXPORT_TIMEOUT, RETRIES};
use crate::store::Store;
use acp_tee_shared::TraceMeta;
use opentelemetry_proto::tonic::trace::v1::Span;
use std::io::{self, Write};

/// Writes `traces` as OTLP/JSON lines.
pub fn write(
    store: &Store,
    traces: &[TraceMeta],
    opts: &ExportOptions,
    out: &mut dyn Write,
) -> Result<ExportSummary, ExportError> {
    let service = crate::otlp::service_name(|k| std::env::var(k).ok());
    batches(store, traces, opts, |spans| {
        serde_json::to_writer(&mut *out, &request(spans, &service)).map_err(io::Error::from)?;
        out.write_all(b"\n")?;
        Ok(())
    })
}

/// Sends `traces` to the collector of `client`; the summary and the spans
/// sent.
pub fn send(
    store: &Store,
    traces: &[TraceMeta],
    opts: &ExportOptions,
    client: &Client,
) -> Result<(ExportSummary, u64), ExportError> {
    let mut sent = 0;
    let summary = batches(store, traces, opts, |spans| {
        let n = spans.len() as u64;
        client.send(&request(spans, client.service()), RETRIES, EXPORT_TIMEOUT, None)?;
        sent += n;
        Ok(())
    })?;
    Ok((summary, sent))
}

/// Calls `each` with the spans of `traces`, a [`Batch`] at a time.
fn batches(
    store: &Store,
    traces: &[TraceMeta],
    opts: &ExportOptions,
    mut each: impl FnMut(Vec<Span>) -> Result<(), ExportError>,
) -> Result<ExportSummary, ExportError> {
    let mut summary = ExportSummary::default();
    let mut batch = Batch::default();
    for trace in traces {
        let mut mapper = Mapper::new(&trace.started_at, trace.name.as_deref(), opts.otlp.clone(), None);
        // The tool spans are noted only for a trace with MCP children, whose
        // calls go under them.
        let family = crate::read::family::members(store, trace, &opts.redactor)?;
        let mut tools = crate::read::family::has_mcp(&family).then(|| ToolSpans::new(mapper.epoch_ns()));
        let mut last_t = 0;
        each_frame(store, trace, opts, &mut summary, |f| {
            last_t = f.t_ns;
            mapper.feed(&FrameIn::from(&f));
            for span in mapper.take_done() {
                tools.iter_mut().for_each(|t| t.observe(&span));
                if batch.push(span) {
                    each(batch.take())?;
                }
            }
            Ok(())
        })?;
        mapper.finish(end_t_ns(trace).unwrap_or(last_t));
        for span in mapper.take_done() {
            tools.iter_mut().for_each(|t| t.observe(&span));
            if batch.push(span) {
                each(batch.take())?;
            }
        }
        if let Some(tools) = tools {
            let requests = crate::read::family::requests(store, &family, &opts.redactor)?;
            for span in tools.mcp_spans(&requests.requests) {
                if batch.push(span) {
                    each(batch.take())?;
                }
            }
        }
    }
    if !batch.is_empty() {
        each(batch.take())?;
    }
    Ok(summary)
}

/// Nanoseconds from `trace`'s start to its end, when it ended.
fn end_t_ns(trace: &TraceMeta) -> Option<i64> {
    let start = chrono::DateTime::parse_from_rfc3339(&trace.started_at).ok()?;
    let end = chrono::DateTime::parse_from_rfc3339(trace.ended_at.as_deref()?).ok()?;
    (end - start).num_nanoseconds()
}
