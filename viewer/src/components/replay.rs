//! The replay bar, over the Diagram and Session tabs while replaying: play or pause, a frame back or
//! forward, the speed, a slider over the trace's time (drag to go anywhere), the trace's clock, and what
//! an idle gap played faster skips; ✕ leaves the replay. See [`crate::state::replay`].

use super::trace_state;
use crate::format;
use crate::state::replay;
use crate::view_query::{Tab, SPEEDS};
use leptos::prelude::*;

/// The bar, while replaying.
#[component]
pub fn ReplayBar() -> impl IntoView {
    let st = trace_state();
    let rd = st.replay;
    let shown = Memo::new(move |_| rd.active() && st.query.with(|q| matches!(q.tab, Tab::Diagram | Tab::Session)));
    let speed = Memo::new(move |_| st.query.with(|q| q.play_speed()));
    // The trace's length on its clock: its last frame's time (the present, while recorded).
    let length = Memo::new(move |_| st.clock.get().max(1));
    let clock_text = move || {
        let at = rd.cursor.get().map(|s| format!(" · frame #{s}")).unwrap_or_default();
        format!("{} of {}{at}", format::duration_ns(rd.clock.get()), format::duration_ns(length.get()))
    };
    let skipping = move || {
        rd.skipping.get().map(|gap| {
            view! {
                <span id="replay-skip" class="replay-skip" role="status">
                    {format!("skipping {} idle", format::duration_ns(gap))}
                </span>
            }
        })
    };
    let on_slide = move |ev| {
        if let Ok(ms) = event_target_value(&ev).parse::<f64>() {
            replay::scrub_to_time(st, (ms * 1e6) as i64);
        }
    };
    view! {
        <Show when=move || shown.get()>
            <div id="replay-bar" class="replay-bar" role="toolbar" aria-label="replay">
                <button id="replay-play" class="replay-play" title="play or pause (space)"
                    on:click=move |_| replay::toggle(st)>
                    {move || if rd.playing.get() { "‖ pause" } else { "▶ play" }}
                </button>
                <button id="replay-back" title="a frame back (,)" on:click=move |_| replay::step(st, -1)>"◀ frame"</button>
                <button id="replay-forward" title="a frame forward (.)" on:click=move |_| replay::step(st, 1)>"frame ▶"</button>
                <span class="seg" title="speed: times the trace's own pace">
                    {SPEEDS.map(|s| view! {
                        <button id=format!("replay-speed-{s}") class:on=move || speed.get() == s
                            on:click=move |_| replay::set_speed(st, s)>{format!("{s}x")}</button>
                    })}
                </span>
                <input id="replay-slider" class="replay-slider" type="range" min="0" step="1"
                    aria-label="position in the trace's time"
                    prop:max=move || (length.get() / 1_000_000).to_string()
                    prop:value=move || (rd.clock.get() / 1_000_000).to_string()
                    on:change=on_slide />
                <span id="replay-clock" class="replay-clock">{clock_text}</span>
                {skipping}
                <button id="replay-close" class="link" title="leave the replay: the whole trace (Esc)"
                    on:click=move |_| replay::leave(st)>"✕"</button>
            </div>
        </Show>
    }
}
