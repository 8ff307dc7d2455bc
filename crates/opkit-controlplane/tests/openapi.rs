//! `/openapi/v2` and `/openapi/v3` over HTTPS, as clients fetch them: the built-in kinds'
//! schemas, custom resources' schemas from their CRDs, hashed index URLs and their caching.

mod common;

use http::{Request, StatusCode, header};
use kube::client::Body;
use serde_json::{Value, json};

const PROTOBUF_V2: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

/// GET `path` with optional extra headers; status, headers and body.
async fn get(
    client: &kube::Client,
    path: &str,
    headers: &[(header::HeaderName, &str)],
) -> (StatusCode, http::HeaderMap, Vec<u8>) {
    let mut req = Request::get(path);
    for (k, v) in headers {
        req = req.header(k, *v);
    }
    let resp = client
        .send(req.body(Body::empty()).unwrap())
        .await
        .expect("request is answered");
    let (parts, body) = resp.into_parts();
    let bytes = http_body_util::BodyExt::collect(body)
        .await
        .expect("body is read")
        .to_bytes();
    (parts.status, parts.headers, bytes.to_vec())
}

async fn get_json(client: &kube::Client, path: &str) -> Value {
    let (status, _, body) = get(client, path, &[(header::ACCEPT, "application/json")]).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "{path}: {}",
        String::from_utf8_lossy(&body)
    );
    serde_json::from_slice(&body).expect("JSON document")
}

async fn index(client: &kube::Client) -> Value {
    get_json(client, "/openapi/v3").await["paths"].clone()
}

fn url_of(index: &Value, gv: &str) -> String {
    index[gv]["serverRelativeURL"]
        .as_str()
        .unwrap_or_else(|| panic!("{gv} is not in the index: {index}"))
        .to_string()
}

/// Replaces the FlightTicket CRD's v1 schema with one that also has `spec.seat`.
async fn add_seat_field(client: &kube::Client) {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube::api::{Api, Patch, PatchParams};
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut crd = common::flight_ticket_crd();
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["seat"] =
        json!({"type": "string", "description": "The seat, such as 12A."});
    crds.patch(
        "flighttickets.flights.com",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"versions": crd["spec"]["versions"]}})),
    )
    .await
    .expect("CRD is updated");
}

#[tokio::test]
async fn v2_json_describes_deployments_with_group_version_kind_and_container_merge_keys() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let doc = get_json(&client, "/openapi/v2").await;
    assert_eq!(doc["swagger"], "2.0");
    let defs = &doc["definitions"];
    assert_eq!(
        defs["io.k8s.api.apps.v1.Deployment"]["x-kubernetes-group-version-kind"],
        json!([{"group": "apps", "kind": "Deployment", "version": "v1"}])
    );
    assert_eq!(
        defs["io.k8s.api.apps.v1.Deployment"]["properties"]["spec"]["$ref"],
        "#/definitions/io.k8s.api.apps.v1.DeploymentSpec"
    );
    let containers = &defs["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"];
    assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
    assert_eq!(containers["x-kubernetes-patch-strategy"], "merge");
    assert_eq!(
        defs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["format"],
        "int-or-string"
    );
    let patch = &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
    let params: Vec<&str> = patch["parameters"]
        .as_array()
        .expect("parameters")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    for p in ["body", "dryRun", "fieldManager", "fieldValidation", "force"] {
        assert!(params.contains(&p), "{p} missing from {params:?}");
    }
}

/// The parts of gnostic's `openapi.v2` messages the checks below read (field numbers from
/// `OpenAPIv2.proto`); decoding with prost checks the wire format.
mod gnostic {
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Document {
        #[prost(string, tag = "1")]
        pub swagger: String,
        #[prost(message, optional, tag = "9")]
        pub definitions: Option<Definitions>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Definitions {
        #[prost(message, repeated, tag = "1")]
        pub additional_properties: Vec<NamedSchema>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct NamedSchema {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(message, optional, tag = "2")]
        pub value: Option<Schema>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Schema {
        #[prost(string, tag = "1")]
        pub r#ref: String,
        #[prost(string, tag = "4")]
        pub description: String,
        #[prost(double, tag = "7")]
        pub maximum: f64,
        #[prost(string, repeated, tag = "19")]
        pub required: Vec<String>,
        #[prost(message, optional, tag = "25")]
        pub properties: Option<Properties>,
        #[prost(message, repeated, tag = "31")]
        pub vendor_extension: Vec<NamedAny>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Properties {
        #[prost(message, repeated, tag = "1")]
        pub additional_properties: Vec<NamedSchema>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct NamedAny {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(message, optional, tag = "2")]
        pub value: Option<Any>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Any {
        #[prost(string, tag = "2")]
        pub yaml: String,
    }

    impl Document {
        pub fn definition(&self, name: &str) -> Option<&Schema> {
            let defs = self.definitions.as_ref()?;
            defs.additional_properties
                .iter()
                .find(|d| d.name == name)?
                .value
                .as_ref()
        }
    }

    impl Schema {
        pub fn property(&self, name: &str) -> Option<&Schema> {
            let props = self.properties.as_ref()?;
            props
                .additional_properties
                .iter()
                .find(|p| p.name == name)?
                .value
                .as_ref()
        }

        pub fn extension(&self, name: &str) -> Option<serde_json::Value> {
            let any = self.vendor_extension.iter().find(|e| e.name == name)?;
            serde_json::from_str(&any.value.as_ref()?.yaml).ok()
        }
    }
}

#[tokio::test]
async fn v2_protobuf_is_served_in_gnostic_encoding_with_crd_definitions() {
    use prost::Message;
    let plane = common::start().await;
    let client = common::client(&plane).await;
    common::install_flight_ticket_crd(&client).await;
    let (status, headers, body) =
        get(&client, "/openapi/v2", &[(header::ACCEPT, PROTOBUF_V2)]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        headers[header::CONTENT_TYPE],
        "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    );
    let doc = gnostic::Document::decode(body.as_slice()).expect("an openapi.v2.Document");
    assert_eq!(doc.swagger, "2.0");
    let deployment = doc
        .definition("io.k8s.api.apps.v1.Deployment")
        .expect("Deployment is defined");
    assert_eq!(
        deployment.extension("x-kubernetes-group-version-kind"),
        Some(json!([{"group": "apps", "kind": "Deployment", "version": "v1"}]))
    );
    assert_eq!(
        deployment.property("spec").map(|s| s.r#ref.as_str()),
        Some("#/definitions/io.k8s.api.apps.v1.DeploymentSpec")
    );
    let containers = doc
        .definition("io.k8s.api.core.v1.PodSpec")
        .and_then(|s| s.property("containers"))
        .expect("PodSpec.containers");
    assert_eq!(
        containers.extension("x-kubernetes-patch-merge-key"),
        Some(json!("name"))
    );
    let number = doc
        .definition("com.flights.v1.FlightTicket")
        .and_then(|s| s.property("spec"))
        .and_then(|s| s.property("number"))
        .expect("the CRD's spec.number");
    assert_eq!(number.maximum, 10.0);
}

#[tokio::test]
async fn openapi_media_types_the_server_cannot_produce_are_not_acceptable() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    for path in ["/openapi/v2", "/openapi/v3/api/v1"] {
        let (status, headers, body) =
            get(&client, path, &[(header::ACCEPT, "application/xml")]).await;
        assert_eq!(status, StatusCode::NOT_ACCEPTABLE, "{path}");
        assert_eq!(headers[header::CONTENT_TYPE], "application/json");
        let s: Value = serde_json::from_slice(&body).expect("a Status");
        assert_eq!(
            (s["kind"].as_str(), s["reason"].as_str()),
            (Some("Status"), Some("NotAcceptable"))
        );
    }
    // v3 documents are JSON only.
    let (status, _, _) = get(
        &client,
        "/openapi/v3/api/v1",
        &[(header::ACCEPT, PROTOBUF_V2)],
    )
    .await;
    assert_eq!(status, StatusCode::NOT_ACCEPTABLE);
}

#[tokio::test]
async fn v3_index_lists_builtin_group_versions_and_their_documents_hold_the_schemas() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let idx = index(&client).await;
    for gv in [
        "api/v1",
        "apis/apps/v1",
        "apis/batch/v1",
        "apis/rbac.authorization.k8s.io/v1",
        "apis/apiextensions.k8s.io/v1",
    ] {
        assert!(url_of(&idx, gv).starts_with(&format!("/openapi/v3/{gv}?hash=")));
    }
    let core = get_json(&client, &url_of(&idx, "api/v1")).await;
    let schemas = &core["components"]["schemas"];
    let spec = &schemas["io.k8s.api.core.v1.PodSpec"]["properties"];
    assert_eq!(spec["containers"]["x-kubernetes-patch-merge-key"], "name");
    assert_eq!(
        spec["containers"]["items"]["$ref"],
        "#/components/schemas/io.k8s.api.core.v1.Container"
    );
    assert!(
        schemas["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]["properties"]["labels"]
            .is_object()
    );
    assert!(schemas["io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"].is_object());
    assert!(
        core["paths"]["/api/v1/namespaces/{namespace}/pods/{name}/status"]["patch"].is_object()
    );
}

#[tokio::test]
async fn crd_schema_appears_in_v3_and_v2_and_index_hash_changes_when_crds_change() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let before = index(&client).await;
    assert!(before.get("apis/flights.com/v1").is_none());

    common::install_flight_ticket_crd(&client).await;
    let after = index(&client).await;
    // Built-in documents do not change; the CRD's group version appears.
    assert_eq!(
        url_of(&before, "apis/apps/v1"),
        url_of(&after, "apis/apps/v1")
    );
    let flights = url_of(&after, "apis/flights.com/v1");
    let doc = get_json(&client, &flights).await;
    let ticket = &doc["components"]["schemas"]["com.flights.v1.FlightTicket"];
    assert_eq!(
        ticket["x-kubernetes-group-version-kind"],
        json!([{"group": "flights.com", "kind": "FlightTicket", "version": "v1"}])
    );
    assert_eq!(
        ticket["properties"]["spec"]["properties"]["number"]["maximum"],
        10
    );
    assert!(
        doc["components"]["schemas"]["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]["properties"]
            ["name"]
            .is_object(),
        "ObjectMeta is published with the CRD's document"
    );
    let patch =
        &doc["paths"]["/apis/flights.com/v1/namespaces/{namespace}/flighttickets/{name}"]["patch"];
    assert!(
        patch["requestBody"]["content"]
            .get("application/merge-patch+json")
            .is_some()
    );
    assert!(
        patch["requestBody"]["content"]
            .get("application/strategic-merge-patch+json")
            .is_none(),
        "custom resources do not take strategic merge patches"
    );
    let v2 = get_json(&client, "/openapi/v2").await;
    assert_eq!(
        v2["definitions"]["com.flights.v1.FlightTicket"]["properties"]["metadata"]["$ref"],
        "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
    assert!(v2["paths"]["/apis/flights.com/v1/namespaces/{namespace}/flighttickets"].is_object());

    add_seat_field(&client).await;
    let updated = opkit_testenv::eventually("the hash to change", || async {
        let idx = index(&client).await;
        let url = url_of(&idx, "apis/flights.com/v1");
        (url != flights).then_some(url)
    })
    .await;
    let doc = get_json(&client, &updated).await;
    assert_eq!(
        doc["components"]["schemas"]["com.flights.v1.FlightTicket"]["properties"]["spec"]["properties"]
            ["seat"]["description"],
        "The seat, such as 12A."
    );
    let v2 = get_json(&client, "/openapi/v2").await;
    assert!(v2["definitions"]["com.flights.v1.FlightTicket"]["properties"]["spec"]["properties"]["seat"].is_object());
}

#[tokio::test]
async fn hashed_url_is_immutable_stale_hash_redirects_and_etag_revalidates() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let url = url_of(&index(&client).await, "apis/apps/v1");
    let (status, headers, _) = get(&client, &url, &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers[header::CACHE_CONTROL], "public, immutable");
    assert!(headers.contains_key(header::EXPIRES));
    let etag = headers[header::ETAG].to_str().unwrap().to_string();
    assert_eq!(etag, format!("\"{}\"", url.rsplit('=').next().unwrap()));

    let (status, _, body) = get(&client, &url, &[(header::IF_NONE_MATCH, &etag)]).await;
    assert_eq!((status, body.len()), (StatusCode::NOT_MODIFIED, 0));

    let (status, headers, _) = get(&client, "/openapi/v3/apis/apps/v1?hash=0BSOLETE", &[]).await;
    assert_eq!(status, StatusCode::MOVED_PERMANENTLY);
    assert_eq!(headers[header::LOCATION], url.as_str());

    let (status, headers, _) = get(&client, "/openapi/v3/apis/apps/v1", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers[header::CACHE_CONTROL], "no-cache, private");

    let (status, _, _) = get(&client, "/openapi/v3/apis/nothing.example.com/v1", &[]).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
