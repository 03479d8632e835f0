//! The viewer app is built into the binary: a copy of acp-tee alone in an
//! empty directory, run from there, serves the whole app (its page, its
//! wasm and JavaScript) with no `dist/` anywhere it could look.

use crate::common::*;
use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};

#[test]
fn a_copy_of_the_binary_alone_serves_the_whole_viewer() {
    let alone = tempfile::tempdir().unwrap();
    let copy = alone.path().join("acp-tee");
    std::fs::copy(bin(), &copy).unwrap();
    let store = TempStore::new();
    // A store to serve (the server opens an existing one).
    let out = run_with_input(tee_command(&store.db, &[], &["cat"]), b"{\"id\":1,\"method\":\"m\"}\n".to_vec());
    assert!(out.status.success());
    store.only_trace();

    let mut server = Command::new(&copy)
        .args(["serve", "--port", "0", "--db"])
        .arg(&store.db)
        .current_dir(alone.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(server.stdout.take().unwrap()).read_line(&mut first).unwrap();
    let url = first.split(" at ").nth(1).expect("serve prints its URL").trim().trim_end_matches('/').to_owned();
    let get = |path: &str| ureq::get(&format!("{url}{path}")).call().map_err(Box::new);

    let page = get("/traces/1").expect("the app's own routes get its page");
    assert_eq!(page.content_type(), "text/html");
    let html = page.into_string().unwrap();
    assert!(
        !html.contains("has no viewer app"),
        "this acp-tee was built without the viewer: install trunk and the wasm32 target \
         (scripts/install-tools viewer) and build again"
    );
    // Every file the page loads is served from the binary.
    let files: Vec<&str> = html
        .split(['"', '\''])
        .filter(|s| s.starts_with('/') && (s.ends_with(".wasm") || s.ends_with(".js") || s.ends_with(".css")))
        .collect();
    assert!(files.iter().any(|f| f.ends_with(".wasm")), "no wasm in {html}");
    for file in files {
        let response = get(file).unwrap_or_else(|e| panic!("{file}: {e}"));
        let kind = response.content_type().to_owned();
        let mut body = Vec::new();
        response.into_reader().read_to_end(&mut body).unwrap();
        assert!(!body.is_empty(), "{file} is empty");
        if file.ends_with(".wasm") {
            assert_eq!(kind, "application/wasm", "{file}");
            assert_eq!(&body[..4], b"\0asm", "{file}");
        }
    }
    // The API is there too.
    let traces = get("/api/traces").unwrap().into_string().unwrap();
    assert!(traces.contains("\"frame_count\":2"), "{traces}");
    let _ = server.kill();
    let _ = server.wait();
}
