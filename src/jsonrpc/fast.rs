//! The common case of [`super::parse`] without building a `serde_json::Value` tree: one JSON
//! object that is not a request (notifications, responses, errors: what SSE streams carry by the
//! thousand). Only the members the classification reads are looked at, as borrowed raw JSON
//! text; everything else is skipped by the parser without allocating.
//!
//! The result equals [`super::classify`] on the parsed value, member for member: duplicate keys
//! keep the last value, escaped keys are unescaped before they are compared, `null` members are
//! present. Anything this path does not cover returns `None`, and the caller takes the general
//! path: text that is not UTF-8 or not an object, requests (their `params` are hashed in
//! canonical form), and pointer steps through arrays.

use std::borrow::Cow;

use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::{Kind, Message, Rare, Short};

/// The raw values of `N` keys of a JSON object (last occurrence wins, as in `serde_json::Value`).
struct Pick<'k, const N: usize>(&'k [&'k str; N]);

impl<'de, const N: usize> Visitor<'de> for Pick<'_, N> {
    type Value = [Option<&'de RawValue>; N];

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = [None; N];
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match self.0.iter().position(|k| *k == key) {
                Some(i) => out[i] = Some(map.next_value::<&'de RawValue>()?),
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(out)
    }
}

/// The members `keys` of the JSON object `text` (raw JSON, no surrounding whitespace), as raw
/// JSON text; `None` when `text` is not an object (or, at the top level, not only one).
fn pick<'a, const N: usize>(text: &'a str, keys: &[&str; N]) -> Option<[Option<&'a str>; N]> {
    if !text.starts_with('{') {
        return None;
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let raw = de.deserialize_map(Pick(keys)).ok()?;
    de.end().ok()?;
    Some(raw.map(|r| r.map(RawValue::get)))
}

/// The member `key` of `v` when `v` is an object (`Value::get` on raw JSON).
fn get<'a>(v: Option<&'a str>, key: &str) -> Option<&'a str> {
    pick(v?, &[key])?[0]
}

/// `Value::as_str` on raw JSON.
fn as_str(t: &str) -> Option<Cow<'_, str>> {
    if !t.starts_with('"') {
        return None;
    }
    match t.as_bytes().contains(&b'\\') {
        false => t.get(1..t.len() - 1).map(Cow::Borrowed),
        true => serde_json::from_str::<String>(t).ok().map(Cow::Owned),
    }
}

/// `Value::as_f64` on raw JSON (the same number parser as `Value`).
fn as_f64(t: &str) -> Option<f64> {
    match t.as_bytes().first() {
        Some(b'-' | b'0'..=b'9') => serde_json::from_str::<f64>(t).ok(),
        _ => None,
    }
}

/// The compact JSON text of raw JSON, as `serde_json::to_string(&Value)` writes it. Strings
/// without escapes and small integers are already compact; anything else is re-serialised.
fn compact(t: &str) -> String {
    let b = t.as_bytes();
    let digits = |d: &[u8]| !d.is_empty() && d.len() <= 18 && d.iter().all(u8::is_ascii_digit);
    let plain = match b.first() {
        Some(b'"') => !b.contains(&b'\\'),
        Some(b'-') => digits(&b[1..]) && t != "-0",
        Some(b'0'..=b'9') => digits(b),
        _ => matches!(t, "null" | "true" | "false"),
    };
    if plain {
        t.to_string()
    } else {
        serde_json::from_str::<serde_json::Value>(t)
            .map(|x| super::compact(&x))
            .unwrap_or_else(|_| t.to_string())
    }
}

/// What the RFC 6901 pointer `ptr` finds in raw JSON `v`, walking objects: `Some(None)` is
/// "nothing there"; `None` means a step needs an array, which this path leaves to `Value`.
fn pointer<'a>(v: &'a str, ptr: &str) -> Option<Option<&'a str>> {
    if ptr.is_empty() {
        return Some(Some(v));
    }
    let Some(rest) = ptr.strip_prefix('/') else {
        return Some(None);
    };
    let (token, tail) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    if v.starts_with('[') {
        return None;
    }
    let key = token.replace("~1", "/").replace("~0", "~");
    match get(Some(v), &key) {
        Some(child) => pointer(child, tail),
        None => Some(None),
    }
}

/// Classify one JSON text; `None` when the general path must (see the module doc).
pub(super) fn classify_text(text: &[u8], app_seq: &[String]) -> Option<Message> {
    classify_str(std::str::from_utf8(text).ok()?, app_seq)
}

/// [`classify_text`] on text already known to be UTF-8.
pub(super) fn classify_str(text: &str, app_seq: &[String]) -> Option<Message> {
    let text = text.trim_matches([' ', '\t', '\n', '\r']);
    const TOP: [&str; 5] = ["method", "id", "params", "result", "error"];
    let top = pick(text, &TOP)?;
    let [method, id, params, result, error] = top;
    let method: Option<String> = match method {
        None | Some("null") => None,
        Some(m) => Some(as_str(m)?.into_owned()),
    };
    let id = id.filter(|i| *i != "null" || error.is_some()).map(compact);
    let kind = match (&method, &id) {
        (Some(_), Some(_)) => return None,
        (Some(_), None) => Kind::Notification,
        (None, _) if result.is_some() => Kind::Response,
        (None, _) if error.is_some() => Kind::Error,
        _ => Kind::Invalid,
    };
    let m = method.as_deref();
    let [token, progress, total, request_id, params_version, meta] = params
        .and_then(|p| {
            pick(
                p,
                &[
                    "progressToken",
                    "progress",
                    "total",
                    "requestId",
                    "protocolVersion",
                    "_meta",
                ],
            )
        })
        .unwrap_or_default();
    let progress_note = m == Some("notifications/progress");
    // A result names a protocol version only in `initialize`; an escaped key needs `\u`.
    let result_version = || {
        result
            .filter(|r| r.contains("protocolVersion") || r.contains("\\u"))
            .and_then(|r| get(Some(r), "protocolVersion"))
    };
    let protocol_version = params_version
        .or_else(result_version)
        .or_else(|| get(meta, "io.modelcontextprotocol/protocolVersion"))
        .and_then(as_str)
        .map(Cow::into_owned);
    let mut seq = Vec::new();
    for (i, p) in app_seq.iter().enumerate() {
        // Start from the member the pointer names first when it is one already picked.
        let first = p
            .strip_prefix('/')
            .map(|r| r.split('/').next().unwrap_or(r));
        let found = match first.and_then(|f| TOP.iter().position(|k| *k == f)) {
            Some(k) => match top[k] {
                Some(v) => pointer(v, &p[1 + TOP[k].len()..])?,
                None => None,
            },
            None => pointer(text, p)?,
        };
        if let Some(x) = found.and_then(as_f64) {
            seq.push((i, x));
        }
    }
    let cancels = request_id
        .filter(|_| m == Some("notifications/cancelled"))
        .map(compact);
    Some(Message {
        kind,
        method: method.map(Short::from),
        id: id.map(Short::from),
        progress_token: token
            .filter(|_| progress_note)
            .map(|t| Short::from(compact(t))),
        progress: progress.filter(|_| progress_note).and_then(as_f64),
        progress_total: total.filter(|_| progress_note).and_then(as_f64),
        rare: Rare {
            protocol_version,
            cancels,
            app_seq: seq,
            ..Rare::default()
        }
        .boxed(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const POINTERS: [&str; 5] = ["/params/app_seq", "/result/seq", "/params/a~1b", "/x/0", ""];

    fn pointers() -> Vec<String> {
        POINTERS.iter().map(|p| p.to_string()).collect()
    }

    /// A JSON key, sometimes written with escapes.
    fn key(k: &'static str) -> impl Strategy<Value = String> {
        prop_oneof![
            4 => Just(format!("\"{k}\"")),
            1 => Just(format!(
                "\"{}\"",
                k.chars()
                    .map(|c| match c {
                        'i' | 'V' => format!("\\u{:04x}", c as u32),
                        '/' => "\\/".to_string(),
                        c => c.to_string(),
                    })
                    .collect::<String>()
            )),
        ]
    }

    fn scalar() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("null".to_string()),
            Just("true".to_string()),
            any::<i64>().prop_map(|n| n.to_string()),
            any::<u64>().prop_map(|n| n.to_string()),
            Just("-0".to_string()),
            Just("1e3".to_string()),
            Just("12345678901234567890123".to_string()),
            (-1e6f64..1e6).prop_map(|f| f.to_string()),
            Just("0.1".to_string()),
            "[a-z/ ]{0,12}".prop_map(|s| format!("\"{s}\"")),
            Just("\"a\\\"b\\n\\u00e9\\/\"".to_string()),
            Just("\"notifications/progress\"".to_string()),
            Just("\"notifi\\u0063ations/progress\"".to_string()),
            Just("\"notifications/cancelled\"".to_string()),
            Just("\"2025-11-25\"".to_string()),
        ]
    }

    fn value() -> impl Strategy<Value = String> {
        scalar().prop_recursive(3, 24, 6, |inner| {
            let member = (
                prop_oneof![
                    key("progressToken"),
                    key("progress"),
                    key("total"),
                    key("requestId"),
                    key("protocolVersion"),
                    key("_meta"),
                    key("io.modelcontextprotocol/protocolVersion"),
                    key("app_seq"),
                    key("a/b"),
                    key("seq"),
                    key("other"),
                ],
                inner.clone(),
            );
            prop_oneof![
                prop::collection::vec(member, 0..6).prop_map(|ms| format!(
                    "{{{}}}",
                    ms.into_iter()
                        .map(|(k, v)| format!("{k}:{v}"))
                        .collect::<Vec<_>>()
                        .join(",")
                )),
                prop::collection::vec(inner, 0..4).prop_map(|vs| format!("[{}]", vs.join(", "))),
            ]
        })
    }

    fn message() -> impl Strategy<Value = String> {
        let member = (
            prop_oneof![
                key("jsonrpc"),
                key("method"),
                key("id"),
                key("params"),
                key("result"),
                key("error"),
                key("x"),
            ],
            value(),
        );
        (prop::collection::vec(member, 0..7), " {0,2}").prop_map(|(ms, ws)| {
            format!(
                "{ws}{{{}}}{ws}",
                ms.into_iter()
                    .map(|(k, v)| format!("{k}{ws}:{ws}{v}"))
                    .collect::<Vec<_>>()
                    .join(",")
            )
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]
        /// Wherever the fast path answers, it answers what the `Value` path does.
        #[test]
        fn fast_path_equals_value_path(text in message()) {
            let p = pointers();
            if let Some(fast) = classify_text(text.as_bytes(), &p) {
                prop_assert_eq!(super::super::parse_value(text.as_bytes(), &p), Ok(vec![fast]), "{}", text);
            }
        }
    }

    #[test]
    fn common_messages_take_the_fast_path() {
        let p = pointers();
        for text in [
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t-1","progress":3,"total":10,"app_seq":7}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"a\nb"}],"seq":4}}"#,
            r#"{"jsonrpc":"2.0","id":"x","error":{"code":-32000,"message":"m"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{}}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
        ] {
            let fast = classify_text(text.as_bytes(), &p).unwrap_or_else(|| panic!("slow: {text}"));
            assert_eq!(
                super::super::parse_value(text.as_bytes(), &p),
                Ok(vec![fast]),
                "{text}"
            );
        }
        // Requests, batches, pointer steps through arrays and non-JSON take the general path.
        for text in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}"#,
            r#"[{"jsonrpc":"2.0","method":"a"}]"#,
            r#"{"x":[1]}"#,
            "{not json",
            r#"{"a":1} {"b":2}"#,
        ] {
            assert!(classify_text(text.as_bytes(), &p).is_none(), "{text}");
        }
    }
}
