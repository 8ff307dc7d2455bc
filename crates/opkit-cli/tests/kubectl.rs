//! End-to-end tests: the real kubectl v1.35 (installed by
//! `scripts/install-tools.sh` into `.tools/bin/`) against `opkit up`.
//!
//! Each test starts its own ephemeral control plane, so the tests are
//! independent and may run in parallel.

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::{ControlPlane, row, table};
use serde_json::{Value, json};

const CRD_NAME: &str = "flighttickets.flights.com";
const TICKET: &str = "my-flight-ticket";

/// The FlightTicket CRD; with `printer_columns`, version v1 also declares
/// the From (`.spec.from`) and To (`.spec.to`) printer columns.
fn flight_ticket_crd(printer_columns: bool) -> String {
    let columns = if printer_columns {
        "    additionalPrinterColumns:
    - name: From
      type: string
      jsonPath: .spec.from
    - name: To
      type: string
      jsonPath: .spec.to
"
    } else {
        ""
    };
    format!(
        "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: flighttickets.flights.com
spec:
  group: flights.com
  scope: Namespaced
  names:
    kind: FlightTicket
    singular: flightticket
    plural: flighttickets
    shortNames:
    - ft
  versions:
  - name: v1
    served: true
    storage: true
{columns}    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              from:
                type: string
              to:
                type: string
              number:
                type: integer
                minimum: 1
                maximum: 10
"
    )
}

fn ticket(name: &str, from: &str, to: &str, number: i64) -> String {
    format!(
        "apiVersion: flights.com/v1
kind: FlightTicket
metadata:
  name: {name}
spec:
  from: {from}
  to: {to}
  number: {number}
"
    )
}

fn path_str(path: &std::path::Path) -> &str {
    path.to_str().expect("temporary paths are UTF-8")
}

/// `kubectl apply -f` the CRD and `kubectl wait` for it to be Established.
fn install_flight_tickets(cp: &ControlPlane, printer_columns: bool) {
    let crd = cp.write_file("crd.yaml", &flight_ticket_crd(printer_columns));
    let out = cp.kubectl_ok(&["apply", "-f", path_str(&crd)]);
    assert_eq!(
        out.trim(),
        format!("customresourcedefinition.apiextensions.k8s.io/{CRD_NAME} created")
    );
    let out = cp.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        &format!("crd/{CRD_NAME}"),
        "--timeout=30s",
    ]);
    assert_eq!(
        out.trim(),
        format!("customresourcedefinition.apiextensions.k8s.io/{CRD_NAME} condition met")
    );
}

/// `kubectl create -f` a FlightTicket.
fn create_ticket(cp: &ControlPlane, name: &str, from: &str, to: &str, number: i64) {
    let file = cp.write_file(&format!("{name}.yaml"), &ticket(name, from, to, number));
    let out = cp.kubectl_ok(&["create", "-f", path_str(&file)]);
    assert_eq!(
        out.trim(),
        format!("flightticket.flights.com/{name} created")
    );
}

/// `kubectl get ft NAME -o json`, parsed.
fn get_json(cp: &ControlPlane, args: &[&str]) -> Value {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", "json"]);
    let out = cp.kubectl_ok(&all);
    serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("`kubectl {all:?}` printed no JSON ({e}):\n{out}"))
}

fn ticket_spec(cp: &ControlPlane) -> Value {
    get_json(cp, &["ft", TICKET])["spec"].clone()
}

const NO_RESOURCES_IN_DEFAULT: &str = "No resources found in default namespace.";

#[test]
fn crd_apply_then_wait_for_established_succeeds() {
    let cp = ControlPlane::start();
    install_flight_tickets(&cp, false);

    let crd = get_json(&cp, &["crd", CRD_NAME]);
    let conditions = crd["status"]["conditions"]
        .as_array()
        .unwrap_or_else(|| panic!("the CRD has no status.conditions:\n{crd:#}"));
    for kind in ["NamesAccepted", "Established"] {
        assert!(
            conditions
                .iter()
                .any(|c| c["type"] == kind && c["status"] == "True"),
            "the CRD should have condition {kind}=True:\n{crd:#}"
        );
    }
    assert_eq!(
        crd["status"]["acceptedNames"]["kind"], "FlightTicket",
        "{crd:#}"
    );
    assert_eq!(
        crd["status"]["acceptedNames"]["shortNames"],
        json!(["ft"]),
        "{crd:#}"
    );
}

#[test]
fn flight_ticket_create_get_replace_patch_label_delete() {
    let cp = ControlPlane::start();
    install_flight_tickets(&cp, false);

    // create -f
    create_ticket(&cp, TICKET, "Mumbai", "London", 2);

    // get by short name: found through (aggregated) discovery.
    let rows = table(&cp.kubectl_ok(&["get", "ft"]));
    assert_eq!(rows[0][0], "NAME", "a header row: {rows:?}");
    assert!(
        row(&rows, TICKET).is_some(),
        "`kubectl get ft` should list {TICKET}: {rows:?}"
    );
    assert_eq!(rows.len(), 2, "one header and one ticket: {rows:?}");

    // get by plural and name, as YAML.
    let yaml = cp.kubectl_ok(&["get", "flighttickets", TICKET, "-o", "yaml"]);
    let obj: Value = serde_yaml::from_str(&yaml)
        .unwrap_or_else(|e| panic!("`-o yaml` printed no YAML ({e}):\n{yaml}"));
    assert_eq!(obj["apiVersion"], "flights.com/v1", "{yaml}");
    assert_eq!(obj["kind"], "FlightTicket", "{yaml}");
    assert_eq!(obj["metadata"]["name"], TICKET, "{yaml}");
    assert_eq!(obj["metadata"]["namespace"], "default", "{yaml}");
    assert_eq!(
        obj["spec"],
        json!({"from": "Mumbai", "to": "London", "number": 2}),
        "{yaml}"
    );
    for field in ["uid", "resourceVersion", "creationTimestamp"] {
        assert!(
            obj["metadata"][field].is_string(),
            "metadata.{field} missing:\n{yaml}"
        );
    }

    // replace -f with a changed spec.
    let replaced = cp.write_file("replaced.yaml", &ticket(TICKET, "Mumbai", "Paris", 3));
    let out = cp.kubectl_ok(&["replace", "-f", path_str(&replaced)]);
    assert_eq!(
        out.trim(),
        format!("flightticket.flights.com/{TICKET} replaced")
    );
    assert_eq!(
        ticket_spec(&cp),
        json!({"from": "Mumbai", "to": "Paris", "number": 3})
    );

    // patch --type=merge
    let out = cp.kubectl_ok(&[
        "patch",
        "ft",
        TICKET,
        "--type=merge",
        "-p",
        r#"{"spec":{"number":4}}"#,
    ]);
    assert_eq!(
        out.trim(),
        format!("flightticket.flights.com/{TICKET} patched")
    );
    assert_eq!(
        ticket_spec(&cp),
        json!({"from": "Mumbai", "to": "Paris", "number": 4})
    );

    // patch --type=json
    let out = cp.kubectl_ok(&[
        "patch",
        "ft",
        TICKET,
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/spec/from","value":"Delhi"}]"#,
    ]);
    assert_eq!(
        out.trim(),
        format!("flightticket.flights.com/{TICKET} patched")
    );
    assert_eq!(
        ticket_spec(&cp),
        json!({"from": "Delhi", "to": "Paris", "number": 4})
    );

    // label, then select by label.
    let out = cp.kubectl_ok(&["label", "ft", TICKET, "tier=gold"]);
    assert_eq!(
        out.trim(),
        format!("flightticket.flights.com/{TICKET} labeled")
    );
    let gold = table(&cp.kubectl_ok(&["get", "ft", "-l", "tier=gold"]));
    assert!(
        row(&gold, TICKET).is_some(),
        "-l tier=gold should list {TICKET}: {gold:?}"
    );
    let silver = cp.kubectl(&["get", "ft", "-l", "tier=silver"]);
    assert!(silver.success(), "{silver}");
    assert_eq!(silver.stdout.trim(), "", "{silver}");
    assert_eq!(silver.stderr.trim(), NO_RESOURCES_IN_DEFAULT, "{silver}");

    // delete, then get says NotFound.
    let out = cp.kubectl_ok(&["delete", "ft", TICKET]);
    assert!(
        out.starts_with(&format!("flightticket.flights.com \"{TICKET}\" deleted")),
        "unexpected delete output: {out}"
    );
    let gone = cp.kubectl_fails(&["get", "flighttickets", TICKET]);
    assert_eq!(gone.code, Some(1), "{gone}");
    assert_eq!(
        gone.stderr.trim(),
        format!("Error from server (NotFound): flighttickets.flights.com \"{TICKET}\" not found"),
        "{gone}"
    );
    let after = cp.kubectl(&["get", "ft"]);
    assert!(after.success(), "{after}");
    assert_eq!(after.stderr.trim(), NO_RESOURCES_IN_DEFAULT, "{after}");
}

#[test]
fn flight_ticket_number_above_maximum_is_rejected_naming_spec_number() {
    let cp = ControlPlane::start();
    install_flight_tickets(&cp, false);

    let file = cp.write_file("bad.yaml", &ticket("bad-ticket", "Mumbai", "London", 11));
    let out = cp.kubectl_fails(&["create", "-f", path_str(&file)]);
    assert_eq!(out.code, Some(1), "{out}");
    assert!(
        out.stderr.contains("spec.number"),
        "stderr should name spec.number\n{out}"
    );
    assert_eq!(
        out.stderr.trim(),
        "The FlightTicket \"bad-ticket\" is invalid: spec.number: Invalid value: 11: \
         spec.number in body should be less than or equal to 10",
        "{out}"
    );

    // Nothing was stored.
    let get = cp.kubectl_fails(&["get", "ft", "bad-ticket"]);
    assert_eq!(
        get.stderr.trim(),
        "Error from server (NotFound): flighttickets.flights.com \"bad-ticket\" not found",
        "{get}"
    );
}

#[test]
fn flight_ticket_patch_below_minimum_is_rejected_and_leaves_object_unchanged() {
    let cp = ControlPlane::start();
    install_flight_tickets(&cp, false);
    create_ticket(&cp, TICKET, "Mumbai", "London", 2);

    let out = cp.kubectl_fails(&[
        "patch",
        "ft",
        TICKET,
        "--type=merge",
        "-p",
        r#"{"spec":{"number":0}}"#,
    ]);
    assert_eq!(out.code, Some(1), "{out}");
    assert_eq!(
        out.stderr.trim(),
        format!(
            "The FlightTicket \"{TICKET}\" is invalid: spec.number: Invalid value: 0: \
             spec.number in body should be greater than or equal to 1"
        ),
        "{out}"
    );
    assert_eq!(
        ticket_spec(&cp),
        json!({"from": "Mumbai", "to": "London", "number": 2})
    );
}

#[test]
fn get_shows_additional_printer_columns() {
    let cp = ControlPlane::start();
    install_flight_tickets(&cp, true);
    create_ticket(&cp, TICKET, "Mumbai", "London", 2);
    create_ticket(&cp, "second-ticket", "Delhi", "Paris", 5);

    let out = cp.kubectl_ok(&["get", "ft"]);
    let rows = table(&out);
    assert_eq!(rows[0], ["NAME", "FROM", "TO"], "header row:\n{out}");
    assert_eq!(
        row(&rows, TICKET).map(Vec::as_slice),
        Some(&[TICKET.to_owned(), "Mumbai".into(), "London".into()][..]),
        "{out}"
    );
    assert_eq!(
        row(&rows, "second-ticket").map(Vec::as_slice),
        Some(&["second-ticket".to_owned(), "Delhi".into(), "Paris".into()][..]),
        "{out}"
    );

    // The same columns for a single object.
    let one = table(&cp.kubectl_ok(&["get", "flightticket", TICKET]));
    assert_eq!(one, [["NAME", "FROM", "TO"], [TICKET, "Mumbai", "London"]]);
}

#[test]
fn get_watch_sees_changes_made_by_another_kubectl() {
    let cp = ControlPlane::start();
    install_flight_tickets(&cp, true);
    create_ticket(&cp, TICKET, "Mumbai", "London", 2);

    let mut watch = cp.kubectl_spawn(&["get", "ft", "-w"]);
    let timeout = Duration::from_secs(60);
    watch.wait_for_line("the FROM/TO header", timeout, |l| {
        l.split_whitespace().eq(["NAME", "FROM", "TO"])
    });
    watch.wait_for_line("the initial row of my-flight-ticket", timeout, |l| {
        l.split_whitespace().eq([TICKET, "Mumbai", "London"])
    });

    // A change through another kubectl shows up in the watch.
    cp.kubectl_ok(&[
        "patch",
        "ft",
        TICKET,
        "--type=merge",
        "-p",
        r#"{"spec":{"to":"Paris"}}"#,
    ]);
    watch.wait_for_line("my-flight-ticket now going to Paris", timeout, |l| {
        l.split_whitespace().eq([TICKET, "Mumbai", "Paris"])
    });

    // So does a new object.
    create_ticket(&cp, "second-ticket", "Delhi", "Tokyo", 5);
    watch.wait_for_line("the new second-ticket", timeout, |l| {
        l.split_whitespace().eq(["second-ticket", "Delhi", "Tokyo"])
    });
}

#[test]
fn configmap_from_literal_reads_back_and_deletes() {
    let cp = ControlPlane::start();
    // kubectl create sends protobuf for built-in types.
    let out = cp.kubectl_ok(&["create", "configmap", "cm1", "--from-literal=a=b"]);
    assert_eq!(out.trim(), "configmap/cm1 created");
    assert_eq!(
        cp.kubectl_ok(&["get", "configmap", "cm1", "-o", "jsonpath={.data.a}"]),
        "b"
    );
    let rows = table(&cp.kubectl_ok(&["get", "configmaps"]));
    assert!(
        row(&rows, "cm1").is_some(),
        "get configmaps should list cm1: {rows:?}"
    );

    let out = cp.kubectl_ok(&["delete", "configmap", "cm1"]);
    assert!(
        out.starts_with("configmap \"cm1\" deleted"),
        "unexpected delete output: {out}"
    );
    let gone = cp.kubectl_fails(&["get", "configmap", "cm1"]);
    assert_eq!(
        gone.stderr.trim(),
        "Error from server (NotFound): configmaps \"cm1\" not found",
        "{gone}"
    );
}

#[test]
fn get_missing_configmap_reports_not_found() {
    let cp = ControlPlane::start();
    let out = cp.kubectl_fails(&["get", "configmap", "nope"]);
    assert_eq!(out.code, Some(1), "{out}");
    assert_eq!(out.stdout, "", "{out}");
    assert_eq!(
        out.stderr.trim(),
        "Error from server (NotFound): configmaps \"nope\" not found",
        "{out}"
    );
}

#[test]
fn deployment_created_with_replicas_and_image_is_listed_by_short_name_and_get_all() {
    let cp = ControlPlane::start();
    let out = cp.kubectl_ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx",
        "--replicas=2",
    ]);
    assert_eq!(out.trim(), "deployment.apps/web created");
    assert_eq!(
        cp.kubectl_ok(&[
            "get",
            "deployment",
            "web",
            "-o",
            "jsonpath={.spec.replicas}"
        ]),
        "2"
    );
    assert_eq!(
        cp.kubectl_ok(&[
            "get",
            "deployment",
            "web",
            "-o",
            "jsonpath={.spec.template.spec.containers[0].image}",
        ]),
        "nginx"
    );

    let rows = table(&cp.kubectl_ok(&["get", "deploy"]));
    assert_eq!(rows[0][0], "NAME", "{rows:?}");
    assert!(
        row(&rows, "web").is_some(),
        "`kubectl get deploy` should list web: {rows:?}"
    );

    let all = cp.kubectl_ok(&["get", "all"]);
    assert!(
        all.lines().any(|l| l.starts_with("deployment.apps/web ")),
        "`kubectl get all` should list deployment.apps/web:\n{all}"
    );
}

#[test]
fn secret_generic_from_literal_is_stored_base64() {
    let cp = ControlPlane::start();
    let out = cp.kubectl_ok(&["create", "secret", "generic", "s1", "--from-literal=k=v"]);
    assert_eq!(out.trim(), "secret/s1 created");
    let secret = get_json(&cp, &["secret", "s1"]);
    assert_eq!(secret["type"], "Opaque", "{secret:#}");
    assert_eq!(secret["data"], json!({"k": "dg=="}), "{secret:#}");
}

#[test]
fn role_created_with_verb_and_resource() {
    let cp = ControlPlane::start();
    let out = cp.kubectl_ok(&["create", "role", "r1", "--verb=get", "--resource=pods"]);
    assert_eq!(out.trim(), "role.rbac.authorization.k8s.io/r1 created");
    let role = get_json(&cp, &["role", "r1"]);
    assert_eq!(
        role["rules"],
        json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]),
        "{role:#}"
    );
}

#[test]
fn namespace_created_and_listed_with_system_namespaces_and_scopes_objects() {
    let cp = ControlPlane::start();
    let out = cp.kubectl_ok(&["create", "namespace", "team-a"]);
    assert_eq!(out.trim(), "namespace/team-a created");

    let rows = table(&cp.kubectl_ok(&["get", "ns"]));
    assert_eq!(rows[0][0], "NAME", "{rows:?}");
    for ns in ["default", "kube-system", "kube-public", "team-a"] {
        assert!(
            row(&rows, ns).is_some(),
            "`kubectl get ns` should list {ns}: {rows:?}"
        );
    }
    assert_eq!(
        cp.kubectl_ok(&[
            "get",
            "namespace",
            "team-a",
            "-o",
            "jsonpath={.status.phase}"
        ]),
        "Active"
    );

    // Objects live in their namespace.
    let out = cp.kubectl_ok(&[
        "create",
        "configmap",
        "cm2",
        "-n",
        "team-a",
        "--from-literal=x=y",
    ]);
    assert_eq!(out.trim(), "configmap/cm2 created");
    assert_eq!(
        cp.kubectl_ok(&[
            "get",
            "configmap",
            "cm2",
            "-n",
            "team-a",
            "-o",
            "jsonpath={.data.x}"
        ]),
        "y"
    );
    let elsewhere = cp.kubectl_fails(&["get", "configmap", "cm2"]);
    assert_eq!(
        elsewhere.stderr.trim(),
        "Error from server (NotFound): configmaps \"cm2\" not found",
        "{elsewhere}"
    );
}

#[test]
fn get_pods_in_empty_namespace_says_no_resources_found() {
    let cp = ControlPlane::start();
    let out = cp.kubectl(&["get", "pods"]);
    assert!(out.success(), "{out}");
    assert_eq!(out.stdout, "", "{out}");
    assert_eq!(out.stderr.trim(), NO_RESOURCES_IN_DEFAULT, "{out}");

    let all = cp.kubectl(&["get", "all"]);
    assert!(
        all.success(),
        "`kubectl get all` should work on an empty namespace\n{all}"
    );
}

#[test]
fn api_resources_lists_builtins_and_crd_short_name() {
    let cp = ControlPlane::start();
    let before = cp.kubectl_ok(&["api-resources"]);
    let rows = table(&before);
    assert_eq!(
        rows[0],
        ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"],
        "{before}"
    );
    for expected in [
        &["configmaps", "cm", "v1", "true", "ConfigMap"][..],
        &["namespaces", "ns", "v1", "false", "Namespace"],
        &["secrets", "v1", "true", "Secret"],
        &["deployments", "deploy", "apps/v1", "true", "Deployment"],
        &["roles", "rbac.authorization.k8s.io/v1", "true", "Role"],
        &[
            "customresourcedefinitions",
            "crd,crds",
            "apiextensions.k8s.io/v1",
            "false",
            "CustomResourceDefinition",
        ],
    ] {
        assert!(
            rows.iter().any(|r| r == expected),
            "api-resources should have the row {expected:?}:\n{before}"
        );
    }
    assert!(!before.contains("flighttickets"), "{before}");

    install_flight_tickets(&cp, false);
    let after = cp.kubectl_ok(&["api-resources"]);
    assert!(
        table(&after).iter().any(|r| r
            == &[
                "flighttickets",
                "ft",
                "flights.com/v1",
                "true",
                "FlightTicket"
            ]),
        "api-resources should list flighttickets with short name ft:\n{after}"
    );
    let group = cp.kubectl_ok(&["api-resources", "--api-group=flights.com", "-o", "name"]);
    assert_eq!(group.trim(), "flighttickets.flights.com");
}

/// A copy of the control plane's kubeconfig whose users have `token`
/// instead of their credentials.
///
/// (A kubeconfig user with no credentials at all cannot be used to send a
/// request without a token: kubectl then prompts for a basic-auth username
/// on stdin and fails with `error: EOF` before sending anything.)
fn kubeconfig_with_token(cp: &ControlPlane, token: &str, name: &str) -> PathBuf {
    let text = std::fs::read_to_string(&cp.kubeconfig).expect("read the kubeconfig");
    let mut config: serde_yaml::Value = serde_yaml::from_str(&text)
        .unwrap_or_else(|e| panic!("kubeconfig is not YAML ({e}):\n{text}"));
    let users = config
        .get_mut("users")
        .and_then(|u| u.as_sequence_mut())
        .unwrap_or_else(|| panic!("kubeconfig has no users:\n{text}"));
    let mut had_token = false;
    for user in users.iter_mut() {
        let user = user
            .get_mut("user")
            .and_then(|u| u.as_mapping_mut())
            .unwrap_or_else(|| panic!("kubeconfig user without `user`:\n{text}"));
        had_token |= user.contains_key("token");
        for key in [
            "token",
            "tokenFile",
            "client-certificate",
            "client-certificate-data",
            "client-key",
            "client-key-data",
            "username",
            "password",
            "exec",
            "auth-provider",
        ] {
            user.remove(key);
        }
        user.insert("token".into(), token.into());
    }
    assert!(
        had_token,
        "the kubeconfig written by opkit up should hold a bearer token:\n{text}"
    );
    let out = serde_yaml::to_string(&config).expect("serialize the kubeconfig");
    cp.write_file(name, &out)
}

#[test]
fn wrong_token_is_unauthorized() {
    let cp = ControlPlane::start();
    // The real kubeconfig works...
    cp.kubectl_ok(&["get", "configmaps", "-A"]);
    // ...a copy with a wrong token does not.
    let bad = kubeconfig_with_token(&cp, "not-the-right-token", "wrong-token.kubeconfig");
    let out = cp.kubectl_with(&bad, &["get", "configmaps"]);
    assert!(!out.success(), "{out}");
    assert_eq!(out.code, Some(1), "{out}");
    assert!(
        out.stderr
            .contains("error: You must be logged in to the server (Unauthorized)"),
        "stderr should say Unauthorized\n{out}"
    );
}

const APPLIED_CM_V1: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: cm-applied
data:
  a: \"1\"
  b: \"2\"
";

#[test]
fn apply_same_configmap_twice_is_unchanged() {
    let cp = ControlPlane::start();
    let file = cp.write_file("cm.yaml", APPLIED_CM_V1);
    let out = cp.kubectl_ok(&["apply", "-f", path_str(&file)]);
    assert_eq!(out.trim(), "configmap/cm-applied created");

    let out = cp.kubectl(&["apply", "-f", path_str(&file)]);
    assert!(out.success(), "{out}");
    assert!(
        out.stdout.trim() == "configmap/cm-applied unchanged"
            || out.stdout.trim() == "configmap/cm-applied configured",
        "the second apply should say unchanged (or configured)\n{out}"
    );

    let cm = get_json(&cp, &["configmap", "cm-applied"]);
    assert_eq!(cm["data"], json!({"a": "1", "b": "2"}), "{cm:#}");
    let last_applied =
        cm["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .as_str()
            .unwrap_or_else(|| panic!("no last-applied-configuration annotation:\n{cm:#}"));
    let last_applied: Value = serde_json::from_str(last_applied).expect("last-applied is JSON");
    assert_eq!(last_applied["data"], json!({"a": "1", "b": "2"}));
}

#[test]
fn apply_changed_configmap_is_configured() {
    // Client-side apply of a built-in sends a strategic merge patch.
    let cp = ControlPlane::start();
    let file = cp.write_file("cm.yaml", APPLIED_CM_V1);
    let out = cp.kubectl_ok(&["apply", "-f", path_str(&file)]);
    assert_eq!(out.trim(), "configmap/cm-applied created");

    let v2 = APPLIED_CM_V1
        .replace("  a: \"1\"\n", "  a: \"10\"\n")
        .replace("  b: \"2\"\n", "  c: \"3\"\n");
    let file = cp.write_file("cm.yaml", &v2);
    let out = cp.kubectl(&["apply", "-f", path_str(&file)]);
    assert!(out.success(), "{out}");
    assert_eq!(
        out.stdout.trim(),
        "configmap/cm-applied configured",
        "{out}"
    );

    // b was dropped from the file, so apply removed it.
    let cm = get_json(&cp, &["configmap", "cm-applied"]);
    assert_eq!(cm["data"], json!({"a": "10", "c": "3"}), "{cm:#}");
}

#[test]
fn apply_changed_flight_ticket_is_configured() {
    // Client-side apply of a custom resource sends a JSON merge patch.
    let cp = ControlPlane::start();
    install_flight_tickets(&cp, false);
    let file = cp.write_file("t.yaml", &ticket(TICKET, "Mumbai", "London", 2));
    let out = cp.kubectl_ok(&["apply", "-f", path_str(&file)]);
    assert_eq!(
        out.trim(),
        format!("flightticket.flights.com/{TICKET} created")
    );
    let out = cp.kubectl_ok(&["apply", "-f", path_str(&file)]);
    assert_eq!(
        out.trim(),
        format!("flightticket.flights.com/{TICKET} unchanged")
    );

    let file = cp.write_file("t.yaml", &ticket(TICKET, "Mumbai", "Paris", 7));
    let out = cp.kubectl_ok(&["apply", "-f", path_str(&file)]);
    assert_eq!(
        out.trim(),
        format!("flightticket.flights.com/{TICKET} configured")
    );
    assert_eq!(
        ticket_spec(&cp),
        json!({"from": "Mumbai", "to": "Paris", "number": 7})
    );
}
