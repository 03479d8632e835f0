//! The JSONPath subset redaction rules use: `$`, `.name`, `['name']`, `.*`,
//! `[*]`, `[N]` and recursive descent `..name` / `..*`, matched against the
//! path of a value inside one JSON-RPC message.

/// One step of a concrete path into a JSON value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seg {
    /// An object member.
    Key(String),
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
        match_steps(&self.steps, path)
    }
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

fn match_steps(steps: &[Step], path: &[Seg]) -> bool {
    let Some((step, rest)) = steps.split_first() else { return path.is_empty() };
    match step {
        Step::Descend(_) => (0..path.len()).any(|k| step_matches(step, &path[k]) && match_steps(rest, &path[k + 1..])),
        _ => path.first().is_some_and(|seg| step_matches(step, seg) && match_steps(rest, &path[1..])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(text: &str) -> Vec<Seg> {
        text.split('/')
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().map(Seg::Index).unwrap_or_else(|_| Seg::Key(s.to_owned())))
            .collect()
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
}
