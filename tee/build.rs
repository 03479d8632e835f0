//! Makes sure the viewer app in `dist/` is built before it is embedded in the
//! binary (`server::assets`, rust-embed): when `dist/index.html` is missing or
//! older than the viewer's sources and trunk and the wasm32 target are
//! installed, runs `trunk build --release` (into its own target directory, so
//! it never waits on the lock of the build that runs this script). Without
//! them nothing fails: the binary serves a page saying how to get the viewer.
//! `ACP_TEE_SKIP_VIEWER_BUILD=1` skips the build (what `dist/` holds is
//! embedded as it is).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it")).join("..");
    let sources = ["viewer/src", "viewer/Cargo.toml", "viewer/style.css", "shared/src", "index.html", "Trunk.toml"];
    for source in sources {
        println!("cargo:rerun-if-changed={}", root.join(source).display());
    }
    // rust-embed reads dist/ when the binary is compiled: compile again when it changes.
    println!("cargo:rerun-if-changed={}", root.join("dist").display());
    println!("cargo:rerun-if-env-changed=ACP_TEE_SKIP_VIEWER_BUILD");
    if std::env::var_os("ACP_TEE_SKIP_VIEWER_BUILD").is_some_and(|v| v == "1") {
        return;
    }
    let built = modified(&root.join("dist/index.html"));
    let newest_source = sources.iter().filter_map(|s| newest(&root.join(s))).max();
    if built.is_some() && built >= newest_source {
        return;
    }
    if !tools_present() {
        println!(
            "cargo:warning=the viewer app is not built and trunk or the wasm32 target is missing: \
             this acp-tee serves the API only (scripts/install-tools viewer, then build again)"
        );
        return;
    }
    let status = Command::new("trunk")
        .args(["build", "--release"])
        .current_dir(&root)
        .env_clear()
        .envs(kept_environment())
        // Not the target directory of the build running this script: its
        // lock is held until this script ends.
        .env("CARGO_TARGET_DIR", root.join("target/viewer"))
        .status();
    match status {
        Ok(s) if s.success() => {}
        other => println!("cargo:warning=building the viewer app with trunk failed ({other:?}); serving the API only"),
    }
}

/// What trunk and the cargo it runs need from our environment: where the
/// tools are, and nothing of the build that runs this script.
fn kept_environment() -> Vec<(String, String)> {
    const KEEP: [&str; 7] = ["PATH", "HOME", "CARGO_HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN", "TMPDIR", "LANG"];
    std::env::vars().filter(|(k, _)| KEEP.contains(&k.as_str())).collect()
}

fn tools_present() -> bool {
    let trunk = Command::new("trunk").arg("--version").output().is_ok_and(|o| o.status.success());
    let wasm = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).lines().any(|l| l == "wasm32-unknown-unknown"));
    trunk && wasm
}

fn modified(path: &Path) -> Option<SystemTime> {
    path.metadata().and_then(|m| m.modified()).ok()
}

/// The newest modification time of `path` or anything under it.
fn newest(path: &Path) -> Option<SystemTime> {
    let own = modified(path);
    let Ok(entries) = std::fs::read_dir(path) else { return own };
    entries.filter_map(Result::ok).filter_map(|e| newest(&e.path())).chain(own).max()
}
