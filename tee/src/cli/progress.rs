//! Progress bars for long exports and imports: drawn on stderr when it is a
//! terminal, hidden (and free) when it is not.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;

/// A bar counting to `len` `unit`s, or a hidden one when stderr is not a terminal.
pub fn bar(len: u64, unit: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let template = if unit == "bytes" {
        "{bar:40} {bytes}/{total_bytes} {bytes_per_sec} eta {eta}".to_owned()
    } else {
        format!("{{bar:40}} {{pos}}/{{len}} {unit} {{per_sec}} eta {{eta}}")
    };
    let style = ProgressStyle::with_template(&template).unwrap_or_else(|_| ProgressStyle::default_bar());
    ProgressBar::new(len).with_style(style)
}
