//! JSON read without recursion: the elements of a batch one by one, and the top-level members of
//! a message nested too deep for serde_json (which stops at 128 levels, RFC 8259 §9 lets a
//! parser set such a limit) — without building a tree, so that neither a batch of millions of
//! elements nor a message a million levels deep takes memory beyond its own text.
//!
//! [`skip_value`] checks the grammar of RFC 8259 §2–§7 as far as structure goes (brackets
//! matched, strings closed and escaped, literals and number characters), with a stack of one
//! byte per open container; the strict checks of a message's contents stay with the
//! classification of each element ([`super::classify_one`]).

use super::{Kind, Message, Rare, Short};

/// JSON whitespace (RFC 8259 §2).
fn ws(b: &[u8], mut i: usize) -> usize {
    while matches!(b.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

/// The end of the string that starts at `i` (its opening quote), after its closing quote.
fn skip_string(b: &[u8], i: usize) -> Option<usize> {
    let mut i = i + 1;
    loop {
        let n = memchr::memchr2(b'"', b'\\', b.get(i..)?)?;
        if b[i..i + n].iter().any(|&c| c < 0x20) {
            return None;
        }
        i += n;
        if b[i] == b'"' {
            return Some(i + 1);
        }
        match b.get(i + 1)? {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
            b'u' if b.get(i + 2..i + 6)?.iter().all(u8::is_ascii_hexdigit) => i += 6,
            _ => return None,
        }
    }
}

/// The end of the scalar (number or literal) that starts at `i`.
fn skip_scalar(b: &[u8], i: usize) -> Option<usize> {
    for word in [&b"true"[..], b"false", b"null"] {
        if b.get(i..)?.starts_with(word) {
            return Some(i + word.len());
        }
    }
    let end = i + b[i..]
        .iter()
        .take_while(|c| matches!(c, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
        .count();
    (end > i && b[i] != b'+' && b[i] != b'.').then_some(end)
}

/// The end of the value that starts at `i` (after whitespace), any depth: containers are
/// matched with a stack of their closing bytes, not by recursion. `None` when the text is not
/// well-formed there.
pub fn skip_value(b: &[u8], i: usize) -> Option<usize> {
    let mut stack: Vec<u8> = Vec::new();
    let mut i = ws(b, i);
    // What may come next: a value, or (inside a container) a separator or its close.
    loop {
        // A value.
        match *b.get(i)? {
            b'"' => i = skip_string(b, i)?,
            open @ (b'{' | b'[') => {
                stack.push(if open == b'{' { b'}' } else { b']' });
                i = ws(b, i + 1);
                if b.get(i) == stack.last() {
                    stack.pop();
                    i += 1;
                } else {
                    if open == b'{' {
                        i = member_name(b, i)?;
                    }
                    continue;
                }
            }
            _ => i = skip_scalar(b, i)?,
        }
        // Separators and closes after a value.
        loop {
            let Some(&close) = stack.last() else {
                return Some(i);
            };
            i = ws(b, i);
            match *b.get(i)? {
                b',' => {
                    i = ws(b, i + 1);
                    if close == b'}' {
                        i = member_name(b, i)?;
                    }
                    break;
                }
                c if c == close => {
                    stack.pop();
                    i += 1;
                }
                _ => return None,
            }
        }
    }
}

/// After a `{` or `,` of an object (at `i`, after whitespace): its member name and colon; the
/// position of the member's value.
fn member_name(b: &[u8], i: usize) -> Option<usize> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let i = ws(b, skip_string(b, i)?);
    (b.get(i) == Some(&b':')).then(|| ws(b, i + 1))
}

/// The elements of the array `text` (trimmed, starting with `[`) as byte ranges, in order;
/// `None` when the text is not one well-formed array.
pub fn array_elements(text: &str) -> Option<Vec<std::ops::Range<usize>>> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = ws(b, 1);
    if b.get(i) == Some(&b']') {
        return (ws(b, i + 1) == b.len()).then_some(out);
    }
    loop {
        let start = ws(b, i);
        let end = skip_value(b, start)?;
        out.push(start..end);
        i = ws(b, end);
        match b.get(i)? {
            b',' => i += 1,
            b']' => return (ws(b, i + 1) == b.len()).then_some(out),
            _ => return None,
        }
    }
}

/// A message from its top-level members alone: `method`, `id`, `result`, `error` (and the
/// error's `code` when it is a plain integer), the rest skipped at any depth. For a message
/// too deep for serde_json: its kind and id are what pair a response with its request.
/// `None` when the text is not one well-formed object.
pub fn shallow(text: &str) -> Option<Message> {
    let b = text.as_bytes();
    let t = text.trim_matches([' ', '\t', '\n', '\r']);
    let off = text.len() - text.trim_start_matches([' ', '\t', '\n', '\r']).len();
    if !t.starts_with('{') || skip_value(b, off)? != off + t.len() {
        return None;
    }
    let (mut method, mut id, mut result, mut error) = (None, None, false, None);
    let mut i = ws(b, off + 1);
    if b.get(i) == Some(&b'}') {
        return Some(invalid());
    }
    loop {
        let name_end = skip_string(b, i)?;
        let name = text.get(i + 1..name_end - 1)?;
        let v = ws(b, ws(b, name_end) + 1);
        let end = skip_value(b, v)?;
        let raw = text.get(v..end)?;
        match name {
            "method" => method = Some(raw),
            "id" => id = Some(raw),
            "result" => result = true,
            "error" => error = Some(raw),
            _ => {}
        }
        i = ws(b, end);
        match b.get(i)? {
            b',' => i = ws(b, i + 1),
            _ => break,
        }
    }
    let method = method
        .filter(|m| m.starts_with('"') && !m.contains('\\'))
        .map(|m| &m[1..m.len() - 1]);
    let id = id
        .filter(|i| *i != "null" || error.is_some())
        .map(compact_scalar);
    let kind = match (method, &id) {
        (Some(_), Some(_)) => Kind::Request,
        (Some(_), None) => Kind::Notification,
        (None, _) if result => Kind::Response,
        (None, _) if error.is_some() => Kind::Error,
        _ => Kind::Invalid,
    };
    let error_code = error
        .filter(|_| kind == Kind::Error)
        .and_then(|e| top_member(e, "code"))
        .and_then(|c| c.parse::<i64>().ok());
    Some(Message {
        kind,
        method: method.map(Short::from),
        id: id.map(|i| Short::from(i.as_str())),
        progress_token: None,
        progress: None,
        progress_total: None,
        rare: Rare {
            error_code,
            ..Rare::default()
        }
        .boxed(),
    })
}

fn invalid() -> Message {
    Message {
        kind: Kind::Invalid,
        method: None,
        id: None,
        progress_token: None,
        progress: None,
        progress_total: None,
        rare: None,
    }
}

/// An id as compact JSON: strings and integers as they stand (they are compact); anything
/// else (a number with an exponent, an escaped string) through serde_json, when it can.
fn compact_scalar(raw: &str) -> String {
    let plain = (raw.starts_with('"') && !raw.contains('\\'))
        || raw.bytes().all(|c| c.is_ascii_digit() || c == b'-');
    if plain {
        return raw.to_string();
    }
    serde_json::from_str::<serde_json::Value>(raw)
        .map(|v| super::compact(&v))
        .unwrap_or_else(|_| raw.to_string())
}

/// The raw text of member `name` of the object `raw`, when it is a top-level member.
fn top_member<'a>(raw: &'a str, name: &str) -> Option<&'a str> {
    let b = raw.as_bytes();
    let mut i = ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i = ws(b, i + 1);
    while b.get(i) == Some(&b'"') {
        let name_end = skip_string(b, i)?;
        let v = ws(b, ws(b, name_end) + 1);
        let end = skip_value(b, v)?;
        if raw.get(i + 1..name_end - 1) == Some(name) {
            return raw.get(v..end);
        }
        i = ws(b, end);
        if b.get(i) != Some(&b',') {
            break;
        }
        i = ws(b, i + 1);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_of_any_depth_are_skipped_without_recursion() {
        let deep = format!("{}1{}", "[".repeat(1_000_000), "]".repeat(1_000_000));
        assert_eq!(skip_value(deep.as_bytes(), 0), Some(deep.len()));
        let unclosed = "[".repeat(1000);
        assert_eq!(skip_value(unclosed.as_bytes(), 0), None);
        for (text, end) in [
            (r#""a\"b" x"#, Some(6)),
            (r#"{"a": [1, {"b": null}], "c": "\u00e9"}"#, Some(38)),
            ("{}", Some(2)),
            ("[ ]", Some(3)),
            (r#"{"a" 1}"#, None),
            ("[1,]", None),
            (r#"{"a":1,}"#, None),
            ("\"\u{1}\"", None),
            ("truex", Some(4)),
            ("-1.5e3]", Some(6)),
        ] {
            assert_eq!(skip_value(text.as_bytes(), 0), end, "{text}");
        }
    }

    #[test]
    fn a_batch_is_split_into_its_elements() {
        let text = r#"[ {"a":1} , [2,[3]],"s" ,4 ]"#;
        let parts: Vec<&str> = array_elements(text)
            .unwrap()
            .into_iter()
            .map(|r| &text[r])
            .collect();
        assert_eq!(parts, [r#"{"a":1}"#, "[2,[3]]", r#""s""#, "4"]);
        assert_eq!(array_elements("[]"), Some(vec![]));
        assert_eq!(array_elements("[1] x"), None);
        assert_eq!(array_elements("[1,2"), None);
    }

    #[test]
    fn a_message_too_deep_for_serde_is_read_from_its_top_members() {
        let deep = format!("{}1{}", "[".repeat(300), "]".repeat(300));
        let r = shallow(&format!(
            r#"{{"jsonrpc":"2.0","result":{{"v":{deep}}},"id":7}}"#
        ))
        .unwrap();
        assert_eq!((r.kind, r.id.as_deref()), (Kind::Response, Some("7")));
        let e = shallow(&format!(
            r#"{{"jsonrpc":"2.0","id":"x","error":{{"code":-32603,"data":{deep}}}}}"#
        ))
        .unwrap();
        assert_eq!((e.kind, e.error_code()), (Kind::Error, Some(-32603)));
        let q = shallow(&format!(
            r#" {{"method":"tools/call","params":{{"a":{deep}}},"id":2}} "#
        ))
        .unwrap();
        assert_eq!(
            (q.kind, q.method.as_deref()),
            (Kind::Request, Some("tools/call"))
        );
        assert_eq!(shallow("{}").unwrap().kind, Kind::Invalid);
        assert!(shallow(&format!("{{\"id\":1,\"result\":{}", "[".repeat(300))).is_none());
    }
}
