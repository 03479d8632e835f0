//! The JSONPath subset redaction rules use: `$`, `.name`, `['name']`, `.*`,
//! `[*]`, `[N]` and recursive descent `..name` / `..*`, matched against the
//! path of a value inside one JSON-RPC message.
//!
//! Matching is incremental: a path is a small automaton whose state is the set
//! of its steps matched so far (a bit per position), advanced by one segment
//! at a time. The redactor keeps one such set per open level of the message,
//! so matching costs the number of steps per segment and never backtracks.

/// One step of a concrete path into a JSON value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seg<'a> {
    /// An object member.
    Key(&'a str),
    /// An array element.
    Index(usize),
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Step {
    Child(String),
    Index(usize),
    Any,
    /// `..name` (Some) or `..*` (None): this step at any depth below.
    Descend(Option<String>),
}

/// A compiled JSONPath.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonPath {
    steps: Vec<Step>,
}

impl JsonPath {
    /// Parses `$.params.mcpServers[*].url` and the like.
    pub fn parse(text: &str) -> Result<JsonPath, String> {
        let rest = text.strip_prefix('$').ok_or("a JSONPath starts with `$`")?;
        let mut steps = Vec::new();
        let mut s = rest;
        while !s.is_empty() {
            if let Some(after) = s.strip_prefix("..") {
                let (name, tail) = name_or_star(after)?;
                steps.push(Step::Descend(name));
                s = tail;
            } else if let Some(after) = s.strip_prefix('.') {
                let (name, tail) = name_or_star(after)?;
                steps.push(name.map_or(Step::Any, Step::Child));
                s = tail;
            } else if let Some(after) = s.strip_prefix('[') {
                let end = after.find(']').ok_or("`[` without `]`")?;
                let inner = after[..end].trim();
                steps.push(bracket(inner)?);
                s = &after[end + 1..];
            } else {
                return Err(format!("unexpected `{s}`"));
            }
        }
        Ok(JsonPath { steps })
    }

    /// Whether the value at `path` is selected.
    pub fn matches(&self, path: &[Seg]) -> bool {
        let words = self.positions().div_ceil(64);
        let (mut now, mut next) = (vec![0; words], vec![0; words]);
        set(&mut now, 0);
        for seg in path {
            next.fill(0);
            self.advance(0, &now, *seg, &mut next);
            std::mem::swap(&mut now, &mut next);
        }
        get(&now, self.steps.len())
    }

    /// How many states the path's automaton has: one per step matched so far.
    fn positions(&self) -> usize {
        self.steps.len() + 1
    }

    /// Sets in `to` the states (numbered from `base`) reached from those set
    /// in `from` by one more segment. State `i` means the first `i` steps
    /// have matched; a recursive-descent step also stays where it is.
    fn advance(&self, base: usize, from: &[u64], seg: Seg, to: &mut [u64]) {
        for (i, step) in self.steps.iter().enumerate() {
            if !get(from, base + i) {
                continue;
            }
            if matches!(step, Step::Descend(_)) {
                set(to, base + i);
            }
            if step_matches(step, &seg) {
                set(to, base + i + 1);
            }
        }
    }
}

/// Several paths run side by side over one walk of a message: the states of
/// all of them in one bit set of [`Paths::words`] words per level.
#[derive(Clone, Debug, Default)]
pub struct Paths {
    /// Each path with the number of its first state in the shared set.
    paths: Vec<(JsonPath, usize)>,
    words: usize,
}

impl Paths {
    /// The automaton of `paths` together.
    pub fn new(paths: impl IntoIterator<Item = JsonPath>) -> Paths {
        let mut base = 0;
        let paths: Vec<(JsonPath, usize)> = paths
            .into_iter()
            .map(|p| {
                let at = base;
                base += p.positions();
                (p, at)
            })
            .collect();
        Paths { paths, words: base.div_ceil(64) }
    }

    /// How many `u64`s one level's states take (0 without paths).
    pub fn words(&self) -> usize {
        self.words
    }

    /// Writes into `to` the states at the root of a message: nothing matched yet.
    pub fn start(&self, to: &mut [u64]) {
        to.fill(0);
        for (_, base) in &self.paths {
            set(to, *base);
        }
    }

    /// Writes into `to` the states one segment below `from`; true when a
    /// path then selects the value there.
    pub fn advance(&self, from: &[u64], seg: Seg, to: &mut [u64]) -> bool {
        if self.paths.is_empty() {
            return false;
        }
        to.fill(0);
        let mut selected = false;
        for (path, base) in &self.paths {
            path.advance(*base, from, seg, to);
            selected |= get(to, base + path.steps.len());
        }
        selected
    }
}

fn get(bits: &[u64], i: usize) -> bool {
    bits[i / 64] >> (i % 64) & 1 == 1
}

fn set(bits: &mut [u64], i: usize) {
    bits[i / 64] |= 1 << (i % 64);
}

fn name_or_star(s: &str) -> Result<(Option<String>, &str), String> {
    let end = s.find(['.', '[']).unwrap_or(s.len());
    match &s[..end] {
        "" => Err("a name is missing after `.`".into()),
        "*" => Ok((None, &s[end..])),
        name => Ok((Some(name.to_owned()), &s[end..])),
    }
}

fn bracket(inner: &str) -> Result<Step, String> {
    if inner == "*" {
        return Ok(Step::Any);
    }
    if let Ok(i) = inner.parse::<usize>() {
        return Ok(Step::Index(i));
    }
    let quoted = inner
        .strip_prefix('\'')
        .and_then(|r| r.strip_suffix('\''))
        .or_else(|| inner.strip_prefix('"').and_then(|r| r.strip_suffix('"')));
    quoted
        .map(|n| Step::Child(n.to_owned()))
        .ok_or_else(|| format!("`[{inner}]` is not an index, `*` or a quoted name"))
}

fn step_matches(step: &Step, seg: &Seg) -> bool {
    match (step, seg) {
        (Step::Child(n), Seg::Key(k)) => n == k,
        (Step::Index(i), Seg::Index(j)) => i == j,
        (Step::Any, _) | (Step::Descend(None), _) => true,
        (Step::Descend(Some(n)), Seg::Key(k)) => n == k,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(text: &str) -> Vec<Seg<'_>> {
        text.split('/').filter(|s| !s.is_empty()).map(|s| s.parse().map(Seg::Index).unwrap_or(Seg::Key(s))).collect()
    }

    #[test]
    fn paths_select_what_they_name() {
        let cases = [
            ("$.params.cwd", "params/cwd", true),
            ("$.params.cwd", "params/cwd/x", false),
            ("$.params.mcpServers[*].url", "params/mcpServers/3/url", true),
            ("$.params.mcpServers[1].url", "params/mcpServers/0/url", false),
            ("$['params']['cwd']", "params/cwd", true),
            ("$..url", "params/mcpServers/0/url", true),
            ("$..url", "url", true),
            ("$..mcpServers..value", "params/mcpServers/0/env/2/value", true),
            ("$.params.*", "params/anything", true),
            ("$.*", "params/anything", false),
            ("$", "", true),
        ];
        for (rule, at, expect) in cases {
            assert_eq!(JsonPath::parse(rule).unwrap().matches(&path(at)), expect, "{rule} at {at}");
        }
    }

    #[test]
    fn bad_paths_say_why() {
        assert_eq!(JsonPath::parse("params").unwrap_err(), "a JSONPath starts with `$`");
        assert_eq!(JsonPath::parse("$.a[1").unwrap_err(), "`[` without `]`");
        assert_eq!(JsonPath::parse("$.").unwrap_err(), "a name is missing after `.`");
        assert_eq!(JsonPath::parse("$[x]").unwrap_err(), "`[x]` is not an index, `*` or a quoted name");
    }

    /// The backtracking matcher the automaton replaced, kept as the oracle.
    fn reference(steps: &[Step], path: &[Seg]) -> bool {
        let Some((step, rest)) = steps.split_first() else { return path.is_empty() };
        match step {
            Step::Descend(_) => {
                (0..path.len()).any(|k| step_matches(step, &path[k]) && reference(rest, &path[k + 1..]))
            }
            _ => path.first().is_some_and(|seg| step_matches(step, seg) && reference(rest, &path[1..])),
        }
    }

    proptest::proptest! {
        #[test]
        fn the_automaton_agrees_with_backtracking(
            rule in proptest::collection::vec(
                proptest::sample::select(vec![".a", ".b", "..a", "..b", "..*", ".*", "[0]", "[1]", "[*]"]), 0..6),
            at in proptest::collection::vec(proptest::sample::select(vec!["a", "b", "c", "0", "1"]), 0..10),
        ) {
            let p = JsonPath::parse(&format!("${}", rule.concat())).unwrap();
            let at = at.join("/");
            let segs = path(&at);
            proptest::prop_assert_eq!(p.matches(&segs), reference(&p.steps, &segs));
        }
    }

    /// Backtracking over `..` steps tried every way to split the path among
    /// them: C(3000, 6) (about 10^18) splits here. The automaton advances 8
    /// states per segment.
    #[test]
    fn recursive_descent_is_linear_in_the_path() {
        let p = JsonPath::parse("$..a..a..a..a..a..a..b").unwrap();
        let deep: Vec<Seg> = std::iter::repeat_n(Seg::Key("a"), 3_000).collect();
        assert!(!p.matches(&deep));
        let hit: Vec<Seg> = deep.iter().copied().chain([Seg::Key("b")]).collect();
        assert!(p.matches(&hit));
    }

    #[test]
    fn paths_run_side_by_side() {
        let paths = Paths::new(["$.params.cwd", "$..url", "$.a[1]"].map(|p| JsonPath::parse(p).unwrap()));
        let select = |at: &str| {
            let mut now = vec![0; paths.words()];
            paths.start(&mut now);
            let mut hit = false;
            for seg in path(at) {
                let mut next = vec![0; paths.words()];
                hit = paths.advance(&now, seg, &mut next);
                now = next;
            }
            hit
        };
        assert!(select("params/cwd") && select("x/y/url") && select("a/1"));
        assert!(!select("params/cwd/x") && !select("a/0") && !select("params"));
        assert_eq!(Paths::new([]).words(), 0);
    }
}
