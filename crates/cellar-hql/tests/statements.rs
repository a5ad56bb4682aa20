//! Every statement form parses to the AST it means, and prints back as canonical HQL.

use std::ops::Bound::{Excluded, Included, Unbounded};

use cellar_hql::{
    parse, parse_statement, AlterAction, AlterTable, ColumnRef, Columns, Compression, CreateTable,
    Delete, DropTable, DumpTable, FamilySpec, Insert, InsertCell, LoadData, RowPredicate, Select,
    Statement, TableRef,
};

fn one(text: &str) -> Statement {
    match parse_statement(text) {
        Ok(s) => s,
        Err(e) => panic!("{text:?} does not parse: {e}"),
    }
}

/// Parses `text`, checks the canonical form, and that the canonical form parses the same.
fn check(text: &str, canonical: &str) -> Statement {
    let s = one(text);
    assert_eq!(s.to_string(), canonical, "canonical form of {text:?}");
    assert_eq!(one(canonical), s, "canonical form parses back");
    s
}

fn select(table: &str) -> Select {
    Select {
        columns: Columns::All,
        table: table.to_string(),
        row: RowPredicate::All,
        timestamp: (Unbounded, Unbounded),
        max_versions: None,
        limit: None,
        reverse: false,
        display_timestamps: false,
    }
}

fn col(family: &str, qualifier: Option<&[u8]>) -> ColumnRef {
    ColumnRef {
        family: family.to_string(),
        qualifier: qualifier.map(<[u8]>::to_vec),
    }
}

// ---- Hypertable's AOL query-log test, statement for statement ----

#[test]
fn seed_create_table_query_log() {
    let s = check(
        r#"CREATE TABLE "query-log" ( Query, ItemRank, ClickURL );"#,
        r#"CREATE TABLE "query-log" (Query, ItemRank, ClickURL)"#,
    );
    assert_eq!(
        s,
        Statement::CreateTable(CreateTable {
            if_not_exists: false,
            name: "query-log".into(),
            families: ["Query", "ItemRank", "ClickURL"]
                .map(FamilySpec::named)
                .to_vec(),
        })
    );
}

#[test]
fn seed_load_data_scripts_of_both_clients() {
    let script = r#"LOAD DATA INFILE ROW_KEY_COLUMN=AnonID 'a.tsv' INTO TABLE "query-log"; LOAD DATA INFILE ROW_KEY_COLUMN=AnonID 'b.tsv' INTO TABLE "query-log";"#;
    let statements = parse(script).expect("seed script");
    let files: Vec<_> = statements
        .iter()
        .map(|s| match &s.node {
            Statement::LoadData(l) => {
                assert_eq!(l.row_key_column.as_deref(), Some("AnonID"));
                assert_eq!(l.table, "query-log");
                assert!(!l.skip_bad_lines && !l.ignore_unknown_columns);
                assert_eq!(
                    (l.header_file.as_ref(), l.timestamp_column.as_ref()),
                    (None, None)
                );
                l.file.clone()
            }
            other => panic!("not a LOAD: {other:?}"),
        })
        .collect();
    assert_eq!(files, ["a.tsv", "b.tsv"]);
    assert_eq!(
        statements[1].node.to_string(),
        r#"LOAD DATA INFILE ROW_KEY_COLUMN = AnonID 'b.tsv' INTO TABLE "query-log""#
    );
    assert_eq!((statements[1].line, statements[1].column), (1, 72));
}

#[test]
fn seed_dump_query_log_script() {
    let statements = parse("select * from \"query-log\"; quit;\n").expect("seed script");
    let nodes: Vec<_> = statements.into_iter().map(|s| s.node).collect();
    assert_eq!(
        nodes,
        vec![Statement::Select(select("query-log")), Statement::Quit]
    );
}

// ---- tables ----

#[test]
fn create_table_with_every_family_option() {
    let s = check(
        "create table if not exists t (a MAX_VERSIONS 3 TTL = 2 days COMPRESSION lz4 \
         BLOCKSIZE=65536 BLOOMFILTER rows, b ttl 90, c compression = ZSTD bloomfilter none, \
         d COMPRESSION none BLOOMFILTER = false, e TTL 1 HOUR, f TTL 2 minutes, g TTL 5 seconds)",
        "CREATE TABLE IF NOT EXISTS t (a MAX_VERSIONS = 3 TTL = 172800 SECONDS COMPRESSION = lz4 \
         BLOCKSIZE = 65536 BLOOMFILTER = true, b TTL = 90 SECONDS, c COMPRESSION = zstd \
         BLOOMFILTER = false, d COMPRESSION = none BLOOMFILTER = false, e TTL = 3600 SECONDS, \
         f TTL = 120 SECONDS, g TTL = 5 SECONDS)",
    );
    let Statement::CreateTable(c) = s else {
        panic!("not CREATE TABLE")
    };
    assert!(c.if_not_exists);
    assert_eq!(
        c.families[0],
        FamilySpec {
            name: "a".into(),
            max_versions: Some(3),
            ttl_seconds: Some(172_800),
            compression: Some(Compression::Lz4),
            block_size_bytes: Some(65_536),
            bloom: Some(true),
        }
    );
    assert_eq!(c.families[2].compression, Some(Compression::Zstd));
    assert_eq!(c.families[3].bloom, Some(false));
}

#[test]
fn create_table_names_may_be_keywords_where_unambiguous() {
    let s = check(
        "CREATE TABLE data (ttl, row, \"if\")",
        "CREATE TABLE \"data\" (\"ttl\", \"row\", \"if\")",
    );
    let Statement::CreateTable(c) = s else {
        panic!("not CREATE TABLE")
    };
    assert_eq!(c.name, "data");
    // A table named IF: IF is only the start of IF NOT EXISTS when NOT follows.
    assert!(matches!(one("CREATE TABLE if (a)"), Statement::CreateTable(c) if c.name == "if"));
}

#[test]
fn drop_show_describe_table() {
    assert_eq!(
        check(
            "drop table if exists \"query-log\"",
            "DROP TABLE IF EXISTS \"query-log\""
        ),
        Statement::DropTable(DropTable {
            if_exists: true,
            name: "query-log".into()
        })
    );
    assert_eq!(
        check("DROP TABLE t", "DROP TABLE t"),
        Statement::DropTable(DropTable {
            if_exists: false,
            name: "t".into()
        })
    );
    assert_eq!(check("show tables", "SHOW TABLES"), Statement::ShowTables);
    assert_eq!(
        check("describe table t", "DESCRIBE TABLE t"),
        Statement::DescribeTable(TableRef { table: "t".into() })
    );
    assert_eq!(
        check(
            "SHOW CREATE TABLE query-log",
            "SHOW CREATE TABLE \"query-log\""
        ),
        Statement::ShowCreateTable(TableRef {
            table: "query-log".into()
        })
    );
}

#[test]
fn alter_table_add_and_drop() {
    assert_eq!(
        check(
            "ALTER TABLE t ADD (x MAX_VERSIONS 1, y)",
            "ALTER TABLE t ADD (x MAX_VERSIONS = 1, y)"
        ),
        Statement::AlterTable(AlterTable {
            name: "t".into(),
            action: AlterAction::Add(vec![
                FamilySpec {
                    max_versions: Some(1),
                    ..FamilySpec::named("x")
                },
                FamilySpec::named("y")
            ]),
        })
    );
    assert_eq!(
        check(
            "alter table t drop (x, \"y z\")",
            "ALTER TABLE t DROP (x, \"y z\")"
        ),
        Statement::AlterTable(AlterTable {
            name: "t".into(),
            action: AlterAction::Drop(vec!["x".into(), "y z".into()]),
        })
    );
}

// ---- cells ----

#[test]
fn insert_with_and_without_timestamps() {
    let s = check(
        "INSERT INTO t VALUES ('row1', 'f:q', 'v'), ('row2', '2024-01-01 10:00:00', 'f', 'w'), \
         ('r\\x00\\xff', 1500000000, 'f:a:b', ''), ('r', '2024-01-01 10:00:00.25', 'f:', 'x')",
        "INSERT INTO t VALUES ('row1', 'f:q', 'v'), ('row2', '2024-01-01 10:00:00', 'f', 'w'), \
         ('r\\0\\xff', '1970-01-01 00:00:01.5', 'f:a:b', ''), \
         ('r', '2024-01-01 10:00:00.25', 'f', 'x')",
    );
    let cell = |row: &[u8], timestamp, family: &str, qualifier: &[u8], value: &[u8]| InsertCell {
        row: row.to_vec(),
        timestamp,
        family: family.into(),
        qualifier: qualifier.to_vec(),
        value: value.to_vec(),
    };
    assert_eq!(
        s,
        Statement::Insert(Insert {
            table: "t".into(),
            cells: vec![
                cell(b"row1", None, "f", b"q", b"v"),
                cell(b"row2", Some(1_704_103_200_000_000_000), "f", b"", b"w"),
                cell(b"r\x00\xff", Some(1_500_000_000), "f", b"a:b", b""),
                cell(b"r", Some(1_704_103_200_250_000_000), "f", b"", b"x"),
            ],
        })
    );
}

#[test]
fn insert_strings_take_every_escape() {
    let Statement::Insert(i) = one(r"INSERT INTO t VALUES ('k', 'f', 'a\'b\\c\nd\te\0f\x41\x7e')")
    else {
        panic!("not INSERT")
    };
    assert_eq!(i.cells[0].value, b"a'b\\c\nd\te\0fA~");
}

#[test]
fn select_columns_options_and_reverse() {
    let s = check(
        "select Query, ClickURL:'x y', ItemRank:q-1, f:'' from \"query-log\" max_versions 2 \
         limit 10 reverse display_timestamps",
        "SELECT Query, ClickURL:'x y', ItemRank:'q-1', f:'' FROM \"query-log\" MAX_VERSIONS 2 \
         LIMIT 10 REVERSE DISPLAY_TIMESTAMPS",
    );
    let mut want = select("query-log");
    want.columns = Columns::List(vec![
        col("Query", None),
        col("ClickURL", Some(b"x y")),
        col("ItemRank", Some(b"q-1")),
        col("f", Some(b"")),
    ]);
    want.max_versions = Some(2);
    want.limit = Some(10);
    want.reverse = true;
    want.display_timestamps = true;
    assert_eq!(s, Statement::Select(want));
    // Options in any order, MAX_VERSIONS with '='.
    assert_eq!(
        one("SELECT * FROM t DISPLAY_TIMESTAMPS LIMIT 0 MAX_VERSIONS = 1").to_string(),
        "SELECT * FROM t MAX_VERSIONS 1 LIMIT 0 DISPLAY_TIMESTAMPS"
    );
}

#[test]
fn select_row_conditions() {
    let row_of = |text: &str| match one(text) {
        Statement::Select(s) => s.row,
        other => panic!("not SELECT: {other:?}"),
    };
    assert_eq!(
        row_of("SELECT * FROM t WHERE ROW = 'k'"),
        RowPredicate::Exact(b"k".to_vec())
    );
    assert_eq!(
        row_of("SELECT * FROM t WHERE ROW =^ 'pre'"),
        RowPredicate::Prefix(b"pre".to_vec())
    );
    assert_eq!(
        row_of("SELECT * FROM t WHERE ROW > 'a'"),
        RowPredicate::Range {
            start: Excluded(b"a".to_vec()),
            end: Unbounded
        }
    );
    assert_eq!(
        row_of("SELECT * FROM t WHERE ROW <= 'z'"),
        RowPredicate::Range {
            start: Unbounded,
            end: Included(b"z".to_vec())
        }
    );
    let a_to_b = RowPredicate::Range {
        start: Included(b"a".to_vec()),
        end: Excluded(b"b".to_vec()),
    };
    assert_eq!(
        row_of("SELECT * FROM t WHERE ROW >= 'a' AND ROW < 'b'"),
        a_to_b
    );
    assert_eq!(
        row_of("SELECT * FROM t WHERE ROW < 'b' and ROW >= 'a'"),
        a_to_b
    );
    assert_eq!(row_of("SELECT * FROM t WHERE 'a' <= ROW < 'b'"), a_to_b);
    assert_eq!(
        row_of("SELECT * FROM t WHERE 'a' < ROW"),
        RowPredicate::Range {
            start: Excluded(b"a".to_vec()),
            end: Unbounded
        }
    );
    assert_eq!(
        one("SELECT * FROM t WHERE 'a' <= ROW < 'b'").to_string(),
        "SELECT * FROM t WHERE ROW >= 'a' AND ROW < 'b'"
    );
}

#[test]
fn select_timestamp_conditions() {
    let ts_of = |text: &str| match one(text) {
        Statement::Select(s) => (s.row, s.timestamp),
        other => panic!("not SELECT: {other:?}"),
    };
    let day = 86_400_000_000_000u64;
    assert_eq!(
        ts_of("SELECT * FROM t WHERE TIMESTAMP >= '1970-01-02 00:00:00' AND TIMESTAMP < 172800000000000"),
        (RowPredicate::All, (Included(day), Excluded(2 * day)))
    );
    assert_eq!(
        ts_of("SELECT * FROM t WHERE ROW = 'k' AND TIMESTAMP > 5"),
        (RowPredicate::Exact(b"k".to_vec()), (Excluded(5), Unbounded))
    );
    assert_eq!(
        ts_of("SELECT * FROM t WHERE 5 < TIMESTAMP <= '1970-01-02 00:00:00'"),
        (RowPredicate::All, (Excluded(5), Included(day)))
    );
    assert_eq!(
        ts_of("SELECT * FROM t WHERE TIMESTAMP = 7").1,
        (Included(7), Included(7))
    );
    assert_eq!(
        one("SELECT * FROM t WHERE TIMESTAMP <= 1000000001 AND ROW =^ 'p'").to_string(),
        "SELECT * FROM t WHERE ROW =^ 'p' AND TIMESTAMP <= '1970-01-01 00:00:01.000000001'"
    );
}

#[test]
fn delete_whole_row_columns_and_version() {
    assert_eq!(
        check(
            "delete * from t where row = 'k'",
            "DELETE * FROM t WHERE ROW = 'k'"
        ),
        Statement::Delete(Delete {
            columns: Columns::All,
            table: "t".into(),
            row: b"k".to_vec(),
            version: None,
        })
    );
    assert_eq!(
        check(
            "DELETE Query, ClickURL:x FROM t WHERE ROW = 'k' VERSION '2006-03-01 07:17:12'",
            "DELETE Query, ClickURL:x FROM t WHERE ROW = 'k' VERSION '2006-03-01 07:17:12'"
        ),
        Statement::Delete(Delete {
            columns: Columns::List(vec![col("Query", None), col("ClickURL", Some(b"x"))]),
            table: "t".into(),
            row: b"k".to_vec(),
            version: Some(1_141_197_432_000_000_000),
        })
    );
}

// ---- files ----

#[test]
fn load_data_with_every_option() {
    assert_eq!(
        check(
            "load data infile skip_bad_lines HEADER_FILE 'h.tsv' TIMESTAMP_COLUMN = QueryTime \
             IGNORE_UNKNOWN_COLUMNS row_key_column AnonID 'a.tsv.gz' into table \"query-log\"",
            "LOAD DATA INFILE ROW_KEY_COLUMN = AnonID TIMESTAMP_COLUMN = QueryTime HEADER_FILE = \
             'h.tsv' IGNORE_UNKNOWN_COLUMNS SKIP_BAD_LINES 'a.tsv.gz' INTO TABLE \"query-log\""
        ),
        Statement::LoadData(LoadData {
            row_key_column: Some("AnonID".into()),
            timestamp_column: Some("QueryTime".into()),
            header_file: Some("h.tsv".into()),
            ignore_unknown_columns: true,
            skip_bad_lines: true,
            file: "a.tsv.gz".into(),
            table: "query-log".into(),
        })
    );
}

#[test]
fn dump_quit_exit_help() {
    assert_eq!(
        check(
            "dump table \"query-log\" into file 'out.tsv'",
            "DUMP TABLE \"query-log\" INTO FILE 'out.tsv'"
        ),
        Statement::DumpTable(DumpTable {
            table: "query-log".into(),
            file: "out.tsv".into()
        })
    );
    assert_eq!(check("exit", "QUIT"), Statement::Quit);
    assert_eq!(check("Quit;", "QUIT"), Statement::Quit);
    assert_eq!(check("help", "HELP"), Statement::Help);
}

// ---- scripts ----

#[test]
fn script_positions_comments_and_empty_statements() {
    let script = "-- a comment; not a statement\n\
                  # another\n\
                  ;;  SHOW TABLES;\n\
                  \n\
                  \tSELECT *\n  FROM t -- trailing\n;\n\
                  HELP";
    let statements = parse(script).expect("script");
    let at: Vec<_> = statements.iter().map(|s| (s.line, s.column)).collect();
    assert_eq!(at, [(3, 5), (5, 2), (8, 1)]);
    assert!(parse("").expect("empty script").is_empty());
    assert!(parse(" -- only\n # comments ;")
        .expect("comments")
        .is_empty());
}
