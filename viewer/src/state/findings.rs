//! The protocol checks' findings of the trace (`/api/traces/{id}/findings`): fetched when the Diagram or
//! Findings tab is first shown and again when asked (a live trace grows), kept with the worst severity per
//! frame for the diagram's markers.

use crate::api::{self, ApiFailure};
use acp_tee_shared::check::{Severity, TraceFindings};
use leptos::prelude::*;
use leptos::task::spawn_local;
use std::collections::HashMap;

/// What a frame's marker says: the worst severity found at it and the findings' sentences.
#[derive(Clone, Debug, PartialEq)]
pub struct Marker {
    /// The worst severity of the findings at the frame.
    pub severity: Severity,
    /// `code: message` of each.
    pub text: Vec<String>,
}

/// The findings and the markers they make.
#[derive(Clone, Copy)]
pub struct FindingsData {
    /// The last answer (`None` while the first is awaited).
    pub report: RwSignal<Option<Result<TraceFindings, ApiFailure>>>,
    /// Per frame (the last seq of each finding): its marker.
    pub markers: Memo<HashMap<i64, Marker>>,
}

impl FindingsData {
    /// Nothing fetched yet.
    pub fn new() -> FindingsData {
        let report: RwSignal<Option<Result<TraceFindings, ApiFailure>>> = RwSignal::new(None);
        let markers = Memo::new(move |_| {
            let mut markers: HashMap<i64, Marker> = HashMap::new();
            report.with(|r| {
                let Some(Ok(r)) = r else { return };
                for f in &r.findings {
                    let Some(seq) = f.seq() else { continue };
                    let m = markers.entry(seq).or_insert(Marker { severity: f.severity, text: Vec::new() });
                    m.severity = m.severity.max(f.severity);
                    m.text.push(format!("{}: {}", f.code, f.message));
                }
            });
            markers
        });
        FindingsData { report, markers }
    }

    /// Fetches trace `id`'s findings the first time `wanted` is true (the tabs that show them are open):
    /// a trace's first check reads every frame, which a Session or Timing tab opening at the same time
    /// should not wait behind.
    pub fn load_when(self, id: i64, wanted: impl Fn() -> bool + 'static) {
        let asked = StoredValue::new(false);
        Effect::new(move |_| {
            if wanted() && !asked.get_value() {
                asked.set_value(true);
                self.load(id);
            }
        });
    }

    /// Fetches trace `id`'s findings (again).
    pub fn load(self, id: i64) {
        spawn_local(async move {
            let answer = api::findings(id).await;
            self.report.set(Some(answer));
        });
    }

    /// The findings that name frame `seq` (any of their frames), as `(severity, code, message)` (tracked).
    pub fn at(&self, seq: i64) -> Vec<(Severity, String, String)> {
        self.report.with(|r| match r {
            Some(Ok(r)) => r
                .findings
                .iter()
                .filter(|f| f.seqs.contains(&seq))
                .map(|f| (f.severity, f.code.clone(), f.message.clone()))
                .collect(),
            _ => Vec::new(),
        })
    }

    /// The marker of frame `seq`, if it has findings (tracked).
    pub fn marker(&self, seq: i64) -> Option<Marker> {
        self.markers.with(|m| m.get(&seq).cloned())
    }
}

impl Default for FindingsData {
    fn default() -> Self {
        FindingsData::new()
    }
}
