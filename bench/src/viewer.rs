//! The viewer in headless Chromium on a large trace: time from navigation to
//! the first diagram row, jumps to positions in the trace, and frame times
//! during a continuous scroll. All times come from the page's own
//! `performance.now()` (a monotonic clock whose origin is the navigation).

use crate::stats::{median, Percentiles};
use acp_tee_webdriver::Browser;
use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

/// Installed before any page script: notes when the first diagram row enters
/// the DOM (`__firstFrame`) and when the browser next painted (`__firstPaint`).
const FIRST_ROW_OBSERVER: &str = r#"
(() => {
  const obs = new MutationObserver(() => {
    if (window.__firstFrame || !document.querySelector('#diagram-scroll .frame')) return;
    window.__firstFrame = performance.now();
    obs.disconnect();
    requestAnimationFrame(() => setTimeout(() => { window.__firstPaint = performance.now(); }, 0));
  });
  obs.observe(document, { childList: true, subtree: true });
  const strip = new MutationObserver(() => {
    if (window.__firstStrip || !document.querySelector('#overview .ov-hit')) return;
    window.__firstStrip = performance.now();
    strip.disconnect();
    requestAnimationFrame(() => setTimeout(() => { window.__stripPaint = performance.now(); }, 0));
  });
  strip.observe(document, { childList: true, subtree: true });
})();
"#;

/// Waits in the page (up to 60 s) for the overview strip's paint (`__stripPaint`), then reports it and when
/// the app asked the server for the overview (the resource timing of `/overview`).
const AWAIT_STRIP: &str = r#"
const done = arguments[arguments.length - 1];
const poll = () => {
  if (window.__stripPaint) {
    const r = performance.getEntriesByType('resource').find(e => e.name.includes('/overview'));
    return done({ asked: r ? r.startTime : null, answered: r ? r.responseEnd : null,
                  painted: window.__stripPaint, buckets: document.querySelectorAll('#overview .ov-hit').length });
  }
  if (performance.now() > 60000) return done({ error: document.body.innerText.slice(0, 500) });
  setTimeout(poll, 5);
};
poll();
"#;

/// Waits in the page (up to 60 s) for `__firstPaint`, then reports it.
const AWAIT_FIRST_PAINT: &str = r#"
const done = arguments[arguments.length - 1];
const poll = () => {
  if (window.__firstPaint) {
    return done({ inserted: window.__firstFrame, painted: window.__firstPaint,
                  rows: document.querySelectorAll('#diagram-scroll .frame').length,
                  elements: document.getElementsByTagName('*').length });
  }
  if (performance.now() > 60000) return done({ error: document.body.innerText.slice(0, 500) });
  setTimeout(poll, 5);
};
poll();
"#;

/// Sets the scroll position to a fraction of the trace and waits until the
/// rows there are drawn (no loading placeholder in the window, and row
/// numbers around the expected one); reports the time it took.
const JUMP: &str = r#"
const [frac, total] = arguments;
const done = arguments[arguments.length - 1];
const el = document.getElementById('diagram-scroll');
const t0 = performance.now();
el.scrollTop = frac >= 1 ? el.scrollHeight : frac * (el.scrollHeight - el.clientHeight);
const want = Math.min(total, Math.max(1, Math.round(frac * total)));
const slack = Math.max(100, 0.01 * total);
const check = () => {
  const seqs = Array.from(el.querySelectorAll('.frame[data-seq]'), e => +e.dataset.seq);
  const loading = el.querySelectorAll('.frame-loading').length;
  const lo = Math.min(...seqs), hi = Math.max(...seqs);
  if (seqs.length && !loading && lo <= want + slack && hi >= want - slack) {
    return done({ ms: performance.now() - t0, lo, hi, rows: seqs.length });
  }
  if (performance.now() - t0 > 30000) return done({ error: `rows ${lo}..${hi}, ${loading} loading, want ${want}` });
  requestAnimationFrame(check);
};
requestAnimationFrame(check);
"#;

/// Scrolls continuously by `px` per animation frame for `ms` milliseconds and
/// reports every frame interval and how many frames showed a loading row.
const CONTINUOUS: &str = r#"
const [px, ms, start, id] = arguments;
const done = arguments[arguments.length - 1];
const el = document.getElementById(id);
el.scrollTop = start * (el.scrollHeight - el.clientHeight);
const deltas = [];
// The page's own scroll handlers: from a capturing listener, which runs
// first, to one added on the element now, which runs after the page's.
const handlers = [];
let before = 0;
const first = () => { before = performance.now(); };
const after = () => { handlers.push(performance.now() - before); };
document.addEventListener('scroll', first, true);
el.addEventListener('scroll', after);
let blank = 0, last = 0, t0 = 0;
const step = now => {
  if (t0 === 0) { t0 = now; } else { deltas.push(now - last); }
  last = now;
  if (el.querySelector('.frame-loading')) blank++;
  el.scrollTop += px;
  if (now - t0 < ms) requestAnimationFrame(step);
  else {
    document.removeEventListener('scroll', first, true);
    el.removeEventListener('scroll', after);
    done({ deltas, blank, frames: deltas.length + 1, handlers });
  }
};
requestAnimationFrame(step);
"#;

/// Puts in place of the diagram a static copy of the rows it draws, repeated
/// `rows` times one under another (`#static-scroll`), with the lanes behind
/// them: the same content with no application code running while it
/// scrolls, so scrolling it shows what the browser itself manages here.
/// Reports how many distinct rows were copied.
const STATIC_COPY: &str = r#"
const [count] = arguments;
const done = arguments[arguments.length - 1];
const src = document.getElementById('diagram-scroll');
const drawn = [...src.querySelectorAll('.layer > .frame')].filter(r => !r.classList.contains('frame-loading'));
if (!drawn.length) return done({ error: 'no drawn rows to copy' });
const box = document.createElement('div');
box.id = 'static-scroll';
box.style.cssText = 'flex: 1; min-height: 0; overflow: auto; position: relative;';
const spacer = src.querySelector('.spacer').cloneNode(false);
spacer.style.height = (count * 40) + 'px';
for (const lane of src.querySelectorAll('.spacer > .lane-line, .spacer > .stderr-band')) spacer.appendChild(lane.cloneNode(true));
const layer = document.createElement('div');
layer.className = 'layer';
layer.style.top = '0px';
for (let i = 0; i < count; i++) {
  const row = drawn[i % drawn.length].cloneNode(true);
  row.style.top = (i * 40) + 'px';
  layer.appendChild(row);
}
spacer.appendChild(layer);
box.appendChild(spacer);
src.style.display = 'none';
src.parentNode.insertBefore(box, src);
requestAnimationFrame(() => requestAnimationFrame(() => done({ rows: drawn.length })));
"#;

/// Load times of the trace page.
#[derive(Debug, Clone)]
pub struct FirstDiagram {
    /// Each load's time to the first row inserted, ms since navigation.
    pub inserted: Vec<f64>,
    /// Each load's time to the paint after it.
    pub painted: Vec<f64>,
    /// Rows and DOM elements after the first load.
    pub rows: u64,
    /// DOM elements after the first load.
    pub elements: u64,
}

/// A jump to a position in the trace.
#[derive(Debug, Clone)]
pub struct Jump {
    /// Where to (0..=1 of the trace).
    pub frac: f64,
    /// Time until its rows were drawn, ms (median over repetitions).
    pub ms: f64,
    /// Seq range drawn.
    pub lo: i64,
    /// Seq range drawn.
    pub hi: i64,
}

/// A continuous scroll at one speed.
#[derive(Debug, Clone)]
pub struct Scroll {
    /// Frame intervals, ms.
    pub frame_ms: Percentiles,
    /// Time the page's scroll handlers took per scroll event, ms (none when
    /// no scroll event came: idle).
    pub handler_ms: Option<Percentiles>,
    /// Frames, and those showing a loading row.
    pub frames: u64,
    /// Frames with a loading row in the window.
    pub blank: u64,
}

/// Loads `{url}/traces/{id}` `loads` times (the first with a cold cache).
pub fn first_diagram(b: &Browser, url: &str, id: i64, loads: usize) -> Result<FirstDiagram> {
    let mut out = FirstDiagram { inserted: vec![], painted: vec![], rows: 0, elements: 0 };
    for i in 0..loads {
        b.goto("about:blank")?;
        b.goto(&format!("{url}/traces/{id}"))?;
        let r = b.js_async(AWAIT_FIRST_PAINT, json!([]))?;
        if let Some(e) = r.get("error") {
            bail!("the diagram never showed a row; page: {e}");
        }
        out.inserted.push(num(&r, "inserted")?);
        out.painted.push(num(&r, "painted")?);
        if i == 0 {
            out.rows = num(&r, "rows")? as u64;
            out.elements = num(&r, "elements")? as u64;
        }
    }
    Ok(out)
}

/// One load's overview strip: when the app asked for it, got it, and the browser painted it (ms since
/// navigation).
#[derive(Debug, Clone)]
pub struct StripLoad {
    /// The overview request's start.
    pub asked: f64,
    /// Its answer's end.
    pub answered: f64,
    /// The paint after the strip entered the DOM.
    pub painted: f64,
    /// Buckets drawn.
    pub buckets: u64,
}

impl StripLoad {
    /// From the app asking for the overview to the strip painted: what the strip costs.
    pub fn first_draw(&self) -> f64 {
        self.painted - self.asked
    }
}

/// Loads `{url}/traces/{id}` `loads` times and reports each load's overview strip; the first asks a
/// server that has not added the trace up yet when the caller started a fresh one.
pub fn overview_strip(b: &Browser, url: &str, id: i64, loads: usize) -> Result<Vec<StripLoad>> {
    let mut out = Vec::new();
    for _ in 0..loads {
        b.goto("about:blank")?;
        b.goto(&format!("{url}/traces/{id}"))?;
        let r = b.js_async(AWAIT_STRIP, json!([]))?;
        if let Some(e) = r.get("error") {
            bail!("the overview strip never showed; page: {e}");
        }
        out.push(StripLoad {
            asked: num(&r, "asked")?,
            answered: num(&r, "answered")?,
            painted: num(&r, "painted")?,
            buckets: num(&r, "buckets")? as u64,
        });
    }
    Ok(out)
}

/// Waits in the page (up to 60 s) for the Session tab to show a session's
/// facts and its first turn, then reports when the browser painted them.
const AWAIT_SESSION_TAB: &str = r#"
const done = arguments[arguments.length - 1];
const poll = () => {
  if (document.querySelector('#session-summary') && document.querySelector('article.turn')) {
    return requestAnimationFrame(() => setTimeout(() => done({ painted: performance.now() }), 0));
  }
  if (performance.now() > 60000) return done({ error: document.body.innerText.slice(0, 500) });
  setTimeout(poll, 5);
};
poll();
"#;

/// Loads `{url}/traces/{id}?tab=session` `loads` times; the first one asks
/// a server that has not yet built the trace's session model. Returns each
/// load's time to the painted session facts and first turn, ms since
/// navigation.
pub fn session_tab(b: &Browser, url: &str, id: i64, loads: usize) -> Result<Vec<f64>> {
    let mut out = Vec::new();
    for _ in 0..loads {
        b.goto("about:blank")?;
        b.goto(&format!("{url}/traces/{id}?tab=session"))?;
        let r = b.js_async(AWAIT_SESSION_TAB, json!([]))?;
        if let Some(e) = r.get("error") {
            bail!("the Session tab never showed a turn; page: {e}");
        }
        out.push(num(&r, "painted")?);
    }
    Ok(out)
}

/// Opens the Requests tab of trace `id` (`query`: more of the URL's query, `&req_sort=...`) `loads` times,
/// from the trace's Diagram tab once drawn and checked (its findings came): each time, clicks the tab and
/// waits in the page (up to 60 s) for the first page of rows; returns the ms from the click until the
/// rows are painted.
pub fn requests_tab(b: &Browser, url: &str, id: i64, query: &str, loads: usize) -> Result<Vec<f64>> {
    let mut out = Vec::new();
    for _ in 0..loads {
        b.goto("about:blank")?;
        b.goto(&format!("{url}/traces/{id}?tab=diagram{query}"))?;
        let r = b.js_async(AWAIT_REQUESTS_TAB, json!([]))?;
        if let Some(e) = r.get("error") {
            bail!("the Requests tab never showed a row; page: {e}");
        }
        out.push(num(&r, "painted")? - num(&r, "clicked")?);
    }
    Ok(out)
}

/// Waits for the trace view's diagram and findings, clicks the Requests tab, and waits (up to 60 s) for its table's rows;
/// reports when the click was and when the browser painted the rows.
const AWAIT_REQUESTS_TAB: &str = r#"
const done = arguments[arguments.length - 1];
let clicked = null;
const poll = () => {
  if (clicked === null) {
    // Once the diagram is drawn and its findings came (a first check reads the whole trace).
    const settled = document.querySelector('#diagram-scroll .frame')
      && performance.getEntriesByType('resource').some(e => e.name.includes('/findings'));
    const tab = document.getElementById('tab-requests');
    if (tab && settled) { clicked = performance.now(); tab.click(); }
  } else if (document.querySelectorAll('table#requests tbody tr').length > 0) {
    return requestAnimationFrame(() => setTimeout(() => done({ clicked, painted: performance.now() }), 0));
  }
  if (performance.now() > 60000) return done({ error: document.body.innerText.slice(0, 500) });
  setTimeout(poll, 2);
};
poll();
"#;

/// Registers the first-row observer for every later navigation (Chrome
/// DevTools protocol through chromedriver).
pub fn install_observer(b: &Browser) -> Result<()> {
    b.cdp("Page.addScriptToEvaluateOnNewDocument", json!({ "source": FIRST_ROW_OBSERVER }))
        .context("cannot install the first-row observer")
}

/// Jumps to each of `fracs` of a trace of `total` frames (already open),
/// `reps` times each, and reports the median times.
pub fn jumps(b: &Browser, total: u64, fracs: &[f64], reps: usize) -> Result<Vec<Jump>> {
    let mut out = Vec::new();
    for &frac in fracs {
        let mut times = Vec::new();
        let (mut lo, mut hi) = (0, 0);
        for _ in 0..reps {
            // Start from the top each time so every jump fetches new rows.
            b.js_async(JUMP, json!([0.0, total]))?;
            let r = b.js_async(JUMP, json!([frac, total]))?;
            if let Some(e) = r.get("error") {
                bail!("jump to {:.0}% never drew its rows: {e}", frac * 100.0);
            }
            times.push(num(&r, "ms")?);
            lo = num(&r, "lo")? as i64;
            hi = num(&r, "hi")? as i64;
        }
        out.push(Jump { frac, ms: median(&times), lo, hi });
    }
    Ok(out)
}

/// Scrolls the diagram for `ms` at `px_per_frame`, starting at 30% of the trace.
pub fn scroll(b: &Browser, px_per_frame: u32, ms: u32) -> Result<Scroll> {
    scroll_element(b, "diagram-scroll", px_per_frame, ms)
}

/// Replaces the diagram by a static copy of its drawn rows (see
/// [`STATIC_COPY`]), `rows` rows tall; the page must be reloaded afterwards.
pub fn static_copy(b: &Browser, rows: u32) -> Result<()> {
    let r = b.js_async(STATIC_COPY, json!([rows]))?;
    if let Some(e) = r["error"].as_str() {
        bail!("cannot make the static copy of the diagram: {e}");
    }
    Ok(())
}

/// Scrolls the static copy of [`static_copy`] like [`scroll`] does the diagram.
pub fn scroll_static(b: &Browser, px_per_frame: u32, ms: u32) -> Result<Scroll> {
    scroll_element(b, "static-scroll", px_per_frame, ms)
}

fn scroll_element(b: &Browser, id: &str, px_per_frame: u32, ms: u32) -> Result<Scroll> {
    let r = b.js_async(CONTINUOUS, json!([px_per_frame, ms, 0.3, id]))?;
    let deltas: Vec<f64> = r["deltas"].as_array().context("no frame times")?.iter().filter_map(Value::as_f64).collect();
    let handlers: Vec<f64> =
        r["handlers"].as_array().context("no handler times")?.iter().filter_map(Value::as_f64).collect();
    Ok(Scroll {
        frame_ms: Percentiles::of(&deltas),
        handler_ms: (!handlers.is_empty()).then(|| Percentiles::of(&handlers)),
        frames: num(&r, "frames")? as u64,
        blank: num(&r, "blank")? as u64,
    })
}

fn num(v: &Value, key: &str) -> Result<f64> {
    v[key].as_f64().with_context(|| format!("the page reported no {key}: {v}"))
}
