//! Wall-clock time as the store and exports write it.

use chrono::{SecondsFormat, Utc};

/// Now, UTC, RFC 3339 with microseconds (`2026-11-30T16:31:59.123456Z`).
pub fn now_rfc3339() -> String {
    Utc::now().to_rfc3339_opts(SecondsFormat::Micros, true)
}
