//! The documents stay true to the repository: every relative link in every
//! Markdown file resolves (to a file, and to a heading when it names one),
//! every repository path written in code in a document exists, and every
//! name ARCHITECTURE.md puts in code (a constant, type, function, column)
//! occurs in the sources of the crate or directory its section's heading
//! names, so neither a rename nor a move to another crate can leave the map
//! behind.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tee/ has a parent").canonicalize().unwrap()
}

/// Directories that are built, not written: never searched for documents
/// or sources.
fn generated(name: &str) -> bool {
    name.starts_with('.') && name != ".ci" && name != ".cargo" || name == "target" || name == "dist"
}

/// Every file under `dir` whose name ends with one of `endings`.
fn files_under(dir: &Path, endings: &[&str], found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        if entry.file_type().unwrap().is_dir() {
            if !generated(&name) {
                files_under(&path, endings, found);
            }
        } else if endings.iter().any(|e| name.ends_with(e)) {
            found.push(path);
        }
    }
}

/// The repository's Markdown files.
fn documents() -> Vec<PathBuf> {
    let mut docs = Vec::new();
    files_under(&root(), &[".md"], &mut docs);
    docs.sort();
    assert!(docs.iter().any(|d| d.ends_with("ARCHITECTURE.md")), "no documents found under {}", root().display());
    docs
}

/// A link or a piece of code in a document, with the line it is on; a
/// piece of code also with the index of its section in [`Parsed::sections`].
#[derive(Debug)]
enum Item {
    Link { dest: String, line: usize },
    Code { text: String, line: usize, section: usize },
}

/// A part of a document from one heading to the next. Section 0 is what
/// comes before the first heading.
#[derive(Debug, Default)]
struct Section {
    /// The heading as written, `#`s and all, for messages.
    title: String,
    /// 1 for `#`, 2 for `##`, ...; 0 for section 0.
    level: usize,
    /// The code spans in the heading.
    codes: Vec<String>,
}

/// A document's links and code spans, its sections, and the anchors of its
/// headings.
struct Parsed {
    items: Vec<Item>,
    sections: Vec<Section>,
    anchors: BTreeSet<String>,
}

/// The anchor GitHub gives a heading: lower case, letters, digits, `-` and
/// `_` kept, spaces made `-`, everything else dropped; a repeated anchor
/// gets `-1`, `-2`, ...
fn slug(heading: &str, seen: &mut HashMap<String, usize>) -> String {
    let base: String = heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect();
    let n = seen.entry(base.clone()).or_insert(0);
    let anchor = if *n == 0 { base.clone() } else { format!("{base}-{n}") };
    *n += 1;
    anchor
}

fn parse(text: &str) -> Parsed {
    let line_of = |offset: usize| text[..offset].matches('\n').count() + 1;
    let mut items = Vec::new();
    let mut sections = vec![Section::default()];
    let mut anchors = BTreeSet::new();
    let mut seen = HashMap::new();
    let mut heading: Option<String> = None;
    let mut in_code_block = false;
    let options = Options::ENABLE_TABLES | Options::ENABLE_HEADING_ATTRIBUTES;
    for (event, range) in Parser::new_ext(text, options).into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { id, level, .. }) => {
                if let Some(id) = id {
                    anchors.insert(id.to_string());
                }
                heading = Some(String::new());
                let title = text[range.clone()].trim().to_owned();
                sections.push(Section { title, level: level as usize, codes: Vec::new() });
            }
            Event::End(TagEnd::Heading(_)) => {
                let text = heading.take().unwrap_or_default();
                anchors.insert(slug(&text, &mut seen));
            }
            Event::Start(Tag::CodeBlock(_)) => in_code_block = true,
            Event::End(TagEnd::CodeBlock) => in_code_block = false,
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                items.push(Item::Link { dest: dest_url.to_string(), line: line_of(range.start) });
            }
            Event::Text(t) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                }
            }
            Event::Code(t) => {
                let section = sections.len() - 1;
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                    sections[section].codes.push(t.to_string());
                }
                if !in_code_block {
                    items.push(Item::Code { text: t.to_string(), line: line_of(range.start), section });
                }
            }
            _ => {}
        }
    }
    Parsed { items, sections, anchors }
}

/// Whether `dest` leaves the repository's files: a URL or an e-mail address.
fn is_external(dest: &str) -> bool {
    dest.contains("://") || dest.starts_with("mailto:")
}

/// What is wrong with the link `dest` in `doc`, if anything.
fn broken_link(doc: &Path, dest: &str, parsed: &HashMap<PathBuf, Parsed>) -> Option<String> {
    if is_external(dest) {
        return None;
    }
    let (path, anchor) = match dest.split_once('#') {
        Some((p, a)) => (p, Some(a)),
        None => (dest, None),
    };
    let target = if path.is_empty() {
        doc.to_path_buf()
    } else {
        let Ok(target) = doc.parent().unwrap().join(path).canonicalize() else {
            return Some(format!("`{path}` does not exist"));
        };
        if !target.starts_with(root()) {
            return Some(format!("`{path}` is outside the repository"));
        }
        target
    };
    let anchor = anchor.filter(|a| !a.is_empty())?;
    match parsed.get(&target) {
        Some(p) if p.anchors.contains(anchor) => None,
        Some(p) => Some(format!("no heading `#{anchor}` (the headings: {:?})", p.anchors)),
        None => Some(format!("`#{anchor}` points into a file that is not Markdown")),
    }
}

/// Every document, parsed, by its path.
fn parsed_documents() -> HashMap<PathBuf, Parsed> {
    documents()
        .into_iter()
        .map(|d| {
            let text = std::fs::read_to_string(&d).unwrap();
            (d, parse(&text))
        })
        .collect()
}

/// `doc` relative to the root, for messages.
fn shown(doc: &Path) -> String {
    doc.strip_prefix(root()).unwrap_or(doc).display().to_string()
}

#[test]
fn every_relative_link_in_the_documents_resolves() {
    let parsed = parsed_documents();
    let mut broken = Vec::new();
    let mut checked = 0;
    for (doc, p) in &parsed {
        for item in &p.items {
            if let Item::Link { dest, line } = item {
                checked += 1;
                if let Some(why) = broken_link(doc, dest, &parsed) {
                    broken.push(format!("{}:{line}: link `{dest}`: {why}", shown(doc)));
                }
            }
        }
    }
    broken.sort();
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    assert!(checked > 0, "no links found: the parser saw nothing");
}

/// The repository's top-level directories that hold written files: a code
/// span starting with one of them and `/` is a path that must exist.
fn top_level_dirs() -> Vec<String> {
    std::fs::read_dir(root())
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !generated(n))
        .collect()
}

/// The repository path `code` names, if it names one: `tee/src/store/`,
/// `migrations/NNNN_*.sql` (its directory, then), `tee/src/cli/mod.rs`.
fn named_path(code: &str, dirs: &[String]) -> Option<PathBuf> {
    let first = code.split('/').next()?;
    if !code.contains('/') || code.contains(char::is_whitespace) || !dirs.iter().any(|d| d == first) {
        return None;
    }
    let path = Path::new(code);
    if code.contains(['*', '{']) || code.contains("NNNN") {
        return path.parent().map(Path::to_path_buf);
    }
    Some(path.to_path_buf())
}

#[test]
fn paths_written_in_the_documents_exist() {
    let dirs = top_level_dirs();
    let mut missing = Vec::new();
    let mut checked = 0;
    for (doc, p) in parsed_documents() {
        for item in &p.items {
            if let Item::Code { text, line, .. } = item {
                if let Some(path) = named_path(text, &dirs) {
                    checked += 1;
                    if !root().join(&path).exists() {
                        missing.push(format!("{}:{line}: `{text}` does not exist", shown(&doc)));
                    }
                }
            }
        }
    }
    missing.sort();
    assert!(missing.is_empty(), "paths named in documents that do not exist:\n{}", missing.join("\n"));
    assert!(checked > 10, "only {checked} paths found in the documents: the parser saw nothing");
}

/// Whether `code` is a name a reader would search the sources for:
/// `DETAIL_MAX_BYTES`, `Store`, `Store::create_or_open`, `for_each_frame`.
/// Plain lower-case words (`record`, `wrap`) are too common to check.
fn is_code_name(code: &str) -> bool {
    let segments: Vec<&str> = code.split("::").collect();
    let ident = |s: &str| {
        let mut chars = s.chars();
        chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    segments.iter().all(|s| ident(s))
        && (segments.len() > 1 || code.contains(|c: char| c == '_' || c.is_ascii_uppercase()))
}

/// Whether `word` occurs in `text` as a whole word.
fn has_word(text: &str, word: &str) -> bool {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(word).any(|(i, _)| {
        !text[..i].chars().next_back().is_some_and(is_word)
            && !text[i + word.len()..].chars().next().is_some_and(is_word)
    })
}

/// The repository's top-level directories and files that hold written
/// files: a code span in a heading starting with one of them names where
/// the section's names are.
fn top_level_entries() -> Vec<String> {
    std::fs::read_dir(root())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !generated(n))
        .collect()
}

/// The repository path a heading's code span names, if it names one:
/// `wire/`, `store/` (and `migrations/NNNN_*.sql`: its directory), `index.html`.
fn scope_path(code: &str, tops: &[String]) -> Option<PathBuf> {
    if code.contains('/') {
        return named_path(code, tops);
    }
    tops.iter().any(|t| t == code).then(|| PathBuf::from(code))
}

/// Where each section's names must occur: the paths its heading names, or,
/// when it names none, those of the nearest heading above it of a higher
/// level that names some; empty (the whole repository) when none does.
fn scopes(sections: &[Section], tops: &[String]) -> Vec<Vec<PathBuf>> {
    let mut scopes: Vec<Vec<PathBuf>> = Vec::new();
    // The enclosing headings: (level, index).
    let mut open: Vec<(usize, usize)> = Vec::new();
    for (i, s) in sections.iter().enumerate() {
        while open.last().is_some_and(|&(level, _)| level >= s.level) {
            open.pop();
        }
        let own: Vec<PathBuf> = s.codes.iter().filter_map(|c| scope_path(c, tops)).collect();
        let scope = if own.is_empty() { open.last().map(|&(_, j)| scopes[j].clone()).unwrap_or_default() } else { own };
        scopes.push(scope);
        open.push((s.level, i));
    }
    scopes
}

/// The names `text` (the document `doc`) gives in code that occur in none of
/// the `sources` (paths relative to the root, with their text) they must
/// occur in: for a name in a section whose heading names paths (or under
/// such a heading), a source under one of those paths; elsewhere, any
/// source. Each as a
/// message saying the section and the paths searched; and how many names
/// were checked.
fn unknown_names(doc: &str, text: &str, sources: &[(PathBuf, String)], tops: &[String]) -> (Vec<String>, usize) {
    let parsed = parse(text);
    let scopes = scopes(&parsed.sections, tops);
    let mut corpora: HashMap<&[PathBuf], String> = HashMap::new();
    let mut unknown = Vec::new();
    let mut checked = 0;
    for item in &parsed.items {
        let Item::Code { text, line, section } = item else { continue };
        if !is_code_name(text) {
            continue;
        }
        checked += 1;
        let scope = scopes[*section].as_slice();
        let corpus = corpora.entry(scope).or_insert_with(|| {
            let under = |path: &PathBuf| scope.is_empty() || scope.iter().any(|s| path.starts_with(s));
            sources.iter().filter(|(path, _)| under(path)).map(|(_, text)| text.as_str()).collect::<Vec<_>>().join("\n")
        });
        if let Some(segment) = text.split("::").find(|s| !has_word(corpus, s)) {
            let searched = if scope.is_empty() {
                "the repository".to_owned()
            } else {
                scope.iter().map(|p| format!("`{}`", p.display())).collect::<Vec<_>>().join(", ")
            };
            let title = &parsed.sections[*section].title;
            unknown.push(format!(
                "{doc}:{line}: `{text}`: `{segment}` occurs in no source file under {searched} (section {title:?})"
            ));
        }
    }
    (unknown, checked)
}

#[test]
fn names_in_the_architecture_occur_in_the_sources_of_their_section() {
    let mut files = Vec::new();
    files_under(&root(), &[".rs", ".sql", ".toml", ".html", ".css"], &mut files);
    files_under(&root().join("scripts"), &[""], &mut files);
    // Not this file: the names in its own comments and tests prove nothing.
    let this = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/docs.rs").canonicalize().unwrap();
    files.retain(|s| *s != this);
    assert!(files.len() > 100, "only {} source files found", files.len());
    let sources: Vec<(PathBuf, String)> = files
        .iter()
        .map(|f| (f.strip_prefix(root()).unwrap().to_path_buf(), std::fs::read_to_string(f).unwrap_or_default()))
        .collect();
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let (unknown, checked) = unknown_names("ARCHITECTURE.md", &text, &sources, &top_level_entries());
    assert!(unknown.is_empty(), "names the map gives that the code does not have there:\n{}", unknown.join("\n"));
    assert!(checked > 50, "only {checked} names found in ARCHITECTURE.md: the parser saw nothing");
}

#[test]
fn a_name_is_looked_for_under_the_paths_its_section_names() {
    let sources = [("wire/src/frame.rs", "pub struct Framer;"), ("store/src/lib.rs", "struct Store; fn maintain() {}")]
        .map(|(p, t)| (PathBuf::from(p), t.to_owned()));
    let tops = ["wire", "store", "index.html"].map(String::from);
    let doc = "\
# Map
`Framer` and `Store` are somewhere.
## Crates
### `wire/`
`Framer` is here, `Store` is not.
#### Frames
`Store::maintain` is not under `wire/` either.
### `store/` and `index.html`
`Store::maintain` is here, `Framer` is not.
## Cross-cutting
`Framer`, `Store::maintain`; `Missing` is nowhere.
";
    let (unknown, checked) = unknown_names("sample.md", doc, &sources, &tops);
    assert_eq!(checked, 10);
    assert_eq!(
        unknown,
        [
            "sample.md:5: `Store`: `Store` occurs in no source file under `wire/` (section \"### `wire/`\")",
            "sample.md:7: `Store::maintain`: `Store` occurs in no source file under `wire/` (section \"#### Frames\")",
            "sample.md:9: `Framer`: `Framer` occurs in no source file under `store/`, `index.html` \
             (section \"### `store/` and `index.html`\")",
            "sample.md:11: `Missing`: `Missing` occurs in no source file under the repository (section \"## Cross-cutting\")",
        ]
    );
}

#[test]
fn anchors_are_made_as_github_makes_them() {
    let mut seen = HashMap::new();
    assert_eq!(slug("The two commands", &mut seen), "the-two-commands");
    assert_eq!(slug("`tee/src/store/` and `migrations/`", &mut seen), "teesrcstore-and-migrations");
    assert_eq!(slug("1. Byte-exactness under fuzzing", &mut seen), "1-byte-exactness-under-fuzzing");
    assert_eq!(slug("The two commands", &mut seen), "the-two-commands-1");
    let p = parse("# A\n\n[x](#a) `tee/src` [y](b.md#c)\n\n```\n`not/code`\n```\n");
    assert!(p.anchors.contains("a"));
    assert_eq!(p.items.len(), 3, "{:?}", p.items);
}
