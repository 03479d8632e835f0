//! The trace view's keyboard: `j`/`k` or the arrows step through frames, Home/End go to the first and last
//! frame, Enter selects a focused frame (on the row itself), Esc leaves a text field or clears the
//! selection, `/` focuses the search filter, `f` the find field (where Enter and shift+Enter step through
//! the matches). In a replay (also on the Session tab), space plays or pauses, `.` and `,` step a frame
//! forward and back, and Esc leaves the replay. Keys typed into text fields are theirs, except Esc, which
//! leaves the field and keeps what it holds (the search stays).

use crate::state::{loader, replay, TraceState};
use crate::view_query::Tab;
use leptos::prelude::*;
use wasm_bindgen::JsCast;

/// What a key does in the diagram tab.
enum Action {
    Step(i64),
    First,
    Last,
    Focus(&'static str),
    Escape,
    PlayPause,
    ReplayStep(i64),
}

fn action(key: &str) -> Option<Action> {
    Some(match key {
        "ArrowDown" | "j" => Action::Step(1),
        "ArrowUp" | "k" => Action::Step(-1),
        "Home" => Action::First,
        "End" => Action::Last,
        "/" => Action::Focus("search"),
        "f" => Action::Focus("find"),
        "Escape" => Action::Escape,
        " " => Action::PlayPause,
        "." => Action::ReplayStep(1),
        "," => Action::ReplayStep(-1),
        _ => return None,
    })
}

/// Listens for the trace view's keys while the view lives.
pub fn trace_keys(st: TraceState) {
    let handle = window_event_listener(leptos::ev::keydown, move |ev| {
        let Some(act) = action(&ev.key()) else { return };
        let target = ev.target().and_then(|t| t.dyn_into::<web_sys::HtmlElement>().ok());
        let typing =
            target.as_ref().is_some_and(|el| matches!(el.tag_name().as_str(), "INPUT" | "SELECT" | "TEXTAREA"));
        let replaying = st.replay.cursor.with_untracked(Option::is_some);
        let tab = st.query.with_untracked(|q| q.tab);
        let for_replay =
            matches!(act, Action::PlayPause | Action::ReplayStep(_)) || (replaying && matches!(act, Action::Escape));
        let here = tab == Tab::Diagram || (for_replay && tab == Tab::Session);
        if ev.ctrl_key() || ev.meta_key() || ev.alt_key() || !here || (for_replay && !replaying) {
            return;
        }
        // Space on a focused button presses it.
        let on_button = target.as_ref().is_some_and(|el| matches!(el.tag_name().as_str(), "BUTTON" | "A"));
        if matches!(act, Action::PlayPause) && on_button {
            return;
        }
        if typing {
            if let (Action::Escape, Some(el)) = (act, target) {
                // Only leaves the field: without this, Esc in the search (type=search) would also empty it
                // (the browser's own Esc), and the emptied search would leave the URL.
                ev.prevent_default();
                let _ = el.blur();
            }
            return;
        }
        ev.prevent_default();
        // A key moves the view: a frame kept in place after a zoom is let go.
        if st.range.pin.with_untracked(Option::is_some) {
            st.range.pin.set(None);
        }
        match act {
            Action::Step(step) => step_from_selection(st, step),
            Action::First => loader::select_position(st, 0),
            Action::Last => {
                let total = st.window.with_untracked(|w| w.total());
                if total > 0 {
                    loader::select_position(st, total - 1);
                }
            }
            Action::Focus(id) => {
                if let Some(el) =
                    document().get_element_by_id(id).and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok())
                {
                    let _ = el.focus();
                }
            }
            Action::Escape if replaying => replay::leave(st),
            // The selected range first, then the selected frame.
            Action::Escape if st.query.with_untracked(|q| q.sel.is_some()) => super::range::clear_selection(st),
            Action::Escape => st.unselect(),
            Action::PlayPause => replay::toggle(st),
            Action::ReplayStep(step) => replay::step(st, step),
        }
    });
    on_cleanup(move || handle.remove());
}

/// Selects the frame before or after the selected one, also when the filters hide the selected one; with
/// nothing selected, the first frame in view. Stepping replaces the history entry (it is like scrolling).
fn step_from_selection(st: TraceState, step: i64) {
    let selected = st.query.with_untracked(|q| q.frame);
    let next = st.window.with_untracked(|w| {
        let mut next = match selected {
            Some(seq) => w.neighbour(seq, step),
            None => st.rows_in_view.with_untracked(|r| w.get(r.start)).map(|f| f.seq),
        }?;
        // A collapsed run of chunks is one row: the rows under its first are stepped over.
        st.layout.with_untracked(|l| {
            while w.place_of_seq(next).is_ok_and(|idx| !l.is_shown(idx)) {
                next = w.neighbour(next, step)?;
            }
            Some(next)
        })
    });
    if let Some(seq) = next {
        st.jump_to(seq, false);
    }
}
