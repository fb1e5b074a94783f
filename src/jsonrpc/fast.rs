//! The common case of [`super::parse`] without building a `serde_json::Value` tree: one JSON
//! object (notifications, responses, errors: what SSE streams carry by the thousand; requests,
//! what POST bodies carry). Only the members the classification reads are looked at, as
//! borrowed raw JSON text; everything else is skipped by the parser without allocating. A
//! hand-written reader ([`scan`]) reads them first; what it is not sure of goes to the serde
//! reader ([`TopSeed`]).
//!
//! The result equals [`super::classify`] on the parsed value, member for member: duplicate keys
//! keep the last value, escaped keys are unescaped before they are compared, `null` members are
//! present. Every member is validated as strictly as building a `Value` would (lone surrogates,
//! numbers out of range, nesting past serde_json's recursion limit are errors), so text the
//! general path rejects is rejected here too. Anything this path does not cover returns `None`,
//! and the caller takes the general path: text that is not UTF-8, not an object or not valid,
//! requests whose `params` serde_json would not write back as they stand (they are hashed as it
//! writes them: [`params_compact`]), and pointer steps through arrays.

use smallvec::SmallVec;
use std::borrow::Cow;

use serde::de::{
    Deserialize, DeserializeSeed, Deserializer, Error as _, IgnoredAny, MapAccess, SeqAccess,
    Visitor,
};
use serde_json::value::RawValue;

use super::{Kind, Message, Rare, Short};

mod scan;

/// An object key: borrowed from the text when it has no escapes, else unescaped. (serde's own
/// `Cow<str>` always makes an owned copy: one allocation per key.)
struct Key<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key<'de>, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object key")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(s.to_owned())))
            }
            fn visit_string<E>(self, s: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(s)))
            }
        }
        d.deserialize_str(V)
    }
}

/// Any JSON value, parsed and thrown away without allocating: it rejects what building a
/// `serde_json::Value` rejects (the same `deserialize_any` path), unlike `IgnoredAny`, which
/// skips lone surrogates, out-of-range numbers and any depth.
struct Strict;

/// Why building a `serde_json::Value` of `text` would fail (the same message, at the same
/// position), found without building it; `None` when it would not.
pub(super) fn value_error(text: &str) -> Option<String> {
    serde_json::from_str::<Strict>(text)
        .err()
        .map(|e| e.to_string())
}

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Strict, D::Error> {
        d.deserialize_any(Probe(None)).map(|_| Strict)
    }
}

/// Checks a JSON value as strictly as [`Strict`] and, when it is an object, returns its member
/// named by the key (the last one, as `Value` keeps), parsed as a `Value`.
struct Probe<'k>(Option<&'k str>);

impl<'de> Visitor<'de> for Probe<'_> {
    type Value = Option<serde_json::Value>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<Strict>()?.is_some() {}
        Ok(None)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = None;
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            if self.0 == Some(key.as_ref()) {
                found = Some(map.next_value::<serde_json::Value>()?);
            } else {
                map.next_value::<Strict>()?;
            }
        }
        Ok(found)
    }
}

/// Whether raw JSON taken out of a message is valid as `Value` would have it inside the
/// message. Nesting near the recursion limit (whose count differs by the message's own level)
/// is left to the general path.
fn valid(raw: &str) -> bool {
    few_brackets(raw) && serde_json::from_str::<Strict>(raw).is_ok()
}

/// Whether raw JSON has fewer than 120 `[` and `{` (in strings too): deeper nesting than that,
/// whose limit inside a message differs by the member's level, is left to the general path.
fn few_brackets(raw: &str) -> bool {
    raw.bytes().filter(|b| matches!(b, b'[' | b'{')).count() < 120
}

/// A `result`, checked strictly, with its `protocolVersion` member when it has one.
#[derive(Debug, PartialEq)]
struct ResultVersion(Option<serde_json::Value>);

impl<'de> Deserialize<'de> for ResultVersion {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ResultVersion, D::Error> {
        d.deserialize_any(Probe(Some("protocolVersion")))
            .map(ResultVersion)
    }
}

/// The members of a message the classification reads: `method` and `id` as raw JSON, `params`
/// by the members `keys` names, `result` by its `protocolVersion` only, `error` as raw JSON.
/// Every member is validated.
#[derive(Debug, Default, PartialEq)]
struct Top<'a> {
    method: Option<&'a str>,
    id: Option<&'a str>,
    params: Option<Params<'a>>,
    /// The raw text of `params` (the last one), when the hand-written reader read the message
    /// (the serde reader leaves it out: a request is then left to the general path).
    params_text: Option<&'a str>,
    result: Option<ResultVersion>,
    /// The raw text of `error` (the last one).
    error: Option<&'a str>,
}

/// `params`, checked as strictly as a `Value` in the same pass as its members are read.
#[derive(Debug, PartialEq)]
enum Params<'a> {
    /// An object: the raw values of the members asked for, in the order asked.
    Object(smallvec::SmallVec<[Option<&'a str>; 12]>),
    /// An array.
    Array,
    /// A number, as `Value::as_f64` gives it.
    Number(f64),
    /// A string, boolean or null.
    Other,
}

/// Reads a message into [`Top`], with the members `.0` of `params`.
struct TopSeed<'k>(&'k [Cow<'k, str>]);

impl<'de> DeserializeSeed<'de> for TopSeed<'_> {
    type Value = Top<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Top<'de>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for TopSeed<'_> {
    type Value = Top<'de>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Top<'de>, A::Error> {
        let mut t = Top::default();
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            let slot = match key.as_ref() {
                "method" => &mut t.method,
                "id" => &mut t.id,
                "params" => {
                    // Inside the message, at the depth a `Value` would parse it (a duplicate
                    // `params` is checked too; the last one counts).
                    t.params = Some(map.next_value_seed(ParamsSeed(self.0))?);
                    continue;
                }
                "result" => {
                    t.result = Some(map.next_value::<ResultVersion>()?);
                    continue;
                }
                "error" => &mut t.error,
                _ => {
                    map.next_value::<Strict>()?;
                    continue;
                }
            };
            *slot = Some(raw_member(&mut map)?);
        }
        Ok(t)
    }
}

/// The next member's value as raw JSON, checked by [`valid`].
fn raw_member<'de, A: MapAccess<'de>>(map: &mut A) -> Result<&'de str, A::Error> {
    let raw = map.next_value::<&'de RawValue>()?.get();
    if !valid(raw) {
        return Err(A::Error::custom("not valid as a Value"));
    }
    Ok(raw)
}

/// Reads `params` into [`Params`]: the raw values of the members `.0` of an object, each checked
/// by [`valid`], every other member as strictly as [`Strict`] (last occurrence wins, as in
/// `Value`).
struct ParamsSeed<'k>(&'k [Cow<'k, str>]);

impl<'de> DeserializeSeed<'de> for ParamsSeed<'_> {
    type Value = Params<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Params<'de>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ParamsSeed<'_> {
    type Value = Params<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Params<'de>, A::Error> {
        let mut out: smallvec::SmallVec<[Option<&'de str>; 12]> =
            smallvec::smallvec![None; self.0.len()];
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            match self.0.iter().position(|k| *k == key) {
                Some(i) => out[i] = Some(raw_member(&mut map)?),
                None => {
                    map.next_value::<Strict>()?;
                }
            }
        }
        Ok(Params::Object(out))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Params<'de>, A::Error> {
        while seq.next_element::<Strict>()?.is_some() {}
        Ok(Params::Array)
    }
    fn visit_u64<E>(self, n: u64) -> Result<Params<'de>, E> {
        Ok(Params::Number(n as f64))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Params<'de>, E> {
        Ok(Params::Number(n as f64))
    }
    fn visit_f64<E>(self, n: f64) -> Result<Params<'de>, E> {
        Ok(Params::Number(n))
    }
    fn visit_str<E>(self, _: &str) -> Result<Params<'de>, E> {
        Ok(Params::Other)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Params<'de>, E> {
        Ok(Params::Other)
    }
    fn visit_unit<E>(self) -> Result<Params<'de>, E> {
        Ok(Params::Other)
    }
}

/// The raw values of `N` keys of a JSON object (last occurrence wins, as in `serde_json::Value`).
struct Pick<'k, const N: usize>(&'k [&'k str; N]);

impl<'de, const N: usize> Visitor<'de> for Pick<'_, N> {
    type Value = [Option<&'de RawValue>; N];

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = [None; N];
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
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
fn compact(t: &str) -> Cow<'_, str> {
    let b = t.as_bytes();
    let digits = |d: &[u8]| !d.is_empty() && d.len() <= 18 && d.iter().all(u8::is_ascii_digit);
    let plain = match b.first() {
        Some(b'"') => !b.contains(&b'\\'),
        Some(b'-') => digits(&b[1..]) && t != "-0",
        Some(b'0'..=b'9') => digits(b),
        _ => matches!(t, "null" | "true" | "false"),
    };
    if plain {
        Cow::Borrowed(t)
    } else {
        serde_json::from_str::<serde_json::Value>(t)
            .map(|x| Cow::Owned(super::compact(&x)))
            .unwrap_or(Cow::Borrowed(t))
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

/// [`TopSeed`] on the whole of `text`: `None` when it is not one valid JSON object.
fn top_serde<'a>(text: &'a str, keys: &[Cow<str>]) -> Option<Top<'a>> {
    let mut de = serde_json::Deserializer::from_str(text);
    let top = TopSeed(keys).deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(top)
}

/// `params` (raw, already validated JSON) as serde_json writes its `Value` compactly, without the
/// object's own `_meta` members: what [`super::classify`] hashes. `None` unless the text is
/// sure to be written back as it stands: no whitespace outside strings, no escape, numbers that
/// are integers of at most 18 digits (not `-0`), no member name twice in an object (a `Value`
/// keeps one of them).
fn params_compact(t: &str) -> Option<Cow<'_, str>> {
    let b = t.as_bytes();
    // Open containers: whether each is an object, and its member names so far.
    type Names<'t> = SmallVec<[&'t str; 8]>;
    let mut open: SmallVec<[(bool, Names); 8]> = SmallVec::new();
    let mut name_next = false;
    // The top object's members as byte ranges, and whether any is `_meta`.
    let mut members: SmallVec<[(usize, usize); 8]> = SmallVec::new();
    let (mut start, mut meta) = (0usize, false);
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                let end = i + 1 + memchr::memchr2(b'"', b'\\', &b[i + 1..])?;
                if b[end] != b'"' {
                    return None;
                }
                if name_next {
                    let name = t.get(i + 1..end)?;
                    let names = &mut open.last_mut()?.1;
                    if names.contains(&name) {
                        return None;
                    }
                    names.push(name);
                    if open.len() == 1 {
                        start = i;
                        meta |= name == "_meta";
                    }
                    name_next = false;
                }
                i = end + 1;
            }
            c @ (b'{' | b'[') => {
                open.push((c == b'{', SmallVec::new()));
                name_next = c == b'{';
                i += 1;
            }
            c @ (b'}' | b']' | b',') => {
                if open.len() == 1 && open[0].0 && !name_next {
                    members.push((start, i));
                }
                if c == b',' {
                    name_next = open.last()?.0;
                } else {
                    open.pop();
                    name_next = false;
                }
                i += 1;
            }
            b':' => i += 1,
            b'-' | b'0'..=b'9' => {
                let end = b[i..]
                    .iter()
                    .position(|c| !matches!(c, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
                    .map_or(b.len(), |n| i + n);
                let digits = b.get(i + usize::from(b[i] == b'-')..end)?;
                if digits.is_empty()
                    || digits.len() > 18
                    || !digits.iter().all(u8::is_ascii_digit)
                    || &b[i..end] == b"-0"
                {
                    return None;
                }
                i = end;
            }
            b't' | b'n' => i += 4,
            b'f' => i += 5,
            _ => return None,
        }
    }
    if !meta {
        return Some(Cow::Borrowed(t));
    }
    let mut out = String::with_capacity(t.len());
    out.push('{');
    for &(a, z) in members
        .iter()
        .filter(|&&(a, _)| !t[a..].starts_with("\"_meta\":"))
    {
        if out.len() > 1 {
            out.push(',');
        }
        out.push_str(t.get(a..z)?);
    }
    out.push('}');
    Some(Cow::Owned(out))
}

/// The members of `params` the classification reads, in the order of their slots.
const PARAMS_KEYS: [&str; 8] = [
    "progressToken",
    "progress",
    "total",
    "requestId",
    "protocolVersion",
    "_meta",
    "name",
    "uri",
];

/// Classify one JSON text; `None` when the general path must (see the module doc).
#[cfg(test)]
fn classify_text(text: &[u8], app_seq: &[String]) -> Option<Message> {
    classify_str(simdutf8::basic::from_utf8(text).ok()?, app_seq)
}

/// Classify one JSON text already known to be UTF-8; `None` when the general path must (see the
/// module doc).
pub(super) fn classify_str(text: &str, app_seq: &[String]) -> Option<Message> {
    let text = text.trim_matches([' ', '\t', '\n', '\r']);
    if !text.starts_with('{') {
        return None;
    }
    // The members of `params` read below, then the first step of each sequence pointer into
    // `params` (its slot in `keys`).
    let mut keys: smallvec::SmallVec<[Cow<str>; 12]> =
        PARAMS_KEYS.into_iter().map(Cow::Borrowed).collect();
    let steps: smallvec::SmallVec<[Option<(usize, &str)>; 2]> = app_seq
        .iter()
        .map(|p| {
            let rest = p.strip_prefix("/params/")?;
            let (token, tail) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let key = if token.contains('~') {
                Cow::Owned(token.replace("~1", "/").replace("~0", "~"))
            } else {
                Cow::Borrowed(token)
            };
            let slot = match keys.iter().position(|k| *k == key) {
                Some(i) => i,
                None => {
                    keys.push(key);
                    keys.len() - 1
                }
            };
            Some((slot, tail))
        })
        .collect();
    let top = match scan::top(text, &keys) {
        Some(top) => top,
        None => top_serde(text, &keys)?,
    };
    let Top {
        method,
        id,
        params,
        params_text,
        result,
        error,
    } = top;
    let method: Option<Cow<str>> = match method {
        None | Some("null") => None,
        Some(m) => Some(as_str(m)?),
    };
    let id = id.filter(|i| *i != "null" || error.is_some()).map(compact);
    let kind = match (&method, &id) {
        (Some(_), Some(_)) => Kind::Request,
        (Some(_), None) => Kind::Notification,
        (None, _) if result.is_some() => Kind::Response,
        (None, _) if error.is_some() => Kind::Error,
        _ => Kind::Invalid,
    };
    let m = method.as_deref();
    let pick_at = |i: usize| match &params {
        Some(Params::Object(p)) => p.get(i).copied().flatten(),
        _ => None,
    };
    let [token, progress, total, request_id, params_version, meta, name, uri] =
        [0, 1, 2, 3, 4, 5, 6, 7].map(pick_at);
    let progress_note = m == Some("notifications/progress");
    // The first of these present decides, string or not (as `Value::get` chains).
    let protocol_version = match (params_version, result.as_ref().and_then(|r| r.0.as_ref())) {
        (Some(v), _) => as_str(v).map(Cow::into_owned),
        (None, Some(v)) => v.as_str().map(str::to_string),
        (None, None) => get(meta, "io.modelcontextprotocol/protocolVersion")
            .and_then(as_str)
            .map(Cow::into_owned),
    };
    let mut seq = Vec::new();
    for (i, (p, step)) in app_seq.iter().zip(&steps).enumerate() {
        // Through `params`: from the member already read (the general case walks the whole
        // message again). A step into an array is left to the general path, as `pointer` does.
        let value = match (step, &params) {
            (Some(_), None) => None,
            (Some(_), Some(Params::Array)) => return None,
            (Some((slot, tail)), Some(_)) => match pick_at(*slot) {
                Some(child) => pointer(child, tail)?.and_then(as_f64),
                None => None,
            },
            (None, _) => match p.strip_prefix("/params") {
                Some("") => match params {
                    Some(Params::Number(x)) => Some(x),
                    _ => None,
                },
                _ => pointer(text, p)?.and_then(as_f64),
            },
        };
        if let Some(x) = value {
            seq.push((i, x));
        }
    }
    let cancels = request_id
        .filter(|_| m == Some("notifications/cancelled"))
        .map(|c| compact(c).into_owned());
    // A request: its progress token, and the hash of `params` without `_meta` as the general
    // path writes it (`super::classify`), when the raw text is already that (else it decides).
    let target = (kind == Kind::Request)
        .then(|| {
            name.and_then(as_str)
                .or_else(|| uri.and_then(as_str))
                .map(Cow::into_owned)
        })
        .flatten();
    let error_code = error
        .filter(|_| kind == Kind::Error)
        .and_then(|e| get(Some(e), "code"))
        .and_then(|c| serde_json::from_str::<serde_json::Value>(c).ok()?.as_i64());
    let (request_progress_token, params_hash) = if kind == Kind::Request {
        let params = match params_text {
            Some(t) => params_compact(t)?,
            None if params.is_none() => Cow::Borrowed("null"),
            None => return None,
        };
        let mut text = String::with_capacity(m.map_or(0, str::len) + 1 + params.len());
        text.push_str(m.unwrap_or(""));
        text.push('\n');
        text.push_str(&params);
        (
            get(meta, "progressToken").map(|t| compact(t).into_owned()),
            Some(crate::hash::hash64(text.as_bytes())),
        )
    } else {
        (None, None)
    };
    Some(Message {
        kind,
        method: method.as_deref().map(Short::from),
        id: id.as_deref().map(Short::from),
        progress_token: token
            .filter(|_| progress_note)
            .map(|t| Short::from(compact(t).as_ref())),
        progress: progress.filter(|_| progress_note).and_then(as_f64),
        progress_total: total.filter(|_| progress_note).and_then(as_f64),
        rare: Rare {
            request_progress_token,
            protocol_version,
            params_hash,
            cancels,
            app_seq: seq,
            target,
            error_code,
        }
        .boxed(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const POINTERS: [&str; 7] = [
        "/params/app_seq",
        "/result/seq",
        "/params/a~1b",
        "/x/0",
        "",
        "/params",
        "/params/progress",
    ];

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
            // What `Value` rejects: lone surrogates, numbers out of range, too deep nesting.
            Just("\"cut \\ud83d\"".to_string()),
            Just("\"\\udc00\"".to_string()),
            Just("1e400".to_string()),
            Just("-1e400".to_string()),
            (118usize..131).prop_map(|n| format!("{}{}", "[".repeat(n), "]".repeat(n))),
            (118usize..131).prop_map(|n| format!("{}1{}", "{\"a\":".repeat(n), "}".repeat(n))),
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
                    key("name"),
                    key("uri"),
                    key("code"),
                    key("other"),
                    Just("\"\\ud800\"".to_string()),
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
            // Top-level scalars too (`value()` mostly nests).
            prop_oneof![3 => value(), 1 => scalar()],
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

        /// A batch read element by element gives what the whole `Value` tree gives (nesting
        /// near serde_json's limit aside: an element parsed alone is one level shallower), and
        /// a bound keeps the first elements.
        #[test]
        fn batch_read_by_elements_equals_value_path(
            msgs in prop::collection::vec(
                message().prop_filter("nesting far from the limit", |m| {
                    m.bytes().filter(|b| matches!(b, b'[' | b'{')).count() < 16
                }),
                0..6,
            ),
            ws in " {0,2}",
            max in 0usize..7,
        ) {
            let text = format!("{ws}[{ws}{}{ws}]{ws}", msgs.join(&format!("{ws},{ws}")));
            let p = pointers();
            let whole = super::super::parse_value(text.as_bytes(), &p);
            // (Errors alike; their positions may differ by a column inside a bad escape.)
            let batch = super::super::parse(text.as_bytes(), &p);
            prop_assert_eq!(batch.is_err(), whole.is_err(), "{}", text);
            if let Ok(ms) = batch {
                prop_assert_eq!(Ok(ms), whole.clone(), "{}", text);
            }
            if let Ok(all) = whole {
                let b = super::super::parse_bounded(&text, &p, max).unwrap();
                prop_assert!(b.batch);
                prop_assert_eq!(b.messages.to_vec(), all.iter().take(max).cloned().collect::<Vec<_>>());
                prop_assert_eq!(b.dropped, all.len().saturating_sub(max));
            }
        }

        /// Wherever the hand-written reader answers, the serde reader gives the same members;
        /// also on text broken by an edit (what the serde reader rejects, it must not accept).
        #[test]
        fn scan_equals_serde_reader(text in message(), edits in prop::collection::vec(edit(), 0..3)) {
            let mut text = text.into_bytes();
            for (at, op, c) in edits {
                let at = at.index(text.len() + 1);
                match op {
                    0 if at < text.len() => { text.remove(at); }
                    1 if at < text.len() => text[at] = c,
                    _ => text.insert(at, c),
                }
            }
            let Ok(text) = std::str::from_utf8(&text) else { return Ok(()) };
            let text = text.trim_matches([' ', '\t', '\n', '\r']);
            let keys = scan_keys();
            if let Some(t) = scan::top(text, &keys) {
                prop_assert_eq!(top_serde(text, &keys), Some(Top { params_text: None, ..t }), "{}", text);
            };
        }
    }

    /// The members of `params` [`classify_str`] asks for, with one sequence field.
    fn scan_keys() -> Vec<Cow<'static, str>> {
        PARAMS_KEYS
            .into_iter()
            .chain(["app_seq"])
            .map(Cow::Borrowed)
            .collect()
    }

    /// One edit of a text: where, delete/replace/insert, and a byte that matters to JSON.
    fn edit() -> impl Strategy<Value = (prop::sample::Index, u8, u8)> {
        (
            any::<prop::sample::Index>(),
            0u8..3,
            prop::sample::select(b"\"{}[],:\\/u0189eE.+- \t\n\x01\x1ftfnlrsad".to_vec()),
        )
    }

    /// Text the serde reader rejects is not accepted, and the common messages are read by the
    /// hand-written reader (else it would only cost time).
    #[test]
    fn scan_cases() {
        let keys = scan_keys();
        for text in [
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t-1","progress":3,"total":10,"app_seq":7}}"#,
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"a\nb \u00e9 \ud83d\ude00"}],"seq":4}}"#,
            r#"{"jsonrpc":"2.0","id":"x","error":{"code":-32000,"message":"m","data":[1.5,-0,2e10,true,false,null]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{}}}"#,
            r#" { "jsonrpc" : "2.0" , "method" : "notifications/cancelled" , "params" : { "requestId" : 3 } } "#,
            r#"{"id":1,"result":{},"id":2}"#,
            r#"{}"#,
            r#"{"id":1,"result":{"x":[1.5,-2.25e-3,6.02E+23,1e-9999,-0.0,12345678901234567890123]}}"#,
            &format!(r#"{{"id":1,"result":{{"x":1{}e-100}}}}"#, "0".repeat(300)),
        ] {
            let text = text.trim();
            let t = scan::top(text, &keys).unwrap_or_else(|| panic!("not read: {text}"));
            // (The serde reader does not keep `params`' text.)
            let t = Top {
                params_text: None,
                ..t
            };
            assert_eq!(top_serde(text, &keys), Some(t), "{text}");
        }
        let deep = format!(
            "{{\"id\":1,\"result\":{}{}}}",
            "[".repeat(70),
            "]".repeat(70)
        );
        for text in [
            "{\"id\":1,\"result\":\"a\u{1}b\"}",
            // Past the bytes looked at one by one: found by the vectorised check.
            "{\"id\":1,\"result\":\"0123456789abcdefghij\u{1f}b\"}",
            r#"{"id":1,"result":"0123456789abcdefghij"#,
            r#"{"id":1,"result":"0123456789\n0123456789abcdefghij\q"}"#,
            r#"{"id":1,"result":"\x"}"#,
            r#"{"id":1,"result":"\u12"}"#,
            r#"{"id":1,"result":"\ud800"}"#,
            r#"{"id":1,"result":"\ud800x"}"#,
            r#"{"id":1,"result":"\ud800\n"}"#,
            r#"{"id":1,"result":"\ud800\u0041"}"#,
            r#"{"id":1,"result":"\ud800\ud800"}"#,
            r#"{"id":1,"result":"\udc00\ud800"}"#,
            r#"{"id":1,"result":"\ud83d\ude0"}"#,
            r#"{"id":1,"result":1e400}"#,
            // A raw member with 120 brackets, in a string: the serde reader refuses it too.
            &format!(r#"{{"method":"{}","params":{{}}}}"#, "[".repeat(120)),
            r#"{"id":1,"result":1.8e308}"#,
            r#"{"id":1,"result":0.00001e320}"#,
            r#"{"id":1,"result":[1,]}"#,
            r#"{"id":1,"result":{"a":1,}}"#,
            r#"{"id":1,}"#,
            r#"{"id":01}"#,
            r#"{"id":-}"#,
            r#"{"id":1.}"#,
            r#"{"id":1e}"#,
            r#"{"id":.5}"#,
            r#"{"id":tru}"#,
            r#"{"id":truex}"#,
            r#"{"id":1} x"#,
            r#"{"id":1"#,
            r#"{"id" 1}"#,
            r#"{"i\u0064":1}"#,
            r#"{"params":5}"#,
            r#"{"result":{"protocolVersion":1}}"#,
            deep.as_str(),
        ] {
            assert_eq!(scan::top(text, &keys), None, "{text}");
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
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"work","arguments":{"q":"abc é","n":[1,-2,true,null]},"_meta":{"progressToken":1}}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"_meta":{"progressToken":"p"},"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#,
            r#"{"jsonrpc":"2.0","id":"r","method":"tools/list"}"#,
        ] {
            let fast = classify_text(text.as_bytes(), &p).unwrap_or_else(|| panic!("slow: {text}"));
            assert_eq!(
                super::super::parse_value(text.as_bytes(), &p),
                Ok(vec![fast]),
                "{text}"
            );
        }
        // Text the `Value` path rejects is rejected here too (the reviewer's cases: a server that
        // cuts text inside a surrogate pair, exponents out of range, nesting past the limit).
        let deep = format!(
            "{{\"id\":1,\"result\":{}{}}}",
            "[".repeat(140),
            "]".repeat(140)
        );
        for text in [
            r#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"cut \ud83d"}]}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"\udc00"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"x":1e400}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"\ud800":1}}"#,
            r#"{"method":"\ud800","method":"notifications/message"}"#,
        ] {
            assert!(
                super::super::parse_value(text.as_bytes(), &p).is_err(),
                "{text}"
            );
            assert!(super::super::parse(text.as_bytes(), &p).is_err(), "{text}");
        }
        // Nesting past serde_json's limit is no error in JSON: the message is read from its
        // top-level members, and said to be too deep.
        assert!(super::super::parse_value(deep.as_bytes(), &p).is_err());
        let d = super::super::parse_bounded(&deep, &p, 1).unwrap();
        assert_eq!((d.too_deep, d.messages[0].kind), (1, Kind::Response));
        // Requests whose `params` serde_json would write otherwise (whitespace, an escape, a
        // number it rewrites, a name twice), batches, pointer steps through arrays and non-JSON
        // take the general path.
        for text in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"a": 1}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"a":"\u0041"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"a":1.0}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"a":-0}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"a":{"b":1,"b":2}}}"#,
            r#"[{"jsonrpc":"2.0","method":"a"}]"#,
            r#"{"x":[1]}"#,
            "{not json",
            r#"{"a":1} {"b":2}"#,
        ] {
            assert!(classify_text(text.as_bytes(), &p).is_none(), "{text}");
        }
    }
}
