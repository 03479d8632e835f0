//! When two JSON-RPC ids are the same id: equal as JSON values, not as text.
//!
//! Peers spell one id in different ways: Python's `json.dumps` writes `"é"`
//! as `"\u00e9"`, some encoders escape `/` as `\/`, and a number may come
//! back as `1.0` or `1e0` from a peer that keeps numbers as doubles
//! (JavaScript, Python both treat `1.0` and `1` as one key). So ids are
//! compared by value:
//!
//! - strings by their decoded text (`"\u00e9"` is `"é"`, `"x\/y"` is `"x/y"`);
//! - numbers by their exact decimal value (`1`, `1.0`, `1e0`, `10e-1` are one
//!   id; `-0` is `0`); never through a double, so `18446744073709551616` and
//!   `18446744073709551617` stay two ids;
//! - a string and a number are never the same id (`1` is not `"1"`);
//! - anything else (`null`, `true`, objects, arrays: not ids JSON-RPC allows)
//!   by its text.

use std::borrow::Cow;

/// Integers whose value has at most this many digits are keyed by their
/// digits (`1e2` is `100`); larger ones keep an exponent (`1e400`), so a key
/// is never much longer than the id's text.
const MAX_EXPANDED_DIGITS: i64 = 64;

/// The key an id (its exact JSON text) is compared by: two ids are the same
/// id when their keys are equal. Borrowed for the usual spellings (a plain
/// integer, a string without escapes).
pub fn id_key(text: &str) -> Cow<'_, str> {
    let text = text.trim_matches([' ', '\t', '\r', '\n']);
    match text.as_bytes().first() {
        Some(b'"') => string_key(text),
        Some(b'-' | b'0'..=b'9') => number_key(text),
        _ => Cow::Borrowed(text),
    }
}

fn string_key(text: &str) -> Cow<'_, str> {
    if !text.contains('\\') {
        return Cow::Borrowed(text);
    }
    match serde_json::from_str::<String>(text) {
        Ok(decoded) => Cow::Owned(format!("\"{decoded}\"")),
        // Not a valid string (a lone surrogate escape, say): its text.
        Err(_) => Cow::Borrowed(text),
    }
}

fn number_key(text: &str) -> Cow<'_, str> {
    let plain_integer = text.bytes().enumerate().all(|(i, b)| b.is_ascii_digit() || (i == 0 && b == b'-'));
    let digits = text.trim_start_matches('-');
    // A plain integer of a few digits is written as its key already.
    let canonical_already = plain_integer
        && text != "-0"
        && !digits.is_empty()
        && !(digits.len() > 1 && digits.starts_with('0'))
        && digits.len() as i64 <= MAX_EXPANDED_DIGITS;
    if canonical_already {
        return Cow::Borrowed(text);
    }
    match canonical_number(text) {
        Some(key) => Cow::Owned(key),
        None => Cow::Borrowed(text),
    }
}

/// `text` (a JSON number) as sign, significant digits and exponent:
/// `-12.50e3` is `-1250e1`, then written as `-12500`. `None` when it is not
/// a number.
fn canonical_number(text: &str) -> Option<String> {
    let (negative, rest) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (mantissa, exponent) = match rest.find(['e', 'E']) {
        Some(at) => (&rest[..at], Some(&rest[at + 1..])),
        None => (rest, None),
    };
    let (int, frac) = match mantissa.find('.') {
        Some(at) => (&mantissa[..at], &mantissa[at + 1..]),
        None => (mantissa, ""),
    };
    if int.is_empty() || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut exp: i64 = match exponent {
        None => 0,
        Some(e) => {
            let digits = e.strip_prefix(['+', '-']).unwrap_or(e);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            // An exponent past i64 is kept as written (still exact).
            match e.parse::<i64>() {
                Ok(v) => v,
                Err(_) => return Some(format!("{}{}e{}", if negative { "-" } else { "" }, mantissa, e)),
            }
        }
    };
    let all: String = int.chars().chain(frac.chars()).collect();
    exp = exp.saturating_sub(frac.len() as i64);
    let significant = all.trim_start_matches('0');
    let trimmed = significant.trim_end_matches('0');
    if trimmed.is_empty() {
        return Some("0".to_owned());
    }
    exp = exp.saturating_add((significant.len() - trimmed.len()) as i64);
    let sign = if negative { "-" } else { "" };
    if exp >= 0 && trimmed.len() as i64 + exp <= MAX_EXPANDED_DIGITS {
        Some(format!("{sign}{trimmed}{}", "0".repeat(exp as usize)))
    } else {
        Some(format!("{sign}{trimmed}e{exp}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same(a: &str, b: &str) -> bool {
        id_key(a) == id_key(b)
    }

    #[test]
    fn strings_compare_by_their_decoded_text() {
        assert!(same(r#""\u00e9""#, "\"é\""));
        assert!(same(r#""x\/y""#, r#""x/y""#));
        assert!(same(r#""a\"b""#, r#""a\u0022b""#));
        assert!(!same(r#""a""#, r#""b""#));
        assert!(matches!(id_key("\"plain\""), Cow::Borrowed(_)));
    }

    #[test]
    fn numbers_compare_by_their_exact_value() {
        for (a, b) in [("1", "1.0"), ("1", "1e0"), ("1", "10e-1"), ("100", "1E2"), ("0", "-0"), ("0", "0.000e9")] {
            assert!(same(a, b), "{a} and {b}");
            assert_eq!(id_key(a), id_key(b));
        }
        assert!(same("-12.5e1", "-125"));
        assert!(!same("18446744073709551616", "18446744073709551617"));
        assert!(!same("1", "-1"));
        assert!(!same("1e400", "1e401"));
        assert!(same("1e400", "10e399"));
        assert!(same("1e99999999999999999999", "1e99999999999999999999"));
        assert!(matches!(id_key("42"), Cow::Borrowed("42")));
        assert_eq!(id_key("1e2"), "100");
    }

    #[test]
    fn types_never_mix() {
        assert!(!same("1", "\"1\""));
        assert!(!same("null", "\"null\""));
        assert!(same("null", "null"));
    }
}
