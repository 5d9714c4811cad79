//! Differential tests for scalar resolution: every short string over an alphabet of the
//! characters that matter to YAML's numbers, booleans and nulls, plus random strings, in
//! each position a scalar can take (block value, sequence entry, flow entries, key).

mod yaml_common;
use common::{Outcome, check};
use proptest::prelude::*;
use yaml_common as common;

/// The positions a plain scalar `s` is tried in.
fn contexts(s: &str) -> [String; 6] {
    [
        format!("v: {s}\n"),
        format!("- {s}\n"),
        format!("v: [{s}]\n"),
        format!("v: {{k: {s}}}\n"),
        format!("{s}: 1\n"),
        format!("{{{s}: 1}}\n"),
    ]
}

#[test]
fn short_strings_agree() {
    let alphabet: Vec<char> = "0178+-._xXoObBeE~nNtTyY:aAfFlLsSuU ".chars().collect();
    let mut words: Vec<String> = alphabet.iter().map(|c| c.to_string()).collect();
    let mut frontier = words.clone();
    for _ in 1..3 {
        let mut next = Vec::new();
        for w in &frontier {
            for c in &alphabet {
                next.push(format!("{w}{c}"));
            }
        }
        words.extend(next.iter().cloned());
        frontier = next;
    }
    let curated = [
        "null",
        "Null",
        "NULL",
        "nULL",
        "~",
        "true",
        "True",
        "TRUE",
        "tRUE",
        "yes",
        "Yes",
        "YES",
        "on",
        "On",
        "ON",
        "off",
        "Off",
        "OFF",
        "no",
        "No",
        "NO",
        "false",
        "False",
        "FALSE",
        "y",
        "Y",
        "n",
        "N",
        "0755",
        "-0755",
        "+0755",
        "08",
        "09",
        "0o17",
        "0O17",
        "0x1F",
        "0X1F",
        "0b101",
        "0B1",
        "0x_10",
        "0o_7",
        "0_10",
        "1_000",
        "1__0",
        "_1",
        "1_",
        "-1_000",
        "18446744073709551615",
        "18446744073709551616",
        "9223372036854775807",
        "9223372036854775808",
        "-9223372036854775808",
        "-9223372036854775809",
        "99999999999999999999999999999999999999999999",
        "340282366920938463463374607431768211455",
        "340282366920938463463374607431768211456",
        "-170141183460469231731687303715884105728",
        "-170141183460469231731687303715884105729",
        "0xFFFFFFFFFFFFFFFF",
        "0x10000000000000000",
        "-0x8000000000000000",
        "-0x8000000000000001",
        "1.5",
        "-1.5",
        "+1.5",
        "1e3",
        "1E3",
        "1e+3",
        "1e-3",
        ".5",
        "-.5",
        "1.",
        "-1.",
        "1.0",
        "0.0",
        "-0.0",
        "1_000.5",
        "1e999",
        "-1e999",
        ".inf",
        "-.inf",
        "+.inf",
        ".Inf",
        ".INF",
        ".nan",
        ".NaN",
        ".NAN",
        "-.nan",
        "+.nan",
        "nan",
        "NaN",
        "inf",
        "-inf",
        "infinity",
        "Infinity",
        "+Infinity",
        ".",
        "-",
        "+",
        "1e",
        "e3",
        "1.5.3",
        "0x",
        "0o",
        "0b",
        "07.5",
        "0755.5",
        "012e3",
        "1.2e3_4",
        "12:30",
        "1:20:30",
        "2001-12-14",
        "2001-12-14T21:59:43.10-05:00",
        "0.1_1",
        "0b102",
        "0o8",
        "-0b1",
        "1e1000000",
        "0.",
        "00.5",
        "+.5",
        "+.",
        "++1",
        "+-1",
        "-+1",
        "1 000",
        "0x1f",
        "0xAbC",
        "3.14159265358979323846264338327950288",
        "1e-400",
        "4.9e-324",
        "2.2250738585072014e-308",
        "1.7976931348623157e308",
        "1.7976931348623159e308",
        "123456789012345678901234567890.5",
        "0x_",
        "0x__1",
        "0_",
        "0__1",
        "00",
        "000",
        "0_0",
        "-0",
        "+0",
        "-00",
        "0e0",
        "0E",
        "1e1_0",
        "1.e5",
        ".e5",
        "-.e5",
        "1d3",
        "0.5f",
        "1/2",
        "250m",
        "512Mi",
        "1Gi",
        "v1",
        "1.20",
        "3.0.0",
        "TCP",
        "<<",
        "=",
        "~x",
    ];
    words.extend(curated.iter().map(|s| s.to_string()));
    let (mut docs, mut fast) = (0usize, 0usize);
    for w in &words {
        for doc in contexts(w) {
            docs += 1;
            fast += usize::from(check(&doc) == Outcome::Fast);
        }
    }
    println!("{docs} scalar documents, {fast} on the fast path");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4000, ..ProptestConfig::default() })]

    #[test]
    fn random_numberish_scalars_agree(s in "[-+0-9._xXoObBeEaAfFiInN:~ ]{1,14}") {
        for doc in contexts(&s) {
            check(&doc);
        }
    }

    #[test]
    fn random_printable_scalars_agree(s in "[ -~]{1,16}") {
        for doc in contexts(&s) {
            check(&doc);
        }
        check(&format!("v: '{}'\n", s.replace('\'', "''")));
        check(&format!("v: \"{s}\"\n"));
    }

    #[test]
    fn random_unicode_scalars_agree(s in "\\PC{1,10}") {
        for doc in contexts(&s) {
            check(&doc);
        }
        check(&format!("v: \"{s}\"\n"));
    }
}
