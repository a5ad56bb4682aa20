//! HQL statements over gRPC (the shell's output and errors) and streamed bulk loads.

// Test helpers outside `#[test]` functions unwrap too: a panic there fails the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Write;

use cellar_client::{Code, Durability, FamilySchema, LoadOptions, Scan, TableSchema};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hql_runs_statements_with_the_shells_output() {
    let server = common::start().await;
    let client = server.client().await;
    let out = client
        .hql(
            "CREATE TABLE t (f, g);\n\
             INSERT INTO t VALUES ('r2', 'g', 'y'), ('r1', 'f:a', 'x\\ty');\n\
             SELECT * FROM t;\n\
             SHOW TABLES;",
            Durability::Default,
            false,
        )
        .await
        .expect("hql");
    assert!(out.errors.is_empty(), "{:?}", out.errors);
    // One cell per line, row TAB column TAB value, the TAB in the value escaped; then the table.
    assert_eq!(out.output, "r1\tf:a\tx\\ty\nr2\tg\ty\nt\n");
    // The table is the same one gRPC sees.
    let row = client.get("t", "r1").await.expect("get").expect("row");
    assert_eq!(row.value("f", b"a"), Some(&b"x\ty"[..]));

    // A failing statement: its error names its line, and the rest does not run...
    let script = "SHOW TABLES;\nSELECT * FROM nope;\nDROP TABLE t;";
    let out = client
        .hql(script, Durability::Default, false)
        .await
        .expect("hql");
    assert_eq!(out.output, "t\n");
    assert_eq!(out.errors.len(), 1, "{:?}", out.errors);
    assert!(
        out.errors[0].starts_with("error (line 2):"),
        "{}",
        out.errors[0]
    );
    assert!(out.errors[0].contains("nope"), "{}", out.errors[0]);
    assert_eq!(client.list_tables().await.expect("list"), vec!["t"]);
    // ...unless keep_going.
    let out = client
        .hql(
            "SELECT * FROM nope;\nSHOW TABLES;",
            Durability::Default,
            true,
        )
        .await
        .expect("hql");
    assert_eq!(out.errors.len(), 1);
    assert_eq!(out.output, "t\n");
    // A syntax error carries its line and column.
    let out = client
        .hql("SHOW TABLES;\n\nSELEC x;", Durability::Default, false)
        .await
        .expect("hql");
    assert_eq!(out.errors.len(), 1);
    assert!(out.errors[0].contains("line 3"), "{}", out.errors[0]);
    server.stop().await;
}

fn wide_table() -> TableSchema {
    TableSchema::new("w")
        .family(FamilySchema::new("a"))
        .family(FamilySchema::new("b"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_streams_tsv_and_reads_back() {
    let server = common::start().await;
    let client = server.client().await;
    client
        .create_table(&wide_table(), false)
        .await
        .expect("create");
    // A header naming the columns; the key is the first one; empty fields make no cell.
    let mut tsv = String::from("key\ta\tb\n");
    for i in 0..5000 {
        tsv.push_str(&format!(
            "k{i:05}\tA{i}\t{}\n",
            if i % 2 == 0 { "B" } else { "" }
        ));
    }
    let stats = client
        .load(
            "w",
            &LoadOptions::default(),
            std::io::Cursor::new(tsv.into_bytes()),
        )
        .await
        .expect("load");
    assert_eq!(stats.cells, 5000 + 2500);
    assert_eq!(stats.bad_lines, 0);
    let rows = client
        .scan("w", &Scan::new())
        .await
        .expect("scan")
        .collect_rows()
        .await
        .expect("rows");
    assert_eq!(rows.len(), 5000);
    assert_eq!(rows[2].value("a", b""), Some(&b"A2"[..]));
    assert_eq!(rows[2].value("b", b""), Some(&b"B"[..]));
    assert_eq!(rows[3].cells.len(), 1);

    // gzip, from a file (the .gz name says so).
    let gz = server.dir.path().join("more.tsv.gz");
    let mut enc = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).expect("create"),
        flate2::Compression::fast(),
    );
    enc.write_all(b"key\ta\nz1\tgz\n").expect("write");
    enc.finish().expect("finish");
    let stats = client
        .load_file("w", &LoadOptions::default(), &gz)
        .await
        .expect("load gz");
    assert_eq!(stats.cells, 1);
    let row = client.get("w", "z1").await.expect("get").expect("row");
    assert_eq!(row.value("a", b""), Some(&b"gz"[..]));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_line_fails_the_whole_load() {
    let server = common::start().await;
    let client = server.client().await;
    client
        .create_table(&wide_table(), false)
        .await
        .expect("create");
    // Line 4 has more fields than the header.
    let tsv = "key\ta\tb\nk1\t1\t2\nk2\t3\t4\nk3\t5\t6\t7\nk4\t8\t9\n";
    let e = client
        .load(
            "w",
            &LoadOptions::default(),
            std::io::Cursor::new(tsv.as_bytes().to_vec()),
        )
        .await
        .expect_err("malformed");
    assert_eq!(e.code(), Some(Code::InvalidArgument), "{e}");
    assert!(e.to_string().contains(":4:"), "{e}");
    assert!(
        !e.to_string().contains("cellar-grpc-load"),
        "no temp path: {e}"
    );
    let rows = client
        .scan("w", &Scan::new())
        .await
        .expect("scan")
        .collect_rows()
        .await
        .expect("rows");
    assert!(rows.is_empty(), "nothing of a failed load is visible");
    // With skip_bad_lines the line is counted and the rest loads.
    let options = LoadOptions {
        skip_bad_lines: true,
        ..LoadOptions::default()
    };
    let stats = client
        .load("w", &options, std::io::Cursor::new(tsv.as_bytes().to_vec()))
        .await
        .expect("load");
    assert_eq!(stats.bad_lines, 1);
    assert_eq!(stats.cells, 6);
    // An unknown table is refused before the data is sent.
    let e = client
        .load(
            "nope",
            &LoadOptions::default(),
            std::io::Cursor::new(b"k\ta\n".to_vec()),
        )
        .await
        .expect_err("unknown table");
    assert_eq!(e.code(), Some(Code::NotFound), "{e}");
    server.stop().await;
}
