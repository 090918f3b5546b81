//! Setting a default where a field is missing or null, as upstream's `SetDefaults_*`.

use serde_json::Value;

/// Sets `obj[field]` to `value` when it is missing or null (`obj` must be an object).
pub fn default_at(obj: &mut Value, field: &str, value: Value) {
    if let Some(o) = obj.as_object_mut() {
        if o.get(field).is_none_or(Value::is_null) {
            o.insert(field.to_string(), value);
        }
    }
}
