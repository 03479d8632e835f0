//! `compare_traces`: two traces side by side. Per method (from
//! `trace_stats` of each): counts, errors, p50/p99 latency and the deltas
//! b − a. Per trace (from the session model): sessions, turns, tool calls,
//! permission requests and how turns ended (stop reasons; `error` for a
//! turn answered with an error, `not ended` for one never answered), all
//! from the whole-trace fold, so it costs one pass over each trace.
//! `differences` says, one line each, which of these counts differ;
//! latencies always vary between two runs, so they are left to the deltas.

use super::{Cx, ToolError};
use crate::session::now_t_ns;
use acp_tee_shared::api::MethodStats;
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// What the session model says of one trace.
#[derive(Debug, Default, Serialize, PartialEq)]
struct Sessions {
    sessions: u64,
    turns: u64,
    tool_calls: u64,
    permission_requests: u64,
    /// How many turns ended each way.
    stop_reasons: BTreeMap<String, u64>,
}

/// Trace `id`'s counts, all from the whole-trace fold (no turn is built).
fn sessions_of(cx: &Cx<'_>, id: i64) -> Result<Sessions, ToolError> {
    let trace = cx.store.trace_summary(id)?;
    let facts = cx.models.with_current(cx.store, id, cx.r, |model| {
        let view = model.sessions(now_t_ns(&trace));
        let mut out = Sessions { sessions: view.sessions.len() as u64, ..Sessions::default() };
        for s in &view.sessions {
            out.turns += s.turns;
            out.tool_calls += s.tool_calls;
            out.permission_requests += s.permission_requests;
        }
        out.stop_reasons = model.turn_ends();
        Ok(out)
    })?;
    Ok(facts)
}

fn delta(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    Some(b? - a?)
}

/// One method's row: both sides and the deltas.
fn method_row(name: &str, a: Option<&MethodStats>, b: Option<&MethodStats>) -> Value {
    let get = |m: Option<&MethodStats>, f: fn(&MethodStats) -> Option<i64>| m.and_then(f);
    let (count_a, count_b) = (a.map_or(0, |m| m.count), b.map_or(0, |m| m.count));
    let (errors_a, errors_b) = (a.map_or(0, |m| m.errors), b.map_or(0, |m| m.errors));
    let (p50_a, p50_b) = (get(a, |m| m.p50_ns), get(b, |m| m.p50_ns));
    let (p99_a, p99_b) = (get(a, |m| m.p99_ns), get(b, |m| m.p99_ns));
    json!({
        "method": name,
        "count_a": count_a, "count_b": count_b, "count_delta": count_b - count_a,
        "errors_a": errors_a, "errors_b": errors_b, "errors_delta": errors_b - errors_a,
        "p50_ns_a": p50_a, "p50_ns_b": p50_b, "p50_delta_ns": delta(p50_a, p50_b),
        "p99_ns_a": p99_a, "p99_ns_b": p99_b, "p99_delta_ns": delta(p99_a, p99_b),
    })
}

/// A line for each count that differs between `a` and `b`.
fn differences(methods: &[Value], a: &Sessions, b: &Sessions) -> Vec<String> {
    let mut out = Vec::new();
    for m in methods {
        for (what, ka, kb) in [("requests", "count_a", "count_b"), ("errors", "errors_a", "errors_b")] {
            if m[ka] != m[kb] {
                out.push(format!("{} {what}: {} in a, {} in b", m["method"].as_str().unwrap_or(""), m[ka], m[kb]));
            }
        }
    }
    let counts = [
        ("sessions", a.sessions, b.sessions),
        ("turns", a.turns, b.turns),
        ("tool calls", a.tool_calls, b.tool_calls),
        ("permission requests", a.permission_requests, b.permission_requests),
    ];
    out.extend(counts.iter().filter(|(_, x, y)| x != y).map(|(what, x, y)| format!("{what}: {x} in a, {y} in b")));
    let reasons: std::collections::BTreeSet<&String> = a.stop_reasons.keys().chain(b.stop_reasons.keys()).collect();
    for r in reasons {
        let (x, y) = (a.stop_reasons.get(r).copied().unwrap_or(0), b.stop_reasons.get(r).copied().unwrap_or(0));
        if x != y {
            out.push(format!("turns that ended {r}: {x} in a, {y} in b"));
        }
    }
    out
}

/// Compares trace `b` with trace `a` (both exist).
pub(super) fn compare(cx: &Cx<'_>, a: i64, b: i64) -> Result<Value, ToolError> {
    let (stats_a, stats_b) = (cx.store.trace_stats(a)?, cx.store.trace_stats(b)?);
    let by_name = |s: &[MethodStats]| s.iter().map(|m| (m.method.clone(), m.clone())).collect::<BTreeMap<_, _>>();
    let (ma, mb) = (by_name(&stats_a.methods), by_name(&stats_b.methods));
    let names: std::collections::BTreeSet<&String> = ma.keys().chain(mb.keys()).collect();
    let methods: Vec<Value> = names.into_iter().map(|n| method_row(n, ma.get(n), mb.get(n))).collect();
    let (sa, sb) = (sessions_of(cx, a)?, sessions_of(cx, b)?);
    let differences = differences(&methods, &sa, &sb);
    Ok(json!({
        "a": a, "b": b,
        "same": differences.is_empty(),
        "differences": differences,
        "sessions_a": sa, "sessions_b": sb,
        "methods_total": methods.len(),
        "methods": methods,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_name_each_count_that_differs() {
        let stats = |count, errors| MethodStats {
            method: "session/prompt".into(),
            count,
            errors,
            answered: count,
            p50_ns: Some(10),
            p95_ns: None,
            p99_ns: Some(20),
            max_ns: None,
            histogram: Vec::new(),
        };
        let (x, y) = (stats(2, 0), stats(3, 0));
        let rows = [method_row("session/prompt", Some(&x), Some(&y)), method_row("m", Some(&x), None)];
        assert_eq!(rows[0]["count_delta"], 1);
        assert_eq!(rows[0]["p50_delta_ns"], 0);
        assert_eq!(rows[1]["p50_delta_ns"], Value::Null);
        let a = Sessions { turns: 2, stop_reasons: [("end_turn".into(), 2)].into(), ..Sessions::default() };
        let b = Sessions { turns: 2, stop_reasons: [("cancelled".into(), 2)].into(), ..Sessions::default() };
        let d = differences(&rows, &a, &b);
        assert_eq!(
            d,
            [
                "session/prompt requests: 2 in a, 3 in b",
                "m requests: 2 in a, 0 in b",
                "turns that ended cancelled: 0 in a, 2 in b",
                "turns that ended end_turn: 2 in a, 0 in b",
            ]
        );
        assert!(differences(&rows[..0], &a, &a).is_empty());
    }
}
