//! The cell key encoding: byte order is (row asc, qualifier asc, timestamp desc) for any
//! bytes, decoding inverts encoding, and no input makes the decoder panic.

use std::cmp::Reverse;

use cellar_table::cell_key::{
    column_range, decode_cell_key, encode_cell_key, encoded_cell_key_len, row_prefix_start,
    row_range,
};
use proptest::prelude::*;

/// Bytes biased towards the ones the escaping treats specially.
fn bytes() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop_oneof![
            Just(0x00u8),
            Just(0x01),
            Just(0x02),
            Just(0xFF),
            any::<u8>()
        ],
        0..6,
    )
}

fn timestamp() -> impl Strategy<Value = u64> {
    prop_oneof![Just(0u64), Just(u64::MAX), 0..4u64, any::<u64>()]
}

type Tuple = (Vec<u8>, Vec<u8>, u64);

fn tuple() -> impl Strategy<Value = Tuple> {
    (bytes(), bytes(), timestamp())
}

fn encode(t: &Tuple) -> Vec<u8> {
    let mut k = Vec::new();
    encode_cell_key(&t.0, &t.1, t.2, &mut k);
    k
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn cell_key_byte_order_is_tuple_order(a in tuple(), b in tuple()) {
        let by_tuple = (&a.0, &a.1, Reverse(a.2)).cmp(&(&b.0, &b.1, Reverse(b.2)));
        prop_assert_eq!(encode(&a).cmp(&encode(&b)), by_tuple);
    }

    #[test]
    fn cell_key_sorts_lists_like_tuples(mut v in prop::collection::vec(tuple(), 0..20)) {
        let mut keys: Vec<Vec<u8>> = v.iter().map(encode).collect();
        keys.sort();
        v.sort_by(|a, b| (&a.0, &a.1, Reverse(a.2)).cmp(&(&b.0, &b.1, Reverse(b.2))));
        let expected: Vec<Vec<u8>> = v.iter().map(encode).collect();
        prop_assert_eq!(keys, expected);
    }

    #[test]
    fn cell_key_round_trips(t in tuple()) {
        let k = encode(&t);
        prop_assert_eq!(k.len(), encoded_cell_key_len(&t.0, &t.1));
        prop_assert_eq!(decode_cell_key(&k), Ok(t));
    }

    /// Whatever decodes is canonical: encoding it again gives back the same bytes.
    #[test]
    fn cell_key_decoding_arbitrary_bytes_never_panics(
        raw in prop::collection::vec(
            prop_oneof![Just(0x00u8), Just(0x01), Just(0xFF), any::<u8>()], 0..40),
    ) {
        if let Ok(t) = decode_cell_key(&raw) {
            prop_assert_eq!(encode(&t), raw);
        }
    }

    #[test]
    fn cell_key_ranges_hold_exactly_their_cells(
        row in bytes(), q in bytes(), other in tuple(), p in bytes(),
    ) {
        let k = encode(&other);
        let (rs, re) = row_range(&row);
        prop_assert_eq!(rs <= k && k < re, other.0 == row);
        let (cs, ce) = column_range(&row, &q);
        prop_assert_eq!(cs <= k && k < ce, other.0 == row && other.1 == q);
        prop_assert_eq!(k.starts_with(&row_prefix_start(&p)), other.0.starts_with(&p));
    }
}
