//! The browser tab's title, which names what the page shows.

use leptos::prelude::*;

/// Sets the document title to `what · acp-tee`.
pub fn set_title(what: &str) {
    let title = if what.is_empty() { "acp-tee".to_owned() } else { format!("{what} · acp-tee") };
    document().set_title(&title);
}

/// Sets the title once, for a page whose title does not change.
pub fn use_title(what: String) {
    set_title(&what);
}
