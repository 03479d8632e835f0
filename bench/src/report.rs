//! The report: Markdown tables printed as each section finishes and written
//! to a file at the end, plus the machine it ran on.

use std::fmt::Write as _;
use std::process::Command;

/// A Markdown document built section by section.
#[derive(Debug, Default)]
pub struct Report {
    text: String,
    /// Targets that failed, one line each, for the summary.
    pub failed: Vec<String>,
    /// Targets checked.
    pub checked: usize,
    /// A quick smoke run: its counts are too small for fixed costs not to
    /// dominate, so verdicts are shown but not counted.
    pub smoke: bool,
    /// In a smoke run, the targets that would have failed.
    pub would_fail: Vec<String>,
}

impl Report {
    /// Appends `text` and echoes it to stderr (stdout stays free for piping).
    pub fn say(&mut self, text: &str) {
        eprintln!("{text}");
        self.text.push_str(text);
        self.text.push('\n');
    }

    /// Appends a table with `head` columns.
    pub fn table(&mut self, head: &[&str], rows: &[Vec<String>]) {
        let mut t = String::new();
        let _ = writeln!(t, "| {} |", head.join(" | "));
        let _ = writeln!(t, "|{}", "---|".repeat(head.len()));
        for r in rows {
            let _ = writeln!(t, "| {} |", r.join(" | "));
        }
        self.say(&t);
    }

    /// Records a target's verdict and returns the cell text for it.
    pub fn verdict(&mut self, what: &str, ok: bool) -> String {
        if self.smoke {
            if !ok {
                self.would_fail.push(what.to_owned());
            }
            return if ok { "pass (smoke run)" } else { "fail (smoke run)" }.into();
        }
        self.checked += 1;
        if ok {
            "**pass**".into()
        } else {
            self.failed.push(what.to_owned());
            "**FAIL**".into()
        }
    }

    /// The closing line: which targets hold.
    pub fn summary(&self) -> String {
        if self.smoke {
            let missed = if self.would_fail.is_empty() {
                "none would fail".to_owned()
            } else {
                format!("{} would fail: {}", self.would_fail.len(), self.would_fail.join("; "))
            };
            return format!(
                "**Smoke run: no target is judged** (counts too small for fixed costs not to dominate; {missed}). \
                 Run without `--quick` to measure."
            );
        }
        if self.failed.is_empty() {
            format!("**All {} targets checked hold.**", self.checked)
        } else {
            format!("**{} of {} targets fail:** {}.", self.failed.len(), self.checked, self.failed.join("; "))
        }
    }

    /// The whole document.
    pub fn text(&self) -> &str {
        &self.text
    }
}

fn run(cmd: &str, args: &[&str]) -> String {
    Command::new(cmd)
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|| "?".into())
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// The 1-, 5- and 15-minute load averages.
pub fn loadavg() -> String {
    read("/proc/loadavg").split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

/// A Markdown list describing this machine and run.
pub fn machine(command: &str, acp_tee: &std::path::Path) -> String {
    let cpuinfo = read("/proc/cpuinfo");
    let cpu = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .unwrap_or("?")
        .trim()
        .to_owned();
    let mem_kib: u64 = read("/proc/meminfo")
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0);
    let dirty = !run("git", &["status", "--porcelain", "--untracked-files=no"]).is_empty();
    let mut s = String::new();
    let _ = writeln!(s, "- date: {}", run("date", &["-u", "+%Y-%m-%d %H:%M UTC"]));
    let _ = writeln!(s, "- command: `{command}`");
    // The binary measured may be another one than this checkout's
    // (`--acp-tee`): both are named.
    let _ = writeln!(
        s,
        "- acp-tee: `{}`; this checkout is at commit {}{}",
        acp_tee.display(),
        run("git", &["rev-parse", "--short", "HEAD"]),
        if dirty { " plus uncommitted changes" } else { "" }
    );
    let _ = writeln!(s, "- CPU: {} × {cpu}", run("nproc", &[]));
    let _ = writeln!(s, "- RAM: {:.1} GiB", mem_kib as f64 / 1024.0 / 1024.0);
    let _ = writeln!(s, "- kernel: Linux {}", read("/proc/sys/kernel/osrelease").trim());
    let _ = writeln!(s, "- chromium: {}", run("chromium", &["--version"]));
    let _ = writeln!(s, "- load average at start (1/5/15 min): {}", loadavg());
    s
}

/// `x` with `digits` decimals.
pub fn f(x: f64, digits: usize) -> String {
    format!("{x:.digits$}")
}

/// A count with thousands separators.
pub fn n(x: u64) -> String {
    let s = x.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn thousands() {
        assert_eq!(super::n(1_000_000), "1,000,000");
        assert_eq!(super::n(999), "999");
        assert_eq!(super::n(1234), "1,234");
    }
}
