//! `cellar.v1.MutateRequest` on the wire, without the generated structs.
//!
//! The Rust client's `BufferedMutator` encodes each mutation straight into the request's
//! bytes as it is buffered, and the server walks a request's bytes and hands out mutations
//! that borrow them. A 12 MiB batch holds ~200 K small puts; built as generated messages it
//! costs four allocations per put on each side, a tree to walk when encoding, and the frees
//! (docs/design/server-write-path.md). prost decodes into owned structs only, so this walk is
//! written here, with prost's own varint and key primitives; the bytes are exactly the
//! protobuf encoding of the generated types, which the tests check in both directions.
//!
//! Decoding is strict where prost is lenient about things no encoder writes: a `Mutation`
//! holding both a put and a delete (or either twice) and end-groups are refused with
//! [`WireError`]; unknown fields are skipped, as protobuf requires.

use prost::bytes::{Buf, BufMut};
use prost::encoding::{decode_varint, encode_key, encode_varint, encoded_len_varint, WireType};

/// Field numbers of `MutateRequest`, `Mutation`, `Put` and `Delete` in cellar.proto.
mod tag {
    pub const REQUEST_TABLE: u32 = 1;
    pub const REQUEST_MUTATIONS: u32 = 2;
    pub const REQUEST_DURABILITY: u32 = 3;
    pub const MUTATION_PUT: u32 = 1;
    pub const MUTATION_DELETE: u32 = 2;
    pub const ROW: u32 = 1;
    pub const FAMILY: u32 = 2;
    pub const QUALIFIER: u32 = 3;
    pub const TIMESTAMP: u32 = 4;
    pub const VALUE: u32 = 5;
}

/// A malformed `MutateRequest`: where and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireError {
    /// Index of the mutation it was found in, if inside one.
    pub mutation: Option<usize>,
    pub what: String,
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.mutation {
            Some(i) => write!(f, "malformed MutateRequest, mutation {i}: {}", self.what),
            None => write!(f, "malformed MutateRequest: {}", self.what),
        }
    }
}

impl std::error::Error for WireError {}

type Result<T> = std::result::Result<T, String>;

/// One cell to write; fields as in `cellar.v1.Put`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PutRef<'a> {
    pub row: &'a [u8],
    pub family: &'a str,
    pub qualifier: &'a [u8],
    pub timestamp: Option<u64>,
    pub value: &'a [u8],
}

/// A delete; fields as in `cellar.v1.Delete`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeleteRef<'a> {
    pub row: &'a [u8],
    pub family: &'a str,
    pub qualifier: Option<&'a [u8]>,
    pub timestamp: Option<u64>,
}

/// A `cellar.v1.Mutation` with its kind set (`Option::None` where a decoder finds neither).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MutationRef<'a> {
    Put(PutRef<'a>),
    Delete(DeleteRef<'a>),
}

fn bytes_field_len(tag: u32, len: usize) -> usize {
    encoded_len_varint(u64::from(tag << 3)) + encoded_len_varint(len as u64) + len
}

fn put_bytes_field(tag: u32, bytes: &[u8], buf: &mut impl BufMut) {
    encode_key(tag, WireType::LengthDelimited, buf);
    encode_varint(bytes.len() as u64, buf);
    buf.put_slice(bytes);
}

fn put_varint_field(tag: u32, v: u64, buf: &mut impl BufMut) {
    encode_key(tag, WireType::Varint, buf);
    encode_varint(v, buf);
}

fn varint_field_len(tag: u32, v: u64) -> usize {
    encoded_len_varint(u64::from(tag << 3)) + encoded_len_varint(v)
}

/// proto3 writes a plain (non-`optional`) bytes or string field only when it is not empty.
fn plain_len(tag: u32, bytes: &[u8]) -> usize {
    if bytes.is_empty() {
        0
    } else {
        bytes_field_len(tag, bytes.len())
    }
}

fn put_plain(tag: u32, bytes: &[u8], buf: &mut impl BufMut) {
    if !bytes.is_empty() {
        put_bytes_field(tag, bytes, buf);
    }
}

impl PutRef<'_> {
    fn encoded_len(&self) -> usize {
        plain_len(tag::ROW, self.row)
            + plain_len(tag::FAMILY, self.family.as_bytes())
            + plain_len(tag::QUALIFIER, self.qualifier)
            + self
                .timestamp
                .map_or(0, |t| varint_field_len(tag::TIMESTAMP, t))
            + plain_len(tag::VALUE, self.value)
    }

    fn encode(&self, buf: &mut impl BufMut) {
        put_plain(tag::ROW, self.row, buf);
        put_plain(tag::FAMILY, self.family.as_bytes(), buf);
        put_plain(tag::QUALIFIER, self.qualifier, buf);
        if let Some(t) = self.timestamp {
            put_varint_field(tag::TIMESTAMP, t, buf);
        }
        put_plain(tag::VALUE, self.value, buf);
    }
}

impl DeleteRef<'_> {
    fn encoded_len(&self) -> usize {
        plain_len(tag::ROW, self.row)
            + plain_len(tag::FAMILY, self.family.as_bytes())
            + self
                .qualifier
                .map_or(0, |q| bytes_field_len(tag::QUALIFIER, q.len()))
            + self
                .timestamp
                .map_or(0, |t| varint_field_len(tag::TIMESTAMP, t))
    }

    fn encode(&self, buf: &mut impl BufMut) {
        put_plain(tag::ROW, self.row, buf);
        put_plain(tag::FAMILY, self.family.as_bytes(), buf);
        if let Some(q) = self.qualifier {
            put_bytes_field(tag::QUALIFIER, q, buf);
        }
        if let Some(t) = self.timestamp {
            put_varint_field(tag::TIMESTAMP, t, buf);
        }
    }
}

impl MutationRef<'_> {
    fn kind_len(&self) -> (u32, usize) {
        match self {
            MutationRef::Put(p) => (tag::MUTATION_PUT, p.encoded_len()),
            MutationRef::Delete(d) => (tag::MUTATION_DELETE, d.encoded_len()),
        }
    }

    /// Bytes this mutation adds to a request as one `mutations` entry.
    pub fn entry_len(&self) -> usize {
        let (kind, len) = self.kind_len();
        bytes_field_len(tag::REQUEST_MUTATIONS, bytes_field_len(kind, len))
    }

    /// Appends this mutation as one `mutations` entry (field 2) of a `MutateRequest`:
    /// a request is its header ([`encode_request_header`]) followed by its entries.
    pub fn encode_entry(&self, buf: &mut impl BufMut) {
        let (kind, len) = self.kind_len();
        encode_key(tag::REQUEST_MUTATIONS, WireType::LengthDelimited, buf);
        encode_varint(bytes_field_len(kind, len) as u64, buf);
        encode_key(kind, WireType::LengthDelimited, buf);
        encode_varint(len as u64, buf);
        match self {
            MutationRef::Put(p) => p.encode(buf),
            MutationRef::Delete(d) => d.encode(buf),
        }
    }
}

/// The fields of a `MutateRequest` other than its mutations.
pub fn encode_request_header(table: &str, durability: i32, buf: &mut impl BufMut) {
    put_plain(tag::REQUEST_TABLE, table.as_bytes(), buf);
    if durability != 0 {
        // An enum is an int32 on the wire: a negative one is ten bytes, sign-extended.
        put_varint_field(tag::REQUEST_DURABILITY, i64::from(durability) as u64, buf);
    }
}

/// Reads fields off a slice.
struct Fields<'a> {
    rest: &'a [u8],
}

impl<'a> Fields<'a> {
    fn next(&mut self) -> Option<Result<(u32, WireType)>> {
        if self.rest.is_empty() {
            return None;
        }
        Some(self.key())
    }

    fn key(&mut self) -> Result<(u32, WireType)> {
        let key = self.varint()?;
        let wire = WireType::try_from(key & 7).map_err(|_| format!("wire type {}", key & 7))?;
        let tag = u32::try_from(key >> 3).map_err(|_| format!("field key {key} is too large"))?;
        if tag == 0 {
            return Err("field number 0".to_string());
        }
        Ok((tag, wire))
    }

    fn varint(&mut self) -> Result<u64> {
        decode_varint(&mut self.rest).map_err(|e| e.to_string())
    }

    fn bytes(&mut self) -> Result<&'a [u8]> {
        let len = self.varint()?;
        let len = usize::try_from(len)
            .ok()
            .filter(|&l| l <= self.rest.len())
            .ok_or_else(|| {
                format!(
                    "a field of {len} bytes runs past the end ({} left)",
                    self.rest.len()
                )
            })?;
        let (field, rest) = self.rest.split_at(len);
        self.rest = rest;
        Ok(field)
    }

    fn str(&mut self, name: &str) -> Result<&'a str> {
        std::str::from_utf8(self.bytes()?).map_err(|_| format!("{name} is not UTF-8"))
    }

    fn skip(&mut self, wire: WireType) -> Result<()> {
        let n = match wire {
            WireType::Varint => return self.varint().map(drop),
            WireType::LengthDelimited => return self.bytes().map(drop),
            WireType::SixtyFourBit => 8,
            WireType::ThirtyTwoBit => 4,
            WireType::StartGroup | WireType::EndGroup => return Err("groups".to_string()),
        };
        if self.rest.len() < n {
            return Err("a fixed-width field runs past the end".to_string());
        }
        self.rest.advance(n);
        Ok(())
    }

    /// A known field: its wire type must be `want`.
    fn expect(&self, field: &str, got: WireType, want: WireType) -> Result<()> {
        if got == want {
            Ok(())
        } else {
            Err(format!("{field} has wire type {got:?}, not {want:?}"))
        }
    }
}

/// A `MutateRequest` read in place: its table and durability, and its mutations, decoded
/// one at a time by [`MutateRequestRef::mutations`].
#[derive(Debug, Clone, Copy)]
pub struct MutateRequestRef<'a> {
    pub table: &'a str,
    /// The raw `Durability` enum value.
    pub durability: i32,
    count: usize,
    buf: &'a [u8],
}

impl<'a> MutateRequestRef<'a> {
    /// Reads the request's own fields and the framing of every mutation entry (not yet
    /// their contents).
    pub fn parse(buf: &'a [u8]) -> std::result::Result<Self, WireError> {
        let top = |what: String| WireError {
            mutation: None,
            what,
        };
        let mut req = MutateRequestRef {
            table: "",
            durability: 0,
            count: 0,
            buf,
        };
        let mut f = Fields { rest: buf };
        while let Some(key) = f.next() {
            let (tag, wire) = key.map_err(top)?;
            match tag {
                tag::REQUEST_TABLE => {
                    f.expect("table", wire, WireType::LengthDelimited)
                        .map_err(top)?;
                    req.table = f.str("the table name").map_err(top)?;
                }
                tag::REQUEST_MUTATIONS => {
                    f.expect("mutations", wire, WireType::LengthDelimited)
                        .map_err(top)?;
                    f.bytes().map_err(top)?;
                    req.count += 1;
                }
                tag::REQUEST_DURABILITY => {
                    f.expect("durability", wire, WireType::Varint)
                        .map_err(top)?;
                    // int32 on the wire: the low 32 bits, as protobuf reads it.
                    req.durability = f.varint().map_err(top)? as i32;
                }
                _ => f.skip(wire).map_err(top)?,
            }
        }
        Ok(req)
    }

    /// How many mutations the request holds.
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The mutations in request order; `Ok(None)` is one with neither a put nor a delete.
    pub fn mutations(&self) -> Mutations<'a> {
        Mutations {
            fields: Fields { rest: self.buf },
            index: 0,
        }
    }
}

/// The mutations of a [`MutateRequestRef`].
pub struct Mutations<'a> {
    fields: Fields<'a>,
    index: usize,
}

impl<'a> Iterator for Mutations<'a> {
    type Item = std::result::Result<Option<MutationRef<'a>>, WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        // `parse` checked the request's framing, so errors here are inside a mutation.
        let entry = loop {
            match self.next_entry()? {
                Ok(Some(entry)) => break entry,
                Ok(None) => continue,
                Err(what) => {
                    return Some(Err(WireError {
                        mutation: None,
                        what,
                    }))
                }
            }
        };
        let index = self.index;
        self.index += 1;
        Some(mutation(entry).map_err(|what| WireError {
            mutation: Some(index),
            what,
        }))
    }
}

impl<'a> Mutations<'a> {
    /// The next top-level field: a `mutations` entry's bytes, or `None` for another field
    /// (skipped).
    fn next_entry(&mut self) -> Option<Result<Option<&'a [u8]>>> {
        let (tag, wire) = match self.fields.next()? {
            Ok(key) => key,
            Err(what) => return Some(Err(what)),
        };
        Some(
            if tag == tag::REQUEST_MUTATIONS && wire == WireType::LengthDelimited {
                self.fields.bytes().map(Some)
            } else {
                self.fields.skip(wire).map(|()| None)
            },
        )
    }
}

fn mutation(buf: &[u8]) -> Result<Option<MutationRef<'_>>> {
    let mut f = Fields { rest: buf };
    let mut kind = None;
    while let Some(key) = f.next() {
        let (tag, wire) = key?;
        let m = match tag {
            tag::MUTATION_PUT => {
                f.expect("put", wire, WireType::LengthDelimited)?;
                MutationRef::Put(put(f.bytes()?)?)
            }
            tag::MUTATION_DELETE => {
                f.expect("delete", wire, WireType::LengthDelimited)?;
                MutationRef::Delete(delete(f.bytes()?)?)
            }
            _ => {
                f.skip(wire)?;
                continue;
            }
        };
        if kind.replace(m).is_some() {
            return Err("it holds more than one put or delete".to_string());
        }
    }
    Ok(kind)
}

fn put(buf: &[u8]) -> Result<PutRef<'_>> {
    let mut p = PutRef {
        row: &[],
        family: "",
        qualifier: &[],
        timestamp: None,
        value: &[],
    };
    let mut f = Fields { rest: buf };
    while let Some(key) = f.next() {
        let (tag, wire) = key?;
        let len = WireType::LengthDelimited;
        match tag {
            tag::ROW => p.row = f.expect("row", wire, len).and_then(|()| f.bytes())?,
            tag::FAMILY => {
                p.family = f
                    .expect("family", wire, len)
                    .and_then(|()| f.str("the family"))?
            }
            tag::QUALIFIER => {
                p.qualifier = f.expect("qualifier", wire, len).and_then(|()| f.bytes())?
            }
            tag::TIMESTAMP => {
                f.expect("timestamp", wire, WireType::Varint)?;
                p.timestamp = Some(f.varint()?);
            }
            tag::VALUE => p.value = f.expect("value", wire, len).and_then(|()| f.bytes())?,
            _ => f.skip(wire)?,
        }
    }
    Ok(p)
}

fn delete(buf: &[u8]) -> Result<DeleteRef<'_>> {
    let mut d = DeleteRef {
        row: &[],
        family: "",
        qualifier: None,
        timestamp: None,
    };
    let mut f = Fields { rest: buf };
    while let Some(key) = f.next() {
        let (tag, wire) = key?;
        let len = WireType::LengthDelimited;
        match tag {
            tag::ROW => d.row = f.expect("row", wire, len).and_then(|()| f.bytes())?,
            tag::FAMILY => {
                d.family = f
                    .expect("family", wire, len)
                    .and_then(|()| f.str("the family"))?
            }
            tag::QUALIFIER => {
                d.qualifier = Some(f.expect("qualifier", wire, len).and_then(|()| f.bytes())?)
            }
            tag::TIMESTAMP => {
                f.expect("timestamp", wire, WireType::Varint)?;
                d.timestamp = Some(f.varint()?);
            }
            _ => f.skip(wire)?,
        }
    }
    Ok(d)
}

#[cfg(test)]
mod tests;
