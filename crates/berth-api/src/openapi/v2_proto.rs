//! The Swagger 2.0 document in gnostic's protobuf form (`openapi.v2.Document` of
//! `google/gnostic`'s `OpenAPIv2.proto`), which kubectl asks for at `/openapi/v2`: it reads
//! the definitions for `kubectl explain --output=plaintext-openapiv2`, client-side validation
//! and strategic merge patches when it does not use v3.
//!
//! Only the messages kubectl reads are declared: the document's `swagger`, `info` and
//! `definitions`. Paths stay in the JSON form of the document; no protobuf client reads them
//! (kube-openapi's `proto.NewOpenAPIData` walks the definitions alone). Values that are free
//! JSON in Swagger (`default`, `enum`, `x-*` extensions) travel as gnostic's `Any.yaml`, for
//! which JSON text serves, JSON being YAML.

use prost::Message;
use serde_json::{Map, Value};

#[derive(Clone, PartialEq, Message)]
struct Document {
    #[prost(string, tag = "1")]
    swagger: String,
    #[prost(message, optional, tag = "2")]
    info: Option<Info>,
    #[prost(message, optional, tag = "9")]
    definitions: Option<Definitions>,
}

#[derive(Clone, PartialEq, Message)]
struct Info {
    #[prost(string, tag = "1")]
    title: String,
    #[prost(string, tag = "2")]
    version: String,
}

#[derive(Clone, PartialEq, Message)]
struct Definitions {
    #[prost(message, repeated, tag = "1")]
    additional_properties: Vec<NamedSchema>,
}

#[derive(Clone, PartialEq, Message)]
struct NamedSchema {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(message, optional, tag = "2")]
    value: Option<Schema>,
}

#[derive(Clone, PartialEq, Message)]
struct Schema {
    #[prost(string, tag = "1")]
    reference: String,
    #[prost(string, tag = "2")]
    format: String,
    #[prost(string, tag = "3")]
    title: String,
    #[prost(string, tag = "4")]
    description: String,
    #[prost(message, optional, tag = "5")]
    default: Option<Any>,
    #[prost(double, tag = "6")]
    multiple_of: f64,
    #[prost(double, tag = "7")]
    maximum: f64,
    #[prost(bool, tag = "8")]
    exclusive_maximum: bool,
    #[prost(double, tag = "9")]
    minimum: f64,
    #[prost(bool, tag = "10")]
    exclusive_minimum: bool,
    #[prost(int64, tag = "11")]
    max_length: i64,
    #[prost(int64, tag = "12")]
    min_length: i64,
    #[prost(string, tag = "13")]
    pattern: String,
    #[prost(int64, tag = "14")]
    max_items: i64,
    #[prost(int64, tag = "15")]
    min_items: i64,
    #[prost(bool, tag = "16")]
    unique_items: bool,
    #[prost(int64, tag = "17")]
    max_properties: i64,
    #[prost(int64, tag = "18")]
    min_properties: i64,
    #[prost(string, repeated, tag = "19")]
    required: Vec<String>,
    #[prost(message, repeated, tag = "20")]
    enumeration: Vec<Any>,
    #[prost(message, optional, tag = "21")]
    additional_properties: Option<AdditionalPropertiesItem>,
    #[prost(message, optional, tag = "22")]
    r#type: Option<TypeItem>,
    #[prost(message, optional, tag = "23")]
    items: Option<ItemsItem>,
    #[prost(message, repeated, tag = "24")]
    all_of: Vec<Schema>,
    #[prost(message, optional, tag = "25")]
    properties: Option<Properties>,
    #[prost(string, tag = "26")]
    discriminator: String,
    #[prost(bool, tag = "27")]
    read_only: bool,
    #[prost(message, optional, tag = "30")]
    example: Option<Any>,
    #[prost(message, repeated, tag = "31")]
    vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, Message)]
struct AdditionalPropertiesItem {
    #[prost(oneof = "AdditionalProperties", tags = "1, 2")]
    oneof: Option<AdditionalProperties>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
enum AdditionalProperties {
    #[prost(message, boxed, tag = "1")]
    Schema(Box<Schema>),
    #[prost(bool, tag = "2")]
    Boolean(bool),
}

#[derive(Clone, PartialEq, Message)]
struct TypeItem {
    #[prost(string, repeated, tag = "1")]
    value: Vec<String>,
}

#[derive(Clone, PartialEq, Message)]
struct ItemsItem {
    #[prost(message, repeated, tag = "1")]
    schema: Vec<Schema>,
}

#[derive(Clone, PartialEq, Message)]
struct Properties {
    #[prost(message, repeated, tag = "1")]
    additional_properties: Vec<NamedSchema>,
}

#[derive(Clone, PartialEq, Message)]
struct NamedAny {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(message, optional, tag = "2")]
    value: Option<Any>,
}

/// gnostic's `Any`: field 1 (a `google.protobuf.Any`) is left unset, the value is its YAML.
#[derive(Clone, PartialEq, Message)]
struct Any {
    #[prost(string, tag = "2")]
    yaml: String,
}

/// The protobuf bytes of a Swagger 2.0 document given as JSON.
pub(super) fn encode(doc: &Value) -> Vec<u8> {
    let str_of =
        |v: &Value, key: &str| v.get(key).and_then(Value::as_str).unwrap_or("").to_string();
    let info = doc.get("info").map(|i| Info {
        title: str_of(i, "title"),
        version: str_of(i, "version"),
    });
    let definitions = doc
        .get("definitions")
        .and_then(Value::as_object)
        .map(|defs| Definitions {
            additional_properties: named_schemas(defs),
        });
    Document {
        swagger: str_of(doc, "swagger"),
        info,
        definitions,
    }
    .encode_to_vec()
}

fn named_schemas(map: &Map<String, Value>) -> Vec<NamedSchema> {
    map.iter()
        .map(|(name, schema)| NamedSchema {
            name: name.clone(),
            value: Some(schema_of(schema)),
        })
        .collect()
}

fn any(v: &Value) -> Any {
    Any {
        yaml: v.to_string(),
    }
}

fn schema_of(v: &Value) -> Schema {
    let string = |key: &str| v.get(key).and_then(Value::as_str).unwrap_or("").to_string();
    let float = |key: &str| v.get(key).and_then(Value::as_f64).unwrap_or(0.0);
    let int = |key: &str| v.get(key).and_then(Value::as_i64).unwrap_or(0);
    let boolean = |key: &str| v.get(key).and_then(Value::as_bool).unwrap_or(false);
    let schemas = |key: &str| -> Vec<Schema> {
        match v.get(key) {
            Some(Value::Array(items)) => items.iter().map(schema_of).collect(),
            Some(item @ Value::Object(_)) => vec![schema_of(item)],
            _ => Vec::new(),
        }
    };
    let additional_properties = match v.get("additionalProperties") {
        Some(Value::Bool(b)) => Some(AdditionalProperties::Boolean(*b)),
        Some(s @ Value::Object(_)) => Some(AdditionalProperties::Schema(Box::new(schema_of(s)))),
        _ => None,
    }
    .map(|oneof| AdditionalPropertiesItem { oneof: Some(oneof) });
    let r#type = match v.get("type") {
        Some(Value::String(t)) => Some(TypeItem {
            value: vec![t.clone()],
        }),
        Some(Value::Array(ts)) => Some(TypeItem {
            value: ts
                .iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect(),
        }),
        _ => None,
    };
    let items = v.get("items").map(|_| ItemsItem {
        schema: schemas("items"),
    });
    Schema {
        reference: string("$ref"),
        format: string("format"),
        title: string("title"),
        description: string("description"),
        default: v.get("default").map(any),
        multiple_of: float("multipleOf"),
        maximum: float("maximum"),
        exclusive_maximum: boolean("exclusiveMaximum"),
        minimum: float("minimum"),
        exclusive_minimum: boolean("exclusiveMinimum"),
        max_length: int("maxLength"),
        min_length: int("minLength"),
        pattern: string("pattern"),
        max_items: int("maxItems"),
        min_items: int("minItems"),
        unique_items: boolean("uniqueItems"),
        max_properties: int("maxProperties"),
        min_properties: int("minProperties"),
        required: v
            .get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default(),
        enumeration: v
            .get("enum")
            .and_then(Value::as_array)
            .map(|e| e.iter().map(any).collect())
            .unwrap_or_default(),
        additional_properties,
        r#type,
        items,
        all_of: schemas("allOf"),
        properties: v
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| Properties {
                additional_properties: named_schemas(p),
            }),
        discriminator: string("discriminator"),
        read_only: boolean("readOnly"),
        example: v.get("example").map(any),
        vendor_extension: v
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(key, _)| key.starts_with("x-"))
            .map(|(key, value)| NamedAny {
                name: key.clone(),
                value: Some(any(value)),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn definitions_round_trip_through_the_wire_form() {
        let doc = json!({
            "swagger": "2.0",
            "info": {"title": "Kubernetes", "version": "v1.32.0"},
            "paths": {"/api/v1/pods": {}},
            "definitions": {
                "io.k8s.api.core.v1.Pod": {
                    "description": "Pod is a collection of containers.",
                    "type": "object",
                    "required": ["spec"],
                    "properties": {
                        "spec": {"$ref": "#/definitions/io.k8s.api.core.v1.PodSpec"},
                        "tolerations": {"type": "array", "items": {"type": "string"},
                            "x-kubernetes-list-type": "atomic"},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    },
                    "x-kubernetes-group-version-kind": [{"group": "", "kind": "Pod", "version": "v1"}],
                },
            },
        });
        let decoded = Document::decode(encode(&doc).as_slice()).unwrap();
        assert_eq!(decoded.swagger, "2.0");
        assert_eq!(decoded.info.unwrap().version, "v1.32.0");
        let defs = decoded.definitions.unwrap().additional_properties;
        assert_eq!(defs.len(), 1);
        assert_eq!(defs[0].name, "io.k8s.api.core.v1.Pod");
        let pod = defs[0].value.clone().unwrap();
        assert_eq!(pod.required, ["spec"]);
        assert_eq!(pod.r#type.unwrap().value, ["object"]);
        let gvk = &pod.vendor_extension[0];
        assert_eq!(gvk.name, "x-kubernetes-group-version-kind");
        let yaml = &gvk.value.as_ref().unwrap().yaml;
        assert_eq!(
            serde_json::from_str::<Value>(yaml).unwrap(),
            json!([{"group": "", "kind": "Pod", "version": "v1"}])
        );
        let props = pod.properties.unwrap().additional_properties;
        let by_name = |n: &str| {
            props
                .iter()
                .find(|p| p.name == n)
                .unwrap()
                .value
                .clone()
                .unwrap()
        };
        assert_eq!(
            by_name("spec").reference,
            "#/definitions/io.k8s.api.core.v1.PodSpec"
        );
        assert_eq!(
            by_name("tolerations").items.unwrap().schema[0]
                .r#type
                .clone()
                .unwrap()
                .value,
            ["string"]
        );
        match by_name("labels")
            .additional_properties
            .unwrap()
            .oneof
            .unwrap()
        {
            AdditionalProperties::Schema(s) => assert_eq!(s.r#type.unwrap().value, ["string"]),
            other => panic!("{other:?}"),
        }
    }
}
