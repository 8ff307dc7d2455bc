//! End-to-end tests of what the real kubectl v1.35 reads from the OpenAPI documents of
//! `opkit up`: `kubectl explain` (OpenAPI v3) for built-in kinds and CRDs, the server-side
//! validation kubectl switches on after finding `fieldValidation` in them, and the strategic
//! merge patch `kubectl apply` computes from the published patch extensions.

mod common;

use common::ControlPlane;

/// The FlightTicket CRD; `extra` is spliced into `spec.properties` (for a CRD update).
fn flight_ticket_crd(extra: &str) -> String {
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
    schema:
      openAPIV3Schema:
        description: A ticket for one flight.
        type: object
        properties:
          spec:
            description: What was booked.
            type: object
            properties:
              from:
                type: string
              to:
                type: string
              number:
                description: The number of passengers on the ticket.
                type: integer
                minimum: 1
                maximum: 10
{extra}"
    )
}

const SEAT: &str = "              seat:
                description: The seat assigned at check-in.
                type: string
";

fn install_crd(cp: &ControlPlane, extra: &str) {
    let crd = cp.write_file("crd.yaml", &flight_ticket_crd(extra));
    cp.kubectl_ok(&["apply", "-f", crd.to_str().expect("UTF-8 path")]);
    cp.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "crd/flighttickets.flights.com",
        "--timeout=30s",
    ]);
}

fn deployment(name: &str, env_value: &str, extra_spec: &str) -> String {
    format!(
        "apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  replicas: 2
{extra_spec}  selector:
    matchLabels:
      app: {name}
  template:
    metadata:
      labels:
        app: {name}
    spec:
      containers:
      - name: web
        image: nginx
        env:
        - name: MODE
          value: \"{env_value}\"
      - name: sidecar
        image: busybox
"
    )
}

#[test]
fn explain_crd_field_shows_its_description_and_type() {
    let cp = ControlPlane::start();
    install_crd(&cp, "");
    let out = cp.kubectl_ok(&["explain", "flighttickets.spec.number"]);
    assert!(out.contains("KIND:       FlightTicket"), "{out}");
    assert!(out.contains("FIELD: number <integer>"), "{out}");
    assert!(
        out.contains("The number of passengers on the ticket."),
        "{out}"
    );
    let out = cp.kubectl_ok(&["explain", "ft"]);
    assert!(out.contains("A ticket for one flight."), "{out}");
    assert!(out.contains("metadata\t<ObjectMeta>"), "{out}");
}

#[test]
fn explain_after_crd_update_shows_the_new_field() {
    let cp = ControlPlane::start();
    install_crd(&cp, "");
    let out = cp.kubectl(&["explain", "flighttickets.spec.seat"]);
    assert!(!out.success(), "seat does not exist yet\n{out}");
    install_crd(&cp, SEAT);
    let out = cp.kubectl_ok(&["explain", "flighttickets.spec.seat"]);
    assert!(out.contains("FIELD: seat <string>"), "{out}");
    assert!(out.contains("The seat assigned at check-in."), "{out}");
}

#[test]
fn explain_deployment_replicas_shows_upstream_description() {
    let cp = ControlPlane::start();
    let out = cp.kubectl_ok(&["explain", "deployment.spec.replicas"]);
    assert!(out.contains("GROUP:      apps"), "{out}");
    assert!(out.contains("KIND:       Deployment"), "{out}");
    assert!(out.contains("FIELD: replicas <integer>"), "{out}");
    assert!(out.contains("Number of desired pods."), "{out}");
}

#[test]
fn explain_pod_containers_recursive_lists_nested_fields() {
    let cp = ControlPlane::start();
    let out = cp.kubectl_ok(&["explain", "pods.spec.containers", "--recursive"]);
    assert!(out.contains("FIELD: containers <[]Container>"), "{out}");
    for line in [
        "  env\t<[]EnvVar>",
        "    valueFrom\t<EnvVarSource>",
        "  image\t<string>",
        "  name\t<string> -required-",
        "    containerPort\t<integer> -required-",
    ] {
        assert!(out.contains(line), "missing {line:?} in\n{out}");
    }
    let out = cp.kubectl_ok(&["explain", "service.spec.ports.targetPort"]);
    assert!(out.contains("FIELD: targetPort <IntOrString>"), "{out}");
}

#[test]
fn apply_validate_strict_deployment_with_unknown_field_fails_naming_it() {
    let cp = ControlPlane::start();
    let file = cp.write_file("bad.yaml", &deployment("web", "a", "  bogusField: 1\n"));
    let out = cp.kubectl_fails(&[
        "apply",
        "--validate=strict",
        "-f",
        file.to_str().expect("UTF-8 path"),
    ]);
    assert!(
        out.stderr.contains("unknown field \"spec.bogusField\""),
        "{out}"
    );
    let out = cp.kubectl(&["get", "deployment", "web"]);
    assert!(!out.success(), "nothing was created\n{out}");
}

#[test]
fn create_dry_run_server_answers_without_persisting() {
    let cp = ControlPlane::start();
    let file = cp.write_file("d.yaml", &deployment("web", "a", ""));
    let out = cp.kubectl_ok(&[
        "create",
        "--dry-run=server",
        "-f",
        file.to_str().expect("UTF-8 path"),
    ]);
    assert_eq!(out.trim(), "deployment.apps/web created (server dry run)");
    let out = cp.kubectl(&["get", "deployment", "web"]);
    assert!(!out.success(), "a dry run persists nothing\n{out}");
    assert!(
        out.stderr.contains("NotFound") || out.stderr.contains("not found"),
        "{out}"
    );
}

/// One object of each built-in group version (besides `apiextensions.k8s.io`, which the CRD
/// tests cover).
const ONE_OF_EACH_GROUP_VERSION: &str = "apiVersion: v1
kind: ConfigMap
metadata: {name: c}
data: {k: v}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
spec:
  selector: {matchLabels: {app: d}}
  template:
    metadata: {labels: {app: d}}
    spec: {containers: [{name: c, image: nginx}]}
---
apiVersion: batch/v1
kind: Job
metadata: {name: j}
spec:
  template:
    spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: h}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: d}
  maxReplicas: 3
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: l}
spec: {holderIdentity: me}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: e}
addressType: IPv4
endpoints: []
---
apiVersion: events.k8s.io/v1
kind: Event
metadata: {name: ev}
eventTime: \"2025-01-01T00:00:00.000000Z\"
reportingController: example.com/test
reportingInstance: test-1
action: Testing
reason: Test
type: Normal
regarding: {kind: ConfigMap, name: c, namespace: default}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: i}
spec:
  defaultBackend: {service: {name: s, port: {number: 80}}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: p}
spec: {minAvailable: 1, selector: {matchLabels: {app: d}}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: r}
rules: [{apiGroups: [\"\"], resources: [configmaps], verbs: [get]}]
";

#[test]
fn strict_server_side_validation_is_found_in_every_builtin_group_version_document() {
    // kubectl looks up each object's PATCH operation in the v3 document of its group version
    // to see that it takes `fieldValidation`; a document it cannot parse sends it to the v2
    // protobuf download, which fails. So this exercises every built-in v3 document.
    let cp = ControlPlane::start();
    let file = cp.write_file("all.yaml", ONE_OF_EACH_GROUP_VERSION);
    let out = cp.kubectl_ok(&[
        "create",
        "--dry-run=server",
        "--validate=strict",
        "-o",
        "name",
        "-f",
        file.to_str().expect("UTF-8 path"),
    ]);
    let names: Vec<&str> = out.lines().collect();
    assert_eq!(names.len(), 10, "{out}");
    assert!(names.contains(&"role.rbac.authorization.k8s.io/r"), "{out}");
}

#[test]
fn apply_twice_merges_containers_by_name_from_the_published_patch_keys() {
    let cp = ControlPlane::start();
    let file = cp.write_file("d.yaml", &deployment("web", "a", ""));
    let path = file.to_str().expect("UTF-8 path").to_string();
    cp.kubectl_ok(&["apply", "-f", &path]);
    cp.write_file("d.yaml", &deployment("web", "b", ""));
    let out = cp.kubectl(&["apply", "-f", &path, "-v=6"]);
    assert!(out.success(), "{out}");
    assert!(
        out.stdout.contains("deployment.apps/web configured"),
        "{out}"
    );
    assert!(
        !out.stderr.contains("error calculating patch"),
        "kubectl computed the patch from the OpenAPI v3 schemas without trouble\n{out}"
    );
    let got = cp.kubectl_ok(&[
        "get",
        "deployment",
        "web",
        "-o",
        "jsonpath={.spec.template.spec.containers[*].name} {.spec.template.spec.containers[0].env[0].value}",
    ]);
    assert_eq!(got.trim(), "web sidecar b");
}

#[test]
fn explain_with_openapiv2_output_reads_the_protobuf_document() {
    let cp = ControlPlane::start();
    install_crd(&cp, "");
    let out = cp.kubectl_ok(&[
        "explain",
        "deployment.spec.replicas",
        "--output",
        "plaintext-openapiv2",
    ]);
    assert!(out.contains("FIELD:    replicas <integer>"), "{out}");
    assert!(out.contains("Number of desired pods."), "{out}");
    let out = cp.kubectl_ok(&[
        "explain",
        "flighttickets.spec.number",
        "--output",
        "plaintext-openapiv2",
    ]);
    assert!(
        out.contains("The number of passengers on the ticket."),
        "{out}"
    );
}

/// A `kind: List` manifest, as `kubectl get -o yaml` prints several objects.
fn list_manifest(extra_field: &str) -> String {
    format!(
        "apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: listed
  data:
    a: \"1\"
{extra_field}- apiVersion: flights.com/v1
  kind: FlightTicket
  metadata:
    name: listed-ticket
  spec:
    from: AMS
    to: SFO
    number: 2
"
    )
}

#[test]
fn apply_of_a_list_manifest_validates_on_the_client_from_openapi_v2() {
    // `v1 List` has no PATCH operation in the v3 documents, so kubectl validates the items
    // itself, from `/openapi/v2` fetched as protobuf.
    let cp = ControlPlane::start();
    install_crd(&cp, "");
    let bad = cp.write_file("bad-list.yaml", &list_manifest("  bogus: 1\n"));
    let out = cp.kubectl_fails(&["apply", "-f", bad.to_str().expect("UTF-8 path")]);
    assert!(
        out.stderr
            .contains("unknown field \"bogus\" in io.k8s.api.core.v1.ConfigMap"),
        "{out}"
    );
    let good = cp.write_file("list.yaml", &list_manifest(""));
    let out = cp.kubectl_ok(&["apply", "-f", good.to_str().expect("UTF-8 path")]);
    assert!(out.contains("configmap/listed created"), "{out}");
    assert!(
        out.contains("flightticket.flights.com/listed-ticket created"),
        "{out}"
    );
}
