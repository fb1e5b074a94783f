//! JSON-RPC 2.0 message classification (JSON-RPC 2.0 specification §4–§6),
//! with the MCP fields the detectors need: `notifications/progress`
//! (`params.progressToken`, `params.progress`, MCP spec "Progress" utility)
//! and configurable application sequence fields (JSON pointers, RFC 6901).

use serde::{Serialize, Serializer};
use serde_json::Value;

mod fast;
pub mod split;

/// The kind of one JSON-RPC message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Has `method` and `id`.
    Request,
    /// Has `method`, no `id`.
    Notification,
    /// Has `result`.
    Response,
    /// Has `error`.
    Error,
    /// Valid JSON that is not a JSON-RPC message.
    Invalid,
}

impl Kind {
    /// Lower-case name for tables.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Request => "request",
            Kind::Notification => "notification",
            Kind::Response => "response",
            Kind::Error => "error",
            Kind::Invalid => "invalid",
        }
    }
}

pub use crate::text::Short;

/// One classified message: the members every message may have inline, the rest in [`Rare`].
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// Request, notification, response, error or invalid.
    pub kind: Kind,
    /// `method`, for requests and notifications.
    pub method: Option<Short>,
    /// `id` as compact JSON text (`2`, `"abc"`), so that `2` and `"2"` stay different.
    pub id: Option<Short>,
    /// `params.progressToken` of `notifications/progress`, as compact JSON text.
    pub progress_token: Option<Short>,
    /// `params.progress` of `notifications/progress` (may be fractional).
    pub progress: Option<f64>,
    /// `params.total` of `notifications/progress`.
    pub progress_total: Option<f64>,
    /// What few messages carry (requests, `initialize`, cancellations, configured sequence
    /// fields); `None` when all of it is absent.
    pub rare: Option<Box<Rare>>,
}

/// The members of a [`Message`] that few messages have.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Rare {
    /// `params._meta.progressToken` of a request, as compact JSON text.
    pub request_progress_token: Option<String>,
    /// `params.protocolVersion` of `initialize` requests and results, or the 2026-07-28
    /// per-request `params._meta["io.modelcontextprotocol/protocolVersion"]`.
    pub protocol_version: Option<String>,
    /// For requests: a 64-bit hash ([`crate::hash::hash64`]) of `method` and `params` without
    /// `_meta`, to recognise a request re-sent under another id (MCP 2026-07-28: a broken
    /// response stream means the request must be re-issued).
    pub params_hash: Option<u64>,
    /// For `notifications/cancelled`: the `params.requestId` it cancels, as compact JSON.
    pub cancels: Option<String>,
    /// Values of the configured application sequence pointers: (pointer index, value).
    pub app_seq: Vec<(usize, f64)>,
    /// For requests: what the request names, `params.name` (a tool or prompt), else
    /// `params.uri` (a resource), when it is a string (MCP "Tools", "Prompts", "Resources").
    pub target: Option<String>,
    /// For errors: `error.code` when it is an integer (JSON-RPC 2.0 §5.1).
    pub error_code: Option<i64>,
}

impl Rare {
    /// `Some` unless every member is absent.
    pub fn boxed(self) -> Option<Box<Rare>> {
        (self != Rare::default()).then(|| Box::new(self))
    }
}

impl Message {
    /// [`Rare::request_progress_token`].
    pub fn request_progress_token(&self) -> Option<&str> {
        self.rare.as_ref()?.request_progress_token.as_deref()
    }
    /// [`Rare::protocol_version`].
    pub fn protocol_version(&self) -> Option<&str> {
        self.rare.as_ref()?.protocol_version.as_deref()
    }
    /// [`Rare::params_hash`].
    pub fn params_hash(&self) -> Option<u64> {
        self.rare.as_ref()?.params_hash
    }
    /// [`Rare::cancels`].
    pub fn cancels(&self) -> Option<&str> {
        self.rare.as_ref()?.cancels.as_deref()
    }
    /// [`Rare::app_seq`].
    pub fn app_seq(&self) -> &[(usize, f64)] {
        self.rare.as_ref().map_or(&[], |r| &r.app_seq)
    }
    /// [`Rare::target`].
    pub fn target(&self) -> Option<&str> {
        self.rare.as_ref()?.target.as_deref()
    }
    /// [`Rare::error_code`].
    pub fn error_code(&self) -> Option<i64> {
        self.rare.as_ref()?.error_code
    }
}

/// Most elements of one batch (a JSON array, MCP 2025-03-26) kept as messages: past them the
/// elements are only checked to be well-formed, and counted ([`Parsed::dropped`]).
pub const MAX_BATCH: usize = 65_536;

/// What a body or an event's `data` parsed to.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Parsed {
    /// Its messages: one, or a batch's elements up to the bound given to [`parse_bounded`].
    pub messages: smallvec::SmallVec<[Message; 1]>,
    /// Whether it was a JSON array (a batch).
    pub batch: bool,
    /// Elements of the batch past the bound, not made messages.
    pub dropped: usize,
    /// Messages that are valid JSON but no JSON-RPC message (`{}`, `0`): [`Kind::Invalid`].
    pub invalid: usize,
    /// Messages nested deeper than serde_json reads (128 levels), classified from their
    /// top-level members ([`split::shallow`]).
    pub too_deep: usize,
}

/// Parse a body or SSE `data` into messages; a JSON array (batch, MCP 2025-03-26) is split, at
/// most `max` of its elements kept as messages (the others checked and counted). Elements are
/// read one by one ([`split::array_elements`]): no tree of the whole batch is built.
///
/// Errors: the text is not JSON (the serde_json message), or an element kept is not.
pub fn parse_bounded(text: &str, app_seq: &[String], max: usize) -> Result<Parsed, String> {
    let ws = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r');
    let mut out = Parsed::default();
    if text.bytes().find(|b| !ws(b)) != Some(b'[') {
        // The text as given: serde_json's error positions count its lines.
        let (m, deep) = classify_one(text, app_seq)?;
        out.invalid = usize::from(m.kind == Kind::Invalid);
        out.too_deep = usize::from(deep);
        out.messages.push(m);
        return Ok(out);
    }
    out.batch = true;
    let t = text.trim_matches([' ', '\t', '\n', '\r']);
    // Where an element is not JSON, the whole text's error as serde_json gives it, found
    // without a tree.
    let whole_error = || fast::value_error(text).unwrap_or_else(|| "not a JSON array".into());
    let Some(elements) = split::array_elements(t) else {
        return Err(whole_error());
    };
    out.dropped = elements.len().saturating_sub(max);
    for r in elements.into_iter().take(max) {
        let (m, deep) = classify_one(&t[r], app_seq).map_err(|_| whole_error())?;
        out.invalid += usize::from(m.kind == Kind::Invalid);
        out.too_deep += usize::from(deep);
        out.messages.push(m);
    }
    Ok(out)
}

/// One JSON value as a message: the fast path, else through a `serde_json::Value`, else, for a
/// value nested past serde_json's limit, from its top-level members (and `true`).
fn classify_one(text: &str, app_seq: &[String]) -> Result<(Message, bool), String> {
    if let Some(m) = fast::classify_str(text, app_seq) {
        return Ok((m, false));
    }
    match serde_json::from_str::<Value>(text) {
        Ok(v) => Ok((classify(&v, app_seq), false)),
        Err(e) if e.to_string().starts_with("recursion limit exceeded") => split::shallow(text)
            .map(|m| (m, true))
            .ok_or_else(|| e.to_string()),
        Err(e) => Err(e.to_string()),
    }
}

/// Parse a body or SSE `data` into messages, every element of a batch kept.
/// `app_seq` are JSON pointers to application sequence numbers.
/// Returns `Err` with the serde_json message when the text is not JSON.
pub fn parse(text: &[u8], app_seq: &[String]) -> Result<Vec<Message>, String> {
    match simdutf8::basic::from_utf8(text) {
        Ok(s) => parse_bounded(s, app_seq, usize::MAX).map(|p| p.messages.into_vec()),
        // serde_json's message for text that is not UTF-8.
        Err(_) => parse_value(text, app_seq),
    }
}

/// [`parse`] on text already known to be UTF-8 (an SSE `data` buffer): not validated again,
/// and one message, the usual case, without an allocation.
pub fn parse_str(
    text: &str,
    app_seq: &[String],
) -> Result<smallvec::SmallVec<[Message; 1]>, String> {
    parse_bounded(text, app_seq, usize::MAX).map(|p| p.messages)
}

/// [`parse`] through a `serde_json::Value` tree: the general path, and the reference the fast
/// path is tested against.
pub fn parse_value(text: &[u8], app_seq: &[String]) -> Result<Vec<Message>, String> {
    let v: Value = serde_json::from_slice(text).map_err(|e| e.to_string())?;
    Ok(match v {
        Value::Array(items) => items.iter().map(|m| classify(m, app_seq)).collect(),
        other => vec![classify(&other, app_seq)],
    })
}

fn compact(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// Classify one JSON value.
pub fn classify(v: &Value, app_seq: &[String]) -> Message {
    let obj = v.as_object();
    let get = |k: &str| obj.and_then(|o| o.get(k));
    let method = get("method").and_then(|m| m.as_str()).map(str::to_string);
    let id = get("id")
        .filter(|i| !i.is_null() || get("error").is_some())
        .map(compact);
    let kind = match (&method, &id) {
        _ if obj.is_none() => Kind::Invalid,
        (Some(_), Some(_)) => Kind::Request,
        (Some(_), None) => Kind::Notification,
        (None, _) if get("result").is_some() => Kind::Response,
        (None, _) if get("error").is_some() => Kind::Error,
        _ => Kind::Invalid,
    };
    let params = get("params");
    let (mut progress_token, mut progress, mut progress_total) = (None, None, None);
    if method.as_deref() == Some("notifications/progress") {
        progress_token = params.and_then(|p| p.get("progressToken")).map(compact);
        progress = params
            .and_then(|p| p.get("progress"))
            .and_then(Value::as_f64);
        progress_total = params.and_then(|p| p.get("total")).and_then(Value::as_f64);
    }
    let request_progress_token = if kind == Kind::Request {
        params
            .and_then(|p| p.get("_meta")?.get("progressToken"))
            .map(compact)
    } else {
        None
    };
    let protocol_version = params
        .and_then(|p| p.get("protocolVersion"))
        .or_else(|| get("result").and_then(|r| r.get("protocolVersion")))
        .or_else(|| {
            params.and_then(|p| {
                p.get("_meta")?
                    .get("io.modelcontextprotocol/protocolVersion")
            })
        })
        .and_then(Value::as_str)
        .map(str::to_string);
    let app_seq = app_seq
        .iter()
        .enumerate()
        .filter_map(|(i, p)| v.pointer(p).and_then(Value::as_f64).map(|x| (i, x)))
        .collect();
    let params_hash = (kind == Kind::Request).then(|| {
        // `params` without `_meta`, compact, members in their order; serialized in place, not
        // cloned first.
        let mut text = method.as_deref().unwrap_or("").as_bytes().to_vec();
        text.push(b'\n');
        let mut ser = serde_json::Serializer::new(&mut text);
        // Writing into a Vec does not fail, nor does serializing a `Value`.
        let _ = match params {
            Some(Value::Object(o)) => ser.collect_map(o.iter().filter(|(k, _)| *k != "_meta")),
            Some(p) => p.serialize(&mut ser),
            None => Value::Null.serialize(&mut ser),
        };
        crate::hash::hash64(&text)
    });
    let cancels = if method.as_deref() == Some("notifications/cancelled") {
        params.and_then(|p| p.get("requestId")).map(compact)
    } else {
        None
    };
    let target = (kind == Kind::Request)
        .then(|| {
            let p = params?;
            p.get("name")
                .and_then(Value::as_str)
                .or_else(|| p.get("uri").and_then(Value::as_str))
                .map(str::to_string)
        })
        .flatten();
    let error_code = (kind == Kind::Error)
        .then(|| get("error")?.get("code")?.as_i64())
        .flatten();
    Message {
        kind,
        method: method.map(Short::from),
        id: id.map(Short::from),
        progress_token: progress_token.map(Short::from),
        progress,
        progress_total,
        rare: Rare {
            request_progress_token,
            protocol_version,
            params_hash,
            cancels,
            app_seq,
            target,
            error_code,
        }
        .boxed(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_progress() {
        let ms = parse(br#"[{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":{"progressToken":2}}},
            {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":2,"progress":1.5,"total":20}},
            {"jsonrpc":"2.0","id":"a","result":{}},{"jsonrpc":"2.0","id":null,"error":{"code":-1}}, 7]"#, &[]).unwrap();
        assert_eq!(
            ms.iter().map(|m| m.kind).collect::<Vec<_>>(),
            vec![
                Kind::Request,
                Kind::Notification,
                Kind::Response,
                Kind::Error,
                Kind::Invalid
            ]
        );
        assert_eq!(ms[0].request_progress_token(), Some("2"));
        assert_eq!(ms[1].progress, Some(1.5));
        assert_eq!(ms[1].progress_total, Some(20.0));
        assert_eq!(ms[2].id.as_deref(), Some("\"a\""));
        assert_eq!(ms[3].id.as_deref(), Some("null"));
        assert!(parse(b"{not json", &[]).is_err());
    }

    /// What a request names (`params.name`, else `params.uri`) and an error's code, on both
    /// paths (the fast one for these common shapes, the general one for a batch).
    #[test]
    fn target_and_error_code() {
        let one = |t: &str| parse(t.as_bytes(), &[]).unwrap().remove(0);
        let call = one(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"count","arguments":{}}}"#,
        );
        assert_eq!(call.target(), Some("count"));
        let read = one(
            r#"{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///a"}}"#,
        );
        assert_eq!(read.target(), Some("file:///a"));
        let err = one(
            r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32001,"message":"Session not found"}}"#,
        );
        assert_eq!(err.error_code(), Some(-32001));
        let batch = parse(
            br#"[{"jsonrpc":"2.0","id":4,"method":"prompts/get","params":{"name":7,"uri":"u"}},
                {"jsonrpc":"2.0","id":5,"error":{"code":1.5}}]"#,
            &[],
        )
        .unwrap();
        assert_eq!(batch[0].target(), Some("u"));
        assert_eq!(batch[1].error_code(), None);
        // A notification names nothing.
        assert_eq!(
            one(r#"{"jsonrpc":"2.0","method":"x","params":{"name":"n"}}"#).target(),
            None
        );
    }

    #[test]
    fn app_seq_pointer() {
        let ms = parse(
            br#"{"jsonrpc":"2.0","method":"x","params":{"app_seq":17}}"#,
            &["/params/app_seq".to_string()],
        )
        .unwrap();
        assert_eq!(ms[0].app_seq(), [(0, 17.0)]);
    }
}
