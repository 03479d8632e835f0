//! A minimal W3C WebDriver client: chromedriver and one headless Chromium
//! session, enough to navigate and run scripts.

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A chromedriver process with one browser session; both end when dropped.
pub struct Browser {
    driver: Child,
    base: String,
    session: String,
    profile: std::path::PathBuf,
}

fn call(method: &str, url: &str, body: Option<Value>) -> Result<Value> {
    let req = ureq::request(method, url).timeout(Duration::from_secs(120));
    let resp = match body {
        Some(b) => req.send_string(&b.to_string()),
        None => req.call(),
    };
    match resp {
        Ok(r) => {
            let v: Value = serde_json::from_str(&r.into_string()?)?;
            Ok(v["value"].clone())
        }
        Err(ureq::Error::Status(code, r)) => {
            bail!("webdriver {method} {url}: {code}: {}", r.into_string().unwrap_or_default())
        }
        Err(e) => bail!("webdriver {method} {url}: {e}"),
    }
}

impl Browser {
    /// Starts chromedriver and headless Chromium (window 1400x900, the
    /// flags from docs/toolchain.md), with a fresh profile under `profile`.
    pub fn start(chromedriver: &str, chromium: &str, profile: &std::path::Path) -> Result<Browser> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let driver = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("cannot start {chromedriver}"))?;
        let base = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(30);
        while ureq::get(&format!("{base}/status")).call().is_err() {
            if Instant::now() > deadline {
                bail!("chromedriver did not answer within 30 s");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        std::fs::create_dir_all(profile)?;
        let mut args: Vec<String> = [
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
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.push(format!("--user-data-dir={}", profile.display()));
        let caps = json!({"capabilities": {"alwaysMatch": {"goog:chromeOptions": {"binary": chromium, "args": args}}}});
        let mut browser = Browser { driver, base, session: String::new(), profile: profile.to_owned() };
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

    /// Runs `script` (a function body whose last argument is the callback to
    /// call with the result) and returns what it passed to the callback.
    pub fn js_async(&self, script: &str, args: Value) -> Result<Value> {
        call("POST", &self.url("/execute/async"), Some(json!({ "script": script, "args": args })))
    }

    /// Sends a Chrome DevTools protocol command (chromedriver's extension).
    pub fn cdp(&self, cmd: &str, params: Value) -> Result<()> {
        call("POST", &self.url("/goog/cdp/execute"), Some(json!({ "cmd": cmd, "params": params }))).map(drop)
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
