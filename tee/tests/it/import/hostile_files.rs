//! Hostile import files: no line ends under an address-space limit, counts
//! that lie, duplicate and out-of-range seqs, control characters in names.

use super::*;

/// Writes the start of an acp-tee-trace document whose first frame's `raw`
/// never ends, until the reader goes away.
fn endless_document(mut stdin: std::process::ChildStdin) {
    use std::io::Write;
    let head = concat!(
        r#"{"format":"acp-tee-trace","version":1,"traces":[{"id":1,"command":["a"],"mode":"wrap","#,
        r#""started_at":"2026-01-01T00:00:00.000000Z","frame_count":1,"error_count":0,"missing_frames":0,"#,
        "\n",
        r#""frames":[{"seq":1,"t_ns":0,"dir":"client_to_agent","kind":"request","raw":""#,
    );
    if stdin.write_all(head.as_bytes()).is_err() {
        return;
    }
    let chunk = vec![b'a'; 1 << 20];
    while stdin.write_all(&chunk).is_ok() {}
}

#[test]
fn input_without_line_ends_fails_at_the_limit_in_bounded_memory() {
    // 2 GiB of address space: the old code grew until the kernel killed it.
    let limit = 2 << 30;
    for format in ["acp-tee", "jsons", "sacp-tee", "acp-inspector", "acpx", "acp-inspector-fsharp"] {
        let store = TempStore::new();
        let db = store.db.to_str().unwrap();
        let r = run_bounded(&["import", "--db", db, "--format", format, "/dev/zero"], limit, None);
        eprintln!("{format} from /dev/zero: exit {:?}, peak RSS {} MiB", r.code, r.peak_kib / 1024);
        assert_eq!(
            (r.code, r.stderr.as_str()),
            (
                Some(1),
                &*format!("acp-tee: error: /dev/zero:1: line longer than {MAX_LINE} bytes; nothing was imported\n")
            ),
            "{format}"
        );
        assert!((r.peak_kib as u64) < MAX_LINE / 1024 * 3 / 2, "{format}: peak RSS {} KiB", r.peak_kib);
        assert!(store.open().list_traces().unwrap().is_empty());
    }
    // The JSON document is read as a stream, not by lines: one value that
    // never ends is refused at the same length.
    let store = TempStore::new();
    let db = store.db.to_str().unwrap();
    let r = run_bounded(&["import", "--db", db, "--format", "acp-tee", "/dev/stdin"], limit, Some(endless_document));
    eprintln!("endless document: exit {:?}, peak RSS {} MiB", r.code, r.peak_kib / 1024);
    assert_eq!(
        (r.code, r.stderr.as_str()),
        (
            Some(1),
            &*format!("acp-tee: error: /dev/stdin:2: a value longer than {MAX_LINE} bytes; nothing was imported\n")
        )
    );
    assert!((r.peak_kib as u64) < MAX_LINE / 1024 * 3 / 2, "peak RSS {} KiB", r.peak_kib);
    assert!(store.open().list_traces().unwrap().is_empty());
}

/// One NDJSON header line for a trace claiming `frames` and `missing`.
fn header(name: &str, frames: i64, missing: i64) -> String {
    format!(
        r#"{{"format":"acp-tee-trace","version":1,"trace":{{"id":7,"name":{},"command":["a"],"mode":"wrap","started_at":"2026-01-01T00:00:00.000000Z","ended_at":"2026-01-01T00:00:01.000000Z","frame_count":{frames},"error_count":0,"missing_frames":{missing}}}}}"#,
        serde_json::to_string(name).unwrap()
    )
}

/// A frame line with `seq`.
fn frame_line(seq: i64) -> String {
    format!(
        r#"{{"seq":{seq},"t_ns":{seq},"dir":"client_to_agent","kind":"notification","method":"m","raw":"{{\"jsonrpc\":\"2.0\",\"method\":\"m\"}}\n"}}"#
    )
}

fn write_lines(dir: &Path, name: &str, lines: &[String]) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

#[test]
fn counts_come_from_the_frames_stored_not_from_the_header() {
    let store = TempStore::new();
    let dir = store.dir.path();
    // A header of 3 frames followed by 20.
    let mut more = vec![header("more", 3, 0)];
    more.extend((1..=20).map(frame_line));
    assert!(import(&store.db, &[write_lines(dir, "more.ndjson", &more).to_str().unwrap()]).status.success());
    let t = store.open().trace(1).unwrap();
    assert_eq!((t.frame_count, t.missing_frames), (20, 0));

    // Seqs 2 to 4 taken out, the header still claiming no frame missing:
    // the gap is counted, and pages by offset step over it.
    let mut gappy = vec![header("gappy", 5, 0)];
    gappy.extend([1, 5, 6, 7, 8].map(frame_line));
    assert!(import(&store.db, &[write_lines(dir, "gappy.ndjson", &gappy).to_str().unwrap()]).status.success());
    let t = store.open().trace(2).unwrap();
    assert_eq!((t.frame_count, t.missing_frames), (5, 3));
    let page = |offset| {
        let q = acp_tee_shared::api::FrameQuery { offset: Some(offset), limit: Some(2), ..Default::default() };
        let p = store.open().frame_page(2, &q).unwrap();
        (p.frames.iter().map(|f| f.seq).collect::<Vec<_>>(), p.total)
    };
    assert_eq!(
        (0..5).map(page).collect::<Vec<_>>(),
        [(vec![1, 5], 5), (vec![5, 6], 5), (vec![6, 7], 5), (vec![7, 8], 5), (vec![8], 5)]
    );

    // Negative counts are refused.
    for (field, frames, missing) in [("frame_count", -5, 0), ("missing_frames", 1, -1)] {
        let neg = write_lines(dir, "neg.ndjson", &[header("neg", frames, missing), frame_line(1)]);
        let out = import(&store.db, &[neg.to_str().unwrap()]);
        assert_eq!(
            stderr(&out),
            format!(
                "acp-tee: error: {}:1: `{field}` is {}; counts are 0 or more; nothing was imported\n",
                neg.display(),
                frames.min(missing)
            )
        );
    }
    assert_eq!(store.open().list_traces().unwrap().len(), 2);

    // An export cut short at a line end (a full disk): refused, unless
    // --skip-bad, which imports what is there and counts the rest as missing.
    let mut cut = vec![header("cut", 50, 2)];
    cut.extend((1..=30).map(frame_line));
    let cut = write_lines(dir, "cut.ndjson", &cut);
    let out = import(&store.db, &[cut.to_str().unwrap()]);
    assert_eq!(
        stderr(&out),
        format!(
            "acp-tee: error: {}:1: the header says the trace has 50 frames, the file holds 30; \
             it is cut short or was edited; nothing was imported \
             (pass --skip-bad to import the frames it holds, the rest counted as missing)\n",
            cut.display()
        )
    );
    assert_eq!(store.open().list_traces().unwrap().len(), 2);
    let out = import(&store.db, &["--skip-bad", cut.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        format!(
            "acp-tee: warning: {} holds 20 frames fewer than its headers say; they are counted as missing (--skip-bad)\n",
            cut.display()
        )
    );
    let t = store.open().trace(3).unwrap();
    assert_eq!((t.frame_count, t.missing_frames), (30, 22));
}

#[test]
fn duplicate_and_out_of_range_seqs_are_bad_lines() {
    let store = TempStore::new();
    let dir = store.dir.path();
    let dup = write_lines(
        dir,
        "dup.ndjson",
        &[header("dup", 4, 0), frame_line(1), frame_line(2), frame_line(2), frame_line(3)],
    );
    let out = import(&store.db, &[dup.to_str().unwrap()]);
    assert_eq!(
        stderr(&out),
        format!(
            "acp-tee: error: {}:4: duplicate seq 2; nothing was imported \
             (fix the line, or pass --skip-bad to leave bad lines out)\n",
            dup.display()
        )
    );
    assert!(!store.db.exists() || store.open().list_traces().unwrap().is_empty());
    let out = import(&store.db, &["--skip-bad", dup.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        format!("acp-tee: warning: 1 bad lines of {} were left out (--skip-bad)\n", dup.display())
    );
    let t = store.open().trace(1).unwrap();
    assert_eq!((t.frame_count, t.missing_frames), (3, 1));

    let big = write_lines(dir, "big.ndjson", &[header("big", 2, 0), frame_line(1), frame_line(1 << 40)]);
    let out = import(&store.db, &[big.to_str().unwrap()]);
    assert_eq!(
        stderr(&out),
        format!(
            "acp-tee: error: {}:3: not an acp-tee-trace frame: `seq` must be from 1 to 2^40 - 1, not 1099511627776; \
             nothing was imported (fix the line, or pass --skip-bad to leave bad lines out)\n",
            big.display()
        )
    );
    assert!(import(&store.db, &["--skip-bad", big.to_str().unwrap()]).status.success());
    assert_eq!(store.open().trace(2).unwrap().frame_count, 1);

    // In a JSON document too, with the line the frame ends on.
    let doc = dir.join("dup.json");
    let frames = [1, 2, 2].map(frame_line).join(",\n");
    let text = format!(
        "{{\"format\":\"acp-tee-trace\",\"version\":1,\"traces\":[\n{{\"id\":1,\"command\":[],\"mode\":\"wrap\",\"started_at\":\"2026-01-01T00:00:00.000000Z\",\"frame_count\":3,\"error_count\":0,\"missing_frames\":0,\"frames\":[\n{frames}\n]}}\n]}}\n"
    );
    std::fs::write(&doc, text).unwrap();
    let out = import(&store.db, &[doc.to_str().unwrap()]);
    assert_eq!(
        stderr(&out),
        format!(
            "acp-tee: error: {}:5: duplicate seq 2; nothing was imported \
             (fix the line, or pass --skip-bad to leave bad lines out)\n",
            doc.display()
        )
    );
    assert!(import(&store.db, &["--skip-bad", doc.to_str().unwrap()]).status.success());
    assert_eq!(store.open().trace(3).unwrap().frame_count, 2);
}

#[test]
fn list_shows_control_characters_in_stored_names_escaped() {
    let store = TempStore::new();
    let dir = store.dir.path();
    // A name that would set the terminal's title, turn it red, and forge a row.
    let name = "\u{1b}]0;pwned\u{7}\u{1b}[31mred\n99  forged  2026-01-01 00:00:00  1.000s  1  0  0\r";
    let mut lines = vec![header(name, 1, 0)];
    lines.push(frame_line(1));
    // No name: the command's first word is shown instead.
    lines.push(header("x", 1, 0).replace(r#""name":"x","#, "").replace(r#"["a"]"#, r#"["\u009b2J\u001b[H"]"#));
    lines.push(frame_line(1));
    let file = write_lines(dir, "evil.ndjson", &lines);
    assert!(import(&store.db, &[file.to_str().unwrap()]).status.success());
    let out = Command::new(bin()).args(["list", "--db", store.db.to_str().unwrap()]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.chars().any(|c| c.is_control() && c != '\n'), "{text:?}");
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(
        text.contains(r"\u{1b}]0;pwned\u{7}\u{1b}[31mred\n99  forged  2026-01-01 00:00:00  1.000s  1  0  0\r"),
        "{text}"
    );
    assert!(text.contains(r"\u{9b}2J\u{1b}[H"), "{text}");
}
