//! Text for numbers people read: durations, trace offsets, wall-clock times.

/// A duration in the largest unit that keeps it readable: `850 ns`, `312 µs`, `12.3 ms`, `1.24 s`, `3m 05s`.
pub fn duration_ns(ns: i64) -> String {
    let ns = ns.max(0) as f64;
    if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.0} µs", ns / 1e3)
    } else if ns < 1e8 {
        format!("{:.1} ms", ns / 1e6)
    } else if ns < 1e9 {
        format!("{:.0} ms", ns / 1e6)
    } else if ns < 60e9 {
        format!("{:.2} s", ns / 1e9)
    } else {
        let s = (ns / 1e9) as i64;
        format!("{}m {:02}s", s / 60, s % 60)
    }
}

/// A frame's offset from the start of its trace, fixed-width enough to line up in a column: `12.345 ms`, `3.210 s`.
pub fn offset_ns(t_ns: i64) -> String {
    let t = t_ns.max(0) as f64;
    if t < 1e9 {
        format!("{:.3} ms", t / 1e6)
    } else if t < 600e9 {
        format!("{:.3} s", t / 1e9)
    } else {
        let s = (t / 1e9) as i64;
        format!("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)
    }
}

/// An exact offset for the detail panel: seconds with nanosecond digits.
pub fn exact_offset_ns(t_ns: i64) -> String {
    format!("{}.{:09} s", t_ns / 1_000_000_000, (t_ns % 1_000_000_000).abs())
}

/// An RFC 3339 UTC time as `2026-11-30 16:43:56` (the store writes UTC; the suffix says so).
pub fn wall_clock(rfc3339: &str) -> String {
    let no_frac = rfc3339.split('.').next().unwrap_or(rfc3339).trim_end_matches('Z');
    format!("{} UTC", no_frac.replacen('T', " ", 1))
}

/// The wall-clock time (UTC, milliseconds) of an offset into a trace that started at an RFC 3339 time:
/// `2026-11-30 16:43:56.123 UTC`.
pub fn wall_clock_at(started_at: &str, t_ns: i64) -> Option<String> {
    let start = js_sys::Date::parse(started_at);
    if !start.is_finite() {
        return None;
    }
    let at = js_sys::Date::new(&wasm_bindgen::JsValue::from_f64(start + t_ns as f64 / 1e6));
    let iso: String = at.to_iso_string().into();
    Some(format!("{} UTC", iso.trim_end_matches('Z').replacen('T', " ", 1)))
}

/// Milliseconds between two RFC 3339 times, when the browser can parse both.
pub fn span_ms(from: &str, to: &str) -> Option<f64> {
    let a = js_sys::Date::parse(from);
    let b = js_sys::Date::parse(to);
    (a.is_finite() && b.is_finite()).then_some(b - a)
}

/// A count with thousands separators: `1,234,567`.
pub fn count(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 {
        out.insert(0, '-');
    }
    out
}

/// A size in bytes as the command line writes it ([`acp_tee_shared::format_bytes`]).
pub fn bytes(n: i64) -> String {
    acp_tee_shared::format_bytes(n.max(0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_pick_a_readable_unit() {
        assert_eq!(duration_ns(850), "850 ns");
        assert_eq!(duration_ns(312_400), "312 µs");
        assert_eq!(duration_ns(12_340_000), "12.3 ms");
        assert_eq!(duration_ns(1_240_000_000), "1.24 s");
        assert_eq!(duration_ns(185_000_000_000), "3m 05s");
        assert_eq!(count(1234567), "1,234,567");
        assert_eq!(wall_clock("2026-11-30T16:43:56.649211Z"), "2026-11-30 16:43:56 UTC");
        assert_eq!(exact_offset_ns(2_426_012), "0.002426012 s");
        // Sizes are `acp_tee_shared::format_bytes`; a negative one is none.
        assert_eq!(bytes(-5), "0 B");
        assert_eq!(bytes(1536), "1.50 KiB");
    }
}
