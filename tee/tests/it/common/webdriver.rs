//! The browser tests' handle on `acp-tee-webdriver`: the same client, with
//! failures as panics, Chromium and chromedriver from PATH, and a wait that
//! saves a screenshot and shows the page's text when it times out.

use serde_json::Value;
use std::time::{Duration, Instant};

/// A headless Chromium session for one test.
pub struct Browser {
    inner: acp_tee_webdriver::Browser,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts chromedriver and a headless Chromium session (window 1400x900).
    pub fn start() -> Browser {
        let profile = tempfile::tempdir().unwrap();
        let inner =
            acp_tee_webdriver::Browser::start(&super::peer("chromedriver"), &super::peer("chromium"), profile.path())
                .expect("a headless Chromium session");
        Browser { inner, _profile: profile }
    }

    /// Navigates to `url`.
    pub fn goto(&self, url: &str) {
        self.inner.goto(url).unwrap()
    }

    /// The page's current URL.
    pub fn current_url(&self) -> String {
        self.inner.current_url().unwrap()
    }

    /// Runs `script` (a function body; `arguments` are `args`) and returns its result.
    pub fn js(&self, script: &str, args: Value) -> Value {
        self.inner.js(script, args).unwrap()
    }

    /// Element references matching `css`.
    pub fn find_all(&self, css: &str) -> Vec<String> {
        self.inner.find_all(css).unwrap()
    }

    /// Clicks the first element matching `css` (a real pointer click).
    pub fn click(&self, css: &str) {
        self.inner.click(css).unwrap()
    }

    /// Texts of every element matching `css`.
    pub fn texts(&self, css: &str) -> Vec<String> {
        self.inner.texts(css).unwrap()
    }

    /// Makes the page's viewport `width` x `height` CSS pixels (screenshots follow).
    pub fn resize(&self, width: u32, height: u32) {
        let metrics = serde_json::json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false});
        self.inner.cdp("Emulation.setDeviceMetricsOverride", metrics).unwrap()
    }

    /// Sends a key press (`keydown`) to the element matching `css`, or to the page's body when it is
    /// `None`, the way a keyboard would reach it (bubbling to the window).
    pub fn key(&self, css: Option<&str>, key: &str) {
        let script = "const el = arguments[0] ? document.querySelector(arguments[0]) : (document.activeElement || document.body); \
                      if (!el) throw new Error('nothing matches ' + arguments[0]); \
                      el.dispatchEvent(new KeyboardEvent('keydown', {key: arguments[1], bubbles: true, cancelable: true}));";
        self.js(script, serde_json::json!([css, key]));
    }

    /// Presses `key` ("Escape" or a printable character) on the real keyboard: a trusted key event, so the
    /// browser's own handling of the key (what a synthetic event never gets) follows unless prevented.
    pub fn press(&self, key: &str) {
        let (code, vk, text) = match key {
            "Escape" => ("Escape".to_owned(), 27, None),
            "/" => ("Slash".to_owned(), 191, Some("/")),
            c => (format!("Key{}", c.to_uppercase()), u32::from(c.to_uppercase().chars().next().unwrap()), Some(c)),
        };
        let down = serde_json::json!({"type": if text.is_some() { "keyDown" } else { "rawKeyDown" }, "key": key,
            "code": code, "windowsVirtualKeyCode": vk, "text": text.unwrap_or("")});
        self.inner.cdp("Input.dispatchKeyEvent", down).unwrap();
        let up = serde_json::json!({"type": "keyUp", "key": key, "code": code, "windowsVirtualKeyCode": vk});
        self.inner.cdp("Input.dispatchKeyEvent", up).unwrap();
    }

    /// Turns the real mouse wheel by `delta_y` pixels (100 is one notch) with the pointer at `x`, `y` (CSS
    /// pixels of the viewport): a trusted `wheel` event, then the browser's own scrolling unless prevented.
    pub fn wheel(&self, x: f64, y: f64, delta_y: f64) {
        let event = serde_json::json!({"type": "mouseWheel", "x": x, "y": y, "deltaX": 0, "deltaY": delta_y});
        self.inner.cdp("Input.dispatchMouseEvent", event).unwrap();
    }

    /// Turns the real mouse wheel with ctrl held (what a trackpad's pinch sends too): a trusted `wheel` event
    /// with `ctrlKey`, then the browser's own zoom of the page unless prevented.
    pub fn ctrl_wheel(&self, x: f64, y: f64, delta_y: f64) {
        let event =
            serde_json::json!({"type": "mouseWheel", "x": x, "y": y, "deltaX": 0, "deltaY": delta_y, "modifiers": 2});
        self.inner.cdp("Input.dispatchMouseEvent", event).unwrap();
    }

    /// Types `text` into the focused field on the real keyboard (trusted `input` events).
    pub fn type_text(&self, text: &str) {
        self.inner.cdp("Input.insertText", serde_json::json!({"text": text})).unwrap();
    }

    /// Types `text` into the input matching `css` as a user would: its value changes and an `input` event
    /// follows (no `change`, no Enter).
    pub fn type_into(&self, css: &str, text: &str) {
        let script = "const el = document.querySelector(arguments[0]); el.focus(); el.value = arguments[1]; \
                      el.dispatchEvent(new Event('input', {bubbles: true}));";
        self.js(script, serde_json::json!([css, text]));
    }

    /// A number the page's script computes.
    pub fn num(&self, script: &str) -> f64 {
        self.js(script, serde_json::json!([])).as_f64().unwrap_or_else(|| panic!("{script} gave no number"))
    }

    /// Waits (up to 20 s) until `cond` holds, re-checking every 50 ms.
    pub fn wait_for(&self, what: &str, cond: impl FnMut(&Browser) -> bool) {
        self.wait_for_within(what, Duration::from_secs(20), cond)
    }

    /// [`Browser::wait_for`] with a deadline of its own (for what the server works on for as long as its query
    /// time limit allows).
    pub fn wait_for_within(&self, what: &str, within: Duration, mut cond: impl FnMut(&Browser) -> bool) {
        let deadline = Instant::now() + within;
        while !cond(self) {
            if Instant::now() > deadline {
                let _ = self.screenshot(&format!("failed-{}", what.replace(' ', "-")));
                panic!(
                    "timed out waiting for {what}; page text: {}",
                    self.texts("body").join(" ").chars().take(2000).collect::<String>()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Saves a PNG of the page as target/screenshots/NAME.png; returns its path.
    pub fn screenshot(&self, name: &str) -> std::path::PathBuf {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/screenshots");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, self.inner.screenshot_png().unwrap()).unwrap();
        path
    }
}
