//! A small W3C WebDriver client over plain HTTP: one chromedriver process
//! and one headless Chromium session, enough to navigate, run scripts, find
//! and click elements and take screenshots. acp-tee's browser tests and its
//! benchmark harness both drive the viewer through it.

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The key under which WebDriver returns an element's reference.
const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";

/// Chromium's flags for a headless run as root on a machine whose network
/// is closed (no sandbox, GPU, QUIC or background connections), besides its
/// profile directory.
const CHROMIUM_FLAGS: [&str; 10] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1400,900",
];

/// A chromedriver process with one browser session; both end, and the
/// profile directory is removed, when it is dropped.
pub struct Browser {
    driver: Child,
    base: String,
    session: String,
    profile: PathBuf,
}

/// One WebDriver command; its `value`.
fn call(method: &str, url: &str, body: Option<Value>) -> Result<Value> {
    let req = ureq::request(method, url).timeout(Duration::from_secs(120));
    let resp = match body {
        Some(b) => req.send_string(&b.to_string()),
        None => req.call(),
    };
    match resp {
        Ok(r) => {
            let mut v: Value = serde_json::from_str(&r.into_string()?)?;
            Ok(v["value"].take())
        }
        Err(ureq::Error::Status(code, r)) => {
            bail!("webdriver {method} {url}: {code}: {}", r.into_string().unwrap_or_default())
        }
        Err(e) => bail!("webdriver {method} {url}: {e}"),
    }
}

impl Browser {
    /// Starts `chromedriver` and a headless `chromium` session (window
    /// 1400x900) with a fresh profile in the directory `profile`.
    pub fn start(chromedriver: &str, chromium: &str, profile: &Path) -> Result<Browser> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let driver = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("cannot start {chromedriver}"))?;
        let mut browser = Browser {
            driver,
            base: format!("http://127.0.0.1:{port}"),
            session: String::new(),
            profile: profile.to_owned(),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while ureq::get(&format!("{}/status", browser.base)).call().is_err() {
            if Instant::now() > deadline {
                bail!("chromedriver did not answer within 30 s");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        std::fs::create_dir_all(profile)?;
        let args: Vec<String> = CHROMIUM_FLAGS
            .iter()
            .map(|s| s.to_string())
            .chain([format!("--user-data-dir={}", profile.display())])
            .collect();
        let caps = json!({"capabilities": {"alwaysMatch": {"goog:chromeOptions": {"binary": chromium, "args": args}}}});
        let created = call("POST", &format!("{}/session", browser.base), Some(caps))?;
        browser.session = created["sessionId"].as_str().context("no webdriver session id")?.to_owned();
        call("POST", &browser.url("/timeouts"), Some(json!({"script": 60000, "pageLoad": 120000})))?;
        Ok(browser)
    }

    fn url(&self, path: &str) -> String {
        format!("{}/session/{}{path}", self.base, self.session)
    }

    /// Navigates to `url` (returns once the page has loaded).
    pub fn goto(&self, url: &str) -> Result<()> {
        call("POST", &self.url("/url"), Some(json!({ "url": url }))).map(drop)
    }

    /// The page's current URL.
    pub fn current_url(&self) -> Result<String> {
        Ok(call("GET", &self.url("/url"), None)?.as_str().context("a URL")?.to_owned())
    }

    /// Runs `script` (a function body; `arguments` are `args`) and returns its result.
    pub fn js(&self, script: &str, args: Value) -> Result<Value> {
        call("POST", &self.url("/execute/sync"), Some(json!({ "script": script, "args": args })))
    }

    /// Runs `script` (a function body whose last argument is the callback to
    /// call with the result) and returns what it passed to the callback.
    pub fn js_async(&self, script: &str, args: Value) -> Result<Value> {
        call("POST", &self.url("/execute/async"), Some(json!({ "script": script, "args": args })))
    }

    /// Sends a Chrome DevTools protocol command (chromedriver's extension).
    pub fn cdp(&self, cmd: &str, params: Value) -> Result<()> {
        call("POST", &self.url("/goog/cdp/execute"), Some(json!({ "cmd": cmd, "params": params }))).map(drop)
    }

    /// References of the elements matching `css`.
    pub fn find_all(&self, css: &str) -> Result<Vec<String>> {
        let found = call("POST", &self.url("/elements"), Some(json!({"using": "css selector", "value": css})))?;
        let refs = found.as_array().context("a list of elements")?.iter();
        refs.map(|e| e[ELEMENT_KEY].as_str().map(str::to_owned).context("an element reference")).collect()
    }

    /// Clicks the first element matching `css` (a real pointer click).
    pub fn click(&self, css: &str) -> Result<()> {
        let el = self.find_all(css)?.into_iter().next().with_context(|| format!("nothing matches {css}"))?;
        call("POST", &self.url(&format!("/element/{el}/click")), Some(json!({}))).map(drop)
    }

    /// The text content of every element matching `css`.
    pub fn texts(&self, css: &str) -> Result<Vec<String>> {
        let v = self
            .js("return Array.from(document.querySelectorAll(arguments[0])).map(e => e.textContent);", json!([css]))?;
        Ok(v.as_array().context("a list of texts")?.iter().map(|t| t.as_str().unwrap_or_default().to_owned()).collect())
    }

    /// A PNG of the page.
    pub fn screenshot_png(&self) -> Result<Vec<u8>> {
        use base64::Engine;
        let png = call("GET", &self.url("/screenshot"), None)?;
        Ok(base64::engine::general_purpose::STANDARD.decode(png.as_str().context("base64 PNG")?)?)
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = ureq::delete(&self.url("")).call();
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}
