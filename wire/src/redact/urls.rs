//! The default rule for strings: in every URL a string holds
//! (`scheme://...`), the values of query parameters whose names look like
//! secrets ([`looks_secret`]: `api_key`, `token`, `access_token`, ...) are
//! masked. One pass over the text; a value already masked is left as it is.

use super::{looks_secret, MASK};

/// Characters that end a URL inside text.
fn ends_url(c: char) -> bool {
    c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`' | '\\')
}

/// `text` with the secret query values of its URLs masked, if any was.
pub(super) fn mask_url_queries(text: &str) -> Option<String> {
    if !text.contains("://") {
        return None;
    }
    let (mut out, mut copied, mut scanned) = (String::new(), 0, 0);
    for (at, _) in text.match_indices("://") {
        if at < scanned {
            continue;
        }
        let rest = &text[at..];
        let end = at + rest.find(ends_url).unwrap_or(rest.len());
        scanned = end;
        let url = &text[at..end];
        let Some(q) = url.find('?') else { continue };
        let query_end = url[q..].find('#').map_or(url.len(), |h| q + h);
        let mut param_start = at + q + 1;
        for param in text[param_start..at + query_end].split('&') {
            if let Some((name, value)) = param.split_once('=') {
                let value_at = param_start + name.len() + 1;
                if !value.is_empty() && value != MASK && looks_secret(name) {
                    out.push_str(&text[copied..value_at]);
                    out.push_str(MASK);
                    copied = value_at + value.len();
                }
            }
            param_start += param.len() + 1;
        }
    }
    (copied > 0).then(|| {
        out.push_str(&text[copied..]);
        out
    })
}
