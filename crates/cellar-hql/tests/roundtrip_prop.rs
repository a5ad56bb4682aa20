//! Property: for any statement, `parse(&statement.to_string())` gives the statement back:
//! canonical `Display` escapes every byte and quotes every name that needs it.

use std::ops::Bound;

use cellar_hql::{
    parse, AlterAction, AlterTable, ColumnRef, Columns, Compression, CreateTable, Delete,
    DropTable, DumpTable, FamilySpec, Insert, InsertCell, LoadData, RowPredicate, Select,
    Statement, TableRef,
};
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;

/// Names that are keywords somewhere in the grammar, in mixed case.
const KEYWORD_NAMES: &[&str] = &[
    "row",
    "FROM",
    "Select",
    "ttl",
    "data",
    "if",
    "Not",
    "exists",
    "timestamp",
    "values",
    "and",
    "LIMIT",
    "reverse",
    "none",
    "true",
    "days",
    "table",
    "into",
    "version",
];

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        "[A-Za-z_][A-Za-z0-9_-]{0,8}",
        proptest::sample::select(KEYWORD_NAMES).prop_map(String::from),
        "\\PC{1,6}",
        any::<String>().prop_filter("names are non-empty", |s| !s.is_empty()),
    ]
}

fn family_name() -> impl Strategy<Value = String> {
    name().prop_map(|n| n.replace(':', "_"))
}

fn bytes() -> BoxedStrategy<Vec<u8>> {
    prop_oneof![
        vec(any::<u8>(), 0..12),
        "[ -~]{0,10}".prop_map(String::into_bytes),
        any::<String>().prop_map(String::into_bytes),
    ]
    .boxed()
}

fn row_key() -> impl Strategy<Value = Vec<u8>> {
    bytes().prop_map(|mut b| {
        if b.is_empty() {
            b.push(b'r');
        }
        b
    })
}

fn bound<T: Clone + std::fmt::Debug>(
    value: impl Strategy<Value = T> + Clone,
) -> impl Strategy<Value = Bound<T>> {
    prop_oneof![
        Just(Bound::Unbounded),
        value.clone().prop_map(Bound::Included),
        value.prop_map(Bound::Excluded),
    ]
}

fn family_spec() -> impl Strategy<Value = FamilySpec> {
    (
        family_name(),
        option::of(1..=u32::MAX),
        option::of(1..=u64::MAX),
        option::of(proptest::sample::select(vec![
            Compression::None,
            Compression::Lz4,
            Compression::Zstd,
        ])),
        option::of(1..=u64::MAX),
        option::of(any::<bool>()),
    )
        .prop_map(
            |(name, max_versions, ttl_seconds, compression, block_size_bytes, bloom)| FamilySpec {
                name,
                max_versions,
                ttl_seconds,
                compression,
                block_size_bytes,
                bloom,
            },
        )
}

/// Non-empty, no name twice.
fn families() -> impl Strategy<Value = Vec<FamilySpec>> {
    vec(family_spec(), 1..4).prop_map(|mut v| {
        let mut seen = std::collections::HashSet::new();
        v.retain(|f| seen.insert(f.name.clone()));
        v
    })
}

fn columns() -> impl Strategy<Value = Columns> {
    let column = (family_name(), option::of(bytes()))
        .prop_map(|(family, qualifier)| ColumnRef { family, qualifier });
    prop_oneof![
        Just(Columns::All),
        vec(column, 1..4).prop_map(Columns::List),
    ]
}

fn row_predicate() -> impl Strategy<Value = RowPredicate> {
    prop_oneof![
        Just(RowPredicate::All),
        bytes().prop_map(RowPredicate::Exact),
        bytes().prop_map(RowPredicate::Prefix),
        (bound(bytes()), bound(bytes()))
            .prop_filter("a range has a bounded end", |(s, e)| {
                *s != Bound::Unbounded || *e != Bound::Unbounded
            })
            .prop_map(|(start, end)| RowPredicate::Range { start, end }),
    ]
}

fn select() -> impl Strategy<Value = Statement> {
    (
        columns(),
        name(),
        row_predicate(),
        (bound(any::<u64>()), bound(any::<u64>())),
        option::of(1..=u32::MAX),
        option::of(any::<u64>()),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(columns, table, row, timestamp, max_versions, limit, reverse, display_timestamps)| {
                Statement::Select(Select {
                    columns,
                    table,
                    row,
                    timestamp,
                    max_versions,
                    limit,
                    reverse,
                    display_timestamps,
                })
            },
        )
}

fn insert() -> impl Strategy<Value = Statement> {
    let cell = (
        row_key(),
        option::of(any::<u64>()),
        family_name(),
        bytes(),
        bytes(),
    )
        .prop_map(|(row, timestamp, family, qualifier, value)| InsertCell {
            row,
            timestamp,
            family,
            qualifier,
            value,
        });
    (name(), vec(cell, 1..4)).prop_map(|(table, cells)| Statement::Insert(Insert { table, cells }))
}

fn load_data() -> impl Strategy<Value = Statement> {
    (
        option::of(name()),
        option::of(name()),
        option::of(any::<String>()),
        any::<bool>(),
        any::<bool>(),
        any::<String>(),
        name(),
    )
        .prop_map(
            |(row_key_column, timestamp_column, header_file, ignore, skip, file, table)| {
                Statement::LoadData(LoadData {
                    row_key_column,
                    timestamp_column,
                    header_file,
                    ignore_unknown_columns: ignore,
                    skip_bad_lines: skip,
                    file,
                    table,
                })
            },
        )
}

fn statement() -> impl Strategy<Value = Statement> {
    prop_oneof![
        (any::<bool>(), name(), families()).prop_map(|(if_not_exists, name, families)| {
            Statement::CreateTable(CreateTable {
                if_not_exists,
                name,
                families,
            })
        }),
        (any::<bool>(), name())
            .prop_map(|(if_exists, name)| Statement::DropTable(DropTable { if_exists, name })),
        Just(Statement::ShowTables),
        name().prop_map(|table| Statement::DescribeTable(TableRef { table })),
        name().prop_map(|table| Statement::ShowCreateTable(TableRef { table })),
        (name(), families()).prop_map(|(name, f)| Statement::AlterTable(AlterTable {
            name,
            action: AlterAction::Add(f)
        })),
        (name(), families()).prop_map(|(name, f)| Statement::AlterTable(AlterTable {
            name,
            action: AlterAction::Drop(f.into_iter().map(|f| f.name).collect())
        })),
        insert(),
        select(),
        (columns(), name(), row_key(), option::of(any::<u64>())).prop_map(
            |(columns, table, row, version)| Statement::Delete(Delete {
                columns,
                table,
                row,
                version
            })
        ),
        load_data(),
        (name(), any::<String>())
            .prop_map(|(table, file)| Statement::DumpTable(DumpTable { table, file })),
        Just(Statement::Quit),
        Just(Statement::Help),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(5000))]

    #[test]
    fn display_then_parse_gives_the_statement_back(s in statement()) {
        let text = s.to_string();
        let parsed = parse(&text).map_err(|e| TestCaseError::fail(format!("{text}\n{e}")))?;
        prop_assert_eq!(parsed.len(), 1, "{}", text);
        prop_assert_eq!(&parsed[0].node, &s, "{}", text);
        prop_assert_eq!((parsed[0].line, parsed[0].column), (1, 1));
    }

    #[test]
    fn a_script_of_displayed_statements_parses_in_order(v in vec(statement(), 0..6)) {
        let script: String = v.iter().map(|s| format!("{s};\n")).collect();
        let parsed = parse(&script).map_err(|e| TestCaseError::fail(format!("{script}\n{e}")))?;
        let nodes: Vec<Statement> = parsed.into_iter().map(|l| l.node).collect();
        prop_assert_eq!(nodes, v);
    }
}
