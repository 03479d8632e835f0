//! Exports: the `acp-tee-trace` JSON document and its NDJSON form.
//!
//! Every format is written from one streaming read of the store (a row at a
//! time), so memory stays flat however long the trace.
//!
//! Architecture Invariant: an export writes the stored bytes of every frame,
//! untouched: as `raw` text when they are UTF-8, else as `raw_base64`.

use crate::store::{Store, StoreError, StoredFrame};
use acp_tee_shared::{
    ExportFrame, ExportHeader, NdjsonHeader, TraceMeta, FORMAT_NAME, FORMAT_VERSION,
};
use base64::Engine;
use std::io::{self, Write};

/// Which export format to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// One JSON document holding every selected trace.
    Json,
    /// Per trace: a header line, then one frame per line.
    Ndjson,
}

/// Which traces to export.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceSelection {
    /// The newest trace.
    Latest,
    /// Every trace, oldest first.
    All,
    /// The trace with this id.
    Id(i64),
}

impl std::str::FromStr for TraceSelection {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "latest" => Ok(TraceSelection::Latest),
            "all" => Ok(TraceSelection::All),
            _ => s.parse::<i64>().map(TraceSelection::Id).map_err(|_| {
                format!(
                    "`{s}` is not a trace id; use a number from `acp-tee list`, `latest` or `all`"
                )
            }),
        }
    }
}

/// Why an export failed.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// Reading the store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Writing the output failed.
    #[error("cannot write the export: {0}")]
    Io(#[from] io::Error),
}

/// Writes the selected traces of `store` to `out` in `format`.
pub fn export(
    store: &Store,
    selection: TraceSelection,
    format: ExportFormat,
    out: &mut dyn Write,
) -> Result<(), ExportError> {
    let traces = match selection {
        TraceSelection::Latest => vec![store.trace(store.latest_trace_id()?)?],
        TraceSelection::Id(id) => vec![store.trace(id)?],
        TraceSelection::All => {
            let mut all = store.list_traces()?;
            all.reverse();
            all
        }
    };
    match format {
        ExportFormat::Json => write_json(store, &traces, out)?,
        ExportFormat::Ndjson => write_ndjson(store, &traces, out)?,
    }
    out.flush()?;
    Ok(())
}

/// The export form of a stored frame.
pub fn export_frame(f: StoredFrame) -> ExportFrame {
    let (raw, raw_base64) = match String::from_utf8(f.raw) {
        Ok(text) => (Some(text), None),
        Err(e) => (
            None,
            Some(base64::engine::general_purpose::STANDARD.encode(e.into_bytes())),
        ),
    };
    ExportFrame {
        seq: f.seq,
        t_ns: f.t_ns,
        dir: f.dir,
        kind: f.kind,
        // Ids are stored as the JSON text they were on the wire.
        id: f
            .rpc_id
            .map(|id| serde_json::from_str(&id).unwrap_or(serde_json::Value::String(id))),
        method: f.method,
        session_id: f.session_id,
        reply_to_seq: f.reply_to_seq,
        latency_ns: f.latency_ns,
        raw,
        raw_base64,
    }
}

fn write_json(store: &Store, traces: &[TraceMeta], out: &mut dyn Write) -> Result<(), ExportError> {
    let header = serde_json::to_string(&ExportHeader::default()).map_err(io::Error::from)?;
    // `{"format":..,"version":..` then the traces array, written piecewise so
    // that no trace is ever held in memory whole.
    write!(out, "{},\"traces\":[", &header[..header.len() - 1])?;
    for (i, trace) in traces.iter().enumerate() {
        let meta = serde_json::to_string(trace).map_err(io::Error::from)?;
        let sep = if i == 0 { "\n" } else { ",\n" };
        write!(out, "{sep}{},\"frames\":[", &meta[..meta.len() - 1])?;
        let mut first = true;
        store.for_each_frame(trace.id, |f| -> Result<(), ExportError> {
            out.write_all(if first { b"\n" } else { b",\n" })?;
            first = false;
            serde_json::to_writer(&mut *out, &export_frame(f)).map_err(io::Error::from)?;
            Ok(())
        })?;
        write!(out, "\n]}}")?;
    }
    writeln!(out, "\n]}}")?;
    Ok(())
}

fn write_ndjson(
    store: &Store,
    traces: &[TraceMeta],
    out: &mut dyn Write,
) -> Result<(), ExportError> {
    for trace in traces {
        let header = NdjsonHeader {
            format: FORMAT_NAME.into(),
            version: FORMAT_VERSION,
            trace: trace.clone(),
        };
        serde_json::to_writer(&mut *out, &header).map_err(io::Error::from)?;
        out.write_all(b"\n")?;
        store.for_each_frame(trace.id, |f| -> Result<(), ExportError> {
            serde_json::to_writer(&mut *out, &export_frame(f)).map_err(io::Error::from)?;
            out.write_all(b"\n")?;
            Ok(())
        })?;
    }
    Ok(())
}
