//! The traces `acp-tee list` shows (by name, since a time, at most so
//! many, with how many match in all) and the lookups that name a trace:
//! the newest trace of a name, the names there are.

use super::summaries::{summary_of_trace, summary_select};
use crate::{Store, StoreError, SHOWN};
use acp_tee_shared::api::TraceSummary;
use rusqlite::{params, params_from_iter, types::Value};

/// A trace's name as `acp-tee list` shows it: the name it was given, else
/// its command's program (`t` is the traces table).
const SHOWN_NAME: &str = "coalesce(t.name, json_extract(t.command, '$[0]'))";

/// Which traces [`Store::trace_page`] reads. The default is every trace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceFilter {
    /// Only traces of this name, as listed: the name given, else the
    /// command's program (compared exactly).
    pub name: Option<String>,
    /// Only traces started at or after this instant (RFC 3339; compared as
    /// instants to the millisecond, whatever the stored times' precision).
    pub since: Option<String>,
    /// At most this many traces, the newest (`None`: all).
    pub limit: Option<u64>,
}

/// The traces a [`TraceFilter`] selects.
#[derive(Clone, Debug, PartialEq)]
pub struct TracePage {
    /// The newest traces that match, newest first, at most the limit.
    pub traces: Vec<TraceSummary>,
    /// How many traces match in all (read by the same statement, so it
    /// agrees with `traces`).
    pub matching: u64,
}

/// The SQL conditions of `filter`'s name and time (`AND ...`), numbered
/// as [`params_of`] gives their values.
fn conditions_of(filter: &TraceFilter) -> String {
    let mut conditions = String::new();
    let mut n = 0;
    if filter.name.is_some() {
        n += 1;
        conditions.push_str(&format!(" AND {SHOWN_NAME} = ?{n}"));
    }
    if filter.since.is_some() {
        n += 1;
        conditions.push_str(&format!(" AND julianday(t.started_at) >= julianday(?{n})"));
    }
    conditions
}

/// The values of [`conditions_of`]'s parameters.
fn params_of(filter: &TraceFilter) -> Vec<Value> {
    filter.name.iter().chain(&filter.since).map(|v| Value::Text(v.clone())).collect()
}

impl Store {
    /// The traces `filter` selects, newest first, and how many match in all.
    pub fn trace_page(&self, filter: &TraceFilter) -> Result<TracePage, StoreError> {
        let conditions = conditions_of(filter);
        let mut values = params_of(filter);
        let limit = filter.limit.map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX));
        values.push(Value::Integer(limit));
        // The count is a window over every matching row, taken before the
        // limit: one statement, so the count and the rows agree.
        let sql = format!(
            "SELECT *, count(*) OVER () FROM ({}{conditions}) ORDER BY id DESC LIMIT ?{}",
            summary_select(),
            values.len()
        );
        let mut matching = 0u64;
        let mut stmt = self.conn.prepare(&sql)?;
        // The count is the last column.
        let count_at = stmt.column_count() - 1;
        let traces = stmt
            .query_map(params_from_iter(values), |row| {
                matching = row.get::<_, i64>(count_at)?.try_into().unwrap_or(0);
                summary_of_trace(row)
            })?
            .collect::<Result<Vec<_>, _>>()?;
        if filter.limit == Some(0) {
            // No row carried the count.
            let sql = format!("SELECT count(*) FROM ({}{conditions})", summary_select());
            let n: i64 = self.conn.query_row(&sql, params_from_iter(&params_of(filter)), |r| r.get(0))?;
            matching = n.try_into().unwrap_or(0);
        }
        Ok(TracePage { traces, matching })
    }

    /// The id of the newest trace named `name` (as listed: the name given,
    /// else the command's program), if there is one.
    pub fn latest_trace_named(&self, name: &str) -> Result<Option<i64>, StoreError> {
        let sql = format!("SELECT max(t.id) FROM traces t WHERE {SHOWN} AND {SHOWN_NAME} = ?1");
        Ok(self.conn.query_row(&sql, params![name], |r| r.get(0))?)
    }

    /// The names of the traces (as listed), those used most recently first,
    /// at most `limit`.
    pub fn trace_names(&self, limit: usize) -> Result<Vec<String>, StoreError> {
        let sql = format!(
            "SELECT {SHOWN_NAME} AS n FROM traces t WHERE {SHOWN} AND n IS NOT NULL
             GROUP BY n ORDER BY max(t.id) DESC LIMIT ?1"
        );
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let names = self.conn.prepare(&sql)?.query_map(params![limit], |r| r.get(0))?.collect::<Result<_, _>>()?;
        Ok(names)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::TraceStart;

    fn start(name: Option<&str>, program: &str, started_at: &str) -> TraceStart {
        TraceStart {
            protocol: None,
            name: name.map(String::from),
            command: vec![program.into(), "acp".into()],
            cwd: None,
            mode: "wrap".into(),
            started_at: started_at.into(),
        }
    }

    #[test]
    fn a_page_filters_by_name_and_time_counts_all_that_match_and_names_resolve() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::create_maintained(&dir.path().join("t.db"));
        let a1 = store.create_trace(&start(Some("alpha"), "x", "2026-01-01T00:00:00Z"), 1).unwrap();
        let b = store.create_trace(&start(None, "beta-agent", "2026-02-01T00:00:00.000000Z"), 1).unwrap();
        let a2 = store.create_trace(&start(Some("alpha"), "y", "2026-03-01T12:00:00.123456Z"), 1).unwrap();
        let ids = |p: &TracePage| p.traces.iter().map(|t| t.meta.id).collect::<Vec<_>>();

        let all = store.trace_page(&TraceFilter::default()).unwrap();
        assert_eq!((ids(&all), all.matching), (vec![a2, b, a1], 3));
        let two = store.trace_page(&TraceFilter { limit: Some(2), ..Default::default() }).unwrap();
        assert_eq!((ids(&two), two.matching), (vec![a2, b], 3));
        let none = store.trace_page(&TraceFilter { limit: Some(0), ..Default::default() }).unwrap();
        assert_eq!((ids(&none), none.matching), (Vec::<i64>::new(), 3));
        let alpha = store.trace_page(&TraceFilter { name: Some("alpha".into()), limit: Some(1), ..Default::default() });
        let alpha = alpha.unwrap();
        assert_eq!((ids(&alpha), alpha.matching), (vec![a2], 2));
        // Without a name, the program is the name, as `list` shows it.
        let beta = store.trace_page(&TraceFilter { name: Some("beta-agent".into()), ..Default::default() }).unwrap();
        assert_eq!(ids(&beta), vec![b]);
        // Times compare as instants whatever their precision.
        let since = |s: &str| TraceFilter { since: Some(s.into()), ..Default::default() };
        assert_eq!(ids(&store.trace_page(&since("2026-02-01T00:00:00Z")).unwrap()), vec![a2, b]);
        assert_eq!(ids(&store.trace_page(&since("2026-02-01T00:00:00.001Z")).unwrap()), vec![a2]);
        assert_eq!(ids(&store.trace_page(&since("2027-01-01T00:00:00Z")).unwrap()), Vec::<i64>::new());
        let both = TraceFilter { name: Some("alpha".into()), since: Some("2025-12-31T00:00:00Z".into()), limit: None };
        assert_eq!(store.trace_page(&both).unwrap().matching, 2);

        assert_eq!(store.latest_trace_named("alpha").unwrap(), Some(a2));
        assert_eq!(store.latest_trace_named("beta-agent").unwrap(), Some(b));
        assert_eq!(store.latest_trace_named("x").unwrap(), None, "a program is a name only when none was given");
        assert_eq!(store.trace_names(10).unwrap(), ["alpha", "beta-agent"]);
        assert_eq!(store.trace_names(1).unwrap(), ["alpha"]);
    }
}
