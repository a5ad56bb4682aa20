//! The JSON shapes of REST, binary-safe.
//!
//! Every byte field (row key, column, value) has two spellings. A response writes the
//! plain field (`"row": "alice"`) when the bytes are valid UTF-8, and the `_b64` field
//! (`"row_b64": "/wA="`, standard base64 with padding) otherwise — exactly one of the two.
//! A request may use either spelling for any field. A column is `family:qualifier` (the
//! family's name, a colon, the qualifier's bytes); a column without a colon is a whole
//! family in reads and deletes, and the empty qualifier in puts. Timestamps are
//! nanoseconds since the Unix epoch.
//!
//! A row: `{"row": "...", "cells": [{"column": "cf:q", "timestamp": 1700000000000000000,
//! "value": "..."}]}`.

use base64::Engine;
use cellar_table::Cell;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::query::decode_b64;
use super::ApiError;

/// Writes `bytes` as `name` (UTF-8) or `name_b64`.
pub fn put_bytes(obj: &mut Map<String, Value>, name: &str, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(text) => obj.insert(name.to_string(), Value::String(text.to_string())),
        Err(_) => obj.insert(
            format!("{name}_b64"),
            Value::String(base64::engine::general_purpose::STANDARD.encode(bytes)),
        ),
    };
}

/// The `family:qualifier` bytes of a cell.
pub fn column_bytes(family: &str, qualifier: &[u8]) -> Vec<u8> {
    let mut c = Vec::with_capacity(family.len() + 1 + qualifier.len());
    c.extend_from_slice(family.as_bytes());
    c.push(b':');
    c.extend_from_slice(qualifier);
    c
}

pub fn cell_json(cell: &Cell) -> Value {
    let mut obj = Map::new();
    put_bytes(
        &mut obj,
        "column",
        &column_bytes(&cell.family, &cell.qualifier),
    );
    obj.insert("timestamp".into(), Value::from(cell.timestamp));
    put_bytes(&mut obj, "value", &cell.value);
    Value::Object(obj)
}

pub fn row_json(key: &[u8], cells: &[Cell]) -> Value {
    let mut obj = Map::new();
    put_bytes(&mut obj, "row", key);
    obj.insert(
        "cells".into(),
        Value::Array(cells.iter().map(cell_json).collect()),
    );
    Value::Object(obj)
}

/// A column named in a request: a whole family, or one qualifier of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnName {
    pub family: String,
    pub qualifier: Option<Vec<u8>>,
}

impl ColumnName {
    pub fn parse(bytes: &[u8]) -> Result<ColumnName, ApiError> {
        let (family, qualifier) = match bytes.iter().position(|b| *b == b':') {
            Some(i) => (&bytes[..i], Some(bytes[i + 1..].to_vec())),
            None => (bytes, None),
        };
        let family = std::str::from_utf8(family)
            .map_err(|_| ApiError::BadRequest("a column family name must be UTF-8".into()))?;
        if family.is_empty() {
            return Err(ApiError::BadRequest(
                "a column must name its family: `family` or `family:qualifier`".into(),
            ));
        }
        Ok(ColumnName {
            family: family.to_string(),
            qualifier,
        })
    }
}

/// The body of `PUT /{table}/{row}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PutBody {
    pub cells: Vec<CellIn>,
    /// `buffered`, `flush` or `sync`; the server's default when absent.
    pub durability: Option<String>,
}

/// One cell to write.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellIn {
    pub column: Option<String>,
    pub column_b64: Option<String>,
    pub value: Option<String>,
    pub value_b64: Option<String>,
    /// Nanoseconds; the server assigns the next timestamp when absent.
    pub timestamp: Option<u64>,
}

fn one_of(name: &str, plain: &Option<String>, b64: &Option<String>) -> Result<Vec<u8>, ApiError> {
    match (plain, b64) {
        (Some(p), None) => Ok(p.as_bytes().to_vec()),
        (None, Some(b)) => decode_b64(&format!("{name}_b64"), b.as_bytes()),
        (Some(_), Some(_)) => Err(ApiError::BadRequest(format!(
            "a cell gives both {name} and {name}_b64; give one"
        ))),
        (None, None) => Err(ApiError::BadRequest(format!(
            "a cell needs {name} (or {name}_b64)"
        ))),
    }
}

impl CellIn {
    pub fn column(&self) -> Result<ColumnName, ApiError> {
        ColumnName::parse(&one_of("column", &self.column, &self.column_b64)?)
    }

    pub fn value(&self) -> Result<Vec<u8>, ApiError> {
        one_of("value", &self.value, &self.value_b64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_plain_when_utf8_and_base64_otherwise() {
        let mut obj = Map::new();
        put_bytes(&mut obj, "row", b"abc");
        put_bytes(&mut obj, "value", b"\xff\x00");
        assert_eq!(
            Value::Object(obj),
            serde_json::json!({"row": "abc", "value_b64": "/wA="})
        );
    }

    #[test]
    fn columns_split_at_the_first_colon() {
        let c = ColumnName::parse(b"cf:a:b").unwrap();
        assert_eq!(
            (c.family.as_str(), c.qualifier),
            ("cf", Some(b"a:b".to_vec()))
        );
        assert_eq!(ColumnName::parse(b"cf").unwrap().qualifier, None);
        assert!(ColumnName::parse(b":q").is_err());
    }
}
