//! An upstream on https (and wss): the proxy's client verifies it against
//! the system's roots, which `SSL_CERT_FILE` can name (rustls-native-certs
//! reads it), and refuses a certificate they do not vouch for.

use super::*;

/// A self-signed certificate for 127.0.0.1 and its key, made by openssl in `dir`.
fn certificate(dir: &std::path::Path) -> (PathBuf, PathBuf) {
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let status = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"])
        // Not a CA: webpki refuses a CA certificate as the server's own.
        .args(["-addext", "subjectAltName=IP:127.0.0.1", "-addext", "basicConstraints=critical,CA:FALSE"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stderr(Stdio::null())
        .status()
        .expect("openssl is needed to make a test certificate");
    assert!(status.success());
    (cert, key)
}

#[test]
fn an_https_upstream_is_verified_and_carries_whole_conversations_over_http_and_websocket() {
    let store = TempStore::new();
    let (cert, key) = certificate(store.dir.path());
    let agent = Agent::start_with(&["--tls", cert.to_str().unwrap(), key.to_str().unwrap()]);
    assert!(agent.url.starts_with("https://"), "{}", agent.url);
    // Trusted (the certificate is the roots): whole conversations both ways.
    let proxy = Proxy::start_env(&store.db, &agent.url, &[], &[("SSL_CERT_FILE", &cert)]);
    for args in [&[][..], &["--ws"][..]] {
        let run = client(&proxy.url, args);
        assert_eq!(run["connections"][0]["stopReason"], "end_turn", "{run}");
        assert_eq!(run["connections"][0]["updates"].as_array().unwrap().len(), 11);
    }
    let traces = store.ended_traces(2);
    assert_conversation(&store, &traces[0], "http");
    assert_conversation(&store, &traces[1], "websocket");
    drop(proxy);
    // Not trusted (the system's roots do not know it): refused, never sent.
    let other = TempStore::new();
    let proxy = Proxy::start(&other.db, &agent.url);
    let out = Command::new(python_acp()).arg(peer_script("py_http_client.py")).arg(&proxy.url).output().unwrap();
    assert!(!out.status.success(), "the client got through an unverified upstream");
    let trace = other.only_trace();
    assert_eq!(trace.exit_code, Some(1));
    let reason = trace.end_reason.unwrap();
    assert!(reason.contains("failed for POST") && reason.to_lowercase().contains("certificate"), "{reason}");
}
