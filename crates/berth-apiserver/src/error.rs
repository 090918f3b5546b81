//! API errors, turned into Kubernetes `Status` objects at the HTTP edge.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

/// Upstream's message for a `continue` token whose revision was compacted.
const INCONSISTENT_CONTINUE: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

/// One field-level cause inside a 422 `Invalid` Status.
#[derive(Debug, Clone)]
pub struct Cause {
    pub reason: String,
    pub message: String,
    pub field: String,
}

/// Everything a request can fail with. Each variant maps to one Kubernetes `Status` reason.
#[derive(Debug, Clone)]
pub enum ApiError {
    NotFound {
        resource: String,
        name: String,
    },
    /// A path or resource the server does not serve.
    NoRoute,
    AlreadyExists {
        resource: String,
        name: String,
    },
    Conflict {
        resource: String,
        name: String,
        message: String,
    },
    /// Server-side apply would change fields other managers own (upstream `NewApplyConflict`:
    /// 409 Conflict, one `FieldManagerConflict` cause per field).
    ApplyConflict {
        message: String,
        causes: Vec<Cause>,
    },
    Invalid {
        kind: String,
        name: String,
        causes: Vec<Cause>,
    },
    BadRequest(String),
    Unauthorized,
    Forbidden(String),
    /// A request the authorizer denied (upstream `NewForbidden`): `group`/`resource` empty for
    /// a non-resource path, `name` empty for a collection; `reason` is the denial's words.
    Denied {
        group: String,
        resource: String,
        name: String,
        reason: String,
    },
    MethodNotAllowed(String),
    UnsupportedMediaType(String),
    /// A body over the server's limit (upstream 413, checked before it is buffered whole).
    RequestEntityTooLarge(String),
    Expired(String),
    /// A list's `continue` token whose revision was compacted (upstream's
    /// `handleCompactedErrorForPaging`): 410 Expired, with `continue_token` in the Status's
    /// `metadata.continue` to list the remainder at the latest revision.
    InconsistentContinue {
        continue_token: String,
    },
    TooManyRequests {
        message: String,
        causes: Vec<Cause>,
    },
    Internal(String),
    /// A whole Status decided elsewhere: an admission webhook's refusal (its own code and
    /// message), a ValidatingAdmissionPolicy's denial.
    Status(Box<Value>),
}

impl ApiError {
    /// An error answered with `status` as it is.
    pub fn status_of(status: Value) -> ApiError {
        ApiError::Status(Box::new(status))
    }

    pub fn code(&self) -> u16 {
        match self {
            ApiError::Status(s) => s["code"]
                .as_u64()
                .and_then(|c| u16::try_from(c).ok())
                .filter(|c| (400..600).contains(c))
                .unwrap_or(500),
            ApiError::NotFound { .. } | ApiError::NoRoute => 404,
            ApiError::AlreadyExists { .. }
            | ApiError::Conflict { .. }
            | ApiError::ApplyConflict { .. } => 409,
            ApiError::Invalid { .. } => 422,
            ApiError::BadRequest(_) => 400,
            ApiError::Unauthorized => 401,
            ApiError::Forbidden(_) | ApiError::Denied { .. } => 403,
            ApiError::MethodNotAllowed(_) => 405,
            ApiError::UnsupportedMediaType(_) => 415,
            ApiError::RequestEntityTooLarge(_) => 413,
            ApiError::Expired(_) | ApiError::InconsistentContinue { .. } => 410,
            ApiError::TooManyRequests { .. } => 429,
            ApiError::Internal(_) => 500,
        }
    }

    fn reason(&self) -> &'static str {
        match self {
            ApiError::Status(_) => "",
            ApiError::NotFound { .. } | ApiError::NoRoute => "NotFound",
            ApiError::AlreadyExists { .. } => "AlreadyExists",
            ApiError::Conflict { .. } | ApiError::ApplyConflict { .. } => "Conflict",
            ApiError::Invalid { .. } => "Invalid",
            ApiError::BadRequest(_) => "BadRequest",
            ApiError::Unauthorized => "Unauthorized",
            ApiError::Forbidden(_) | ApiError::Denied { .. } => "Forbidden",
            ApiError::MethodNotAllowed(_) => "MethodNotAllowed",
            ApiError::UnsupportedMediaType(_) => "UnsupportedMediaType",
            ApiError::RequestEntityTooLarge(_) => "RequestEntityTooLarge",
            ApiError::Expired(_) | ApiError::InconsistentContinue { .. } => "Expired",
            ApiError::TooManyRequests { .. } => "TooManyRequests",
            ApiError::Internal(_) => "InternalError",
        }
    }

    pub fn message(&self) -> String {
        match self {
            ApiError::Status(s) => s["message"].as_str().unwrap_or("").to_string(),
            ApiError::NotFound { resource, name } => format!("{resource} \"{name}\" not found"),
            ApiError::NoRoute => "the server could not find the requested resource".into(),
            ApiError::AlreadyExists { resource, name } => {
                format!("{resource} \"{name}\" already exists")
            }
            ApiError::Conflict { message, .. } | ApiError::ApplyConflict { message, .. } => {
                message.clone()
            }
            ApiError::Invalid { kind, name, causes } => {
                let list: Vec<String> = causes
                    .iter()
                    .map(|c| {
                        if c.field.is_empty() {
                            c.message.clone()
                        } else {
                            format!("{}: {}", c.field, c.message)
                        }
                    })
                    .collect();
                let joined = if list.len() == 1 {
                    list[0].clone()
                } else {
                    format!("[{}]", list.join(", "))
                };
                format!("{kind} \"{name}\" is invalid: {joined}")
            }
            ApiError::BadRequest(m)
            | ApiError::MethodNotAllowed(m)
            | ApiError::Forbidden(m)
            | ApiError::UnsupportedMediaType(m)
            | ApiError::RequestEntityTooLarge(m)
            | ApiError::Expired(m)
            | ApiError::Internal(m) => m.clone(),
            ApiError::Unauthorized => "Unauthorized".into(),
            ApiError::InconsistentContinue { .. } => INCONSISTENT_CONTINUE.into(),
            ApiError::Denied {
                group,
                resource,
                name,
                reason,
            } => {
                let qualified = match (group.as_str(), resource.as_str()) {
                    (_, "") => String::new(),
                    ("", r) => r.to_string(),
                    (g, r) => format!("{r}.{g}"),
                };
                match (qualified.as_str(), name.as_str()) {
                    ("", _) => format!("forbidden: {reason}"),
                    (q, "") => format!("{q} is forbidden: {reason}"),
                    (q, n) => format!("{q} {n:?} is forbidden: {reason}"),
                }
            }
            ApiError::TooManyRequests { message, .. } => message.clone(),
        }
    }

    /// The `Status` object a Kubernetes API server returns for this error.
    pub fn status(&self) -> Value {
        if let ApiError::Status(s) = self {
            let mut status = (**s).clone();
            status["code"] = json!(self.code());
            return status;
        }
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message(),
            "reason": self.reason(),
            "code": self.code(),
        });
        if let ApiError::InconsistentContinue { continue_token } = self {
            status["metadata"] = json!({ "continue": continue_token });
        }
        let details = match self {
            // Upstream's generic 404 has empty details (kubectl debug reads them).
            ApiError::NoRoute => Some(json!({})),
            ApiError::NotFound { resource, name }
            | ApiError::AlreadyExists { resource, name }
            | ApiError::Conflict { resource, name, .. } => {
                let (group, kind) = split_group(resource);
                let mut d = json!({"name": name, "kind": kind});
                if !group.is_empty() {
                    d["group"] = json!(group);
                }
                Some(d)
            }
            // A kind qualified by its group (`Widget.example.com`, a custom resource's) is
            // told as upstream's details tell it: the kind, and the group beside it.
            ApiError::Invalid { kind, name, causes } => Some(match kind.split_once('.') {
                Some((kind, group)) => json!({
                    "name": name,
                    "group": group,
                    "kind": kind,
                    "causes": causes_json(causes),
                }),
                None => json!({
                    "name": name,
                    "kind": kind,
                    "causes": causes_json(causes),
                }),
            }),
            ApiError::Denied {
                group,
                resource,
                name,
                ..
            } => {
                let mut d = json!({"kind": resource});
                if !name.is_empty() {
                    d["name"] = json!(name);
                }
                if !group.is_empty() {
                    d["group"] = json!(group);
                }
                Some(d)
            }
            ApiError::ApplyConflict { causes, .. } => {
                Some(json!({ "causes": causes_json(causes) }))
            }
            ApiError::TooManyRequests { causes, .. } if !causes.is_empty() => {
                Some(json!({ "causes": causes_json(causes) }))
            }
            _ => None,
        };
        if let Some(d) = details {
            status["details"] = d;
        }
        status
    }
}

fn causes_json(causes: &[Cause]) -> Value {
    Value::Array(
        causes
            .iter()
            .map(|c| json!({"reason": c.reason, "message": c.message, "field": c.field}))
            .collect(),
    )
}

/// `"pods"` → ("", "pods"); `"deployments.apps"` → ("apps", "deployments").
fn split_group(resource: &str) -> (&str, &str) {
    match resource.split_once('.') {
        Some((r, g)) => (g, r),
        None => ("", resource),
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut resp = (
            code,
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            self.status().to_string(),
        )
            .into_response();
        if code == StatusCode::TOO_MANY_REQUESTS {
            resp.headers_mut()
                .insert("retry-after", axum::http::HeaderValue::from_static("5"));
        }
        resp
    }
}

/// The result type of every handler.
pub type ApiResult<T> = Result<T, ApiError>;

/// Store errors become API errors once, here.
pub fn from_store(err: berth_store::Error, resource: &str, name: &str) -> ApiError {
    use berth_store::Error as S;
    match err {
        S::AlreadyExists { .. } => ApiError::AlreadyExists {
            resource: resource.into(),
            name: name.into(),
        },
        S::NotFound { .. } => ApiError::NotFound {
            resource: resource.into(),
            name: name.into(),
        },
        S::Conflict { .. } => ApiError::Conflict {
            resource: resource.into(),
            name: name.into(),
            message: format!(
                "Operation cannot be fulfilled on {resource} \"{name}\": the object has been modified; please apply your changes to the latest version and try again"
            ),
        },
        S::Compacted {
            requested,
            compacted,
        } => ApiError::Expired(format!(
            "too old resource version: {requested} ({compacted})"
        )),
        S::FutureRevision { requested, current } => ApiError::Internal(format!(
            "Too large resource version: {requested}, current: {current}"
        )),
        other => ApiError::Internal(other.to_string()),
    }
}
