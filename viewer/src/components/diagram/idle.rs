//! The note shown where the view falls inside an idle gap with no row in sight (the linear axis draws a
//! long gap to scale, taller than the view): how long the gap is, how far into it the view is, and the
//! frames on either side of it, one click away.

use super::row::px;
use crate::components::trace_state;
use crate::format;
use crate::state::layout::ROW_H;
use leptos::prelude::*;

/// Rows looked through for the next one drawn (a collapsed run is at most this long as far as it is loaded).
const SHOWN_WITHIN: usize = 5000;

/// The gap the view falls inside: the frames before and after it, and where the view is in it.
#[derive(Clone, Debug, PartialEq)]
pub struct Idle {
    pub before: i64,
    pub after: i64,
    /// The gap's length, and the time from its start to the middle of the view.
    pub gap_ns: i64,
    pub into_ns: i64,
    /// Where the note goes, as a layout height.
    pub y: f64,
}

/// The gap the view `top..top + view_h` (layout heights) falls inside, when no row is in sight: the row at
/// or above the view's top ends above it and the next begins below its bottom. Rows `at` and `at + 1` and
/// their tops and times are what [`crate::state::layout::Layout`] and the fetched frames say.
pub fn idle_between(top: f64, view_h: f64, rows: [(i64, f64, i64); 2]) -> Option<Idle> {
    let [(before, y0, t0), (after, y1, t1)] = rows;
    let bottom = top + view_h;
    if view_h <= 0.0 || y0 + ROW_H > top || y1 < bottom || y1 <= y0 {
        return None;
    }
    let gap_ns = t1 - t0;
    let middle = top + view_h / 2.0;
    let into_ns = ((middle - y0) / (y1 - y0) * gap_ns as f64).round() as i64;
    Some(Idle { before, after, gap_ns, into_ns: into_ns.clamp(0, gap_ns.max(0)), y: top + view_h * 0.4 })
}

/// The idle note, in the rows' layer (`base`: the layout height the layer's top stands for).
#[component]
pub fn IdleNote(base: Memo<f64>, width: Signal<f64>) -> impl IntoView {
    let st = trace_state();
    let idle = Memo::new(move |_| {
        let top = st.scroller().layout_top(st.scroll_top.get());
        let view_h = st.view_h.get();
        st.layout.with(|l| {
            st.window.with(|w| {
                // The next row drawn, and the frame just before it (the last of a collapsed run drawn as one).
                let at = l.index_at(top);
                let next = (at + 1..w.total().min(at + 1 + SHOWN_WITHIN)).find(|&i| l.is_shown(i))?;
                let (a, b) = (w.get(next - 1)?, w.get(next)?);
                idle_between(top, view_h, [(a.seq, l.y_of(next - 1), a.t_ns), (b.seq, l.y_of(next), b.t_ns)])
            })
        })
    });
    move || {
        let i = idle.get()?;
        let text = format!(
            "Idle: nothing between #{} and #{} for {} · this view is {} into it",
            i.before,
            i.after,
            format::duration_ns(i.gap_ns),
            format::duration_ns(i.into_ns)
        );
        let (before, after) = (i.before, i.after);
        Some(view! {
            <div id="idle-note" class="idle-note" style:top=move || px(i.y - base.get()) style:width=move || px(width.get())>
                <span>
                    {text} " "
                    <button class="link" id="idle-before" on:click=move |_| st.jump_to(before, true)>{format!("↑ #{before}")}</button>
                    " "
                    <button class="link" id="idle-after" on:click=move |_| st.jump_to(after, true)>{format!("#{after} ↓")}</button>
                </span>
            </div>
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_view_with_no_row_in_sight_is_idle() {
        // #7 at 0 px (t 0), #8 at 60,000 px (t 60 s): 1 px per ms.
        let rows = [(7, 0.0, 0), (8, 60_000.0, 60_000_000_000)];
        let idle = idle_between(24_000.0, 1000.0, rows).expect("a view far inside the gap");
        assert_eq!((idle.before, idle.after, idle.gap_ns), (7, 8, 60_000_000_000));
        assert_eq!(idle.into_ns, 24_500_000_000);
        assert_eq!(idle.y, 24_400.0);
        // #7's row still shows at the top (its 40 px reach past 20 px), or #8's at the bottom: not idle.
        assert_eq!(idle_between(20.0, 1000.0, rows), None);
        assert_eq!(idle_between(ROW_H, 1000.0, rows).map(|i| i.before), Some(7));
        assert_eq!(idle_between(59_001.0, 1000.0, rows), None);
        assert_eq!(idle_between(59_000.0, 1000.0, rows).map(|i| i.after), Some(8));
        // No view (a hidden tab) is never idle.
        assert_eq!(idle_between(24_000.0, 0.0, rows), None);
    }
}
