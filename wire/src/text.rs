//! Stored text as acp-tee prints it on a terminal: every command that
//! prints a stored string (a trace's name, a method, a session id) goes
//! through [`printable`].

use std::borrow::Cow;

/// `text` safe to print on a terminal: control characters (C0, DEL, C1:
/// escape sequences, line ends) and the bidirectional-text controls (which
/// reorder what is shown) are written as Rust escapes (`\n`, `\u{1b}`), so
/// a stored name can neither drive the terminal nor forge a line.
pub fn printable(text: &str) -> Cow<'_, str> {
    let unsafe_char = |c: char| {
        c.is_control()
            || matches!(c, '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    };
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if unsafe_char(c) => out.extend(c.escape_unicode()),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(printable("plain ünï 名前 \\n"), "plain ünï 名前 \\n");
        assert!(matches!(printable("plain"), Cow::Borrowed(_)));
        assert_eq!(
            printable("\u{1b}]0;t\u{7}a\nb\r\tc\u{7f}\u{9b}\u{202e}d"),
            "\\u{1b}]0;t\\u{7}a\\nb\\r\\tc\\u{7f}\\u{9b}\\u{202e}d"
        );
    }
}
