//! Reading the OpenRPC document as a generated client would: params from the method's
//! content descriptors, values synthesised from their schemas, results validated
//! against the documented result schema. Knows nothing of the daemon's types.

use serde_json::{Map, Value, json};

pub struct Document {
    pub doc: Value,
}

impl Document {
    pub fn new(doc: Value) -> Document {
        Document { doc }
    }

    pub fn methods(&self) -> &[Value] {
        self.doc["methods"].as_array().expect("methods")
    }

    pub fn method(&self, name: &str) -> &Value {
        self.methods()
            .iter()
            .find(|m| m["name"] == name)
            .unwrap_or_else(|| panic!("{name} is not documented"))
    }

    fn resolve<'a>(&'a self, schema: &'a Value) -> &'a Value {
        match schema["$ref"].as_str() {
            Some(r) => {
                let pointer = r.trim_start_matches('#');
                self.resolve(
                    self.doc
                        .pointer(pointer)
                        .unwrap_or_else(|| panic!("dangling {r}")),
                )
            }
            None => schema,
        }
    }

    /// A value valid against `schema` built from the schema alone: required members,
    /// the first alternative, the first enum value, the minimum.
    pub fn synthesise(&self, schema: &Value) -> Value {
        let s = self.resolve(schema);
        if let Some(c) = s.get("const") {
            return c.clone();
        }
        if let Some(e) = s["enum"].as_array().and_then(|e| e.first()) {
            return e.clone();
        }
        for key in ["anyOf", "oneOf", "allOf"] {
            if let Some(first) = s[key].as_array().and_then(|a| a.first()) {
                let mut v = self.synthesise(first);
                // An object schema beside the alternatives (a flattened struct) adds its
                // own members.
                if s.get("properties").is_some()
                    && let (Value::Object(m), Value::Object(extra)) = (&mut v, self.object(s))
                {
                    m.extend(extra);
                }
                return v;
            }
        }
        let ty = match &s["type"] {
            Value::String(t) => t.as_str(),
            Value::Array(ts) => ts
                .iter()
                .filter_map(Value::as_str)
                .find(|t| *t != "null")
                .unwrap_or("null"),
            _ if s.get("properties").is_some() => "object",
            _ => "null",
        };
        match ty {
            "string" => json!("x"),
            "integer" | "number" => s.get("minimum").cloned().unwrap_or(json!(0)),
            "boolean" => json!(false),
            "array" => {
                let n = s["minItems"].as_u64().unwrap_or(0);
                Value::Array((0..n).map(|_| self.synthesise(&s["items"])).collect())
            }
            "object" => self.object(s),
            _ => Value::Null,
        }
    }

    fn object(&self, s: &Value) -> Value {
        let mut out = Map::new();
        for name in s["required"].as_array().into_iter().flatten() {
            let name = name.as_str().unwrap();
            out.insert(name.into(), self.synthesise(&s["properties"][name]));
        }
        Value::Object(out)
    }

    /// A method's params: every required param synthesised from its schema, then the
    /// given realistic values (each must be a documented param).
    pub fn params(&self, method: &str, realistic: &Value) -> Value {
        let m = self.method(method);
        let params = m["params"].as_array().unwrap();
        let mut out = Map::new();
        for p in params {
            if p["required"] == true {
                out.insert(
                    p["name"].as_str().unwrap().into(),
                    self.synthesise(&p["schema"]),
                );
            }
        }
        for (k, v) in realistic.as_object().into_iter().flatten() {
            assert!(
                params.iter().any(|p| p["name"] == k.as_str()),
                "{method}: the table names `{k}`, which the document does not list"
            );
            out.insert(k.clone(), v.clone());
        }
        Value::Object(out)
    }

    fn validator(&self, schema: &Value) -> jsonschema::Validator {
        // The schema's `#/components/...` references resolve against the document.
        let root = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "allOf": [schema],
            "components": self.doc["components"],
        });
        jsonschema::draft7::new(&root).unwrap_or_else(|e| panic!("bad schema {schema}: {e}"))
    }

    /// Errors of `value` against `schema`, as text (empty when valid).
    pub fn errors(&self, schema: &Value, value: &Value) -> Vec<String> {
        self.validator(schema)
            .iter_errors(value)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect()
    }

    pub fn check_result(&self, method: &str, result: &Value) {
        let schema = &self.method(method)["result"]["schema"];
        let errors = self.errors(schema, result);
        assert!(
            errors.is_empty(),
            "{method}: the result does not match its documented schema: {errors:#?}\n{result}"
        );
    }

    /// A call's params checked against the document: every member a documented param,
    /// every required param present, each value valid against its schema.
    pub fn check_params(&self, method: &str, params: &Value) {
        let m = self.method(method);
        let listed = m["params"].as_array().unwrap();
        let given = params.as_object().cloned().unwrap_or_default();
        for (k, v) in &given {
            let p = listed
                .iter()
                .find(|p| p["name"] == k.as_str())
                .unwrap_or_else(|| panic!("{method}: param `{k}` is not documented"));
            let errors = self.errors(&p["schema"], v);
            assert!(errors.is_empty(), "{method}.{k}: {errors:#?}");
        }
        for p in listed.iter().filter(|p| p["required"] == true) {
            let name = p["name"].as_str().unwrap();
            assert!(
                given.contains_key(name),
                "{method}: required `{name}` missing"
            );
        }
    }
}
