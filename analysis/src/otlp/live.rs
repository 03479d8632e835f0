//! The recorder's live export: the [`Mapper`] runs on the framer thread
//! beside the store's queue, and the spans it ends go through a bounded
//! queue ([`QUEUE_SPANS`] spans, [`QUEUE_BYTES`] bytes encoded) to an
//! exporter thread that sends them in batches ([`Batch`]: [`BATCH_SPANS`]
//! spans or [`BATCH_BYTES`], or what came within [`BATCH_WAIT`]), each
//! request bounded by [`EXPORT_TIMEOUT`] and tried [`RETRIES`] times.
//!
//! Architecture Invariant: a slow, dead or hanging collector never makes
//! the framer wait: a span that does not fit the queue is dropped and
//! counted, and a batch not taken after its retries is dropped and counted.
//! At the end the exporter gets at most [`FLUSH_WAIT`] to send the rest;
//! the counts are reported on stderr.

use super::{request, Client, Endpoint, FrameIn, MapOptions, Mapper};
use crate::model::NewFrame;
use crate::redact::Redactor;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Spans waiting for the exporter thread at most; more are dropped.
pub const QUEUE_SPANS: usize = 4096;

/// Bytes (protobuf-encoded) of the spans waiting for the exporter thread at
/// most: spans with content can be large.
pub const QUEUE_BYTES: usize = 8 << 20;

/// Spans sent in one request at most.
pub const BATCH_SPANS: usize = 512;

/// Bytes (protobuf-encoded) of spans in one request, about at most: a batch
/// is sent once it holds this much (collectors commonly take 4 MiB).
pub const BATCH_BYTES: usize = 2 << 20;

/// How long a span waits for a batch to fill before it is sent anyway.
pub const BATCH_WAIT: Duration = Duration::from_millis(500);

/// How long one request may take.
pub const EXPORT_TIMEOUT: Duration = Duration::from_secs(5);

/// Attempts per batch.
pub const RETRIES: u32 = 3;

/// How long the exporter may go on sending after the recording ended.
pub const FLUSH_WAIT: Duration = Duration::from_secs(5);

/// What the exporter thread did.
#[derive(Debug, Default)]
struct Counts {
    batches_sent: AtomicU64,
    batches_dropped: AtomicU64,
    spans_sent: AtomicU64,
    /// Spans of dropped batches, and spans that did not fit the queue.
    spans_dropped: AtomicU64,
    /// Encoded bytes of the spans in the queue.
    queued_bytes: AtomicUsize,
}

/// Spans gathered for one request: at most [`BATCH_SPANS`] spans, and
/// about [`BATCH_BYTES`] encoded.
#[derive(Default)]
pub struct Batch {
    spans: Vec<Span>,
    bytes: usize,
}

impl Batch {
    /// Adds `span`; true when the batch is now full.
    pub fn push(&mut self, span: Span) -> bool {
        self.bytes += span.encoded_len();
        self.spans.push(span);
        self.is_full()
    }

    /// True when the batch holds [`BATCH_SPANS`] spans or [`BATCH_BYTES`].
    pub fn is_full(&self) -> bool {
        self.spans.len() >= BATCH_SPANS || self.bytes >= BATCH_BYTES
    }

    /// True when it holds no span.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// The spans, leaving the batch empty.
    pub fn take(&mut self) -> Vec<Span> {
        self.bytes = 0;
        std::mem::take(&mut self.spans)
    }
}

/// A live export in progress.
pub struct LiveExport {
    mapper: Mapper,
    queue: Option<SyncSender<(Span, usize)>>,
    counts: Arc<Counts>,
    done: Receiver<()>,
    url: String,
}

impl LiveExport {
    /// Starts the exporter thread sending to `endpoint` the spans of the
    /// trace that started at `started_at` named `name`.
    pub fn start(
        endpoint: Endpoint,
        opts: MapOptions,
        started_at: &str,
        name: Option<&str>,
        redactor: Option<Redactor>,
    ) -> LiveExport {
        // Content not masked by the store's redaction is masked here.
        let redactor = redactor.or_else(|| opts.content.then(|| Redactor::new(Vec::new())));
        let mapper = Mapper::new(started_at, name, opts, redactor);
        let (tx, rx) = mpsc::sync_channel(QUEUE_SPANS);
        let counts = Arc::new(Counts::default());
        let (done_tx, done) = mpsc::channel();
        let url = endpoint.url.clone();
        let client = Client::new(endpoint);
        let c = counts.clone();
        let spawned = std::thread::Builder::new().name("otlp-export".into()).spawn(move || {
            export_loop(&client, &rx, &c);
            let _ = done_tx.send(());
        });
        if let Err(e) = spawned {
            tracing::warn!("otlp: cannot start the exporter thread ({e}); no spans are sent");
        }
        LiveExport { mapper, queue: Some(tx), counts, done, url }
    }

    /// Maps one frame; the spans it ends go to the exporter, or are counted
    /// as dropped when its queue is full. Never waits.
    pub fn feed(&mut self, f: &NewFrame) {
        self.mapper.feed(&FrameIn::from(f));
        self.hand_on();
    }

    fn hand_on(&mut self) {
        let Some(queue) = &self.queue else { return };
        for span in self.mapper.take_done() {
            let len = span.encoded_len();
            let queued = &self.counts.queued_bytes;
            let sent = queued.load(Ordering::Relaxed) + len <= QUEUE_BYTES
                && match queue.try_send((span, len)) {
                    Ok(()) => true,
                    Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => false,
                };
            if sent {
                queued.fetch_add(len, Ordering::Relaxed);
            } else {
                self.counts.spans_dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Ends the spans still open at `end_t_ns`, lets the exporter send what
    /// it holds for at most [`FLUSH_WAIT`] (plus one request's
    /// [`EXPORT_TIMEOUT`]), and reports on stderr what was not sent.
    pub fn finish(mut self, end_t_ns: i64) {
        self.mapper.finish(end_t_ns);
        self.hand_on();
        drop(self.queue.take());
        let finished = self.done.recv_timeout(FLUSH_WAIT + EXPORT_TIMEOUT).is_ok();
        let c = &self.counts;
        let (sent, dropped) = (c.spans_sent.load(Ordering::Relaxed), c.spans_dropped.load(Ordering::Relaxed));
        let batches_dropped = c.batches_dropped.load(Ordering::Relaxed);
        if dropped > 0 || batches_dropped > 0 || !finished {
            tracing::warn!(
                "otlp: {sent} spans sent to {}, {dropped} dropped ({batches_dropped} batches not taken{})",
                self.url,
                if finished { "" } else { "; the exporter was still sending when the recording ended" }
            );
        } else {
            tracing::debug!(
                "otlp: {sent} spans sent to {} in {} batches",
                self.url,
                c.batches_sent.load(Ordering::Relaxed)
            );
        }
    }
}

/// Sends batches from `rx` until it is closed and empty (then for at most
/// [`FLUSH_WAIT`]).
fn export_loop(client: &Client, rx: &Receiver<(Span, usize)>, counts: &Counts) {
    let mut batch = Batch::default();
    let take = |(span, len): (Span, usize), batch: &mut Batch| {
        counts.queued_bytes.fetch_sub(len, Ordering::Relaxed);
        batch.push(span)
    };
    let mut closed_at: Option<Instant> = None;
    let mut warned = false;
    loop {
        let first_at = Instant::now();
        // Fill a batch: until it is full, BATCH_WAIT passed, or the queue closed.
        while !batch.is_full() && closed_at.is_none() {
            let left = BATCH_WAIT.saturating_sub(first_at.elapsed());
            match rx.recv_timeout(if batch.is_empty() { Duration::from_secs(3600) } else { left }) {
                Ok(item) => {
                    take(item, &mut batch);
                }
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => closed_at = Some(Instant::now()),
            }
        }
        if closed_at.is_some() {
            // Closed: what is left in the queue goes too, in full batches.
            while !batch.is_full() {
                match rx.try_recv() {
                    Ok(item) => {
                        take(item, &mut batch);
                    }
                    Err(_) => break,
                }
            }
        }
        if batch.is_empty() {
            return;
        }
        let deadline = closed_at.map(|t| t + FLUSH_WAIT);
        let spans = batch.take();
        let n = spans.len() as u64;
        if deadline.is_some_and(|d| Instant::now() >= d) {
            counts.batches_dropped.fetch_add(1, Ordering::Relaxed);
            counts.spans_dropped.fetch_add(n, Ordering::Relaxed);
            continue;
        }
        let req = request(spans, client.service());
        match client.send(&req, RETRIES, super::EXPORT_TIMEOUT, deadline) {
            Ok(()) => {
                counts.batches_sent.fetch_add(1, Ordering::Relaxed);
                counts.spans_sent.fetch_add(n, Ordering::Relaxed);
            }
            Err(e) => {
                if !warned {
                    tracing::warn!("otlp: {e}; spans are dropped while it does not take them");
                    warned = true;
                }
                counts.batches_dropped.fetch_add(1, Ordering::Relaxed);
                counts.spans_dropped.fetch_add(n, Ordering::Relaxed);
            }
        }
    }
}
