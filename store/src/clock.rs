//! Wall-clock time as the store and exports write it.

use chrono::{SecondsFormat, Utc};

/// Now, UTC, RFC 3339 with microseconds (`2026-11-30T16:31:59.123456Z`).
pub fn now_rfc3339() -> String {
    Utc::now().to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// `t`, UTC, RFC 3339 with microseconds, as the store writes times.
pub fn rfc3339(t: chrono::DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}
