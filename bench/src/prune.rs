//! `acp-tee prune` of a store of thousands of traces (#33): from about
//! 1 GB to 200 MB by `--max-size`, timed, while a recording into the same
//! store goes on, which must lose nothing.
//!
//! The store: one trace recorded by the real acp-tee ([`tracegen`]), then
//! copied row for row in SQL (frames, counts, spans: every table that holds
//! a trace's rows) under new ids, ended a minute apart, until the file is
//! the size wanted. Copies are not in the search index; what the prune
//! removes of the index is then nothing, and the time is that of the rows.

use crate::report::{f, n, Report};
use crate::tracegen::{self, Sessions};
use crate::Config;
use anyhow::{bail, Context, Result};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

/// `--max-size` of the prune, and the store's size before it, in bytes.
fn sizes(quick: bool) -> (u64, u64) {
    if quick {
        (20_000_000, 80_000_000)
    } else {
        (200_000_000, 1_000_000_000)
    }
}

/// Frames of the recorded trace every copy is made from.
const SEED_FRAMES: u64 = 2_000;

/// Frames of the recording made while the prune runs.
fn during_frames(quick: bool) -> u64 {
    if quick {
        20_000
    } else {
        200_000
    }
}

/// The file at `path` and its log, in bytes.
fn on_disk(path: &Path) -> u64 {
    let log = format!("{}-wal", path.display());
    [path, Path::new(&log)].iter().filter_map(|p| std::fs::metadata(p).ok()).map(|m| m.len()).sum()
}

/// Copies trace `seed` of `conn` as traces `first..first + count`, trace
/// `k` ended `k` minutes after 2026-01-01; not in the search index (their
/// `search_progress` is not copied: maintenance indexes them later).
fn copy_trace(conn: &rusqlite::Connection, seed: i64, first: i64, count: i64) -> Result<()> {
    let tables: Vec<String> = conn
        .prepare(
            "SELECT DISTINCT m.name FROM sqlite_master m, pragma_table_info(m.name) c
             WHERE m.type = 'table' AND c.name = 'trace_id' AND m.name <> 'search_progress'",
        )?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    let columns = |table: &str| -> Result<Vec<String>> {
        Ok(conn
            .prepare(&format!("SELECT name FROM pragma_table_info('{table}')"))?
            .query_map([], |r| r.get(0))?
            .collect::<Result<_, _>>()?)
    };
    let trace_cols: Vec<String> = columns("traces")?.into_iter().filter(|c| c != "id").collect();
    let copy_traces = format!(
        "INSERT INTO traces (id, {cols}) SELECT ?1, {vals} FROM traces WHERE id = ?2",
        cols = trace_cols.join(", "),
        vals = trace_cols
            .iter()
            .map(|c| match c.as_str() {
                "name" => "'copy-' || ?1".to_owned(),
                "started_at" => "strftime('%Y-%m-%dT%H:%M:%fZ', '2026-01-01', '+' || ?1 || ' minutes')".to_owned(),
                "ended_at" => "strftime('%Y-%m-%dT%H:%M:%fZ', '2026-01-01', '+' || (?1 + 1) || ' minutes')".to_owned(),
                other => other.to_owned(),
            })
            .collect::<Vec<_>>()
            .join(", ")
    );
    let mut copies = vec![copy_traces];
    for table in &tables {
        let cols = columns(table)?;
        let vals: Vec<String> = cols
            .iter()
            .map(|c| match c.as_str() {
                "trace_id" => "?1".to_owned(),
                "id" if table == "frames" => "id + ((?1 - ?2) << 40)".to_owned(),
                other => other.to_owned(),
            })
            .collect();
        copies.push(format!(
            "INSERT INTO {table} ({}) SELECT {} FROM {table} WHERE trace_id = ?2",
            cols.join(", "),
            vals.join(", ")
        ));
    }
    let tx = conn.unchecked_transaction()?;
    for k in first..first + count {
        for sql in &copies {
            tx.execute(sql, rusqlite::params![k, seed])?;
        }
    }
    tx.commit()?;
    Ok(())
}

/// The section.
pub fn section(cfg: &Config, report: &mut Report) -> Result<()> {
    let (max_size, target) = sizes(cfg.quick);
    report.say("## 10. Prune a store of thousands of traces\n");
    report.say(&format!(
        "A store of about {} MB: one trace of {} frames recorded through acp-tee, copied in SQL (every table \
         that holds a trace's rows) until the file is that large, the copies ended a minute apart. Then \
         `acp-tee prune --max-size {}MB`, timed, while a recording of {} frames into the same store runs; the \
         run fails unless every frame of that recording is stored. The copies are not in the search index \
         (a prune deletes index rows by range: what is not there costs nothing).\n",
        target / 1_000_000,
        n(SEED_FRAMES),
        max_size / 1_000_000,
        n(during_frames(cfg.quick))
    ));
    let db = cfg.work.join("prune.db");
    let seed = tracegen::generate(&cfg.acp_tee, &db, "seed", SEED_FRAMES, Sessions::InTurn)?;
    let conn = rusqlite::Connection::open(&db)?;
    conn.busy_timeout(std::time::Duration::from_secs(30))?;
    // Making the store is not what is measured: no syncs, a large cache.
    conn.pragma_update(None, "synchronous", "OFF")?;
    conn.pragma_update(None, "cache_size", -262_144)?;
    let t = Instant::now();
    let mut next = seed.trace_id + 1;
    while on_disk(&db) < target {
        copy_trace(&conn, seed.trace_id, next, 200)?;
        next += 200;
    }
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    let made = t.elapsed();
    let traces_before: i64 = conn.query_row("SELECT count(*) FROM traces", [], |r| r.get(0))?;
    let before = on_disk(&db);
    drop(conn);

    let recording = {
        let (acp_tee, db, frames) = (cfg.acp_tee.clone(), db.clone(), during_frames(cfg.quick));
        std::thread::spawn(move || tracegen::generate(&acp_tee, &db, "during-prune", frames, Sessions::InTurn))
    };
    let t = Instant::now();
    let out = Command::new(&cfg.acp_tee)
        .arg("prune")
        .arg("--db")
        .arg(&db)
        .arg("--max-size")
        .arg(format!("{}MB", max_size / 1_000_000))
        .output()
        .context("cannot run acp-tee prune")?;
    let took = t.elapsed();
    if !out.status.success() {
        bail!("acp-tee prune exited with {:?}: {}", out.status, String::from_utf8_lossy(&out.stderr));
    }
    let during = recording.join().map_err(|_| anyhow::anyhow!("the recording thread panicked"))??;
    let after = on_disk(&db);
    let conn = rusqlite::Connection::open(&db)?;
    let traces_after: i64 = conn.query_row("SELECT count(*) FROM traces", [], |r| r.get(0))?;
    let during_bytes: i64 =
        conn.query_row("SELECT bytes FROM traces WHERE id = ?1", [during.trace_id], |r| r.get(0))?;
    let page_bytes: i64 = conn.query_row(
        "SELECT (page_count - freelist_count) * page_size FROM pragma_page_count, pragma_freelist_count, pragma_page_size",
        [],
        |r| r.get(0),
    )?;
    let removed = traces_before + 1 - traces_after;
    report.table(
        &[
            "store before",
            "traces before",
            "made in s",
            "prune s",
            "traces removed",
            "store after (file + log)",
            "pages in use after",
            "recorded meanwhile",
        ],
        &[vec![
            format!("{} MB", f(before as f64 / 1e6, 0)),
            n(traces_before as u64),
            f(made.as_secs_f64(), 1),
            f(took.as_secs_f64(), 2),
            n(removed as u64),
            format!("{} MB", f(after as f64 / 1e6, 1)),
            format!("{} MB", f(page_bytes as f64 / 1e6, 1)),
            format!("{} frames, 0 missing ({} MB)", n(during.frames), f(during_bytes as f64 / 1e6, 1)),
        ]],
    );
    // What the store may hold after: the size asked for, plus what the
    // recording added while the prune ran (its frames and their indexes,
    // counted twice).
    let allowed = max_size + 2 * during_bytes as u64;
    let v = report.verdict(
        &format!("prune to {} MB leaves the file within it (plus the recording meanwhile)", max_size / 1_000_000),
        after <= allowed,
    );
    report.say(&format!(
        "The store file after the prune: {} MB, allowed {} MB: {v}. The recording meanwhile lost nothing \
         (checked frame by frame count and missing count).\n",
        f(after as f64 / 1e6, 1),
        f(allowed as f64 / 1e6, 1)
    ));
    Ok(())
}
