//! The status page in a real browser: headless Chromium renders it (`--dump-dom`) and takes
//! a screenshot; the test checks what a person would see. Chromium comes from env
//! `CHROMIUM_BIN`, else `chromium` on PATH; without it the test prints SKIP, unless env
//! `CI` is set, then it fails.

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod http_common;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use cellar_engine::Durability;
use http_common::{get, request, start};

fn chromium() -> Option<PathBuf> {
    if let Some(bin) = std::env::var_os("CHROMIUM_BIN") {
        return Some(PathBuf::from(bin));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|d| ["chromium", "chromium-browser"].map(|n| d.join(n)))
        .find(|p| p.is_file())
}

/// Runs Chromium on a blocking thread (the server keeps serving on the runtime).
async fn run_chromium(bin: PathBuf, args: Vec<String>) -> std::process::Output {
    tokio::task::spawn_blocking(move || {
        Command::new(&bin)
            .args(&args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", bin.display()))
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_page_renders_in_chromium() {
    let Some(bin) = chromium() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set but Chromium was not found (set CHROMIUM_BIN or install chromium)"
        );
        println!("SKIP status_page_renders_in_chromium: no Chromium (set CHROMIUM_BIN or put chromium on PATH)");
        return;
    };
    let server = start(|c| c.slow = Duration::from_micros(1)).await;
    server.create_table("users", &["info", "stats"]);
    server.create_table("<i>odd & \"name\"", &["cf"]);
    let db = server.handle.state.store.db().clone();
    let users = server.handle.state.store.table("users").unwrap();
    // Batches flushed into L0 files, the first ones compacted down: the level picture
    // has bars on more than one level.
    for batch in 0..4 {
        if batch == 2 {
            let info = db.keyspace("t/users/info").unwrap();
            db.compact_range(&info, None, None).unwrap();
        }
        for i in 0..2000 {
            let row = format!("user{:06}", batch * 2000 + i);
            users
                .put(
                    row.as_bytes(),
                    "info",
                    b"email",
                    None,
                    format!("{row}@example.com").as_bytes(),
                    Durability::Buffered,
                )
                .unwrap();
            users
                .put(
                    row.as_bytes(),
                    "stats",
                    b"visits",
                    None,
                    &[batch as u8, i as u8],
                    Durability::Buffered,
                )
                .unwrap();
        }
        db.flush().unwrap();
    }
    let addr = server.addr;
    for i in 0..30 {
        let body = format!(r#"{{"cells":[{{"column":"info:email","value":"x{i}"}}]}}"#);
        assert_eq!(
            request(
                addr,
                "PUT",
                &format!("/users/user{i:06}"),
                "",
                body.as_bytes()
            )
            .await
            .status,
            200
        );
        assert_eq!(get(addr, &format!("/users/user{i:06}")).await.status, 200);
    }
    assert_eq!(get(addr, "/users/scan?limit=100").await.status, 200);

    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("status.png");
    let url = format!("http://{addr}/");
    let common = |extra: &str| {
        vec![
            "--headless".to_string(),
            "--no-sandbox".into(),
            "--disable-gpu".into(),
            "--hide-scrollbars".into(),
            format!("--user-data-dir={}", dir.path().join("profile").display()),
            "--window-size=1280,1600".into(),
            extra.to_string(),
            url.clone(),
        ]
    };
    let shot = run_chromium(
        bin.clone(),
        common(&format!("--screenshot={}", png.display())),
    )
    .await;
    assert!(
        shot.status.success(),
        "chromium --screenshot failed: {}",
        String::from_utf8_lossy(&shot.stderr)
    );
    let dom = run_chromium(bin, common("--dump-dom")).await;
    assert!(
        dom.status.success(),
        "chromium --dump-dom failed: {}",
        String::from_utf8_lossy(&dom.stderr)
    );
    let dom = String::from_utf8_lossy(&dom.stdout).into_owned();

    assert!(
        dom.contains(&format!(
            "<title>Cellar {} — status</title>",
            env!("CARGO_PKG_VERSION")
        )),
        "title in:\n{dom}"
    );
    assert!(
        dom.contains(r#"<h3 class="tname">users</h3>"#),
        "the users table is listed"
    );
    assert!(
        dom.contains("&lt;i&gt;odd &amp; \"name\""),
        "a hostile table name is escaped, not markup"
    );
    assert!(!dom.contains("<i>odd"), "no injected markup");
    assert!(
        dom.matches(r#"<svg class="levels""#).count() >= 2,
        "a level picture per table"
    );
    assert!(
        dom.contains(" files · "),
        "the flushed files show in the level picture:\n{dom}"
    );
    for method in ["put", "get", "scan"] {
        assert!(
            dom.contains(&format!(r#"<td class="mname">{method}</td>"#)),
            "method row {method}"
        );
    }
    assert!(dom.contains("Slow requests"));
    assert!(
        dom.contains(r#"<table class="grid slow">"#),
        "slow requests are listed"
    );
    assert!(
        dom.contains(&addr.to_string()),
        "the HTTP listener's address"
    );

    let bytes = std::fs::read(&png).unwrap();
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG");
    assert!(
        bytes.len() > 20_000,
        "the screenshot is not blank ({} bytes)",
        bytes.len()
    );
    if let Some(keep) = std::env::var_os("CELLAR_STATUS_PNG") {
        std::fs::copy(&png, keep).unwrap();
    }
    server.stop().await;
}
