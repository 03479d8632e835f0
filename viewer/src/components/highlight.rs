//! Marks the words of the full-text search where they occur in a text (ASCII letters in any case).

use leptos::prelude::*;

/// The words of a search, lower-cased (ASCII), empty ones left out.
pub fn search_words(q: Option<&str>) -> Vec<String> {
    q.map(|q| q.split_whitespace().map(|w| w.to_ascii_lowercase()).collect()).unwrap_or_default()
}

/// Byte ranges of the words in `text`, in order, not overlapping.
fn ranges(text: &str, words: &[String]) -> Vec<(usize, usize)> {
    // ASCII lower-casing keeps every byte where it was, so positions carry over to `text`.
    let lower = text.to_ascii_lowercase();
    let mut found: Vec<(usize, usize)> = Vec::new();
    for w in words.iter().filter(|w| !w.is_empty()) {
        let mut from = 0;
        while let Some(at) = lower[from..].find(w.as_str()) {
            let start = from + at;
            found.push((start, start + w.len()));
            from = start + w.len();
        }
    }
    found.sort();
    let mut out: Vec<(usize, usize)> = Vec::new();
    for (s, e) in found {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// The text with the search's words in `<mark>`.
pub fn marked(text: String, words: &[String]) -> AnyView {
    let found = ranges(&text, words);
    if found.is_empty() {
        return text.into_any();
    }
    let mut parts: Vec<AnyView> = Vec::new();
    let mut at = 0;
    for (s, e) in found {
        if s > at {
            parts.push(text[at..s].to_owned().into_any());
        }
        parts.push(view! { <mark>{text[s..e].to_owned()}</mark> }.into_any());
        at = e;
    }
    if at < text.len() {
        parts.push(text[at..].to_owned().into_any());
    }
    parts.into_any()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_found_in_any_ascii_case_and_merged() {
        let words = search_words(Some("Hello  wor"));
        assert_eq!(ranges("say hello World, héllo", &words), [(4, 9), (10, 13)]);
        assert_eq!(ranges("abc", &search_words(Some("ab bc"))), [(0, 3)]);
        assert!(ranges("x", &search_words(None)).is_empty());
    }
}
