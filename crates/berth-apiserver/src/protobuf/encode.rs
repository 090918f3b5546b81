//! Kubernetes protobuf answers: the JSON the server stores, encoded as kube-apiserver writes
//! it for a client that asks for `application/vnd.kubernetes.protobuf`.
//!
//! The inverse of [`super::decode`], walking the same table: an object is `k8s\0` followed
//! by a `runtime.Unknown{1: TypeMeta{1: apiVersion, 2: kind}, 2: raw, 3: "", 4: ""}` (Go
//! writes the empty contentEncoding and contentType too), `raw` the object per
//! `generated.proto`, fields in ascending tag order as gogo-protobuf's marshaller writes them,
//! map entries sorted by key.
//!
//! What JSON carries is written; what it leaves out is not. A Go client reads a missing value
//! field as its zero and a missing pointer as nil, which is what JSON without the key meant,
//! so the answers decode to the same objects as Go's. They are not always Go's bytes: Go
//! also writes its value fields' zeros (`namespace: ""`), and the table does not say which
//! fields are values. `null` is a missing key.
//!
//! Lists (`{1: ListMeta, 2: repeated items}`), `Status` and watch events are apimachinery's
//! messages, not in the generated table: they are written by hand here, per
//! `k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto`.

use super::{schema, Field, Scalar, Special, Ty, INLINE, MAGIC};
use base64::Engine as _;
use serde_json::Value;
use std::sync::OnceLock;

/// Nesting deeper than this is refused (the decoder's bound too).
const MAX_DEPTH: usize = 100;

/// The table index of the message for `kind` in `api_version`, if it has a protobuf form.
pub fn root(api_version: &str, kind: &str) -> Option<usize> {
    schema::ROOTS
        .iter()
        .find(|(v, k, _)| *k == kind && *v == api_version)
        .map(|(_, _, index)| *index)
}

/// Kinds whose table message holds only what clients send, not what the server answers:
/// `SelfSubjectReview` is metadata alone there, without the `status.userInfo` that
/// `kubectl auth whoami` reads, so it is answered in JSON (which kubectl also accepts).
const REQUEST_ONLY: &[&str] = &["SelfSubjectReview"];

/// Whether objects of `kind` in `api_version` can be answered in protobuf.
pub fn supports(api_version: &str, kind: &str) -> bool {
    kind == "Status" || (root(api_version, kind).is_some() && !REQUEST_ONLY.contains(&kind))
}

/// `obj` (with its `apiVersion` and `kind`) as `k8s\0` + `runtime.Unknown`.
pub fn encode(obj: &Value) -> Result<Vec<u8>, String> {
    let (api_version, kind) = type_of(obj)?;
    let mut raw = Vec::with_capacity(256);
    if kind == "Status" {
        status(obj, &mut raw)?;
    } else {
        let index = root(api_version, kind).ok_or_else(|| no_protobuf(api_version, kind))?;
        message(obj, index, 0, &mut raw)?;
    }
    Ok(envelope(api_version, kind, &raw))
}

/// A list `{"apiVersion", "kind": "<Kind>List", "metadata", "items"}` of objects of `item_kind`
/// as `k8s\0` + `runtime.Unknown` around `{1: ListMeta, 2: repeated item}` (items carry no
/// apiVersion and kind in protobuf: the list's type says what they are).
pub fn encode_list(list: &Value, item_kind: &str) -> Result<Vec<u8>, String> {
    let (api_version, kind) = type_of(list)?;
    let index = root(api_version, item_kind).ok_or_else(|| no_protobuf(api_version, item_kind))?;
    let mut raw = Vec::with_capacity(1024);
    nested(&mut raw, 1, |buf| {
        list_meta(&list["metadata"], buf);
        Ok(())
    })?;
    for item in list["items"].as_array().into_iter().flatten() {
        nested(&mut raw, 2, |buf| message(item, index, 0, buf))?;
    }
    Ok(envelope(api_version, kind, &raw))
}

/// One watch frame: the 4-byte big-endian length, then `metav1.WatchEvent{1: type,
/// 2: RawExtension{1: object}}` where `object` is the object's full `k8s\0` envelope; the
/// event itself has no envelope (upstream's protobuf stream serializer is the raw one).
pub fn watch_frame(event_type: &str, object: &[u8]) -> Vec<u8> {
    let mut event = Vec::with_capacity(object.len() + 32);
    string(&mut event, 1, event_type);
    let _ = nested(&mut event, 2, |buf| {
        bytes(buf, 1, object);
        Ok(())
    });
    let mut frame = Vec::with_capacity(event.len() + 4);
    frame.extend_from_slice(&(event.len() as u32).to_be_bytes());
    frame.extend_from_slice(&event);
    frame
}

fn type_of(obj: &Value) -> Result<(&str, &str), String> {
    let api_version = obj["apiVersion"].as_str().unwrap_or("");
    let kind = obj["kind"].as_str().unwrap_or("");
    if kind.is_empty() {
        return Err("an object without a kind has no protobuf form".into());
    }
    Ok((api_version, kind))
}

fn no_protobuf(api_version: &str, kind: &str) -> String {
    format!("objects of kind {kind:?} in version {api_version:?} have no protobuf form")
}

fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len() + api_version.len() + kind.len() + 24);
    out.extend_from_slice(MAGIC);
    let _ = nested(&mut out, 1, |buf| {
        string(buf, 1, api_version);
        string(buf, 2, kind);
        Ok(())
    });
    bytes(&mut out, 2, raw);
    string(&mut out, 3, "");
    string(&mut out, 4, "");
    out
}

// Wire primitives ---------------------------------------------------------------------------

const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;

fn varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

fn key(buf: &mut Vec<u8>, tag: u32, wire: u8) {
    varint(buf, u64::from(tag) << 3 | u64::from(wire));
}

fn bytes(buf: &mut Vec<u8>, tag: u32, b: &[u8]) {
    key(buf, tag, LEN);
    varint(buf, b.len() as u64);
    buf.extend_from_slice(b);
}

fn string(buf: &mut Vec<u8>, tag: u32, s: &str) {
    bytes(buf, tag, s.as_bytes());
}

/// Go writes an int32 as the varint of its sign-extended 64 bits, as an int64.
fn int(buf: &mut Vec<u8>, tag: u32, v: i64) {
    key(buf, tag, VARINT);
    varint(buf, v as u64);
}

/// Field `tag` holding what `body` writes: written in place, then its length put before it.
fn nested(
    buf: &mut Vec<u8>,
    tag: u32,
    body: impl FnOnce(&mut Vec<u8>) -> Result<(), String>,
) -> Result<(), String> {
    key(buf, tag, LEN);
    let start = buf.len();
    body(buf)?;
    let mut len = Vec::with_capacity(5);
    varint(&mut len, (buf.len() - start) as u64);
    buf.splice(start..start, len);
    Ok(())
}

// Messages of the table -----------------------------------------------------------------------

/// Each message's field positions in ascending tag order, the order Go writes them in.
fn tag_order(index: usize) -> &'static [usize] {
    static ORDER: OnceLock<Vec<Vec<usize>>> = OnceLock::new();
    let order = ORDER.get_or_init(|| {
        schema::MESSAGES
            .iter()
            .map(|m| {
                let mut positions: Vec<usize> = (0..m.2.len()).collect();
                positions.sort_by_key(|&i| m.2[i].0);
                positions
            })
            .collect()
    });
    &order[index]
}

/// The fields of message `index` taken from the JSON object `obj` (an inline message reads
/// its fields from its parent's object, which is what it is given).
fn message(obj: &Value, index: usize, depth: usize, buf: &mut Vec<u8>) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err("object nested too deeply for protobuf".into());
    }
    let Value::Object(map) = obj else {
        return Err(format!(
            "a {} is not a JSON object",
            schema::MESSAGES[index].0
        ));
    };
    let schema = &schema::MESSAGES[index];
    for &i in tag_order(index) {
        let field = &schema.2[i];
        if field.3 & INLINE != 0 {
            if let Ty::One(Scalar::Msg(inner)) = field.2 {
                // Go writes an embedded struct always, even when none of its fields is set.
                nested(buf, field.0, |b| message(obj, inner, depth + 1, b))?;
            }
            continue;
        }
        let value = match map.get(field.1) {
            None | Some(Value::Null) => continue,
            Some(v) => v,
        };
        field_value(buf, schema.0, field, value, depth)?;
    }
    Ok(())
}

fn field_value(
    buf: &mut Vec<u8>,
    parent: &str,
    field: &Field,
    value: &Value,
    depth: usize,
) -> Result<(), String> {
    let what = || format!("{parent}.{}", field.1);
    match field.2 {
        Ty::One(scalar) => scalar_value(buf, field.0, scalar, value, depth, &what),
        Ty::Many(scalar) => {
            let items = value
                .as_array()
                .ok_or_else(|| format!("{} is not a JSON array", what()))?;
            for item in items {
                // Proto2 repeated scalars are not packed: one field per element.
                scalar_value(buf, field.0, scalar, item, depth, &what)?;
            }
            Ok(())
        }
        Ty::Map(scalar) => {
            let map = value
                .as_object()
                .ok_or_else(|| format!("{} is not a JSON object", what()))?;
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            for k in keys {
                nested(buf, field.0, |entry| {
                    string(entry, 1, k);
                    scalar_value(entry, 2, scalar, &map[k.as_str()], depth, &what)
                })?;
            }
            Ok(())
        }
    }
}

fn scalar_value(
    buf: &mut Vec<u8>,
    tag: u32,
    scalar: Scalar,
    value: &Value,
    depth: usize,
    what: &dyn Fn() -> String,
) -> Result<(), String> {
    let wrong = |expected: &str| format!("{} is not {expected}", what());
    match scalar {
        Scalar::Str => string(buf, tag, value.as_str().ok_or_else(|| wrong("a string"))?),
        Scalar::Bool => int(
            buf,
            tag,
            i64::from(value.as_bool().ok_or_else(|| wrong("a boolean"))?),
        ),
        Scalar::I32 | Scalar::I64 => {
            int(buf, tag, integer(value).ok_or_else(|| wrong("an integer"))?)
        }
        Scalar::F64 => {
            key(buf, tag, FIXED64);
            let f = value.as_f64().ok_or_else(|| wrong("a number"))?;
            buf.extend_from_slice(&f.to_le_bytes());
        }
        Scalar::Bytes => {
            let text = value.as_str().ok_or_else(|| wrong("a base64 string"))?;
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_err(|_| wrong("valid base64"))?;
            bytes(buf, tag, &decoded);
        }
        Scalar::Msg(index) => match schema::MESSAGES[index].1 {
            Special::None => nested(buf, tag, |b| message(value, index, depth + 1, b))?,
            special => nested(buf, tag, |b| special_value(b, special, value, what))?,
        },
    }
    Ok(())
}

fn integer(value: &Value) -> Option<i64> {
    value.as_i64().or_else(|| {
        value
            .as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 9.2e18)
            .map(|f| f as i64)
    })
}

/// The fields of a message whose JSON form is not an object.
fn special_value(
    buf: &mut Vec<u8>,
    special: Special,
    value: &Value,
    what: &dyn Fn() -> String,
) -> Result<(), String> {
    let wrong = |expected: &str| format!("{} is not {expected}", what());
    match special {
        Special::None => {}
        Special::Quantity => match value {
            Value::String(s) => string(buf, 1, s),
            Value::Number(n) => string(buf, 1, &n.to_string()),
            _ => return Err(wrong("a quantity")),
        },
        // Go writes all three fields of an IntOrString.
        Special::IntOrString => match value {
            Value::String(s) => {
                int(buf, 1, 1);
                int(buf, 2, 0);
                string(buf, 3, s);
            }
            other => {
                int(buf, 1, 0);
                int(
                    buf,
                    2,
                    integer(other).ok_or_else(|| wrong("an int or string"))?,
                );
                string(buf, 3, "");
            }
        },
        // Timestamp{seconds, nanos}; metav1.Time's JSON has seconds only, and Go zeroes its
        // nanos too.
        Special::Time | Special::MicroTime => {
            let text = value.as_str().ok_or_else(|| wrong("a timestamp"))?;
            if text.is_empty() {
                return Ok(()); // the zero time: an empty message, as Go writes it
            }
            let time = chrono::DateTime::parse_from_rfc3339(text)
                .map_err(|_| wrong("an RFC 3339 timestamp"))?;
            int(buf, 1, time.timestamp());
            let nanos = if special == Special::MicroTime {
                i64::from(time.timestamp_subsec_micros()) * 1000
            } else {
                0
            };
            int(buf, 2, nanos);
        }
        Special::Duration => {
            let text = value.as_str().ok_or_else(|| wrong("a duration"))?;
            int(
                buf,
                1,
                parse_go_duration(text).ok_or_else(|| wrong("a Go duration"))?,
            );
        }
        Special::RawJson => {
            let raw = serde_json::to_vec(value).map_err(|e| e.to_string())?;
            bytes(buf, 1, &raw);
        }
    }
    Ok(())
}

/// Go's `time.ParseDuration` for what `Duration.String()` writes (`1h2m3.5s`, `1.5ms`).
pub(crate) fn parse_go_duration(text: &str) -> Option<i64> {
    let (negative, mut rest) = match text.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    if rest == "0" {
        return Some(0);
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .filter(|end| *end > 0)?;
        let number: f64 = rest[..number_end].parse().ok()?;
        rest = &rest[number_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_end] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        total += number * scale;
        rest = &rest[unit_end..];
    }
    let nanos = total.round();
    (nanos < 9.2e18).then_some(if negative { -nanos } else { nanos } as i64)
}

// apimachinery's own messages -------------------------------------------------------------------

/// `ListMeta{1: selfLink, 2: resourceVersion, 3: continue, 4: remainingItemCount}`: Go
/// writes the three strings always, the count (a pointer) when set.
fn list_meta(meta: &Value, buf: &mut Vec<u8>) {
    let text = |k: &str| meta[k].as_str().unwrap_or("");
    string(buf, 1, text("selfLink"));
    string(buf, 2, text("resourceVersion"));
    string(buf, 3, text("continue"));
    if let Some(n) = meta["remainingItemCount"].as_i64() {
        int(buf, 4, n);
    }
}

/// `Status{1: ListMeta, 2: status, 3: message, 4: reason, 5: StatusDetails, 6: code}`, with
/// `StatusDetails{1: name, 2: group, 3: kind, 4: repeated StatusCause, 5: retryAfterSeconds,
/// 6: uid}` and `StatusCause{1: reason (JSON "reason"), 2: message, 3: field}`; Go writes
/// every value field, and the details (a pointer) when set.
fn status(obj: &Value, buf: &mut Vec<u8>) -> Result<(), String> {
    let text = |v: &Value, k: &str| v[k].as_str().unwrap_or("").to_string();
    nested(buf, 1, |b| {
        list_meta(&obj["metadata"], b);
        Ok(())
    })?;
    string(buf, 2, &text(obj, "status"));
    string(buf, 3, &text(obj, "message"));
    string(buf, 4, &text(obj, "reason"));
    if let Some(details) = obj.get("details").filter(|d| d.is_object()) {
        nested(buf, 5, |b| {
            string(b, 1, &text(details, "name"));
            string(b, 2, &text(details, "group"));
            string(b, 3, &text(details, "kind"));
            for cause in details["causes"].as_array().into_iter().flatten() {
                nested(b, 4, |c| {
                    string(c, 1, &text(cause, "reason"));
                    string(c, 2, &text(cause, "message"));
                    string(c, 3, &text(cause, "field"));
                    Ok(())
                })?;
            }
            int(b, 5, details["retryAfterSeconds"].as_i64().unwrap_or(0));
            string(b, 6, &text(details, "uid"));
            Ok(())
        })?;
    }
    int(buf, 6, obj["code"].as_i64().unwrap_or(0));
    Ok(())
}
