//! Search: one meaning whether or not a frame is in the search index yet.
//!
//! A search is a list of words (split at whitespace). A frame matches when
//! it holds every word as FTS5 matches a quoted phrase: the word is cut into
//! tokens by FTS5's `unicode61` tokenizer (runs of letters, digits and
//! private-use characters; case folded, diacritics removed), and the frame's
//! text, cut the same way, holds those tokens one after the other. So
//! `token7` does not match `token70`, `OR` does not match `error`, `s%` is
//! the word `s`, `ünï` matches `ÜNÏ` and `uni`, and `session/prompt` matches
//! `session/prompt` and `session prompt`, not `prompt session`. A word
//! without any letter or digit (`{`, `_`) is left out; a search of such
//! words alone matches nothing.
//!
//! Frames in the index are found by FTS5 (`frames_fts MATCH`); frames beyond
//! a trace's `search_progress.indexed_seq` by `acp_match`, an SQL function
//! that cuts the frame's text with the very same tokenizer (taken from
//! SQLite's FTS5 module through its C API), so both give the same answers.
//!
//! The work of one search is bounded: repeated words are dropped, a search
//! of more than [`MAX_SEARCH_TERMS`] tokens is refused, and a word with no
//! token costs nothing.
//!
//! A reader that masks what it shows (`serve`, `acp-tee mcp`, unless
//! `--no-redact`) searches what it shows: while [`super::Store::seen_by`]
//! holds its [`Redactor`], `acp_seen_match` is `acp_match` on the frame as
//! that redactor masks it (the same `Redactor::redact` its details are
//! masked with), and each frame the index finds is checked with it, so a
//! word found only inside a masked value finds nothing, counts included.
//! The index holds the stored text, which has every token of the masked
//! text but the mask's (masking replaces a value by [`MASK`]): a search
//! naming the mask's token (`REDACTED`) is scanned whole instead.

use crate::redact::{Redactor, MASK};
use rusqlite::types::ValueRef;
use rusqlite::{ffi, Connection};
use std::borrow::Cow;
use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_void};
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

/// The redactor of the reader a connection answers for, while one is set
/// ([`super::Store::seen_by`]): what `acp_seen_match` and `acp_seen_len`
/// mask frames with (`None`: they read frames as stored).
pub(super) type Seen = Arc<Mutex<Option<Arc<Redactor>>>>;

/// `raw` as the reader of `seen` sees it.
pub(super) fn seen<'a>(seen: &Seen, raw: &'a [u8]) -> Cow<'a, [u8]> {
    let redactor = seen.lock().unwrap_or_else(|e| e.into_inner()).clone();
    match redactor {
        Some(r) => r.redact(raw),
        None => Cow::Borrowed(raw),
    }
}

/// Tokens a search may hold at most, counted over its distinct words: each
/// token is one list FTS5 reads through, so this bounds what a search costs
/// (a search of one word repeated 166 times cost 166 times the word).
pub const MAX_SEARCH_TERMS: usize = 16;

/// FTS5 keeps at most this many bytes of a token (`FTS5_MAX_TOKEN_SIZE`),
/// in the index and in queries; the scan does the same.
const MAX_TOKEN_BYTES: usize = 32768;

/// Why a search text was refused.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    /// The text holds a NUL character.
    #[error("the search text must not contain NUL characters; leave them out")]
    Nul,
    /// Too many tokens.
    #[error("the search has {0} terms (runs of letters or digits; a repeated word counts once); at most {MAX_SEARCH_TERMS} are searched for at once: leave some out")]
    TooManyTerms(usize),
}

/// A search, ready for SQL: its distinct words, each with tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Search {
    /// The words to look for, in the order given, each once (by tokens).
    words: Vec<String>,
    /// Some word holds the token of [`MASK`]: the index (of the stored,
    /// unmasked text) cannot find where a reader sees it.
    names_mask: bool,
}

impl Search {
    /// The FTS5 query for these words: each a quoted phrase (a `"` doubled),
    /// so no FTS5 syntax is ever interpreted; `None` when there are no words
    /// (then nothing matches).
    pub fn fts_query(&self) -> Option<String> {
        let phrases: Vec<String> = self.words.iter().map(|w| format!("\"{}\"", w.replace('"', "\"\""))).collect();
        (!phrases.is_empty()).then(|| phrases.join(" "))
    }

    /// True when the search has a word to look for (else nothing matches).
    pub fn has_words(&self) -> bool {
        !self.words.is_empty()
    }

    /// The second argument of `acp_match`: the words, one a line.
    pub fn scan_arg(&self) -> String {
        self.words.join("\n")
    }

    /// True when a word holds the token of the mask (`REDACTED`), which
    /// the index of stored frames cannot find where masking put it.
    pub fn names_mask(&self) -> bool {
        self.names_mask
    }

    /// The words kept.
    #[cfg(any(test, feature = "testing"))]
    pub fn words(&self) -> &[String] {
        &self.words
    }
}

/// Reads the text of a search box on `conn`: words at whitespace, those with
/// no token left out, repeats (the same tokens) left out.
pub fn parse(conn: &Connection, text: &str) -> Result<Search, super::StoreError> {
    if text.contains('\0') {
        return Err(SearchError::Nul.into());
    }
    let mut tokenizer = Tokenizer::new(conn)?;
    let mask = tokenizer.phrase(MASK);
    let mut seen: Vec<Vec<Vec<u8>>> = Vec::new();
    let mut words = Vec::new();
    let mut terms = 0;
    for word in text.split_whitespace() {
        let tokens = tokenizer.phrase(word);
        if tokens.is_empty() || seen.contains(&tokens) {
            continue;
        }
        terms += tokens.len();
        seen.push(tokens);
        words.push(word.to_owned());
    }
    if terms > MAX_SEARCH_TERMS {
        return Err(SearchError::TooManyTerms(terms).into());
    }
    let names_mask = seen.iter().flatten().any(|t| mask.contains(t));
    Ok(Search { words, names_mask })
}

/// FTS5's `unicode61` tokenizer, as the search index was created with
/// (`tokenize = 'unicode61'`, default options), used directly.
pub(super) struct Tokenizer {
    methods: ffi::fts5_tokenizer,
    instance: NonNull<ffi::Fts5Tokenizer>,
}

// SAFETY: the instance is memory of its own (no tie to a connection or
// thread) and is only used through `&mut self`.
unsafe impl Send for Tokenizer {}

impl Tokenizer {
    /// Finds the tokenizer through the FTS5 module of `conn` and makes an instance.
    pub(super) fn new(conn: &Connection) -> rusqlite::Result<Tokenizer> {
        let failed = |what: &str| {
            let message = format!("cannot {what} FTS5's unicode61 tokenizer");
            rusqlite::Error::SqliteFailure(ffi::Error::new(ffi::SQLITE_ERROR), Some(message))
        };
        // SAFETY: `SELECT fts5(?1)` with a pointer bound as "fts5_api_ptr"
        // is how SQLite hands out the FTS5 API (fts5.html, "Extending
        // FTS5"); the API lives as long as the connection, and the
        // tokenizer's methods are static. The statement is finalized here.
        unsafe {
            let db = conn.handle();
            let mut stmt = std::ptr::null_mut();
            let rc = ffi::sqlite3_prepare_v2(db, c"SELECT fts5(?1)".as_ptr(), -1, &mut stmt, std::ptr::null_mut());
            if rc != ffi::SQLITE_OK {
                let message = std::ffi::CStr::from_ptr(ffi::sqlite3_errmsg(db)).to_string_lossy().into_owned();
                return Err(rusqlite::Error::SqliteFailure(ffi::Error::new(rc), Some(message)));
            }
            if stmt.is_null() {
                return Err(failed("reach"));
            }
            let mut api: *mut ffi::fts5_api = std::ptr::null_mut();
            ffi::sqlite3_bind_pointer(
                stmt,
                1,
                (&mut api as *mut *mut ffi::fts5_api).cast::<c_void>(),
                c"fts5_api_ptr".as_ptr(),
                None,
            );
            ffi::sqlite3_step(stmt);
            ffi::sqlite3_finalize(stmt);
            let find = api.as_ref().and_then(|a| a.xFindTokenizer).ok_or_else(|| failed("reach"))?;
            let mut user_data = std::ptr::null_mut();
            let mut methods: ffi::fts5_tokenizer = std::mem::zeroed();
            if find(api, c"unicode61".as_ptr(), &mut user_data, &mut methods) != ffi::SQLITE_OK {
                return Err(failed("find"));
            }
            let create = methods.xCreate.ok_or_else(|| failed("create"))?;
            let mut instance = std::ptr::null_mut();
            if create(user_data, std::ptr::null_mut(), 0, &mut instance) != ffi::SQLITE_OK {
                return Err(failed("create"));
            }
            let instance = NonNull::new(instance).ok_or_else(|| failed("create"))?;
            if methods.xTokenize.is_none() {
                if let Some(delete) = methods.xDelete {
                    delete(instance.as_ptr());
                }
                return Err(failed("use"));
            }
            Ok(Tokenizer { methods, instance })
        }
    }

    /// Calls `each` with the tokens of `text` in order (as FTS5 keeps them:
    /// at most [`MAX_TOKEN_BYTES`] each) until it returns false.
    pub(super) fn tokens(&mut self, text: &str, flags: c_int, mut each: impl FnMut(&[u8]) -> bool) {
        type Each<'a> = &'a mut dyn FnMut(&[u8]) -> bool;
        unsafe extern "C" fn token(
            ctx: *mut c_void,
            _flags: c_int,
            token: *const c_char,
            len: c_int,
            _start: c_int,
            _end: c_int,
        ) -> c_int {
            // SAFETY: `ctx` is the `Each` passed to xTokenize below, alive
            // for the call; FTS5 passes `len` valid bytes at `token`.
            let (each, token) = unsafe {
                let each = &mut *ctx.cast::<Each>();
                let len = usize::try_from(len).unwrap_or(0).min(MAX_TOKEN_BYTES);
                (each, if len == 0 { &[][..] } else { std::slice::from_raw_parts(token.cast::<u8>(), len) })
            };
            if each(token) {
                ffi::SQLITE_OK
            } else {
                // Any other code stops the tokenizer; it is not an error here.
                ffi::SQLITE_DONE
            }
        }
        // FTS5 takes the length as an int: longer texts are read as far as that goes.
        let len = c_int::try_from(text.len()).unwrap_or(c_int::MAX);
        let mut each: Each = &mut each;
        let tokenize = self.methods.xTokenize.expect("checked in new");
        // SAFETY: the instance is alive; `text` outlives the call; `each`
        // is what `token` reads `ctx` as.
        unsafe {
            tokenize(
                self.instance.as_ptr(),
                (&mut each as *mut Each).cast::<c_void>(),
                flags,
                text.as_ptr().cast::<c_char>(),
                len,
                Some(token),
            );
        }
    }

    /// The tokens of a search word, as FTS5 reads a quoted phrase.
    fn phrase(&mut self, word: &str) -> Vec<Vec<u8>> {
        let mut tokens = Vec::new();
        self.tokens(word, ffi::FTS5_TOKENIZE_QUERY, |t| {
            tokens.push(t.to_vec());
            true
        });
        tokens
    }
}

impl Drop for Tokenizer {
    fn drop(&mut self) {
        if let Some(delete) = self.methods.xDelete {
            // SAFETY: made by xCreate, deleted once.
            unsafe { delete(self.instance.as_ptr()) };
        }
    }
}

/// The words of one `acp_match` call, read once per statement.
struct Phrases {
    /// Each word's tokens.
    phrases: Vec<Vec<Vec<u8>>>,
    /// Every token that is ASCII, to rule out an ASCII frame without it
    /// quickly; `None` when some token is not ASCII (no ASCII frame matches).
    ascii: Option<Vec<memchr::memmem::Finder<'static>>>,
}

/// Registers `acp_match(raw, words)` on `conn`: true when `raw` (read as
/// UTF-8, invalid bytes replaced, as the indexer reads it) holds every word
/// of `words` (one a line) as FTS5 would match it as a phrase; and
/// `acp_seen_match(raw, words)`, the same on `raw` as the reader of `seen`
/// sees it (masked).
pub(super) fn register_match(conn: &Connection, seen: &Seen) -> rusqlite::Result<()> {
    register_match_as(conn, "acp_match", None)?;
    register_match_as(conn, "acp_seen_match", Some(seen.clone()))
}

/// Registers `name(raw, words)`, reading `raw` as `seen`'s reader sees it
/// when given.
fn register_match_as(conn: &Connection, name: &str, seen: Option<Seen>) -> rusqlite::Result<()> {
    use rusqlite::functions::FunctionFlags;
    let tokenizer = RefCell::new(Tokenizer::new(conn)?);
    let scratch = RefCell::new(Scratch::default());
    // Not deterministic when masked: the redactor changes from reader to reader.
    let deterministic = if seen.is_some() { FunctionFlags::empty() } else { FunctionFlags::SQLITE_DETERMINISTIC };
    let flags = FunctionFlags::SQLITE_UTF8 | deterministic | FunctionFlags::SQLITE_INNOCUOUS;
    conn.create_scalar_function(name, 2, flags, move |ctx| {
        let Ok(mut tokenizer) = tokenizer.try_borrow_mut() else {
            return Err(rusqlite::Error::UserFunctionError("acp_match called within itself".into()));
        };
        let phrases = ctx.get_or_create_aux(1, |words| -> Result<Phrases, rusqlite::Error> {
            let text = match words {
                ValueRef::Text(t) | ValueRef::Blob(t) => String::from_utf8_lossy(t).into_owned(),
                _ => String::new(),
            };
            let phrases: Vec<Vec<Vec<u8>>> =
                text.split('\n').map(|w| tokenizer.phrase(w)).filter(|p| !p.is_empty()).collect();
            let terms = phrases.iter().map(Vec::len).sum();
            if terms > MAX_SEARCH_TERMS {
                return Err(rusqlite::Error::UserFunctionError(Box::new(SearchError::TooManyTerms(terms))));
            }
            let tokens = || phrases.iter().flatten();
            let ascii = tokens()
                .all(|t| t.is_ascii())
                .then(|| tokens().map(|t| memchr::memmem::Finder::new(t).into_owned()).collect());
            Ok(Phrases { phrases, ascii })
        })?;
        let (ValueRef::Blob(raw) | ValueRef::Text(raw)) = ctx.get_raw(0) else { return Ok(false) };
        let raw = match &seen {
            Some(s) => self::seen(s, raw),
            None => Cow::Borrowed(raw),
        };
        Ok(holds_all(&mut tokenizer, &mut scratch.borrow_mut(), &raw, &phrases))
    })
}

/// Memory `acp_match` keeps from row to row.
#[derive(Default)]
struct Scratch {
    /// The lower-cased copy of an ASCII frame.
    lower: Vec<u8>,
    /// The last tokens of a frame that is not ASCII, a ring of
    /// [`MAX_SEARCH_TERMS`].
    ring: Vec<Vec<u8>>,
}

/// True when `raw` holds every phrase.
fn holds_all(tokenizer: &mut Tokenizer, scratch: &mut Scratch, raw: &[u8], p: &Phrases) -> bool {
    if p.phrases.is_empty() {
        return false;
    }
    if !raw.is_ascii() {
        let text = String::from_utf8_lossy(raw);
        let ring = &mut scratch.ring;
        ring.resize_with(MAX_SEARCH_TERMS, Vec::new);
        let mut found = Found::new(&p.phrases);
        tokenizer.tokens(&text, ffi::FTS5_TOKENIZE_DOCUMENT, |token| {
            let slot = &mut ring[found.seen % MAX_SEARCH_TERMS];
            slot.clear();
            slot.extend_from_slice(token);
            !found.token(|k| &ring[k % MAX_SEARCH_TERMS])
        });
        return found.all();
    }
    // An ASCII text's tokens are runs of its lower-cased letters and digits:
    // a token whose bytes are not in the text rules the frame out at once,
    // and the others are compared where they lie in the lower-cased copy.
    let Some(finders) = &p.ascii else { return false };
    let lower = &mut scratch.lower;
    lower.clear();
    lower.extend(raw.iter().map(u8::to_ascii_lowercase));
    if !finders.iter().all(|f| f.find(lower).is_some()) {
        return false;
    }
    let mut ring: [&[u8]; MAX_SEARCH_TERMS] = [&[]; MAX_SEARCH_TERMS];
    let mut found = Found::new(&p.phrases);
    for token in ascii_tokens(lower) {
        ring[found.seen % MAX_SEARCH_TERMS] = token;
        if found.token(|k| ring[k % MAX_SEARCH_TERMS]) {
            return true;
        }
    }
    false
}

/// The tokens of ASCII text as `unicode61` cuts it (its ASCII token
/// characters are the letters and digits), the text already lower-cased.
fn ascii_tokens(lower: &[u8]) -> impl Iterator<Item = &[u8]> {
    lower.split(|b| !b.is_ascii_alphanumeric()).filter(|t| !t.is_empty()).map(|t| &t[..t.len().min(MAX_TOKEN_BYTES)])
}

/// Which phrases a frame's tokens held so far.
struct Found<'p> {
    phrases: &'p [Vec<Vec<u8>>],
    found: [bool; MAX_SEARCH_TERMS],
    left: usize,
    /// Tokens seen.
    seen: usize,
}

impl<'p> Found<'p> {
    /// At most [`MAX_SEARCH_TERMS`] phrases of at most as many tokens (as
    /// [`Phrases`] are made).
    fn new(phrases: &'p [Vec<Vec<u8>>]) -> Self {
        Found { phrases, found: [false; MAX_SEARCH_TERMS], left: phrases.len(), seen: 0 }
    }

    /// Notes the next token, which `nth(seen)` gives, as the ones before
    /// (`nth(i)` for the `i`th token from 0, for the last
    /// [`MAX_SEARCH_TERMS`] of them); true once every phrase was found.
    fn token<'t>(&mut self, nth: impl Fn(usize) -> &'t [u8]) -> bool {
        self.seen += 1;
        for (phrase, done) in self.phrases.iter().zip(self.found.iter_mut()) {
            let n = phrase.len();
            if !*done
                && n <= self.seen
                && phrase.iter().enumerate().all(|(i, t)| nth(self.seen - n + i) == t.as_slice())
            {
                *done = true;
                self.left -= 1;
            }
        }
        self.left == 0
    }

    fn all(&self) -> bool {
        self.left == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(text: &str) -> Vec<String> {
        let conn = Connection::open_in_memory().unwrap();
        let mut t = Tokenizer::new(&conn).unwrap();
        let mut out = Vec::new();
        t.tokens(text, ffi::FTS5_TOKENIZE_DOCUMENT, |tok| {
            out.push(String::from_utf8(tok.to_vec()).unwrap());
            true
        });
        out
    }

    #[test]
    fn the_tokenizer_is_fts5s_unicode61() {
        assert_eq!(
            tokens("Hello, WORLD! token70 s%d ÜNÏ Émile_x"),
            ["hello", "world", "token70", "s", "d", "uni", "emile", "x"]
        );
        assert_eq!(tokens("{}[]:,\"\\"), Vec::<String>::new());
    }

    proptest::proptest! {
        #[test]
        fn ascii_text_is_cut_as_unicode61_cuts_it(text in "[ -~\\t\\n\\x00-\\x08]{0,200}") {
            let lower = text.to_ascii_lowercase();
            let ours: Vec<String> = ascii_tokens(lower.as_bytes()).map(|t| String::from_utf8(t.to_vec()).unwrap()).collect();
            proptest::prop_assert_eq!(ours, tokens(&text));
        }
    }

    #[test]
    fn searches_drop_repeats_and_words_without_tokens_and_are_bounded() {
        let conn = Connection::open_in_memory().unwrap();
        let s = parse(&conn, "lorem Lorem LOREM { lorem, ipsum").unwrap();
        assert_eq!(s.words(), ["lorem", "ipsum"]);
        assert_eq!(s.fts_query().as_deref(), Some("\"lorem\" \"ipsum\""));
        let s = parse(&conn, &"lorem ".repeat(166)).unwrap();
        assert_eq!(s.words(), ["lorem"]);
        assert_eq!(parse(&conn, "_ {").unwrap().fts_query(), None);
        assert_eq!(parse(&conn, "a\"b OR c*").unwrap().fts_query().as_deref(), Some("\"a\"\"b\" \"OR\" \"c*\""));
        let many: String = (0..=MAX_SEARCH_TERMS).map(|i| format!("w{i} ")).collect();
        assert!(matches!(
            parse(&conn, &many),
            Err(crate::StoreError::Search(SearchError::TooManyTerms(n))) if n == MAX_SEARCH_TERMS + 1
        ));
        let long_word = "a/".repeat(MAX_SEARCH_TERMS + 1);
        assert!(parse(&conn, &long_word).is_err(), "a word's tokens count one by one");
        assert!(matches!(parse(&conn, "a\0b"), Err(crate::StoreError::Search(SearchError::Nul))));
    }
}
