//! `acp-tee diff`'s text output. Every string from a trace goes through
//! `printable`.

use crate::text::printable;
use acp_tee_shared::diff::{ChangeKind, DiffSide, TextOpKind, ToolBrief, TraceDiff, TurnDiffs, ValueChange};
use std::fmt::Write;

/// The diff as text for a terminal.
pub fn render(d: &TraceDiff, a_label: &str, b_label: &str) -> String {
    let mut out = String::new();
    let side = |s: &DiffSide, label: &str| {
        let name = s.name.as_deref().map(|n| format!(" ({})", printable(n))).unwrap_or_default();
        let cut = if s.truncated { ", more not read" } else { "" };
        format!("{}{name}: {} messages{cut}", printable(label), s.messages)
    };
    let _ = writeln!(out, "a: {}", side(&d.a, a_label));
    let _ = writeln!(out, "b: {}", side(&d.b, b_label));
    let _ = writeln!(
        out,
        "{}: {} messages equal, {} different (aligned by {})",
        if d.equivalent { "equivalent" } else { "different" },
        d.equal_messages,
        d.changed_messages,
        d.alignment
    );
    if d.only_chunking {
        let _ = writeln!(
            out,
            "  every message that differs is a streamed chunk, and every turn's assembled text is the same: \
             the runs said the same, cut into chunks differently"
        );
    }
    for m in &d.messages {
        let what = match m.change {
            ChangeKind::Missing => "missing",
            ChangeKind::Added => "added",
            ChangeKind::Changed => "changed",
        };
        let seqs = match (m.a_seq, m.b_seq) {
            (Some(a), Some(b)) => format!("a#{a} b#{b}"),
            (Some(a), None) => format!("a#{a}"),
            (None, Some(b)) => format!("b#{b}"),
            (None, None) => String::new(),
        };
        let mut method = m.method.as_deref().map(printable).unwrap_or_default().into_owned();
        if let Some(u) = &m.update {
            method = format!("{method} {}", printable(u));
        }
        let _ = writeln!(out, "  {what:<8} {} {} {method} {seqs}", m.dir.as_str(), m.kind.as_str());
        values(&mut out, &m.values, "      ");
        if m.values_truncated {
            let _ = writeln!(out, "      (more values differ)");
        }
    }
    if (d.changed_messages as usize) > d.messages.len() {
        let _ = writeln!(out, "  ... and {} more", d.changed_messages as usize - d.messages.len());
    }
    if !d.capabilities.is_empty() {
        let _ = writeln!(out, "initialize capabilities differ:");
        values(&mut out, &d.capabilities, "  ");
    }
    if !d.turns.is_empty() {
        let _ = writeln!(out, "turns (stop reasons, a | b):");
        for t in &d.turns {
            let end = |e: &Option<String>| e.as_deref().map(printable).unwrap_or("not ended".into()).into_owned();
            let mark = if t.a == t.b { " " } else { "*" };
            let _ = writeln!(out, " {mark}{:>4} {}: {} | {}", t.turn, printable(&t.session), end(&t.a), end(&t.b));
        }
    }
    turn_changes(&mut out, &d.turn_changes);
    if !d.latency.is_empty() {
        let _ = writeln!(out, "latency (answers a | b; p50 a -> b; p95 a -> b):");
        for l in &d.latency {
            let _ = writeln!(
                out,
                "  {}: {} | {}; p50 {}; p95 {}",
                printable(&l.method),
                l.count_a,
                l.count_b,
                change(l.p50_a_ns, l.p50_b_ns, l.p50_ratio),
                change(l.p95_a_ns, l.p95_b_ns, l.p95_ratio)
            );
        }
    }
    out
}

fn values(out: &mut String, values: &[ValueChange], indent: &str) {
    for v in values {
        let show = |x: &Option<serde_json::Value>| x.as_ref().map_or("(absent)".to_owned(), |x| x.to_string());
        let _ =
            writeln!(out, "{indent}{}: {} -> {}", printable(&v.path), printable(&show(&v.a)), printable(&show(&v.b)));
    }
}

fn ms(ns: Option<i64>) -> String {
    ns.map_or("-".to_owned(), |ns| format!("{:.3}ms", ns as f64 / 1e6))
}

fn change(a: Option<i64>, b: Option<i64>, ratio: Option<f64>) -> String {
    let r = ratio.map(|r| format!(" (x{r:.2})")).unwrap_or_default();
    format!("{} -> {}{r}", ms(a), ms(b))
}

/// Each differing turn: its message as a word diff (`[-removed-]`,
/// `{+added+}`), its thoughts, the tool calls that differ.
fn turn_changes(out: &mut String, t: &TurnDiffs) {
    if t.compared == 0 {
        return;
    }
    let left_out =
        if t.left_out > 0 { format!(" ({} turns past the bound not compared)", t.left_out) } else { String::new() };
    let _ = writeln!(out, "turn texts and tool calls: {} of {} turns differ{left_out}", t.changed, t.compared);
    for c in &t.turns {
        let seq = |s: Option<i64>| s.map_or("none".to_owned(), |s| format!("#{s}"));
        let _ = writeln!(out, "  {} turn {} (a {} | b {}):", printable(&c.session), c.turn, seq(c.a_seq), seq(c.b_seq));
        if c.a_seq.is_none() || c.b_seq.is_none() {
            continue;
        }
        if !c.message_same {
            let mut text = String::new();
            for op in &c.message {
                match op.op {
                    TextOpKind::Same => text.push_str(&op.text),
                    TextOpKind::Removed => text.push_str(&format!("[-{}-]", op.text)),
                    TextOpKind::Added => text.push_str(&format!("{{+{}+}}", op.text)),
                    TextOpKind::LeftOut => text.push_str(&format!(" ({})", op.text)),
                }
            }
            let cut = if c.message_cut { " (the kept part of a longer message)" } else { "" };
            let _ = writeln!(out, "    message{cut}: {}", printable(&text));
        }
        if !c.thought_same {
            let _ = writeln!(out, "    thoughts differ");
        }
        let brief = |b: &Option<ToolBrief>| match b {
            None => "(none)".to_owned(),
            Some(b) => {
                let f = |x: &Option<String>| x.as_deref().map(printable).unwrap_or("-".into()).into_owned();
                format!("{} [{}] {}", f(&b.title), f(&b.kind), f(&b.status))
            }
        };
        for tool in &c.tools {
            let _ = writeln!(out, "    tool call {}: {} -> {}", tool.place, brief(&tool.a), brief(&tool.b));
        }
    }
    if t.changed as usize > t.turns.len() {
        let _ = writeln!(out, "  ... and {} more turns", t.changed as usize - t.turns.len());
    }
}
