//! The row format, all of it: column types and values ([`value`]), dates and
//! decimals, the order-preserving key format and tuple ids ([`key`]), the
//! on-page row layout ([`layout`]), the physical encodings a compacted table
//! stores its columns in ([`encoding`], No Bits Left Behind §4.1) and the shape
//! check every stored tuple passes ([`shape`]).

pub mod date;
pub mod decimal;
pub mod encoding;
pub mod key;
pub mod layout;
mod layout_encoded;
pub mod shape;
pub mod value;

pub use date::{civil_from_days, days_from_civil, format_date, format_timestamp_micros};
pub use decimal::format_decimal;
pub use key::{Tid, decode_key, encode_key, encode_key_value};
pub use layout::{Field, FixedColumn, FixedKind, RowLayout};
pub use value::{Column, DataType, MAX_DECLARED_LEN, Schema, TEXT_LEN, Value};

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn schema() -> Schema {
        Schema::parse("a INT, b BIGINT NULL, c DECIMAL(12,2), d DATE, e CHAR(5), f VARCHAR(20) NULL, g BOOL, h DOUBLE").unwrap()
    }

    #[test]
    fn fields_are_the_stored_bytes_of_each_column() {
        let s = schema();
        let layout = RowLayout::new(&s);
        let row = vec![
            Value::Int32(-7),
            Value::Null,
            Value::Decimal(12345),
            Value::Date(9000),
            Value::Str("ab".into()),
            Value::Str("hello".into()),
            Value::Bool(true),
            Value::Float64(2.5),
        ];
        let mut bytes = Vec::new();
        layout.encode(&row, &mut bytes, &s).unwrap();
        let mut f = Vec::new();
        layout.fields(&bytes, Tid::default(), &mut f);
        assert_eq!(f.len(), 8);
        assert_eq!(f[0], Field::Raw(&(-7i32).to_le_bytes()[..]));
        assert_eq!(f[1], Field::Null);
        assert_eq!(f[2], Field::Raw(&12345i64.to_le_bytes()[..]));
        assert_eq!(f[3], Field::Raw(&9000i32.to_le_bytes()[..]));
        assert_eq!(f[4], Field::Raw(&b"ab   "[..]));
        assert_eq!(f[5], Field::Raw(&b"hello"[..]));
        assert_eq!(f[6], Field::Raw(&[1u8][..]));
        assert_eq!(f[7], Field::Raw(&2.5f64.to_le_bytes()[..]));
    }

    #[test]
    fn parses_schemas_and_rejects_bad_types() {
        let s = schema();
        assert_eq!(s.len(), 8);
        assert_eq!(
            s.columns[2].ty,
            DataType::Decimal {
                precision: 12,
                scale: 2
            }
        );
        assert!(s.columns[1].nullable && !s.columns[0].nullable);
        let e = Schema::parse("a INT, b FOO").unwrap_err().to_string();
        assert!(e.contains("'FOO'") && e.contains("unknown type"), "{e}");
        let e = Schema::parse("a INT, A INT").unwrap_err().to_string();
        assert!(e.contains("duplicate column name 'A'"), "{e}");
        assert!(Schema::parse("a DECIMAL(19,2)").is_err());
    }

    #[test]
    fn parses_values_with_clear_errors() {
        let dec = DataType::Decimal {
            precision: 5,
            scale: 2,
        };
        assert_eq!(dec.parse_value("123.456"), Ok(Value::Decimal(12346)));
        assert_eq!(dec.parse_value("-0.5"), Ok(Value::Decimal(-50)));
        assert!(
            dec.parse_value("1234.5")
                .unwrap_err()
                .contains("out of range")
        );
        assert!(
            dec.parse_value("1.2.3")
                .unwrap_err()
                .contains("not a decimal")
        );
        assert_eq!(
            DataType::Date.parse_value("1998-12-01"),
            Ok(Value::Date(days_from_civil(1998, 12, 1)))
        );
        assert!(
            DataType::Date
                .parse_value("1998-02-30")
                .unwrap_err()
                .contains("not a valid date")
        );
        assert!(
            DataType::Int32
                .parse_value("12x")
                .unwrap_err()
                .contains("not a 32-bit integer")
        );
        assert!(DataType::Int32.parse_value("3000000000").is_err());
        assert!(
            DataType::Char { len: 3 }
                .parse_value("abcd")
                .unwrap_err()
                .contains("too long")
        );
        assert_eq!(format_decimal(-1205, 2), "-12.05");
        assert_eq!(format_date(0), "1970-01-01");
    }

    #[test]
    fn fixed_layout_offsets() {
        let s = Schema::parse("a INT, b BIGINT, c CHAR(3), d INT").unwrap();
        let l = RowLayout::new(&s);
        assert_eq!(l.fixed_offset(3), Some(4 + 8 + 3));
        // Up to the first variable-width column, offsets are fixed.
        let s2 = Schema::parse("a INT, b VARCHAR(3), c INT").unwrap();
        let l2 = RowLayout::new(&s2);
        assert_eq!(l2.fixed_offset(0), Some(0));
        assert_eq!(l2.fixed_offset(1), Some(4));
        assert_eq!(l2.fixed_offset(2), None);
        let s3 = Schema::parse("a INT NULL, b INT").unwrap();
        assert_eq!(RowLayout::new(&s3).fixed_offset(1), None);
    }

    #[test]
    fn encode_rejects_nulls_and_wrong_types() {
        let s = schema();
        let l = RowLayout::new(&s);
        let mut row = vec![
            Value::Null,
            Value::Null,
            Value::Decimal(1),
            Value::Date(1),
            Value::Str("x".into()),
            Value::Null,
            Value::Bool(true),
            Value::Float64(1.0),
        ];
        let e = l.encode(&row, &mut Vec::new(), &s).unwrap_err().to_string();
        assert!(e.contains("'a'") && e.contains("NOT NULL"), "{e}");
        row[0] = Value::Str("no".into());
        let e = l.encode(&row, &mut Vec::new(), &s).unwrap_err().to_string();
        assert!(e.contains("'a'") && e.contains("string"), "{e}");
    }

    fn arb_row() -> impl Strategy<Value = Vec<Value>> {
        (
            any::<i32>(),
            proptest::option::of(any::<i64>()),
            -99_999_999_999i64..99_999_999_999,
            -100_000i32..100_000,
            "[a-z ]{0,5}",
            proptest::option::of("[a-z\\x00é]{0,6}"),
            any::<bool>(),
            any::<f64>().prop_filter("no NaN", |f| !f.is_nan()),
        )
            .prop_map(|(a, b, c, d, e, f, g, h)| {
                vec![
                    Value::Int32(a),
                    b.map_or(Value::Null, Value::Int64),
                    Value::Decimal(c),
                    Value::Date(d),
                    Value::Str(e.trim_end_matches(' ').to_string()),
                    f.map_or(Value::Null, Value::Str),
                    Value::Bool(g),
                    Value::Float64(h),
                ]
            })
    }

    fn cmp_values(a: &[Value], b: &[Value]) -> std::cmp::Ordering {
        use std::cmp::Ordering;
        for (x, y) in a.iter().zip(b) {
            let o = match (x, y) {
                (Value::Null, Value::Null) => Ordering::Equal,
                (Value::Null, _) => Ordering::Less,
                (_, Value::Null) => Ordering::Greater,
                (Value::Float64(p), Value::Float64(q)) => p.total_cmp(q),
                (Value::Str(p), Value::Str(q)) => p.as_bytes().cmp(q.as_bytes()),
                (Value::Bool(p), Value::Bool(q)) => p.cmp(q),
                _ => x.as_i64().unwrap().cmp(&y.as_i64().unwrap()),
            };
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    }

    proptest! {
        #[test]
        fn rows_round_trip(row in arb_row()) {
            let s = schema();
            let l = RowLayout::new(&s);
            let mut buf = Vec::new();
            l.encode(&row, &mut buf, &s).unwrap();
            prop_assert!(buf.len() <= s.max_row_size());
            prop_assert_eq!(&l.decode(&buf, Tid::default()), &row);
            for (c, v) in row.iter().enumerate() {
                prop_assert_eq!(&l.decode_column(&buf, c, Tid::default()), v);
            }
        }

        #[test]
        fn keys_round_trip_and_preserve_order(a in arb_row(), b in arb_row()) {
            let types = schema().types();
            let (mut ka, mut kb) = (Vec::new(), Vec::new());
            encode_key(&types, &a, &mut ka);
            encode_key(&types, &b, &mut kb);
            prop_assert_eq!(decode_key(&types, &ka), (a.clone(), ka.len()));
            prop_assert_eq!(ka.cmp(&kb), cmp_values(&a, &b));
        }

        #[test]
        fn dates_round_trip(d in -1_000_000i32..1_000_000) {
            let (y, m, dd) = civil_from_days(d);
            prop_assert_eq!(days_from_civil(y, m, dd), d);
        }
    }
}
