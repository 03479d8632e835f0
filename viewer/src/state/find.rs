//! Find (`find=` in the URL): every frame the filters show stays drawn; Enter steps to the next frame
//! holding the words (shift+Enter the previous), selecting it so the jump machinery brings it into view,
//! and the rows drawn that hold them are marked. The server answers both (`/api/traces/{id}/find` and
//! `/matches`), searching the frames as it shows them (masked), within the range the diagram shows (a range
//! filtered to, a replay's cursor).

use super::TraceState;
use crate::api::{self, ApiFailure};
use crate::components::highlight::search_words;
use crate::view_query::{last_seq_shown, ViewQuery};
use acp_tee_shared::api::{FindQuery, FindStep, MATCHES_MAX_SPAN};
use gloo_timers::future::TimeoutFuture;
use leptos::prelude::*;
use leptos::task::spawn_local;
use std::collections::BTreeSet;

/// Time the rows drawn must stay put before their matches are asked for (scrolling moves them on).
const MATCHES_DEBOUNCE_MS: u32 = 150;

/// What the last step found, for the counter by the find field.
#[derive(Clone, Debug, PartialEq)]
pub enum Found {
    /// A step is under way.
    Looking,
    /// The server's answer to a step forward (`true`) or back.
    Step(FindStep, bool),
    /// The server could not answer.
    Failed(ApiFailure),
}

/// The find state of one trace view.
#[derive(Clone, Copy)]
pub struct FindData {
    /// The words marked in previews and payloads: the search filter's and find's (tracked).
    pub words: Memo<Vec<String>>,
    /// The last step's answer, with the words it was for; `None` before the first step.
    pub found: RwSignal<Option<(String, Found)>>,
    /// The seqs of the rows drawn that hold the words, with the words and filters they were asked for.
    pub hits: RwSignal<(Option<FindQuery>, BTreeSet<i64>)>,
    /// Counts answers, so a late one for an older question is dropped.
    asked: StoredValue<u64>,
}

/// The query of a find under the view's filters: `find` the words, the rest the filters.
pub fn find_query(q: &ViewQuery, replay: Option<i64>) -> Option<FindQuery> {
    let words = q.find.clone()?;
    let f = &q.filters;
    Some(FindQuery {
        find: Some(words),
        // What the diagram shows: the range filtered to, no frame past a replay's cursor.
        from: f.from,
        to: last_seq_shown(f.to, replay),
        dir: f.dir,
        kind: f.kind,
        method: f.method.clone(),
        session: f.session.clone(),
        errors: f.errors.then_some(true),
        min_latency_ms: f.min_latency_ms,
        q: f.q.clone(),
        ..FindQuery::default()
    })
}

impl FindData {
    /// Nothing found yet; the words follow the URL.
    pub fn new(query: Memo<ViewQuery>) -> FindData {
        let words = Memo::new(move |_| {
            query.with(|q| {
                let mut words = search_words(q.filters.q.as_deref());
                words.extend(search_words(q.find.as_deref()));
                words
            })
        });
        FindData {
            words,
            found: RwSignal::new(None),
            hits: RwSignal::new((None, BTreeSet::new())),
            asked: StoredValue::new(0),
        }
    }

    /// True when the row of `seq` holds the words (tracked).
    pub fn is_hit(&self, seq: i64) -> bool {
        self.hits.with(|(_, seqs)| seqs.contains(&seq))
    }
}

/// What the counter by the find field says of a step's answer: "3 of 12", "no match", the count capped
/// ("3 of 1000+"), a match past the cap counted ("a match past the first 1000"), and a wrap noted.
pub fn counter(step: &FindStep, forward: bool) -> String {
    let Some(_) = step.seq else { return "no match".to_owned() };
    let total = if step.more { format!("{}+", step.total) } else { step.total.to_string() };
    let at = match step.position {
        Some(k) => format!("{k} of {total}"),
        None => format!("a match past the first {}", step.total),
    };
    match (step.wrapped, forward) {
        (false, _) => at,
        (true, true) => format!("{at} · wrapped to the first"),
        (true, false) => format!("{at} · wrapped to the last"),
    }
}

/// Finds `words` (in the URL's `find` from now on) and steps to the next match (`forward`) or the previous
/// one, from the selected frame, else from the first row in view (a match there is the next one); selects it (replacing the history entry,
/// as stepping does) and notes what was found. Empty words end find.
pub fn step(st: TraceState, words: String, forward: bool) {
    let words = words.trim().to_owned();
    st.url.update(false, |q| q.find = (!words.is_empty()).then(|| words.clone()));
    if words.is_empty() {
        st.find.found.set(None);
        return;
    }
    let Some(mut query) = st
        .query
        .with_untracked(|q| find_query(&ViewQuery { find: Some(words.clone()), ..q.clone() }, st.replay_cursor()))
    else {
        return;
    };
    let selected = st.query.with_untracked(|q| q.frame);
    let first_in_view = || {
        st.window
            .with_untracked(|w| st.rows_in_view.with_untracked(|r| r.clone().find_map(|i| w.get(i)).map(|f| f.seq)))
    };
    match (forward, selected) {
        (true, Some(seq)) => query.after = Some(seq),
        // Nothing selected: from the first row in view on, that row included.
        (true, None) => query.after = Some(first_in_view().map_or(0, |seq| seq - 1)),
        (false, Some(seq)) => query.before = Some(seq),
        // Nothing selected: before the first row in view; nothing drawn yet: the last match.
        (false, None) => query.before = Some(first_in_view().unwrap_or(i64::MAX)),
    }
    let asked = st.find.asked.get_value() + 1;
    st.find.asked.set_value(asked);
    st.find.found.set(Some((words.clone(), Found::Looking)));
    spawn_local(async move {
        let answer = api::find(st.id, &query).await;
        if st.find.asked.try_get_value() != Some(asked) {
            return;
        }
        let found = match answer {
            Ok(step) => {
                if let Some(seq) = step.seq {
                    st.jump_to(seq, false);
                }
                Found::Step(step, forward)
            }
            Err(e) => Found::Failed(e),
        };
        st.find.found.set(Some((words, found)));
    });
}

/// Says where a view opened with `find=` and a selected frame stands ("1 of 2"), when that frame is a
/// match (a link from the trace list's search): the step back to it from just after it, moving nothing.
pub fn count_on_open(st: TraceState) {
    let Some(mut query) = st.query.with_untracked(|q| find_query(q, st.replay_cursor())) else { return };
    let Some(seq) = st.query.with_untracked(|q| q.frame) else { return };
    let words = query.find.clone().unwrap_or_default();
    query.before = Some(seq + 1);
    spawn_local(async move {
        let Ok(step) = api::find(st.id, &query).await else { return };
        // Nothing was stepped to meanwhile, and the frame is the match.
        if st.find.found.with_untracked(Option::is_none) && step.seq == Some(seq) && !step.wrapped {
            st.find.found.set(Some((words, Found::Step(step, true))));
        }
    });
}

/// Keeps [`FindData::hits`] to the rows drawn: asks which of them hold the words once they stay put, while
/// the view lives. Rows whose seqs lie more than [`MATCHES_MAX_SPAN`] past the first drawn (a filter that
/// shows few frames) are not asked about.
pub fn follow_rows(st: TraceState) {
    let span = Memo::new(move |_| {
        let query = st.query.with(|q| find_query(q, None))?;
        let (first, last) = st.window.with(|w| {
            st.rows_in_view.with(|r| {
                let first = r.clone().find_map(|i| w.get(i)).map(|f| f.seq);
                let last = r.clone().rev().find_map(|i| w.get(i)).map(|f| f.seq);
                (first, last)
            })
        });
        let (first, last) = (first?, last?);
        Some((query, first, last.min(first + MATCHES_MAX_SPAN - 1)))
    });
    let gen = StoredValue::new(0u64);
    Effect::new(move |_| {
        let Some((query, from, to)) = span.get() else {
            st.find.hits.set((None, BTreeSet::new()));
            return;
        };
        if st.find.hits.with_untracked(|(asked, _)| asked.as_ref() != Some(&query)) {
            st.find.hits.set((None, BTreeSet::new()));
        }
        gen.update_value(|g| *g += 1);
        let mine = gen.get_value();
        spawn_local(async move {
            TimeoutFuture::new(MATCHES_DEBOUNCE_MS).await;
            if gen.try_get_value() != Some(mine) {
                return;
            }
            let asked = FindQuery { from: Some(from), to: Some(to), ..query.clone() };
            let Ok(list) = api::matches(st.id, &asked).await else { return };
            if gen.try_get_value() != Some(mine) {
                return;
            }
            // Hits of rows drawn before, for the same words, stay until these replace them: no flicker while
            // scrolling.
            st.find.hits.set((Some(query), list.seqs.into_iter().collect()));
        });
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_counter_says_which_match_of_how_many_capped_and_wrapped() {
        let step = |seq, position, total, more, wrapped| FindStep { seq, wrapped, position, total, more };
        assert_eq!(counter(&step(None, None, 0, false, false), true), "no match");
        assert_eq!(counter(&step(Some(7), Some(3), 12, false, false), true), "3 of 12");
        assert_eq!(counter(&step(Some(7), Some(3), 1000, true, false), false), "3 of 1000+");
        assert_eq!(counter(&step(Some(9), None, 1000, true, false), true), "a match past the first 1000");
        assert_eq!(counter(&step(Some(2), Some(1), 12, false, true), true), "1 of 12 · wrapped to the first");
        assert_eq!(counter(&step(Some(9), Some(12), 12, false, true), false), "12 of 12 · wrapped to the last");
    }
}
