//! How big an answer of `acp-tee mcp` may be, and how answers are brought
//! within it: long strings cut, pages shortened, a frame's bytes served a
//! window at a time.

use serde_json::Value;

/// Bytes of JSON one tool answer holds at most. A page that would be larger
/// is shortened (its `has_more` set, its `next_offset` the first item left
/// out); an answer that still is (no page to shorten) has its strings cut
/// harder, and is refused if even that does not fit.
pub const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// Characters of one string (a turn's prompt or reply, a tool call's input,
/// a note) an answer carries; a longer one ends in [`CUT_MARK`] and names
/// how many characters it had. Frames' bytes are not strings in this sense:
/// see [`FRAME_DEFAULT_BYTES`].
pub const STRING_MAX_CHARS: usize = 2000;

/// Characters of a string when an answer is still too big after its page
/// was shortened to one item.
const STRING_MIN_CHARS: usize = 200;

/// Items of a list inside an answer's items (a turn's tool calls, a
/// session's notes) carried at most; the rest is counted in an element
/// `"… N more"`.
pub const LIST_MAX_ITEMS: usize = 50;

/// What a cut string ends with, before the count of what it had.
pub const CUT_MARK: &str = "… [cut: ";

/// Bytes of a frame's `raw` (and `envelope`) `get_frame` returns unless
/// asked (`max_bytes`); the answer says `cut: true` and `next_offset`.
pub const FRAME_DEFAULT_BYTES: usize = 4096;

/// The most bytes of a frame one `get_frame` answer carries (`max_bytes`).
pub const FRAME_MAX_BYTES: usize = 32 * 1024;

/// `v` with every string longer than `max` characters cut, and every array
/// longer than [`LIST_MAX_ITEMS`] shortened.
pub fn shrink(v: &mut Value, max: usize) {
    match v {
        Value::String(s) => cut_string(s, max),
        Value::Array(items) => {
            let more = items.len().saturating_sub(LIST_MAX_ITEMS);
            items.truncate(LIST_MAX_ITEMS);
            items.iter_mut().for_each(|i| shrink(i, max));
            if more > 0 {
                items.push(Value::String(format!("… {more} more")));
            }
        }
        Value::Object(map) => map.values_mut().for_each(|i| shrink(i, max)),
        _ => {}
    }
}

/// Characters of a tool error's text at most (it may quote an argument).
pub const ERROR_MAX_CHARS: usize = 500;

/// An error's text cut to [`ERROR_MAX_CHARS`].
pub fn error_text(mut text: String) -> String {
    cut_string(&mut text, ERROR_MAX_CHARS);
    text
}

fn cut_string(s: &mut String, max: usize) {
    let Some((end, _)) = s.char_indices().nth(max) else { return };
    let chars = s.chars().count();
    s.truncate(end);
    s.push_str(&format!("{CUT_MARK}{chars} chars]"));
}

/// [`shrink`] on `answer`, but its page `answer[key]` keeps every item
/// (its own limit bounds it): only the items are shrunk.
fn shrink_page(answer: &mut Value, key: &str, max: usize) {
    let page = answer.get_mut(key).map(Value::take);
    shrink(answer, max);
    if let Some(mut page) = page {
        match &mut page {
            Value::Array(items) => items.iter_mut().for_each(|i| shrink(i, max)),
            other => shrink(other, max),
        }
        answer[key] = page;
    }
}

fn size(v: &Value) -> usize {
    serde_json::to_vec(v).map(|b| b.len()).unwrap_or(usize::MAX)
}

/// How an answer is brought within [`MAX_ANSWER_BYTES`].
#[derive(Clone, Copy, Debug)]
pub enum Fit {
    /// Strings cut to [`STRING_MAX_CHARS`]; then, while too big, items
    /// dropped from the end of the named list (`has_more` set,
    /// `next_offset` moved back); then strings cut to [`STRING_MIN_CHARS`].
    Page(&'static str),
    /// Nothing cut: the answer is a window its tool sized (a frame's text).
    Window,
}

/// The answer as JSON text of at most [`MAX_ANSWER_BYTES`], brought there
/// as `fit` says; `Err` when it does not fit all the same.
pub fn finish(mut answer: Value, fit: Fit) -> Result<String, String> {
    if let Fit::Page(key) = fit {
        shrink_page(&mut answer, key, STRING_MAX_CHARS);
        let mut dropped = 0;
        while size(&answer) > MAX_ANSWER_BYTES {
            let Some(items) = answer.get_mut(key).and_then(Value::as_array_mut) else { break };
            if items.len() <= 1 {
                break;
            }
            items.pop();
            dropped += 1;
        }
        if dropped > 0 {
            answer["has_more"] = Value::Bool(true);
            let shown = answer[key].as_array().map_or(0, Vec::len) as i64;
            let offset = answer.get("offset").and_then(Value::as_i64).unwrap_or(0);
            answer["next_offset"] = Value::from(offset + shown);
            answer["shortened"] = Value::String(format!(
                "the page was shortened to fit {MAX_ANSWER_BYTES} bytes; ask again from next_offset"
            ));
        }
        if size(&answer) > MAX_ANSWER_BYTES {
            shrink_page(&mut answer, key, STRING_MIN_CHARS);
        }
    }
    let text = serde_json::to_string(&answer).map_err(|e| e.to_string())?;
    if text.len() > MAX_ANSWER_BYTES {
        return Err(format!(
            "the answer would be {} bytes, more than the {MAX_ANSWER_BYTES} a tool may return; ask for less (limit, max_bytes)",
            text.len()
        ));
    }
    Ok(text)
}

/// The part of `text` from byte `offset` on of at most `max` bytes, both
/// moved back to character boundaries; and the offset after it when that
/// is not the end.
pub fn window(text: &str, offset: usize, max: usize) -> (&str, Option<usize>) {
    let floor = |mut i: usize| {
        i = i.min(text.len());
        while !text.is_char_boundary(i) {
            i -= 1;
        }
        i
    };
    let start = floor(offset);
    let mut end = floor(start.saturating_add(max));
    if end == start && start < text.len() {
        // A window smaller than one character still moves on by one.
        end = start + text[start..].chars().next().map_or(0, char::len_utf8);
    }
    (&text[start..end], (end < text.len()).then_some(end))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn windows_end_on_character_boundaries_and_say_where_the_rest_begins() {
        let text = "aé".repeat(3);
        assert_eq!(window(&text, 0, 2), ("a", Some(1)));
        assert_eq!(window(&text, 1, 2), ("é", Some(3)));
        assert_eq!(window(&text, 2, 100), ("éaéaé", None));
        assert_eq!(window(&text, 1, 1), ("é", Some(3)));
        assert_eq!(window(&text, 99, 4), ("", None));
    }

    #[test]
    fn long_strings_and_lists_are_cut_and_say_so() {
        let mut v = json!({"t": "x".repeat(10), "l": (0..60).collect::<Vec<i32>>()});
        shrink(&mut v, 4);
        assert_eq!(v["t"], format!("xxxx{CUT_MARK}10 chars]"));
        assert_eq!(v["l"].as_array().unwrap().len(), LIST_MAX_ITEMS + 1);
        assert_eq!(v["l"][LIST_MAX_ITEMS], "… 10 more");
    }

    #[test]
    fn a_page_too_big_is_shortened_to_fit() {
        let items: Vec<String> = (0..100).map(|_| "y".repeat(1500)).collect();
        let text = finish(json!({"items": items, "offset": 10, "has_more": false}), Fit::Page("items")).unwrap();
        assert!(text.len() <= MAX_ANSWER_BYTES);
        let v: Value = serde_json::from_str(&text).unwrap();
        let shown = v["items"].as_array().unwrap().len() as i64;
        assert!(shown < 100 && shown > 1, "{shown}");
        assert_eq!(v["has_more"], true);
        assert_eq!(v["next_offset"], 10 + shown);
        // A page keeps every item its limit let in.
        let text = finish(json!({"items": (0..100).collect::<Vec<i32>>()}), Fit::Page("items")).unwrap();
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap()["items"].as_array().unwrap().len(), 100);
        // A window is never cut, but refused when too big.
        let window = json!({"raw": "\u{1}".repeat(MAX_ANSWER_BYTES / 4)});
        assert!(finish(window, Fit::Window).unwrap_err().contains("max_bytes"));
        assert!(finish(json!({"raw": "z".repeat(5000)}), Fit::Window).unwrap().len() > 5000);
    }
}
