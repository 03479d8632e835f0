//! A small W3C WebDriver client over plain HTTP, enough to drive headless
//! Chromium through chromedriver in the browser tests.

use serde_json::{json, Value};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";

/// A chromedriver process and one browser session.
pub struct Browser {
    driver: Child,
    base: String,
    session: String,
    _profile: tempfile::TempDir,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn call(method: &str, url: &str, body: Option<Value>) -> Value {
    let req = ureq::request(method, url).timeout(Duration::from_secs(60));
    let resp = match body {
        Some(b) => req.send_json(b),
        None => req.call(),
    };
    match resp {
        Ok(r) => r.into_json::<Value>().unwrap()["value"].take(),
        Err(ureq::Error::Status(code, r)) => {
            panic!("webdriver {method} {url}: {code}: {}", r.into_string().unwrap_or_default())
        }
        Err(e) => panic!("webdriver {method} {url}: {e}"),
    }
}

impl Browser {
    /// Starts chromedriver and a headless Chromium session (window 1400x900).
    pub fn start() -> Browser {
        let chromedriver = super::peer("chromedriver");
        let port = free_port();
        let driver = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let base = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(30);
        while ureq::get(&format!("{base}/status")).call().is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        let profile = tempfile::tempdir().unwrap();
        let args = [
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
        .chain([format!("--user-data-dir={}", profile.path().display())])
        .collect::<Vec<_>>();
        let caps = json!({"capabilities": {"alwaysMatch": {"goog:chromeOptions": {
            "binary": super::peer("chromium"), "args": args
        }}}});
        let session = call("POST", &format!("{base}/session"), Some(caps))["sessionId"].as_str().unwrap().to_owned();
        Browser { driver, base, session, _profile: profile }
    }

    fn url(&self, path: &str) -> String {
        format!("{}/session/{}{path}", self.base, self.session)
    }

    /// Navigates to `url`.
    pub fn goto(&self, url: &str) {
        call("POST", &self.url("/url"), Some(json!({ "url": url })));
    }

    /// The page's current URL.
    pub fn current_url(&self) -> String {
        call("GET", &self.url("/url"), None).as_str().unwrap().to_owned()
    }

    /// Runs `script` (a function body; `arguments` are `args`) and returns its result.
    pub fn js(&self, script: &str, args: Value) -> Value {
        call("POST", &self.url("/execute/sync"), Some(json!({ "script": script, "args": args })))
    }

    /// Element ids matching `css`.
    pub fn find_all(&self, css: &str) -> Vec<String> {
        let found = call("POST", &self.url("/elements"), Some(json!({"using": "css selector", "value": css})));
        found.as_array().unwrap().iter().map(|e| e[ELEMENT_KEY].as_str().unwrap().to_owned()).collect()
    }

    /// Clicks the first element matching `css` (a real pointer click).
    pub fn click(&self, css: &str) {
        let el = self.find_all(css).into_iter().next().unwrap_or_else(|| panic!("nothing matches {css}"));
        call("POST", &self.url(&format!("/element/{el}/click")), Some(json!({})));
    }

    /// Texts of every element matching `css`.
    pub fn texts(&self, css: &str) -> Vec<String> {
        let v = self
            .js("return Array.from(document.querySelectorAll(arguments[0])).map(e => e.textContent);", json!([css]));
        v.as_array().unwrap().iter().map(|t| t.as_str().unwrap_or_default().to_owned()).collect()
    }

    /// Waits (up to 20 s) until `cond` holds, re-checking every 50 ms.
    pub fn wait_for(&self, what: &str, mut cond: impl FnMut(&Browser) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(20);
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
        use base64::Engine;
        let png = call("GET", &self.url("/screenshot"), None);
        let bytes = base64::engine::general_purpose::STANDARD.decode(png.as_str().unwrap()).unwrap();
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/screenshots");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, bytes).unwrap();
        path
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = ureq::delete(&self.url("")).call();
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
