//! The times of imported files whose entries carry wall-clock stamps.

use super::{imported_meta, Context, ImportError, ImportFormat, TraceSink};

/// The times of a source whose entries carry wall-clock stamps: `t_ns`
/// counts from the first entry's. An entry stamped before the first is at 0
/// (writers stamp from several tasks, slightly out of order).
#[derive(Default)]
pub(super) struct Stamps {
    first: Option<chrono::DateTime<chrono::Utc>>,
}

impl Stamps {
    /// The `t_ns` of an entry stamped `at`.
    pub(super) fn t_ns(&mut self, at: chrono::DateTime<chrono::Utc>) -> u64 {
        let t0 = *self.first.get_or_insert(at);
        (at - t0).num_nanoseconds().unwrap_or(i64::MAX).max(0) as u64
    }

    /// When the trace started: the first stamp, else (no entry had one) the
    /// file's modification time less the trace's length.
    pub(super) fn started(&self, ctx: &Context, last_t_ns: i64) -> String {
        let t = self.first.unwrap_or_else(|| {
            let back = chrono::Duration::nanoseconds(last_t_ns);
            ctx.file_time().checked_sub_signed(back).unwrap_or_else(|| ctx.file_time())
        });
        crate::clock::rfc3339(t)
    }

    /// Ends the one trace `sink` read of a `format` file stamped so: an
    /// error when it holds no frame.
    pub(super) fn finish(&self, ctx: &mut Context, sink: TraceSink, format: ImportFormat) -> Result<(), ImportError> {
        if sink.frames == 0 {
            return Err(ImportError::Empty { path: ctx.path.clone() });
        }
        let started = self.started(ctx, sink.last_t_ns);
        let meta = imported_meta(ctx, format, started, sink.last_t_ns);
        sink.finish(ctx, meta, None)
    }
}
